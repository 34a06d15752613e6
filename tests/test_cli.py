"""The command line: forward (table, --json, --step), examples, verify, --help."""
import json
import subprocess
import sys

import pytest
import sympy

from symblock.engine import block, spec
from symblock.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_forward_default_is_the_seed_example(capsys):
    code, out, err = run(capsys, "forward")
    assert code == 0 and err == ""
    assert "Post-LN block, worked by hand" in out
    # every step, in forward order, with its formula
    names = [line.split()[1] for line in out.splitlines() if line.startswith("■ ")]
    assert names == block.forward(spec.load("seed-post-ln")).names()
    assert "■ resid2   R_2 = H_1 + F" in out
    assert "[  4  1 ]" in out and "[  4.0000  1.0000 ]" in out
    assert "[ 2401/1000  599/1000 ]" in out


def test_forward_json_parses_back_exactly(capsys):
    code, out, _ = run(capsys, "forward", "pre-ln-causal-gelu", "--json")
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


def test_forward_step_and_unknown_step(capsys):
    code, out, _ = run(capsys, "forward", "--step", "norm1.std")
    assert code == 0 and "■ norm1.std" in out and "■ norm1 " not in out
    assert "901/1000" in out and "0.9010" in out
    code, out, err = run(capsys, "forward", "--step", "norm9")
    assert code == 2 and "no step 'norm9'" in err and "norm1.std" in err


def test_examples_list_and_show(capsys):
    code, out, _ = run(capsys, "examples")
    assert code == 0
    for name in spec.example_names():
        assert name in out
    assert {"seed-post-ln", "pre-ln-causal-gelu", "rmsnorm-swiglu"} <= set(spec.example_names())
    code, out, _ = run(capsys, "examples", "--show", "seed-post-ln")
    assert "attn.out: [[1.401, 0.599]" in out
    code, _, err = run(capsys, "examples", "--show", "nope")
    assert code == 2 and "seed-post-ln" in err


def test_verify_table_and_json(capsys):
    code, out, _ = run(capsys, "verify", "rmsnorm-swiglu")
    assert code == 0 and "OK: every step agrees" in out and "norm1.rms" in out
    code, out, _ = run(capsys, "verify", "--json", "--require-torch")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True
    assert data["backends"]["numpy"]["max_abs_diff"] <= 1e-9
    assert set(data["backends"]["numpy"]["steps"]) == set(block.forward(spec.load("seed-post-ln")).names())


def test_verify_exit_1_on_disagreement(capsys, monkeypatch):
    from symblock.reference import numeric
    orig = numeric.forward
    monkeypatch.setattr(numeric, "forward", lambda s: {**orig(s), "resid1": orig(s)["resid1"] * 2})
    code, out, _ = run(capsys, "verify")
    assert code == 1 and "FAILED" in out and "resid1" in out


def test_verify_without_torch_is_reported(capsys, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_torch(name, *a, **k):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    code, out, _ = run(capsys, "verify", "--json")
    data = json.loads(out)
    assert code == 0 and data["backends"]["torch"]["available"] is False
    code, out, _ = run(capsys, "verify", "--require-torch")
    assert code == 1 and "--require-torch" in out


def test_verify_no_torch_compares_with_numpy_alone_and_never_imports_torch(capsys, monkeypatch):
    code = ("import sys, contextlib, io\nfrom symblock.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    codes = [main(['verify', 'pre-ln-causal-gelu', '--no-torch']), main(['verify', 'tiny-gpt', '--no-torch'])]\n"
            "print(out.getvalue()); print(codes, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[-2] == "[0, 0] False", out
    assert "torch max" not in out and out.count("torch: not run (--no-torch)") == 2 and "KV cache:" in out
    code, out, _ = run(capsys, "verify", "seed-post-ln", "--no-torch", "--json")
    data = json.loads(out)
    assert code == 0 and data["backends"]["torch"]["available"] is False
    assert set(data["backends"]["numpy"]["steps"]) == set(block.forward(spec.load("seed-post-ln")).names())
    from symblock.reference import numeric  # NumPy alone still decides the exit code
    orig = numeric.forward
    monkeypatch.setattr(numeric, "forward", lambda s: {**orig(s), "attn.out": orig(s)["attn.out"] + 1e-6})
    code, out, _ = run(capsys, "verify", "--no-torch")
    assert code == 1 and "numpy differs at attn.out by 1e-06" in out
    with pytest.raises(SystemExit) as e:
        main(["verify", "--no-torch", "--require-torch"])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_help_does_not_import_heavy_modules():
    code = ("import sys, symblock.cli as c; c.build_parser(); "
            "print(sorted(m for m in ('sympy', 'numpy', 'torch', 'jinja2', 'flint') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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
