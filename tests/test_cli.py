"""The command line: forward (table, --json, --step), examples, verify, --help."""
import json
import subprocess
import sys

import pytest
import sympy

from symblock.engine import block, spec
from symblock.cli import main


def test_forward_default_is_the_seed_example(cli):
    code, out, err = cli("forward")
    assert code == 0 and err == ""
    assert "Post-LN block, worked by hand" in out
    # every step, in forward order, with its formula
    names = [line.split()[1] for line in out.splitlines() if line.startswith("■ ")]
    assert names == block.forward(spec.load("seed-post-ln")).names()
    assert "■ resid2   R_2 = H_1 + F" in out
    assert "[  4  1 ]" in out and "[  4.0000  1.0000 ]" in out
    assert "[ 2401/1000  599/1000 ]" in out


def test_forward_json_parses_back_exactly(cli):
    code, out, _ = cli("forward", "pre-ln-causal-gelu", "--json")
    data = json.loads(out)
    trace = block.forward(spec.load("pre-ln-causal-gelu"))
    assert [s["name"] for s in data["steps"]] == trace.names()
    seen_null = seen_inf = 0
    for s, step in zip(data["steps"], trace):
        assert s["shape"] == list(step.value.shape) and s["latex"] == step.latex
        for row_e, row_f, row_v in zip(s["exact"], s["float"], step.value.rows):
            for e, f, v in zip(row_e, row_f, row_v):
                if e is None:
                    seen_null += 1
                elif e == "-oo":
                    seen_inf += 1
                    assert f is None
                    continue
                else:
                    back = sympy.sympify(e)
                    assert abs(sympy.N(back, 40) - sympy.Float(v.digits(35), 40)) < 1e-30
                assert f == float(v)
    assert seen_inf > 0  # causal mask entries
    assert seen_null > 0  # a closed form too long for JSON is null, float still there


def test_forward_step_and_unknown_step(cli):
    code, out, _ = cli("forward", "--step", "norm1.std")
    assert code == 0 and "■ norm1.std" in out and "■ norm1 " not in out
    assert "901/1000" in out and "0.9010" in out
    code, out, err = cli("forward", "--step", "norm9")
    assert code == 2 and "no step 'norm9'" in err and "norm1.std" in err


def test_an_unknown_step_names_the_spec_it_is_not_in(cli, spec_file):
    path = spec_file(spec.example_text("seed-post-ln"))
    code, out, err = cli("forward", path, "--step", "norm1.sdt")
    assert code == 2 and out == ""
    assert err == (f"symblock: error: {path}: --step: no step 'norm1.sdt' in this block; did you mean norm1.std? "
                   "expected one of x, attn.out, resid1, norm1.mean, norm1.var, norm1.std, norm1, ffn.hidden, "
                   "ffn.act, ffn.out, resid2, norm2.mean, norm2.var, norm2.std, norm2, output\n")
    code, _, err = cli("forward", "preset-medium-v2.7", "--step", "x9")   # a sheet's ID: the ID as typed
    assert code == 2 and err.startswith("symblock: error: preset-medium-v2.7: --step: no step 'x9' in this block")
    code, _, err = cli("forward", "tiny-gpt", "--step", "embd")
    assert code == 2 and err.startswith("symblock: error: example:tiny-gpt: --step: no step 'embd' in this model; "
                                        "did you mean embed?")


def test_examples_list_and_show(cli):
    code, out, _ = cli("examples")
    assert code == 0
    for name in spec.example_names():
        assert name in out
    assert {"seed-post-ln", "pre-ln-causal-gelu", "rmsnorm-swiglu"} <= set(spec.example_names())
    code, out, _ = cli("examples", "--show", "seed-post-ln")
    assert "attn.out: [[1.401, 0.599]" in out
    code, _, err = cli("examples", "--show", "nope")
    assert code == 2 and "seed-post-ln" in err


