"""Hostile and extreme input (issue 10): numbers, counts and files without bounds, and input the
engine used to reject with a traceback. Every case is a one-line refusal naming the file and the
field (exit 2), or does the job.

The inputs that used to hang (a power tower, 1e999999999, a 512³ block, a billion variants, ...)
run in one subprocess under a generous timeout, so that a regression fails instead of hanging
the suite; the rest run in-process through `symblock.cli.main` or the Python API.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import mpmath
import pytest
import sympy
import yaml

from symblock.cli import main
from symblock.engine import cost, exact, spec
from symblock.errors import SpecError
from symblock.exercises import generate

SEED_YAML = spec.example_text("seed-post-ln")


def seed_with(old: str, new: str) -> str:
    assert old in SEED_YAML
    return SEED_YAML.replace(old, new)


def fixed(value, places: int) -> str:
    """`value` (SymPy) rounded to `places` decimals by mpmath, as fixed-point text."""
    with mpmath.workdps(places + 500):
        n = int(mpmath.nint(mpmath.mpf(sympy.N(value * 10 ** places, places + 500))))
    digits = str(abs(n)).rjust(places + 1, "0")
    return ("-" if n < 0 else "") + digits[:-places] + "." + digits[-places:]


def refused(err: str, *parts: str) -> bool:
    """One line, `symblock: error: ...`, no traceback, naming every part."""
    return (err.startswith("symblock: error: ") and err.count("\n") == 1 and "Traceback" not in err
            and all(p in err for p in parts))


# ---------------------------------------------------------------- what used to hang (subprocess)

TOWER = '[["10**10**10", 0, 1], [0, 1, -1]]'
BIG = "dims: {seq_len: 512, d_model: 512, d_ff: 512, heads: 1}\nrandom: {seed: 1%s}\n"
HANGS = {  # case: (files to write, argv, parts of the one-line error) -- exit 2 each
    "power tower 10**10**10": ({"s.yaml": seed_with("[[1, 0, 1], [0, 1, -1]]", TOWER)},
                               ["forward", "s.yaml"], ["weights.W_1[0][0]", "too large"]),
    "power tower 9^9^9": ({"s.yaml": seed_with("[[1, 0, 1], [0, 1, -1]]", '[["9^9^9", 0, 1], [0, 1, -1]]')},
                          ["forward", "s.yaml"], ["weights.W_1[0][0]", "too large"]),
    "2**(10**9)": ({"s.yaml": seed_with("[[1, 0, 1], [0, 1, -1]]", '[["2**(10**9)", 0, 1], [0, 1, -1]]')},
                   ["forward", "s.yaml"], ["weights.W_1[0][0]", "too large"]),
    "(1+sqrt(2))**(10**9)": ({"s.yaml": seed_with("[[1, 0, 1], [0, 1, -1]]",
                                                  '[["(1+sqrt(2))**(10**9)", 0, 1], [0, 1, -1]]')},
                             ["forward", "s.yaml"], ["weights.W_1[0][0]", "too large"]),
    "JSON 1e999999999": ({"s.json": '{"dims": {"seq_len": 1, "d_model": 1, "d_ff": 1, "heads": 1}, '
                                    '"random": {"seed": 1}, "inputs": {"X": [[1e999999999]]}}'},
                         ["forward", "s.json"], ["inputs.X[0][0]", "too large"]),
    "eps 1e-999999999": ({"s.yaml": seed_with("eps: 0", 'eps: "1e-999999999"')},
                         ["forward", "s.yaml"], ["block.eps", "too large"]),
    "--target 10**10**10": ({}, ["grad", "--loss", "mse", "--target", "[[10**10**10, 0], [0, 0], [0, 0]]"],
                            ["--target", "target[0][0]", "too large"]),
    "512³ spec": ({"s.yaml": BIG % ""}, ["forward", "s.yaml"], ["s.yaml: dims:", "limit of 6,000,000"]),
    "512³ with integer_scores": ({"s.yaml": BIG % ", integer_scores: true"}, ["forward", "s.yaml"],
                                 ["s.yaml: dims:", "limit of 6,000,000"]),
    "seq_len 512, d_model 1": ({"s.yaml": "dims: {seq_len: 512, d_model: 1, d_ff: 1, heads: 1}\n"
                                          "block: {eps: \"1/10\"}\nrandom: {seed: 1}\n"},
                               ["forward", "s.yaml"], ["s.yaml: dims:", "limit of 6,000,000"]),
    "max_draws 1000000 unsatisfiable": ({"s.yaml": "dims: {seq_len: 3, d_model: 4, d_ff: 4, heads: 1}\n"
                                                   "random: {seed: 1, max_draws: 1000000, score_range: [100, 101]}\n"},
                                        ["forward", "s.yaml"], ["random.max_draws", "1..20000"]),
    "stress -n 1000000000": ({}, ["stress", "-n", "1000000000"], ["-n", "1..10,000"]),
    "--variants 1000000000": ({}, ["worksheet", "--variants", "1000000000", "--out", "ws"],
                              ["--variants", "1..1,000"]),
    "/dev/zero as a spec": ({}, ["forward", "/dev/zero"], ["/dev/zero", "larger than 16 MiB"]),
}
SLOW_OK = {  # used to run for minutes; must now finish (exit 0)
    "derive rmsnorm-swiglu": ["derive", "rmsnorm-swiglu"],
}

RUNNER = textwrap.dedent("""\
    import contextlib, io, json, os, sys
    from symblock.cli import main
    results = {}
    for name, (cwd, argv) in json.loads(sys.argv[1]).items():
        os.chdir(cwd)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as e:   # argparse refusals
                code = e.code
        results[name] = [code, err.getvalue().strip().splitlines()[-1:] or [""]]
        print(json.dumps({name: results[name]}), flush=True)
    """)


@pytest.fixture(scope="module")
def hang_results(tmp_path_factory):
    """Every case of HANGS and SLOW_OK in one process, 240 s for all of them (each needs well
    under a second, derive a few seconds); on the old code the first case never returned."""
    d = tmp_path_factory.mktemp("hangs")
    argvs = {}
    for name, (files, argv, _) in HANGS.items():
        case = d / str(len(argvs))
        case.mkdir()
        for fname, text in files.items():
            (case / fname).write_text(text, encoding="utf-8")
        argvs[name] = [str(case), argv]
    argvs.update({name: [str(d), argv] for name, argv in SLOW_OK.items()})
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(argvs)], capture_output=True,
                              text=True, timeout=240, cwd=d)
        out = proc.stdout
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    results = {}
    for line in out.splitlines():
        results.update(json.loads(line))
    return results


@pytest.mark.parametrize("name", list(HANGS))
def test_what_used_to_hang_is_refused_at_once(hang_results, name):
    assert name in hang_results, f"{name}: no answer within the timeout"
    code, (err,) = hang_results[name]
    assert code == 2, (name, err)
    assert "Traceback" not in err and all(p in err for p in HANGS[name][2]), err


@pytest.mark.parametrize("name", list(SLOW_OK))
def test_what_used_to_run_for_minutes_finishes(hang_results, name):
    assert name in hang_results, f"{name}: no answer within the timeout"
    assert hang_results[name][0] == 0, hang_results[name]


def test_a_bad_SYMBLOCK_MAX_COST_is_a_clear_error_not_an_import_traceback():
    env = dict(os.environ, SYMBLOCK_MAX_COST="abc")
    proc = subprocess.run([sys.executable, "-m", "symblock", "forward"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert refused(proc.stderr, "SYMBLOCK_MAX_COST", "'abc'"), proc.stderr


# ---------------------------------------------------------------- numbers bounded at parse time

@pytest.mark.parametrize("text, message", [
    ("10**1000", "too large"),                 # 1001 digits: one past the bound
    ("1e-1000", "too large"),
    ("exp(10**6)", "too large"),               # e^(10^6) has 434,295 digits
    ("-" * 200 + "1", "nested more than"),
    ("99999!", "could not parse"),             # SymPy's factorial notation: not arithmetic here
    ("(-2)**(1/3)", "needs a positive rational base"),   # a root of a negative number: not real
    ("pi**(1/3)", "needs a positive rational base"),     # roots are of rationals only
    ("2**(1/10**7)", "denominator must be at most"),
    ("2**sqrt(2)", "an exponent must be a number"),
])
def test_an_entry_too_large_or_beyond_the_engine_is_a_spec_error_with_its_field(text, message):
    data = {"dims": {"seq_len": 1, "d_model": 1, "d_ff": 1, "heads": 1}, "random": {"seed": 1},
            "weights": {"W_1": [[text]]}}
    with pytest.raises(SpecError) as e:
        spec.from_mapping(data, "api")
    assert e.value.field == "weights.W_1[0][0]" and message in str(e.value)


@pytest.mark.parametrize("text, value", [
    ("10**400", sympy.Integer(10) ** 400), ("2**3000", sympy.Integer(2) ** 3000),
    ("(1/3)**600", sympy.Rational(1, 3) ** 600), ("1e-999", sympy.Rational(1, 10 ** 999)),
    ("sqrt(2)**1900", sympy.Integer(2) ** 950), ("E**2", sympy.exp(2)),
])
def test_large_but_bounded_entries_are_still_exact(text, value):
    assert spec.parse_exact(text, "f", "w") == value


def test_a_5001_digit_entry_is_refused_naming_the_line(spec_file, cli):
    p = spec_file(seed_with("W_2: [[1, 0]", "W_2: [[" + "9" * 5001 + ", 0]"), "s.yaml")
    code, _, err = cli("forward", p)
    assert code == 2 and refused(err, "s.yaml: line", "more than 1000 digits"), err
    p = spec_file('{"dims": {"seq_len": ' + "9" * 5001 + "}}", "s.json")
    code, _, err = cli("forward", p)
    assert code == 2 and refused(err, "s.json", "more than 1000 digits"), err


def test_params_with_a_3001_digit_width_is_a_clear_error(capsys):
    from symblock.calculus.params import count
    with pytest.raises(SystemExit) as e:
        main(["params", "--d-model", "9" * 3001, "--heads", "1"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and "--d-model: expected a whole number" in err
    assert "Traceback" not in err and len(err.splitlines()[-1]) < 200
    with pytest.raises(ValueError, match="d_model must be at most 1,000,000,000"):
        count(10 ** 3000, 1)


# ---------------------------------------------------------------- Decimal rounding (exact._round)

def test_28_decimals_forward_grad_worksheet(tmp_path, cli):
    code, out, err = cli("forward", "--decimals", "28", "--step", "norm1.std")
    assert code == 0 and "0.9010000000000000000000000000" in out, err
    code, out, err = cli("grad", "--decimals", "28")
    assert code == 0 and err == ""
    code, out, err = cli("worksheet", "pre-ln-causal-gelu", "--decimals", "28", "--format", "markdown",
                         "--out", tmp_path / "w")
    assert code == 0 and re.search(r"\d\.\d{28}\b", (tmp_path / "w" / "key.md").read_text()), err


@pytest.mark.parametrize("expr", ["10**400 + sqrt(2)", "exp(1000)", "-sqrt(2)/7", "sqrt(2)*10**40"])
def test_decimals_of_large_values_match_mpmath(expr):
    """Every digit before the point and 30 after (Decimal's 28-digit context used to refuse, and
    only ~40 significant digits were looked at)."""
    value = sympy.sympify(expr)
    assert exact.from_sympy(value).decimal(30) == Decimal(fixed(value, 30))


def test_weights_10_to_the_400_and_exp_1000_work_forward(spec_file, cli):
    p = spec_file(seed_with("[[1, 0, 1], [0, 1, -1]]", '[["10**400", 0, 1], [0, 1, -1]]'), "s.yaml")
    code, out, err = cli("forward", p, "--step", "ffn.hidden", "--decimals", "2")
    assert code == 0 and err == ""
    p = spec_file(seed_with("[[1, 0, 1], [0, 1, -1]]", '[["exp(1000)", 0, 1], [0, 1, -1]]'), "e.yaml")
    code, out, err = cli("forward", p, "--json", "--step", "ffn.hidden")
    assert code == 0 and err == ""


def test_answers_written_to_38_and_61_places_are_accepted(spec_file, cli):
    # 38 places of a rational step (seed-post-ln's norm1.std = 901/1000, 31/250, 43/100)
    text = "steps:\n  norm1.std: [[\"0.9010000000000000000000000000000000000\"], [0.124], [0.43]]\n"
    code, out, err = cli("check", "seed-post-ln", spec_file(text, "a.yaml"))
    assert code == 0, out + err
    # 61 places of irrational softmax weights, written by mpmath from the exact closed forms
    code, out, _ = cli("forward", "pre-ln-causal-gelu", "--json", "--step", "attn.h1.weights")
    exact_rows = json.loads(out)["steps"][0]["exact"]
    rows = [[fixed(sympy.sympify(e), 61) for e in r] for r in exact_rows]
    assert any(len(v) > 62 and v[-5:] != "00000" for r in rows for v in r)  # irrational, 61 places
    answers = {"steps": {"attn.h1.weights": rows}}
    code, out, err = cli("check", "pre-ln-causal-gelu", spec_file(json.dumps(answers), "b.json"))
    assert code == 0 and "correct  attn.h1.weights" in out, out + err


def test_a_wrong_answer_of_1e40_is_marked_wrong_exit_1(spec_file, cli):
    """The later steps are recomputed from the person's 1e40 (carried errors), and their
    decimals have 44 digits: that used to overflow Decimal's 28-digit context."""
    text = ("decimals: 3\nsteps:\n  resid1: [[1.0e+40, 0.599], [1.504, 1.752], [2.576, 1.716]]\n"
            "  norm1.mean: [[1.5], [1.628], [2.146]]\n  norm1.std: [[0.901], [0.124], [0.43]]\n")
    code, out, err = cli("check", "seed-post-ln", spec_file(text, "a.yaml"))
    assert code == 1 and "wrong    resid1" in out and err == "", err


# ---------------------------------------------------------------- given steps the engine cannot use

def _given(name, value):
    data = spec.read_mapping("x.yaml", SEED_YAML)[0]
    return {**data, "given": {**data["given"], name: value}}


@pytest.mark.parametrize("name, value, field, message", [
    ("norm1.var", [[-1], [1], [1]], "given.norm1.var[0][0]", "never negative"),
    ("norm1.std", [[0], [1], [1]], "given.norm1.std[0][0]", "must be > 0"),
])
def test_a_given_norm_statistic_that_cannot_be_used_is_a_spec_error(name, value, field, message):
    with pytest.raises(SpecError) as e:
        spec.from_mapping(_given(name, value), "api")
    assert e.value.field == field and message in str(e.value)


def test_a_given_masked_row_of_only_minus_infinity_is_a_spec_error():
    data = {"dims": {"seq_len": 2, "d_model": 1, "d_ff": 1, "heads": 1}, "block": {"causal": True,
            "attention_scale": "none", "eps": "1/10"}, "random": {"seed": 1},
            "given": {"attn.h0.masked": [["-oo", "-oo"], [1, 2]]}}
    with pytest.raises(SpecError) as e:
        spec.from_mapping(data, "api")
    assert e.value.field == "given.attn.h0.masked[0]" and "−∞" in str(e.value)