def test_verify_table_and_json(cli):
    code, out, _ = cli("verify", "rmsnorm-swiglu")
    assert code == 0 and "OK: every step agrees" in out and "norm1.rms" in out
    code, out, _ = cli("verify", "--json", "--require-torch")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True
    assert data["backends"]["numpy"]["max_abs_diff"] <= 1e-9
    assert set(data["backends"]["numpy"]["steps"]) == set(block.forward(spec.load("seed-post-ln")).names())


def test_verify_exit_1_on_disagreement(cli, monkeypatch):
    from symblock.reference import numeric
    orig = numeric.forward
    monkeypatch.setattr(numeric, "forward", lambda s: {**orig(s), "resid1": orig(s)["resid1"] * 2})
    code, out, _ = cli("verify")
    assert code == 1 and "FAILED" in out and "resid1" in out


def test_verify_without_torch_is_reported(cli, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_torch(name, *a, **k):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    code, out, _ = cli("verify", "--json")
    data = json.loads(out)
    assert code == 0 and data["backends"]["torch"]["available"] is False
    code, out, _ = cli("verify", "--require-torch")
    assert code == 1 and "--require-torch" in out


def test_verify_no_torch_compares_with_numpy_alone_and_never_imports_torch(cli, capsys, monkeypatch):
    code = ("import sys, contextlib, io\nfrom symblock.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    codes = [main(['verify', 'pre-ln-causal-gelu', '--no-torch']), main(['verify', 'tiny-gpt', '--no-torch'])]\n"
            "print(out.getvalue()); print(codes, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[-2] == "[0, 0] False", out
    assert "torch max" not in out and out.count("torch: not run (--no-torch)") == 2 and "KV cache:" in out
    code, out, _ = cli("verify", "seed-post-ln", "--no-torch", "--json")
    data = json.loads(out)
    assert code == 0 and data["backends"]["torch"]["available"] is False
    assert set(data["backends"]["numpy"]["steps"]) == set(block.forward(spec.load("seed-post-ln")).names())
    from symblock.reference import numeric  # NumPy alone still decides the exit code
    orig = numeric.forward
    monkeypatch.setattr(numeric, "forward", lambda s: {**orig(s), "attn.out": orig(s)["attn.out"] + 1e-6})
    code, out, _ = cli("verify", "--no-torch")
    assert code == 1 and "numpy differs at attn.out by 1e-06" in out
    with pytest.raises(SystemExit) as e:
        main(["verify", "--no-torch", "--require-torch"])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_help_does_not_import_heavy_modules():
    code = ("import sys, symblock.cli as c; c.build_parser(); "
            "print(sorted(m for m in ('sympy', 'numpy', 'torch', 'jinja2', 'flint') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_command_imports_no_other_commands_module(tmp_path):
    """`forward` builds its parser without importing the other commands' modules (and what their
    options pull in: the sheets, the grader), yet the top-level help still names every command."""
    code = ("import sys, symblock.cli as c; c.main(['--debug', 'forward', '--step', 'output']); "
            "print(sorted(m for m in sys.modules if m.startswith(('symblock.commands.', 'symblock.sheets.worksheet', "
            "'symblock.grading.'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert r.stdout.strip().splitlines()[-1] == "['symblock.commands.arguments', 'symblock.commands.flags']"
    r = subprocess.run([sys.executable, "-m", "symblock", "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert all(f"    {name}" in r.stdout for name in ("worksheet", "grade", "import", "params"))
    r = subprocess.run([sys.executable, "-m", "symblock", "--debug", "grade", "--help"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and "--roster" in r.stdout   # the command run gets its own options


def test_python_dash_m(tmp_path):
    r = subprocess.run([sys.executable, "-m", "symblock", "forward", "--step", "output"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and "[  1  -1 ]" in r.stdout


def _help_examples(parser) -> list[tuple[str, list[str]]]:
    """(where, argv) of every `symblock ...` line in the epilogs of the parser and its commands
    (lines joined at a trailing backslash, comments dropped)."""
    import argparse
    import shlex
    found = []
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in [("symblock", parser), *subs.choices.items()]:
        text = (sub.epilog or "").replace("\\\n", " ")
        for line in text.splitlines():
            if line.startswith("  symblock "):
                argv = shlex.split(line, comments=True)[1:]
                found.append((name, argv[:argv.index(">")] if ">" in argv else argv))  # no redirection
    return found


def test_every_command_help_has_examples_that_parse(monkeypatch):
    """Each command's --help ends with examples, and each example is a valid command line."""
    from symblock.cli import COMMANDS, build_parser
    parser = build_parser()
    examples = _help_examples(parser)
    names = {"symblock", "forward", "examples", "verify"} | {c for c, _, _ in COMMANDS}
    assert {where for where, _ in examples} == names
    for where, argv in examples:
        try:
            parser.parse_args(argv)
        except SystemExit:
            raise AssertionError(f"symblock {where} --help: example does not parse: symblock {' '.join(argv)}")
    # printed as written (not re-wrapped), within an 80-column terminal
    import contextlib
    import io
    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        parser.parse_args(["params", "--help"])
    lines = out.getvalue().splitlines()
    assert "  symblock params --d-model 32 --heads 4 --d-ff 128" in lines
    assert max(len(l) for l in lines[lines.index("examples:"):]) <= 80


def test_check_without_files_asks_for_the_answers(capsys):
    from symblock import cli
    assert cli.main(["check"]) == 2
    err = capsys.readouterr().err
    assert "give the ANSWERS file" in err and "SPEC" not in err.split("(")[0]


SMALL = """\
dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
block: {norm_position: post, eps: 0, activation: relu}
inputs: {X: [[1, 0], [0, 1]]}
random: {seed: 1, low: -1, high: 1}
"""


@pytest.mark.parametrize("tail", ["\n", "\uff11", "\u0661", "1" * 10_000])
def test_an_id_is_ascii_in_its_canonical_form_and_quoted_short(tmp_path, cli, tail):
    # "NAME.1\n" matched `$`, fullwidth/Arabic digits matched \d (a non-canonical ID on the sheet)
    path = tmp_path / "spec.yaml"
    path.write_text(SMALL, encoding="utf-8")
    code, out, err = cli("worksheet", str(path), "--id", "seed-post-ln.1" + tail, "--out", str(tmp_path / "w"))
    assert code == 2 and "not a worksheet ID" in err and len(err) < 400
    assert not (tmp_path / "w").exists()


def test_a_long_id_of_another_spec_is_quoted_short(tmp_path, cli):
    path = tmp_path / "spec.yaml"
    path.write_text(SMALL, encoding="utf-8")
    code, out, err = cli("worksheet", str(path), "--id", "a" * 10_000 + ".1", "--out", str(tmp_path / "w"))
    assert code == 2 and "names no spec" in err and len(err) < 600   # an ID of no spec at all: said so, short


def test_a_tiny_space_gives_a_length_latex_reads(tmp_path, capsys):
    # \vspace{1e-05cm}: pdflatex failed; the length is written to 0.1 mm, without an exponent
    path = tmp_path / "spec.yaml"
    path.write_text(SMALL, encoding="utf-8")
    for space, want in (("0.00001", None), ("2.5", r"\vspace{2.5cm}"), ("0.123", r"\vspace{0.12cm}")):
        out = tmp_path / f"w{space}"
        assert main(["worksheet", str(path), "--space", space, "--format", "latex", "--out", str(out)]) == 0
        tex = (out / "sheet.tex").read_text(encoding="utf-8")
        assert "e-0" not in tex and (want is None and r"\vspace" not in tex or want in tex)


def test_verify_of_an_entry_beyond_float64_is_a_clear_refusal(tmp_path, cli):
    # float(10**400) raised OverflowError: exit 3
    path = tmp_path / "spec.yaml"
    path.write_text(SMALL.replace("[0, 1]]", f"[0, {10**400}]]"), encoding="utf-8")
    code, out, err = cli("verify", str(path))
    assert code == 2 and "beyond float64" in err and "401 digits" in err and len(err) < 400


def test_variants_of_a_spec_that_draws_nothing_are_refused_at_once(tmp_path, cli):
    import time
    path = tmp_path / "spec.yaml"
    text = block_spec_with_everything_given()
    path.write_text(text + "random: {seed: 1, low: -1, high: 1}\n", encoding="utf-8")
    start = time.monotonic()
    code, out, err = cli("worksheet", str(path), "--variants", "1000", "--out", str(tmp_path / "set"))
    took = time.monotonic() - start
    assert code == 2 and "nothing is left for `random` to draw" in err
    assert took < 10, took   # it tried all 50,000 seeds (about a minute) before refusing


def block_spec_with_everything_given() -> str:
    from symblock.engine.spec import example_text
    return example_text("seed-post-ln")


def test_a_long_step_or_example_name_is_quoted_short(cli):
    code, out, err = cli("forward", "--step", "x" * 10_000)
    assert code == 2 and "--step: no step 'xxx" in err and "10,000 characters" in err and len(err) < 2000


def test_version_is_the_packages(capsys):
    import re
    from worksheet_tools import REPO
    want = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"symblock {want}"


def test_grad_says_why_every_gradient_is_zero_where_the_block_shape_makes_it(capsys):
    """L = sum through a final LayerNorm stands still (each row sums to d·β̄, autograd agrees:
    tests/calculus), as does every loss through a 2-wide LayerNorm (rows ±1): the output says why
    instead of leaving a reader with a page of zeros; a block with moving gradients has no note."""
    assert main(["grad", "seed-post-ln", "--wrt", "W_2,W_1"]) == 0
    assert "with d_model 2 a LayerNorm maps every row to ±1" in capsys.readouterr().out
    assert main(["grad", "pre-ln-causal-gelu", "--wrt", "W_2"]) == 0
    out = capsys.readouterr().out
    assert "ends in a LayerNorm" in out and "give --loss mse a --target" in out
    assert main(["grad", "rmsnorm-swiglu", "--wrt", "W_2,W_1"]) == 0
    assert "note:" not in capsys.readouterr().out


def test_forward_of_a_sheets_id_works_the_variant_the_set_handed_out(tmp_path, capsys):
    """`symblock forward ID`: the numbers a set's manifest stores for that variant's asked steps."""
    import yaml
    assert main(["worksheet", "--difficulty", "medium", "--variants", "8", "--format", "markdown",
                 "--out", str(tmp_path / "set")]) == 0
    man = yaml.safe_load((tmp_path / "set" / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    seventh = next(v for v in man["variants"] if v["id"] == "preset-medium-v2.7")
    capsys.readouterr()
    assert main(["forward", "preset-medium-v2.7", "--json"]) == 0
    steps = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    for name, text in seventh["exercise"]["answers"].items():
        stored = [sympy.sympify(e) for row in text.split(";") for e in row.split(",")]   # exact, or 40 digits
        exact = [e for row in steps[name]["exact"] for e in row]     # None: a closed form too long to print
        floats = [x for row in steps[name]["float"] for x in row]
        for a, b, f in zip(stored, exact, floats, strict=True):
            if b is None:
                assert abs(float(a) - f) <= 1e-12 * (1 + abs(f)), (name, a, f)
            else:
                assert abs(sympy.N(a - sympy.sympify(b), 50)) <= 1e-30 * (1 + abs(f)), (name, a, b)
    assert main(["forward", "nofile.7"]) == 2   # not an ID of a built-in: the file is what is missing
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("example, want, absent", [
    ("tiny-bert", "· 1 layer (Post-LN) · LayerNorm · gelu · positions learned · head none · 4 tokens",
     ["generated:", "1 layers", "generate 0"]),
    ("tiny-translate", "· 1 encoder + 1 decoder layer (Post-LN) · LayerNorm · relu · positions sinusoidal · head tied"
     " · source 3 tokens · prompt 1 token · generate 2 with KV cache", ["1 layers", "1 tokens"]),
    ("tiny-gpt", "· 2 layers (Pre-LN) · LayerNorm · relu · positions learned · head tied · prompt 2 tokens",
     ["pre-LN"]),
])
def test_a_models_heading_says_what_it_is_in_words(cli, example, want, absent):
    """The second line of `forward`: singular where one, an encoder-decoder's two stacks and source,
    an encoder without a generation count or a `generated:` line (it generates nothing)."""
    code, out, err = cli("forward", example)
    assert code == 0, err
    assert want in out.splitlines()[1]
    assert not any(a in out for a in absent)
    if example == "tiny-translate":   # worked by the trace: its greedy tokens, after the prompt
        assert out.rstrip().splitlines()[-1].startswith("generated: <s> | ")


def test_an_untitled_spec_is_headed_by_its_file(cli, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(spec.example_text("seed-post-ln").replace('title: {en: "Post-LN block, worked by hand", '
                                                              'zh: "Post-LN 块：手算演示"}\n', ""), encoding="utf-8")
    code, out, err = cli("forward", path)
    assert code == 0, err
    assert out.splitlines()[0] == str(path) and "symblock" not in out.splitlines()[0]


def test_a_folder_named_as_an_example_says_how_to_name_the_example(cli, tmp_path, monkeypatch):
    """After `worksheet tiny-bert --out tiny-bert`, `tiny-bert` here is that folder: every command and
    the API say so and name example:tiny-bert, which still works."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny-bert").mkdir()
    for args in (["forward", "tiny-bert"], ["worksheet", "tiny-bert", "--out", "ws2"]):
        ran = cli(*args)
        assert ran.code == 2 and "write example:tiny-bert" in ran.err and "Traceback" not in ran.err, args
    import symblock
    with pytest.raises(symblock.SpecError, match="write example:tiny-bert"):
        symblock.load("tiny-bert")
    assert cli("forward", "example:tiny-bert", "--step", "x").code == 0


def test_an_unknown_step_of_a_big_model_names_the_closest_steps_not_two_hundred(cli):
    ran = cli("forward", "tiny-translate", "--step", "gen1.layer0.cache.kk")
    assert ran.code == 2 and "did you mean gen1.layer0.cache.k" in ran.err and "205 steps" in ran.err
    assert len(ran.err) < 400 and "gen2.layer0.norm3.std" not in ran.err
    small = cli("forward", "--step", "zzz")   # the seed block's 16 steps: all of them
    assert small.code == 2 and "expected one of x, attn.out, resid1" in small.err


def test_staged_without_its_places_says_the_form_it_takes(cli, tmp_path):
    code, _, err = cli("worksheet", "--out", tmp_path / "w", "--difficulty", "easy", "--staged", "attn.out")
    assert code == 2 and err == "symblock: error: --staged: expected STEP:K, e.g. attn.out:3, got 'attn.out'\n"


def test_derive_without_a_spec_names_its_tiny_block_in_errors(cli):
    code, _, err = cli("derive", "--step", "norm1.sdt")
    assert code == 2 and err.startswith("symblock: error: derive's tiny block (no SPEC): --step: no step "
                                        "'norm1.sdt'; did you mean norm1.std?") and "<tiny>" not in err


def test_check_with_spec_and_answers_swapped_says_the_order(cli, spec_file):
    answers = spec_file("decimals: 3\nsteps:\n  norm1.std: [[0.901], [0.124], [0.43]]\n", "a.yaml")
    code, _, err = cli("check", answers, "seed-post-ln")
    assert code == 2 and err == (f"symblock: error: seed-post-ln: no such answers file (SPEC comes first: "
                                 f"symblock check seed-post-ln {answers})\n")
    assert cli("check", "seed-post-ln", answers).code == 0   # the order it says works


def test_the_decoder_preset_on_a_block_names_where_it_was_asked(cli, spec_file, tmp_path):
    said = "the decoder preset needs a model spec (a `model:` section, e.g. the example tiny-decoder); this spec is one block\n"
    code, _, err = cli("worksheet", "seed-post-ln", "--preset", "decoder", "--out", tmp_path / "a")
    assert code == 2 and err == "symblock: error: example:seed-post-ln: --preset: " + said   # it said exercise.preset
    path = spec_file(spec.example_text("seed-post-ln") + "exercise: {preset: decoder}\n")
    code, _, err = cli("worksheet", path, "--out", tmp_path / "b")
    assert code == 2 and err == f"symblock: error: {path}: exercise.preset: " + said