def test_a_staged_masked_step_keeps_its_minus_infinity(spec_file, cli):
    p = spec_file("dims: {seq_len: 3, d_model: 4, d_ff: 4, heads: 1}\n"
                                  "block: {causal: true, norm_position: pre}\n"
                                  "random: {seed: 1, staged: {step: attn.h0.masked, decimals: 2}}\n", "s.yaml")
    code, out, err = cli("forward", p, "--step", "attn.h0.masked")
    assert code == 0 and "(given)" in out and out.count("-oo") == 3, err


@pytest.mark.parametrize("rnd, field", [
    ({"difficulty": "easy", "seed": 1}, "dims.d_model"),
    ({"sparsity": "sqrt(2)/2", "seed": 1}, "random.sparsity"),
    ({"score_range": ["sqrt(2)/2", 3], "seed": 1}, "random.score_range[0]"),
])
def test_random_section_values_are_validated_before_use(rnd, field):
    data = {"dims": {"d_model": "x"} if "difficulty" in rnd else {"seq_len": 2, "d_model": 4, "d_ff": 2},
            "random": rnd}
    with pytest.raises(SpecError) as e:
        generate.from_mapping(data, "api")
    assert e.value.field == field


def test_difficulty_with_dims_that_are_not_a_mapping():
    with pytest.raises(SpecError) as e:
        generate.from_mapping({"dims": 3, "random": {"seed": 1, "difficulty": "easy"}}, "api")
    assert e.value.field == "dims"


# ---------------------------------------------------------------- files

def test_duplicate_keys_are_refused_naming_the_key(spec_file, cli):
    code, _, err = cli("forward", spec_file(SEED_YAML + "dims: {seq_len: 2}\n", "d.yaml"))
    assert code == 2 and refused(err, "d.yaml: line", "'dims' appears twice"), err
    code, _, err = cli("forward", spec_file('{"title": "a", "title": "b"}', "d.json"))
    assert code == 2 and refused(err, "d.json", "'title' appears twice"), err


@pytest.mark.parametrize("name, text", [
    ("deep.json", "[" * 100000 + "]" * 100000),
    ("deep.yaml", "a: " + "[" * 100000 + "]" * 100000),
    ("indent.yaml", "x:\n" + "".join("  " * i + f"a{i}:\n" for i in range(40))),
])
def test_deep_nesting_is_a_clear_error_not_a_recursion_error(spec_file, cli, name, text):
    code, _, err = cli("forward", spec_file(text, name))
    assert code == 2 and refused(err, name, "nested"), err


def test_yaml_aliases_that_expand_to_billions_are_refused(spec_file, cli):
    lines = ["a: &a [1,1,1,1,1,1,1,1,1,1]"] + [f"{c}: &{c} [{', '.join(['*' + p] * 10)}]"
                                                for p, c in zip("abcdef", "bcdefg")]
    code, _, err = cli("forward", spec_file("\n".join(lines) + "\n", "l.yaml"))
    assert code == 2 and refused(err, "l.yaml", "more than 2,000,000 values"), err


def test_a_directory_or_binary_file_as_target_is_a_clear_error(tmp_path, cli):
    code, _, err = cli("grad", "--loss", "mse", "--target", tmp_path)
    assert code == 2 and refused(err, "is a directory"), err
    binary = tmp_path / "t.bin"
    binary.write_bytes(bytes(range(256)))
    code, _, err = cli("grad", "--loss", "mse", "--target", binary)
    assert code == 2 and refused(err, "t.bin", "binary file"), err
    code, _, err = cli("forward", binary)
    assert code == 2 and refused(err, "t.bin", "binary file"), err


@pytest.mark.parametrize("out", ["/proc/symblock-test/ws", "/sys/symblock-test", "a" * 300])
def test_os_errors_on_out_are_a_clear_error(tmp_path, cli, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("worksheet", "--format", "markdown", "--out", out)
    assert code == 2 and refused(err, "--out", "cannot write there"), err


def test_unencodable_titles_are_refused(spec_file, tmp_path, cli):
    p = spec_file(seed_with('title: {en: "Post-LN block, worked by hand", zh: "Post-LN 块：手算演示"}', 'title: "\\ud800"'), "s.yaml")
    code, _, err = cli("worksheet", p, "--format", "markdown", "--out", tmp_path / "w")
    assert code == 2 and refused(err, "s.yaml: title:", "UTF-8") and not (tmp_path / "w").exists(), err
    code, _, err = cli("worksheet", "--title", "\udcff", "--format", "markdown", "--out", tmp_path / "v")
    assert code == 2 and refused(err, "--title", "UTF-8") and not (tmp_path / "v").exists(), err


# ---------------------------------------------------------------- cost before work, counts with maximums

def test_the_cost_counts_the_n_squared_softmax_of_a_long_thin_block():
    dims = spec.Dims(seq_len=512, d_model=1, d_ff=1, heads=1)
    weights = cost.step_cost("attn.h0.weights", dims, spec.Options())
    assert weights >= 512 * 512 * 2 * cost.NODE            # an exp and a division per entry
    assert cost.cost(dims, spec.Options()) > cost.MAX_COST  # refused (it ran past 60 s)


def test_a_block_over_the_limit_is_refused_before_anything_is_drawn(monkeypatch):
    def no_draw(*a, **k):
        raise AssertionError("drew weights for a block that is refused anyway")
    monkeypatch.setattr(spec, "draw", no_draw)
    monkeypatch.setattr(generate, "draw_tensor", no_draw)
    big = {"dims": {"seq_len": 512, "d_model": 512, "d_ff": 512, "heads": 1}, "random": {"seed": 1}}
    with pytest.raises(SpecError) as e:
        spec.from_mapping(big, "api")
    assert e.value.field == "dims"
    with pytest.raises(SpecError) as e:
        generate.from_mapping({**big, "random": {"seed": 1, "integer_scores": True}}, "api")
    assert e.value.field == "dims"


def test_the_limit_comes_from_the_environment_when_used_and_max_cost_raises_it(cli, monkeypatch):
    monkeypatch.setenv("SYMBLOCK_MAX_COST", "100")
    code, _, err = cli("forward", "pre-ln-causal-gelu")
    assert code == 2 and refused(err, "dims:", "limit of 100"), err
    code, _, err = cli("forward", "pre-ln-causal-gelu", "--max-cost", "10000000")
    assert code == 0, err


def test_generation_budgets_draws_and_forwards_by_the_block_size():
    c = generate.Constraints(max_draws=20000, score_range=(100, 101))
    small = spec.Dims(seq_len=3, d_model=4, d_ff=4, heads=1)
    large = spec.Dims(seq_len=16, d_model=32, d_ff=128, heads=4)
    opts = spec.Options()
    draws_small, fwd_small = generate.draw_limits(c, small, opts, ["W_Q", "W_K"], True, set())
    draws_large, fwd_large = generate.draw_limits(c, large, opts, ["W_Q", "W_K"], True, set())
    assert draws_small >= 10_000 and fwd_small == generate.MAX_FORWARDS   # tiny blocks: as asked
    assert draws_large * 10 < draws_small and fwd_large < generate.MAX_FORWARDS  # large: bounded first
    assert fwd_large * cost.cost(large, opts) <= cost.MAX_COST < (fwd_large + 1) * cost.cost(large, opts)


@pytest.mark.parametrize("argv, flag", [
    (["verify", "--tol", "nan"], "--tol"), (["verify", "--tol", "-1"], "--tol"),
    (["forward", "--decimals", "31"], "--decimals"), (["grad", "--decimals", "1000"], "--decimals"),
    (["stress", "--max-draws", "20001"], "--max-draws"),
])
def test_counts_and_tolerances_out_of_range_exit_2(capsys, argv, flag):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and flag in capsys.readouterr().err


def test_every_documented_maximum_is_in_help_and_the_docs(capsys):
    docs = Path(__file__).parents[2] / "docs"
    readme = "\n".join(p.read_text(encoding="utf-8") for p in sorted(docs.rglob("*.md")))
    for argv, text in [(["stress", "--help"], "at most 10,000"), (["worksheet", "--help"], "at most 1,000"),
                       (["forward", "--help"], "at most 30"), (["stress", "--help"], "at most 20,000")]:
        with pytest.raises(SystemExit):
            main(argv)
        assert text in " ".join(capsys.readouterr().out.split()), (argv, text)
    for limit in ("10,000", "1,000", "30", "20,000", "1000 digits", "16 MiB", "2,000,000"):
        assert limit in readme, limit


def test_a_large_exact_entry_is_shown_in_full_on_the_key(spec_file, tmp_path, cli):
    """10**40 + 1 used to be shown as 10**40 (Decimal's 28 digits rounded it, silently)."""
    p = spec_file(seed_with("inputs:\n  X: [[1, 0]", 'inputs:\n  X: [["10**40 + 1", 0]'), "s.yaml")
    code, _, err = cli("worksheet", p, "--format", "markdown", "--out", tmp_path / "w")
    assert code == 0, err
    assert "10000000000000000000000000000000000000001" in (tmp_path / "w" / "key.md").read_text()


# ---------------------------------------------------------------- answer values past what `decimal` holds

RESID1_ROWS = ["[1.504, 1.752]", "[2.576, 1.716]"]   # the seed article's resid1, rows 2 and 3


def _check_json(cli, spec_file, name, text):
    code, out, err = cli("check", "seed-post-ln", spec_file(text, name), "--json")
    assert err == "", err
    return code, {s["name"]: s for s in json.loads(out)["steps"]}


@pytest.mark.parametrize("name, text", [
    ("a.yaml", "steps:\n  resid1: [[1e99999999999999999999, 0.599], " + ", ".join(RESID1_ROWS) + "]\n"),
    ("b.yaml", "steps:\n  resid1: [[2.401e+100000000, 0.599], " + ", ".join(RESID1_ROWS) + "]\n"),
    ("c.yaml", 'steps:\n  resid1: [["1e-99999999999999999999", 0.599], ' + ", ".join(RESID1_ROWS) + "]\n"),
    ("d.json", '{"steps": {"resid1": [[1e99999999999999999999, 0.599], ' + ", ".join(RESID1_ROWS) + "]}}"),
    ("e.csv", "step,row,col,value\nresid1,0,0,1e99999999999999999999\nresid1,0,1,0.599\n"),
])
def test_an_answer_past_decimals_exponents_is_that_entry_wrong(spec_file, cli, name, text):
    """Was an internal error (decimal.InvalidOperation): now resid1[0][0] is wrong, "too large to
    read", and 0.599 beside it is still marked (correct: the seed article's resid1[0][1])."""
    code, steps = _check_json(cli, spec_file, name, text)
    first, second = steps["resid1"]["entries"][:2]
    assert code == 1 and steps["resid1"]["status"] == "wrong"
    assert first["mark"] == "wrong" and first["reason"] == "large" and len(first["given"]) <= 24
    assert second["mark"] == "correct" and "reason" not in second


@pytest.mark.parametrize("name, text", [
    ("a.yaml", 'steps:\n  resid1: [["²", "³"], ' + ", ".join(RESID1_ROWS) + "]\n"),
    ("b.csv", "step,row,col,value\nresid1,0,0,²\nresid1,0,1,³\n"),
    ("c.json", '{"steps": {"resid1": [["\u00b2", "\u00b3"], ' + ", ".join(RESID1_ROWS) + "]}}"),
])
def test_superscript_digits_are_not_numbers_but_entries_marked_wrong(spec_file, cli, name, text):
    """str.isdigit("²") is True, int("²") fails: the entries are "not a number", the file marked."""
    code, steps = _check_json(cli, spec_file, name, text)
    entries = steps["resid1"]["entries"]
    assert code == 1 and [(e["given"], e["reason"]) for e in entries[:2]] == [("²", "number"), ("³", "number")]


@pytest.mark.parametrize("name, text, where, message", [
    # an answers file reads a whole number too long for the engine as its text (an entry: too large to
    # read, marked wrong); where a row goes, it is refused as the quoted one is, naming the field
    ("a.yaml", "steps:\n  resid1: {row: " + "9" * 5000 + ", value: [1, 2]}\n", "steps.resid1.row",
     "expected a whole number 0..2"),
    ("b.json", '{"steps": {"resid1": {"row": ' + "9" * 5000 + ', "value": [1, 2]}}}', "steps.resid1.row",
     "expected a whole number 0..2"),
    ("c.yaml", 'steps:\n  resid1: {row: "' + "9" * 5000 + '", value: [1, 2]}\n', "steps.resid1.row",
     "expected a whole number 0..2"),
    ("d.csv", "step,row,col,value\nresid1," + "9" * 5000 + ",0,1\n", "line 2", "expected whole-number row and col"),
    ("e.csv", "step,row,col,value\nresid1,0,²,1\n", "line 2", "expected whole-number row and col"),
    ("f.csv", "step,row,col,value\ndecimals,,,³\nresid1,0,0,1\n", "decimals", "expected a whole number 0..30"),
    ("g.csv", "step,row,col,value\nresid1,0,0," + "1" * 200_000 + "\n", "", "not a readable CSV table"),
])
def test_huge_or_unicode_row_numbers_and_long_csv_fields_refuse_the_file_briefly(tmp_path, capsys, name, text,
                                                                                  where, message):
    """A row or col is the file's structure: a 5,000-digit one (past Python's 4300-digit int
    conversion), `²`, or a CSV field past the reader's 131,072 characters refuse the file (exit 2,
    not an internal error), with a message that quotes at most a short excerpt."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code = main(["check", "seed-post-ln", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"symblock: error: {path}: " + (f"{where}: " if where else "")), err
    assert message in err and len(err) < 400, err


def test_a_json_spec_number_past_decimals_exponents_is_refused_by_field(tmp_path, capsys):
    """json.loads(parse_float=Decimal) raised decimal.InvalidOperation (an internal error)."""
    data = yaml.safe_load((Path(spec.__file__).parent.parent / "examples" / "seed-post-ln.yaml").read_text())
    text = json.dumps(data).replace('"eps": 0', '"eps": 1e99999999999999999999')
    assert "1e99999999999999999999" in text
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    assert main(["forward", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symblock: error: {path}: block.eps: ") and "too large" in err, err


# ---------------------------------------------------------------- weights so large a softmax weight is e^(-10^20)

def test_rounding_a_ball_far_below_the_last_place_is_certified_zero():
    # exp(-10^20) as a ball: mid ~ 2^(-1.4e20); the integer shifts of the rounding were ~10^20 bits wide
    from flint import arb
    from symblock.engine.balls import round_ends
    tiny = arb(-10**20).exp()
    assert round_ends(tiny, 4) == (Decimal("0.0000"), Decimal("0.0000"))
    assert round_ends(-tiny, 12) == (Decimal(0), Decimal(0))
    # a tiny midpoint with a radius near the last place: still an enclosure, ends certified apart
    wide = arb(mid=arb(-10**20).exp(), rad=arb(1) / 1000)
    lo, hi = round_ends(wide, 4)
    assert lo == Decimal("-0.0010") and hi == Decimal("0.0010")
    # and a value that is not tiny rounds as before
    assert round_ends(arb(2).sqrt(), 4) == (Decimal("1.4142"), Decimal("1.4142"))


@pytest.mark.parametrize("w", ['"1e20"', f'"{10**30}"', '"10**400"'])
def test_a_huge_weight_prints_its_softmax_weights(cli, spec_file, w):
    # a query weight of 1e20 puts e^(-~10^20) in a softmax row; `forward` used to end in exit 3
    path = spec_file(textwrap.dedent(f"""\
        dims: {{seq_len: 2, d_model: 2, d_ff: 2, heads: 1}}
        weights:
          W_Q: [[{w}, 0], [0, 1]]
          W_K: [[1, 0], [0, 1]]
          W_V: [[1, 0], [0, 1]]
          W_O: [[1, 0], [0, 1]]
          W_1: [[1, 0], [0, 1]]
          W_2: [[1, 0], [0, 1]]
        inputs:
          X: [[1, 0], [0, 1]]
        """))
    code, out, err = cli("forward", path, "--step", "attn.h0.weights")
    assert code == 0, err
    # row 0: scores (w/√2, 0) → softmax (1, e^(-w/√2)/(1+...)) → 1.0000 0.0000 to 4 places;
    # row 1: scores (0, 1/√2) → 1/(1+e^(1/√2)) = 0.3302, 0.6698 (worked by hand)
    rounded = re.findall(r"^    \((\d),(\d)\) = .*≈ (\S+)$", out, re.M)
    assert rounded == [("1", "1", "1.0000"), ("1", "2", "0.0000"), ("2", "1", "0.3302"), ("2", "2", "0.6698")]
    code, out, err = cli("forward", path)
    assert code == 0 and "[ 1.0000  0.0000 ]" in out, err
