"""`symblock check`: per-entry marking, statuses, exit codes, answer formats, carried-forward
marking (wrong answers and honest rounding), bad answers files, JSON shape.

Every planted number here is worked by hand or with Python's decimal module, never by the code
under test."""
import json
import textwrap
from decimal import ROUND_HALF_UP, Decimal, getcontext
from pathlib import Path

import pytest

from symblock.cli import main

DATA = Path(__file__).parent / "data"
SEED_ANSWERS = DATA / "seed_000_answers.yaml"


def run(cli, spec_file, answers: str, spec="seed-post-ln", name="answers.yaml", *flags):
    path = spec_file(textwrap.dedent(answers), name)
    code, out, err = cli("check", spec, path, *flags)
    return code, out, err, str(path)


def run_json(cli, spec_file, answers: str, spec="seed-post-ln", name="answers.yaml"):
    code, out, err, _ = run(cli, spec_file, answers, spec, name, "--json")
    assert err == ""
    data = json.loads(out)
    return code, data, {s["name"]: s for s in data["steps"]}


def write_spec(spec_file, text: str, name="spec.yaml") -> str:
    return str(spec_file(textwrap.dedent(text), name))


# ---------------------------------------------------------------- the seed-000 article

def test_seed_000_chain_as_printed_is_correct(capsys):
    code = main(["check", "seed-post-ln", str(SEED_ANSWERS), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["ok"] is True and data["first_break"] is None
    statuses = {s["name"]: s["status"] for s in data["steps"]}
    answered = ["attn.out", "resid1", "norm1.mean", "norm1.std", "norm1", "ffn.hidden", "ffn.act",
                "ffn.out", "resid2", "norm2.mean", "norm2.std", "output"]
    assert all(statuses[n] == "correct" for n in answered), statuses
    assert statuses["norm1.var"] == "missing" and statuses["x"] == "missing"
    assert all(e["ok"] for s in data["steps"] for e in s["entries"])


def test_seed_000_text_report(capsys):
    code = main(["check", "seed-post-ln", str(SEED_ANSWERS)])
    out = capsys.readouterr().out
    assert code == 0
    assert "✓ correct  norm1.std" in out and "· missing  norm1.var" in out
    # steps still missing: not "OK" yet (the exit code stays 0: nothing is wrong)
    assert out.rstrip().endswith("Nothing wrong so far (12 correct, 3 missing): answer the missing steps "
                                 "and check again.") and "OK:" not in out


def test_a_step_with_blank_entries_is_not_ok_yet(tmp_path, capsys):
    """The decoder layer worked by hand (every step, numbers from NumPy) is OK; with one or two of
    its entries left null the answered entries are still right, but the file is not "OK" yet."""
    full = json.loads((DATA / "decoder_layer_answers.json").read_text(encoding="utf-8"))
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(full), encoding="utf-8")
    assert main(["check", "example:decoder-layer", str(ok)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("OK: nothing wrong (36 correct).")
    full["steps"]["attn.q"][0][0] = None
    one = tmp_path / "one.json"
    one.write_text(json.dumps(full), encoding="utf-8")
    assert main(["check", "example:decoder-layer", str(one)]) == 1   # nothing wrong, not done: not ok (exit 1)
    out = capsys.readouterr().out
    assert "1 blank: row 1 col 1" in out and "OK:" not in out
    assert out.rstrip().endswith("Nothing wrong so far (35 correct, 1 partly blank), but 1 entry of an answered step is blank: "
                                 "fill it in and check again.")
    full["steps"]["norm3"][1][2] = None
    two = tmp_path / "two.json"
    two.write_text(json.dumps(full), encoding="utf-8")
    main(["check", "example:decoder-layer", str(two), "--lang", "zh"])
    assert capsys.readouterr().out.rstrip().endswith("但已答步骤中还有 2 个数未填：请填上，再检查。")



def test_json_marks_a_partly_blank_step_as_the_report_does_and_the_file_not_ok(tmp_path, capsys):
    """`--json` agrees with the ◐ of the report: a step with one entry blank (the others right, numbers
    from NumPy) is partly_blank, never correct, and the file is not ok (exit 1) though nothing is wrong;
    a step left out whole is missing, which does not fail (as ever)."""
    full = json.loads((DATA / "decoder_layer_answers.json").read_text(encoding="utf-8"))
    full["steps"]["attn.q"][0][0] = None
    one = tmp_path / "one.json"
    one.write_text(json.dumps(full), encoding="utf-8")
    assert main(["check", "example:decoder-layer", str(one), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    q = next(s for s in data["steps"] if s["name"] == "attn.q")
    assert q["status"] == "partly_blank" and q["blank"] == 1 and [e["mark"] for e in q["entries"]].count("correct") > 0
    assert data["ok"] is False and data["first_break"] is None
    full["steps"].pop("attn.q")   # the whole step left out: missing, and the file ok
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(full), encoding="utf-8")
    assert main(["check", "example:decoder-layer", str(whole), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and next(s for s in data["steps"] if s["name"] == "attn.q")["status"] == "missing"


SEED = SEED_ANSWERS.read_text(encoding="utf-8")


@pytest.mark.parametrize("var_line, status", [
    # the article's 0.8118 for 0.811801: judged at its own 4 places although decimals is 3
    ("  norm1.var: [[0.8118], [0.0154], [0.1849]]", "correct"),
    # a per-step override says the same thing explicitly
    ("  norm1.var: {decimals: 4, value: [[0.8118], [0.0154], [0.1849]]}", "correct"),
    # 3 places: 0.812, 0.015, 0.185
    ("  norm1.var: [[0.812], [0.015], [0.185]]", "correct"),
    # 4 places, at most one unit off in the 4th (0.811801 rounded up): a rounding slip, not a mistake
    ("  norm1.var: [[0.8119], [0.0154], [0.1849]]", "slip"),
    # 4 places asked, 0.812 is 0.811801 right to 3 places: correct, rounded to fewer places
    ("  norm1.var: {decimals: 4, value: [[0.812], [0.0154], [0.1849]]}", "rounded"),
    # one unit below the key's 0.8118 is as much a slip as one above: the student compares with
    # the key, not with 0.811801's fifth digit (it was marked wrong, 0.8119 a slip)
    ("  norm1.var: [[0.8117], [0.0154], [0.1849]]", "slip"),
    # two units off in the 4th place (0.8116 for 0.8118): wrong
    ("  norm1.var: [[0.8116], [0.0154], [0.1849]]", "wrong"),
])
def test_seed_variance_as_the_article_writes_it(cli, spec_file, var_line, status):
    code, data, steps = run_json(cli, spec_file, SEED + var_line + "\n")
    assert steps["norm1.var"]["status"] == status
    ok = status != "wrong"
    assert code == (0 if ok else 1) and data["ok"] is ok


# ---------------------------------------------------------------- statuses and carried forward

def test_slip_in_resid1_is_carried_forward(cli, spec_file):
    # 2.501 instead of 2.401. By hand from the slip: mean 1.55, deviations ±0.951, var 0.904401,
    # σ 0.951, and the normalised row is still [1, -1] (correct against the truth).
    answers = """\
        decimals: 3
        steps:
          resid1: [[2.501, 0.599], [1.504, 1.752], [2.576, 1.716]]
          norm1.mean: [[1.55], [1.628], [2.146]]
          norm1.var: [[0.904401], [0.015376], [0.1849]]
          norm1.std: [[0.951], [0.124], [0.43]]
          norm1: [[1, -1], [-1, 1], [1, -1]]
        """
    code, data, steps = run_json(cli, spec_file, answers)
    assert code == 1 and data["ok"] is False and data["first_break"] == "resid1"
    assert steps["resid1"]["status"] == "wrong"
    bad = [e for e in steps["resid1"]["entries"] if not e["ok"]]
    assert [(e["row"], e["col"], e["given"], e["expected"]) for e in bad] == [(0, 0, "2.501", "2.401")]
    for name in ("norm1.mean", "norm1.var", "norm1.std"):
        assert steps[name]["status"] == "carried", name
        assert steps[name]["built_on"] == ["resid1"]
    assert steps["norm1"]["status"] == "correct"
    mean0 = steps["norm1.mean"]["entries"][0]
    assert mean0 == {"row": 0, "col": 0, "given": "1.55", "expected": "1.500", "ok": True,
                     "own": "1.550", "exact": "3/2", "mark": "carried"}


def test_carried_text_report(cli, spec_file):
    answers = """\
        decimals: 3
        steps:
          resid1: [[2.501, 0.599], [1.504, 1.752], [2.576, 1.716]]
          norm1.mean: [[1.55], [1.628], [2.146]]
        """
    code, out, _, _ = run(cli, spec_file, answers)
    assert code == 1
    assert "✗ wrong    resid1      ← the chain first breaks here" in out
    assert "row 1, col 1  given 2.501      expected 2.401 (= 2401/1000)" in out
    assert "↪ carried  norm1.mean  right from your own resid1 (error carried forward)" in out
    assert "· missing  norm1.var … norm2  (11 steps not answered)" in out  # output is not asked
    assert "ffn.act" not in out  # inside the collapsed run
    assert out.rstrip().endswith("The chain first breaks at resid1.")
    assert "row 1, col 2" not in out  # only wrong entries by default...
    code, out, _, _ = run(cli, spec_file, answers, "seed-post-ln", "answers.yaml", "--all")
    assert "row 1, col 2  given 0.599      expected 0.599 (= 599/1000)  ok" in out  # ...every one with --all
    assert "row 1, col 1  given 1.55       expected 1.500 (= 3/2); from your own answers 1.550  carried" in out


def test_no_carried_credit_without_the_earlier_answer(cli, spec_file):
    # σ = 0.951 would follow from a slipped resid1, but resid1 was never written: wrong.
    code, data, steps = run_json(cli, spec_file, """\
        decimals: 3
        steps:
          norm1.std: [[0.951], [0.124], [0.43]]
        """)
    assert code == 1 and steps["norm1.std"]["status"] == "wrong"
    assert steps["resid1"]["status"] == "missing"


def test_carried_through_a_skipped_step(cli, spec_file):
    # resid1 slipped, mean skipped: σ from the slipped row is 0.951 (the skipped mean follows
    # the person's resid1), so σ is carried.
    code, data, steps = run_json(cli, spec_file, """\
        decimals: 3
        steps:
          resid1: [[2.501, 0.599], [1.504, 1.752], [2.576, 1.716]]
          norm1.std: [[0.951], [0.124], [0.43]]
        """)
    assert steps["norm1.mean"]["status"] == "missing"
    assert steps["norm1.std"]["status"] == "carried" and steps["norm1.std"]["built_on"] == ["resid1"]


def test_missing_steps_do_not_fail(cli, spec_file):
    code, data, steps = run_json(cli, spec_file, "steps:\n  output: [[1, -1], [-1, 1], [1, -1]]\n")
    assert code == 0 and data["ok"] is True
    assert steps["output"]["status"] == "correct"
    assert steps["resid1"]["status"] == "missing" and steps["resid1"]["entries"] == []
    assert steps["attn.out"]["status"] == "given"  # pinned by the spec, not asked


def test_a_blank_answers_file_is_not_ok(cli, spec_file):
    """Nothing answered is not "nothing wrong": exit 1, and the report says so."""
    code, out, _, _ = run(cli, spec_file, "steps:\n  resid1: [[null, null], [null, null], [null, null]]\n")
    assert code == 1 and "Nothing answered yet" in out and "nothing wrong" not in out, out
    code, data, _ = run_json(cli, spec_file, "steps:\n  output: [[null, null], [null, null], [null, null]]\n")
    assert code == 1 and data["ok"] is False and data["first_break"] is None
    code, _, err, _ = run(cli, spec_file, "steps: {}\n")
    assert code == 2 and "steps: expected a mapping" in err and "got an empty mapping" in err, err


def test_wrong_output_only(cli, spec_file):
    code, data, steps = run_json(cli, spec_file, "steps:\n  output: [[1, -1], [1, -1], [1, -1]]\n")
    assert code == 1 and data["first_break"] == "output"
    wrong = [(e["row"], e["col"]) for e in steps["output"]["entries"] if not e["ok"]]
    assert wrong == [(1, 0), (1, 1)]


# ---------------------------------------------------------------- honest rounding, small σ

ROUND_SPEC = """\
    dims: {seq_len: 2, d_model: 3, d_ff: 1, heads: 1}
    weights:
      W_1: [[1], [0], [0]]
      W_2: [[1, 0, 0]]
    inputs:
      X: [[1, 0, 0], [0, 1, 0]]
    given:
      attn.out: [[0.0123, 1.0456, 1.0321], [0.5, 0.5, 0.25]]
    """


def _r(x: Decimal, places: int) -> Decimal:
    return x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _honest_chain(places=3, var_places=6):
    """A person working LayerNorm on resid1 with numbers rounded to `places` at every step and
    carried forward (Python decimal, 50 digits)."""
    getcontext().prec = 50
    X = [[1, 0, 0], [0, 1, 0]]
    A = [[Decimal("0.0123"), Decimal("1.0456"), Decimal("1.0321")],
         [Decimal("0.5"), Decimal("0.5"), Decimal("0.25")]]
    r1 = [[_r(x + a, places) for x, a in zip(xr, ar)] for xr, ar in zip(X, A)]
    mean = [_r(sum(r) / 3, places) for r in r1]
    var = [_r(sum((v - m) ** 2 for v in r) / 3, var_places) for r, m in zip(r1, mean)]
    std = [_r(v.sqrt(), places) for v in var]
    norm = [[_r((v - m) / s, places) for v in r] for r, m, s in zip(r1, mean, std)]
    return r1, mean, var, std, norm


def _chain_yaml(r1, mean, var, std, norm):
    col = lambda xs: "[" + ", ".join(f"[{x}]" for x in xs) + "]"
    mat = lambda m: "[" + ", ".join("[" + ", ".join(str(x) for x in r) + "]" for r in m) + "]"
    return (f"decimals: 3\nsteps:\n  resid1: {mat(r1)}\n  norm1.mean: {col(mean)}\n"
            f"  norm1.var: {col(var)}\n  norm1.std: {col(std)}\n  norm1: {mat(norm)}\n")


def test_rounding_carried_forward_honestly_is_correct(cli, spec_file):
    r1, mean, var, std, norm = _honest_chain()
    # the point of the test: σ ≈ 0.0137 magnifies rounding, so the person's normalised row is
    # off the truth (-1.2943...) at the 3rd decimal
    assert norm[0][0] == Decimal("-1.286")
    spec = write_spec(spec_file, ROUND_SPEC)
    code, data, steps = run_json(cli, spec_file, _chain_yaml(r1, mean, var, std, norm), spec)
    assert code == 0, steps
    for name in ("resid1", "norm1.mean", "norm1.var", "norm1.std", "norm1"):
        assert steps[name]["status"] == "correct", name
    e = steps["norm1"]["entries"][0]
    assert e["ok"] and e["given"] == "-1.286" and e["expected"] == "-1.294" and e["own"] == "-1.286"
    assert steps["norm1.var"]["entries"][0]["expected"] == "0.000187"  # judged at its 6 places


def test_rounding_chain_with_a_real_slip_is_wrong(cli, spec_file):
    r1, mean, var, std, norm = _honest_chain()
    norm[0][0] = Decimal("-1.290")  # neither the truth (-1.294) nor their own chain (-1.286)
    spec = write_spec(spec_file, ROUND_SPEC)
    code, data, steps = run_json(cli, spec_file, _chain_yaml(r1, mean, var, std, norm), spec)
    assert code == 1 and data["first_break"] == "norm1"
    assert [e["ok"] for e in steps["norm1"]["entries"]] == [False, True, True, True, True, True]


# ---------------------------------------------------------------- answer formats

EXACT_SPEC = """\
    dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
    block: {attention_scale: %s}
    weights:
      W_Q: [[1, 0], [0, 1]]
      W_K: [[1, 0], [0, 1]]
      W_V: [[1, 0], [0, 1]]
      W_O: [[1, 0], [0, 1]]
      W_1: [[1, 0], [0, 1]]
      W_2: [[1, 0], [0, 1]]
    inputs:
      X: [[1, 0], [0, 1]]
    """


@pytest.mark.parametrize("scale, step, value, ok", [
    # scores = X Xᵀ = I: integers, fractions
    ("none", "attn.h0.scores", "[[1, 0], [0, 1]]", True),
    ("none", "attn.h0.scores", '[["2/2", "0/5"], [0, "3/3"]]', True),
    ("none", "attn.h0.scores", '[[1, "1/2"], [0, 1]]', False),
    # no scale: softmax([1, 0]) = [e/(1+e), 1/(1+e)], written with E or exp(1)
    ("none", "attn.h0.weights", '[["E/(1+E)", "1/(1+E)"], ["1/(1+E)", "E/(1+E)"]]', True),
    ("none", "attn.h0.weights", '[["exp(1)/(1+exp(1))", "1/(E+1)"], ["1 - E/(1+E)", "exp(1)/(exp(1)+1)"]]', True),
    ("none", "attn.h0.weights", '[["E/(2+E)", "1/(1+E)"], ["1/(1+E)", "E/(1+E)"]]', False),
    # an exact entry must be exact: 0.7311 is the 4-place rounding, fine as a decimal...
    ("none", "attn.h0.weights", "[[0.7311, 0.2689], [0.2689, 0.7311]]", True),
    # ...but the same number as an exact expression string is not e/(1+e)
    ("none", "attn.h0.weights", '[["7311/10000", 0.2689], [0.2689, 0.7311]]', False),
    # 1/sqrt(2): sqrt expressions; decimals of sqrt(2)/2 = 0.70710678...
    ("sqrt_dk", "attn.h0.scaled", '[["sqrt(2)/2", 0], [0, "1/sqrt(2)"]]', True),
    ("sqrt_dk", "attn.h0.scaled", '[["2^(1/2)/2", 0], [0, "sqrt(2)/2"]]', True),
    ("sqrt_dk", "attn.h0.scaled", '[[0.707, 0], [0, 0.7071068]]', True),
    ("sqrt_dk", "attn.h0.scaled", '[[0.709, 0], [0, 0.707]]', False),
    ("sqrt_dk", "attn.h0.scaled", '[["sqrt(3)/2", 0], [0, "sqrt(2)/2"]]', False),
    # decimals written as strings are decimal entries too
    ("sqrt_dk", "attn.h0.scaled", '[["0.707", "0"], ["0", "0.707"]]', True),
])
def test_answer_formats(cli, spec_file, scale, step, value, ok):
    spec = write_spec(spec_file, EXACT_SPEC % scale)
    code, data, steps = run_json(cli, spec_file, f"steps:\n  {step}: {value}\n", spec)
    assert steps[step]["status"] == ("correct" if ok else "wrong")
    assert code == (0 if ok else 1)


def test_integer_is_exact_without_decimals_and_rounded_with(cli, spec_file):
    spec = write_spec(spec_file, EXACT_SPEC % "sqrt_dk")
    # sqrt(2)/2 = 0.707...: "1" is wrong as an exact integer, and wrong at 0 places too (rounds to 1!)
    code, _, steps = run_json(cli, spec_file, "steps:\n  attn.h0.scaled: [[1, 0], [0, 1]]\n", spec)
    assert steps["attn.h0.scaled"]["status"] == "wrong"
    code, _, steps = run_json(cli, spec_file,
                              "decimals: 0\nsteps:\n  attn.h0.scaled: [[1, 0], [0, 1]]\n", spec)
    assert steps["attn.h0.scaled"]["status"] == "correct"


def test_json_answers_file_and_flat_column(cli, spec_file):
    answers = json.dumps({"decimals": 3, "steps": {"norm1.mean": [1.5, 1.628, 2.146],
                                                   "resid1": [[2.401, 0.599], [1.504, 1.752], [2.576, 1.716]]}})
    # json.dumps writes 2.146 etc.; read back with exact decimals (not binary floats)
    code, data, steps = run_json(cli, spec_file, answers, name="answers.json")
    assert code == 0 and steps["norm1.mean"]["status"] == "correct"
    assert steps["resid1"]["entries"][3]["given"] == "1.752"


def test_masked_scores_with_minus_infinity(cli, spec_file):
    spec = write_spec(spec_file, (EXACT_SPEC % "none").replace("block: {attention_scale: none}",
                                                              "block: {attention_scale: none, causal: true}"))
    code, data, steps = run_json(cli, spec_file, """\
        steps:
          attn.h0.masked: [[1, -inf], [0, 1]]
          attn.h0.weights: [[1, 0], ["1/(1+E)", "E/(1+E)"]]
        """, spec)
    assert code == 0, steps
    assert steps["attn.h0.masked"]["entries"][1]["expected"] == "-inf"
    code, data, steps = run_json(cli, spec_file, "steps:\n  attn.h0.masked: [[1, 0], [0, 1]]\n", spec)
    assert code == 1 and steps["attn.h0.masked"]["status"] == "wrong"


# ---------------------------------------------------------------- bad answers files -> exit 2

@pytest.mark.parametrize("text, name, field, message", [
    ("steps:\n  zzz: [[1]]\n", "a.yaml", "steps.zzz", "no such step in this block; expected one of x, attn.out, resid1"),
    ("steps:\n  attn.q: [[1, 0], [0, 1], [1, 1]]\n", "a.yaml", "steps.attn.q", "not worked in this spec"),
    ("steps:\n  resid1: [[1, 2], [3, 4], [5]]\n", "a.yaml", "steps.resid1[2]", "expected shape 3×2, got a row of 1"),
    ("steps:\n  norm1.mean: [[1, 2], [3], [5, 6]]\n", "a.yaml", "steps.norm1.mean[0]", "expected shape 3×1, got a row of 2 (a 1-column step is a list of one-entry rows"),
    ("steps:\n  resid1: [1, 2]\n", "a.yaml", "steps.resid1", "one row of 2 for a 3×2 step: say which"),
    ("steps:\n  resid1: {row: 3, value: [1, 2]}\n", "a.yaml", "steps.resid1.row", "expected a whole number 0..2"),
    ("steps:\n  resid1: {row: 0, value: [1, 2, 3]}\n", "a.yaml", "steps.resid1.value", "expected one row of 2 entries"),
    ("steps:\n  resid1: {entries: {\"[3][0]\": 1}}\n", "a.yaml", "steps.resid1.entries.[3][0]", "expected a cell"),
    ("sig_figs: 0\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "sig_figs", "expected a whole number 1..30"),
    ("print: float16\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "print", "expected one of float32, float64"),
    ("steps:\n  resid1: 3\n", "a.yaml", "steps.resid1", "expected a 3×2 matrix"),
    ("steps:\n  resid1: {decimals: 2}\n", "a.yaml", "steps.resid1.value", "missing"),
    ("steps:\n  resid1: {value: [[1, 2]], places: 2}\n", "a.yaml", "steps.resid1.places", "unknown key"),
    ("decimals: -1\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "decimals", "expected a whole number 0..30"),
    ("decimals: 2.5\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "decimals", "expected a whole number"),
    ("decimal: 3\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "decimal", "unknown key"),
    ("Steps: {}\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "Steps", "did you mean steps?"),
    ("nmae: Ada\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "nmae",
     "unknown key (did you mean name?); expected one of id, name, decimals"),   # a swap difflib scores low
    ("stpes: {}\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "stpes", "did you mean steps?"),
    ("resid1: [[1, 2]]\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "resid1", "a step goes under steps:"),
    ("email: [a, b]\nsteps:\n  output: [[1, 1], [1, 1], [1, 1]]\n", "a.yaml", "email", "student data: expected text"),
    ("steps:\n  resid1: [[1, 2], [3, [4]], [5, 6]]\n", "a.yaml", "steps.resid1[1][1]", "got a list"),
    # one row of a matrix not a row: that row named, not "expected a 3×2 matrix ..., got a list"
    ("steps:\n  resid1: [abc, [3, 4], [5, 6]]\n", "a.yaml", "steps.resid1[0]", "expected one row of 2 entries, got the text 'abc'"),
    ("steps:\n  resid1: [[1, 2], {a: 1}, [5, 6]]\n", "a.yaml", "steps.resid1[1]", "expected one row of 2 entries, got a mapping"),
    ("decimals: 3\n", "a.yaml", "steps", "expected a mapping of step names"),
    ("steps: [resid1]\n", "a.yaml", "steps", "expected a mapping of step names"),
    ("steps:\n  resid1: [[1, 2]\n", "a.yaml", "line 3", "malformed YAML"),
    ('{"steps": {"resid1": [[1, 2]]', "a.json", "line 1", "malformed JSON"),
    ("", "a.yaml", None, "the file is empty"),
    ("- 1\n- 2\n", "a.yaml", None, "expected a mapping at the top level"),
])
def test_bad_answers_files(cli, spec_file, text, name, field, message):
    code, out, err, path = run(cli, spec_file, text, "seed-post-ln", name)
    assert code == 2 and out == ""
    prefix = f"symblock: error: {path}: " + (f"{field}: " if field else "")
    assert err.startswith(prefix), err
    assert message in err, err


DEEP = 40   # past the readers' limit of 32 levels, far short of Python's recursion limit


@pytest.mark.parametrize("name, text, field", [
    ("deep.yaml", "steps:\n  resid1: " + "[" * DEEP + "]" * DEEP + "\n", "line 2: "),
    ("deep.json", '{"steps": {"resid1": ' + "[" * DEEP + "]" * DEEP + "}}", ""),
    ("alias.yaml", "steps:\n  resid1: &a [*a]\n", "line 2: "),        # a list that holds itself
    ("indent.yaml", "steps:\n" + "".join("  " * (i + 1) + f"a{i}:\n" for i in range(DEEP)), "line 9: "),   # 33 below
    ("huge.yaml", "steps:\n  resid1: " + "[" * 10**5 + "]" * 10**5 + "\n", "line 2: "),
    ("huge.json", '{"steps": {"resid1": ' + "[" * 10**5 + "]" * 10**5 + "}}", ""),
])
def test_a_deep_answers_file_is_refused_in_the_spec_readers_words(cli, spec_file, name, text, field):
    """The answers reader's fast paths measure the nesting before building anything, as the spec
    reader does: a file 40 levels deep (which no recursion limit would stop) is refused too."""
    code, out, err, path = run(cli, spec_file, text, "seed-post-ln", name)
    assert code == 2 and out == ""
    assert err == f"symblock: error: {path}: {field}nested more than 32 levels deep\n"
    code, _, spec_err = cli("forward", path)     # the same text read as a spec: the same words
    assert code == 2 and spec_err == err


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_the_answers_reader_and_the_spec_reader_share_the_limit_of_32_levels(tmp_path, suffix):
    from symblock.engine import files
    from symblock.errors import SpecError
    from symblock.grading.answer_files import read
    for k, ok in ((31, True), (32, False)):   # {"a": k lists around 1}: the 1 is k + 1 levels deep
        text = '{"a": ' + "[" * k + "1" + "]" * k + "}"
        path = tmp_path / f"n{k}{suffix}"
        if ok:
            assert read(path, text)[0] == files.parse(text, str(path), suffix == ".json") != {}
            continue
        for reader in (lambda: read(path, text), lambda: files.parse(text, str(path), suffix == ".json")):
            with pytest.raises(SpecError) as e:
                reader()
            assert e.value.message == f"nested more than {files.MAX_NESTING} levels deep"


def test_an_unknown_top_level_key_kept_as_student_data_is_named(cli, spec_file):
    """A key that is neither the format's nor a near miss of one is the student's own data, kept, and
    `check` says so on stderr, naming the file, the key and the keys it expected (a near miss of a
    roster column suggested); student_id, email and section pass without a word."""
    steps = "steps:\n  output: [[1, 1], [1, 1], [1, 1]]\n"
    code, out, err, path = run(cli, spec_file, "emial: ada@example.org\nnickname: Ada\n" + steps, "seed-post-ln", "a.yaml")
    assert code in (0, 1) and out
    lines = [x for x in err.splitlines() if x.startswith("warning:")]
    assert lines[0] == (f"warning: {path}: emial: not a key of the answers format, kept as the student's own data "
                        "(did you mean email?); the format's keys are id, name, decimals, sig_figs, print, steps, "
                        "title, notes, and student data such as student_id, email, section")
    assert lines[1].startswith(f"warning: {path}: nickname: not a key of the answers format") and len(lines) == 2
    code, out, err, path = run(cli, spec_file, "student_id: s1\nemail: a@b.org\nsection: A\n" + steps, "seed-post-ln", "a.yaml")
    assert "warning:" not in err


@pytest.mark.parametrize("value, given, reason", [
    ("abc", "abc", "not a number: 'abc'"),
    ('"1/0"', "1/0", "not a number: '1/0'"),
    ("true", "True", "not a number: 'True'"),
    ("-inf", "-inf", "-inf only in a masked step: '-inf'"),
    ('"1,234.5"', "1,234.5", "ambiguous comma: '1,234.5'"),
    ('"<b>x</b>"', "<b>x</b>", "not a number: '<b>x</b>'"),
    ('"2*_2"', "2*_2", "not a number: '2*_2'"),
    ('"' + "x" * 5000 + '"', "x" * 23 + "…", "not a number: '" + "x" * 23 + "…'"),
    ("1" * 1001, "1" * 23 + "…", "too large to read: '" + "1" * 23 + "…'"),    # one absurd entry, not the file
    ("1" * 5000, "1" * 23 + "…", "too large to read: '" + "1" * 23 + "…'"),    # past Python's int text limit
    ('"' + "1" * 1001 + '"', "1" * 23 + "…", "too large to read: '" + "1" * 23 + "…'"),
])
def test_an_unreadable_entry_is_that_entry_wrong_and_the_rest_is_marked(cli, spec_file, value, given, reason):
    """resid1[1][1] unreadable, the seed article's other resid1 entries right (2.401 0.599 / 1.504 . /
    2.576 1.716): that one entry wrong with the reason quoted short and as written, the other five
    correct, and norm1.mean, worked from the true resid1[1][1] (1.628 = (1.504 + 1.752)/2), correct."""
    text = (f"decimals: 3\nsteps:\n  resid1: [[2.401, 0.599], [1.504, {value}], [2.576, 1.716]]\n"
            "  norm1.mean: [[1.5], [1.628], [2.146]]\n")
    code, _, steps = run_json(cli, spec_file, text)
    marks = [(e["mark"], e["given"]) for e in steps["resid1"]["entries"]]
    assert code == 1 and steps["resid1"]["status"] == "wrong" and steps["norm1.mean"]["status"] == "correct"
    assert marks == [("correct", "2.401"), ("correct", "0.599"), ("correct", "1.504"), ("wrong", given),
                     ("correct", "2.576"), ("correct", "1.716")]
    assert steps["resid1"]["entries"][3]["expected"] == "1.752"
    code, out, err, _ = run(cli, spec_file, text)
    line = next(l for l in out.splitlines() if "row 2, col 2" in l)
    assert code == 1 and line.endswith(f"wrong  ({reason}" + ("" if "comma" not in reason else
                                                                " (write the decimal with a point: 1234.5)") + ")")
    assert "diagnosis" not in out   # an entry that is no number is no mistake the catalogue could name


def test_a_wrong_number_beside_an_unreadable_entry_still_says_no_mistake_reproduces_it(cli, spec_file):
    text = ("decimals: 3\nsteps:\n  resid1: [[2.401, 0.599], [1.504, abc], [2.576, 1.816]]\n")
    code, out, _, _ = run(cli, spec_file, text)
    assert code == 1 and "diagnosis: none of the catalogued mistakes reproduces these numbers" in out


@pytest.mark.parametrize("value", ["1" * 1001, "1" * 5000])
def test_a_json_whole_number_too_long_to_read_is_that_entry_wrong(cli, spec_file, value):
    """As in YAML: a JSON answers file with one whole number of more than 1000 digits is marked, that
    entry wrong as too large to read (the seed article's other resid1 entries right)."""
    text = ('{"decimals": 3, "steps": {"resid1": [[2.401, 0.599], [1.504, ' + value + '], [2.576, 1.716]]}}')
    code, out, err, _ = run(cli, spec_file, text, "seed-post-ln", "answers.json")
    line = next(l for l in out.splitlines() if "row 2, col 2" in l)
    assert code == 1 and line.endswith("wrong  (too large to read: '" + "1" * 23 + "…')"), out + err


def test_missing_answers_file(tmp_path, capsys):
    code = main(["check", "seed-post-ln", str(tmp_path / "nope.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "nope.yaml: no such answers file" in err
    # one argument is the answers file: the message is about answers, not "give a spec path"
    code = main(["check", str(tmp_path / "nope.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "nope.yaml: no such answers file" in err and "spec" not in err, err


def test_answers_need_both_arguments(capsys):
    assert main(["check", "seed-post-ln"]) == 2
    assert "ANSWERS" in capsys.readouterr().err


# ---------------------------------------------------------------- JSON shape, CLI

def test_json_shape(cli, spec_file):
    code, data, steps = run_json(cli, spec_file, """\
        decimals: 3
        steps:
          resid1: [[2.501, 0.599], [1.504, 1.752], [2.576, 1.716]]
        """)
    assert set(data) >= {"ok", "steps", "first_break"}
    assert [s["name"] for s in data["steps"]] == [
        "x", "attn.out", "resid1", "norm1.mean", "norm1.var", "norm1.std", "norm1", "ffn.hidden",
        "ffn.act", "ffn.out", "resid2", "norm2.mean", "norm2.var", "norm2.std", "norm2", "output"]
    for s in data["steps"]:
        assert set(s) >= {"name", "status", "entries", "diagnosis"}
        assert s["status"] in ("correct", "wrong", "carried", "missing", "given")
        assert isinstance(s["diagnosis"], list)
    entries = steps["resid1"]["entries"]
    assert len(entries) == 6
    assert all(set(e) >= {"row", "col", "given", "expected", "ok"} for e in entries)
    assert steps["resid1"]["diagnosis"] == []  # 0.1 off: no catalogued slip, not rounding


def test_help_describes_check(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    assert "SPEC" in out and "ANSWERS" in out and "carried" in out


# ---------------------------------------------------------------- variance around the person's own mean

OWN_MEAN_SPEC = """\
    dims: {seq_len: 2, d_model: 3, d_ff: 1, heads: 1}
    weights:
      W_1: [[1], [0], [0]]
      W_2: [[1, 0, 0]]
    inputs:
      X: [[1, 0, 0], [0, 1, 0]]
    given:
      attn.out: [[0, 2, 4], [0, 0, 1]]
    """


def _var_around(row, mean) -> Decimal:
    """A person's variance: deviations from the mean *they wrote*, squared, averaged (decimal)."""
    getcontext().prec = 50
    return _r(sum((Decimal(v) - mean) ** 2 for v in row) / len(row), 6)


@pytest.mark.parametrize("resid1, status", [
    # resid1 = X + attn.out = [[1, 2, 4], [0, 1, 1]]: means 7/3 and 2/3, written 2.33 and 0.67
    # (right at 2 places); variances 14/9 and 2/9 move by (1/300)² around the rounded means
    (None, "correct"),
    # a slip (4 → 5) carried: mean 8/3 written 2.67, variance around 2.67
    ([[1, 2, 5], [0, 1, 1]], "carried"),
])
def test_variance_around_the_persons_own_rounded_mean(cli, spec_file, resid1, status):
    rows = resid1 or [[1, 2, 4], [0, 1, 1]]
    mean = [_r(Decimal(sum(r)) / 3, 2) for r in rows]
    var = [_var_around(r, m) for r, m in zip(rows, mean)]
    exact_var = [_var_around(r, Decimal(sum(r)) / 3) for r in rows]
    assert [str(v) for v in var] == (["1.555567", "0.222233"] if resid1 is None else ["2.888900", "0.222233"])
    assert all(v != e for v, e in zip(var, exact_var))  # visible at 6 places: the point of the test
    text = "decimals: 2\nsteps:\n"
    if resid1:
        text += f"  resid1: {resid1}\n"
    text += f"  norm1.mean: [[{mean[0]}], [{mean[1]}]]\n  norm1.var: [[{var[0]}], [{var[1]}]]\n"
    code, data, steps = run_json(cli, spec_file, text, write_spec(spec_file, OWN_MEAN_SPEC))
    assert steps["norm1.mean"]["status"] == status
    assert steps["norm1.var"]["status"] == status, steps["norm1.var"]
    e = steps["norm1.var"]["entries"][0]
    assert e["ok"] and e["own"] == str(var[0])
    if resid1 is None:
        assert code == 0 and e["expected"] == "1.555556"
    # the variance around the person's mean kept unrounded (7/3 or 8/3, not 2.33 or 2.67) is right
    # too: the truth without a wrong answer, the error carried forward with one, as it is when rounded
    unrounded = text.replace(str(var[0]), str(exact_var[0]))
    code, data, steps = run_json(cli, spec_file, unrounded, write_spec(spec_file, OWN_MEAN_SPEC))
    assert steps["norm1.var"]["status"] == status
    # a variance around neither mean is wrong
    other = text.replace(str(var[0]), str(exact_var[0] + Decimal("0.01")))
    code, data, steps = run_json(cli, spec_file, other, write_spec(spec_file, OWN_MEAN_SPEC))
    assert steps["norm1.var"]["status"] == "wrong"


@pytest.mark.parametrize("steps, en, zh", [
    ("  norm1.men: [[1.5]]", "no such step in this block; did you mean norm1.mean? expected one of x, attn.out,",
     "steps.norm1.men: 这个结构中没有这一步（是不是想写 norm1.mean？）；应为以下之一：x, attn.out,"),
    ("  zzz: [[1.5]]", "no such step in this block; expected one of x, attn.out,",
     "steps.zzz: 这个结构中没有这一步；应为以下之一：x, attn.out,"),
    ("  resid1: [[2.401, 0.599], [1.504]]", "expected shape 3×2, got a row of 1", "steps.resid1[1]: 形状应为 3×2，这一行却有 1 个数"),
    ("  resid1: {entries: {\"[5][0]\": 1}}", "with i in 0..2 and j in 0..1",
     "steps.resid1.entries.[5][0]: 应为单元格 \"[i][j]\" 或 \"i,j\"，其中 i 为 0..2，j 为 0..1"),
    ("  resid1: {row: 7, value: [1, 2]}", "expected a whole number 0..2 (counted from 0), got 7",
     "steps.resid1.row: 应为 0..2 的整数（从 0 数），实际是 7"),
    ("  resid1: {col: 1, value: [1, 2]}", "goes with row (one entry:", "steps.resid1.col: col 要与 row 一起给出（一个数："),
    ("  resid1: [[2.401, 0.599]]\ndecimal: 3", "unknown key (did you mean decimals?)",
     "decimal: 未知的键（是不是想写 decimals？）；应为 id, name, decimals,"),
    ("  resid1: [[2.401, 0.599]\n", "malformed YAML: ", "YAML 格式有误："),   # the YAML reader's own words stay
])
def test_an_answers_files_error_is_said_in_chinese_with_lang_zh(tmp_path, capsys, steps, en, zh):
    """What is wrong inside an answers file (its field, then what was expected) is said in the
    report's language: the field as written, the words in Chinese; in English without --lang zh."""
    path = tmp_path / "a.yaml"
    path.write_text(f"decimals: 3\nsteps:\n{steps}\n", encoding="utf-8")
    assert main(["check", "seed-post-ln", str(path), "--lang", "zh"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symblock: error: {path}: ") and zh in err and en not in err, err
    assert main(["check", "seed-post-ln", str(path)]) == 2
    err = capsys.readouterr().err
    assert en in err and zh not in err, err


def test_each_chinese_input_error_uses_only_the_groups_its_pattern_has():
    """A Chinese message naming a group its English pattern lacks would fail as it is said."""
    import re as re_
    import string
    from symblock.grading.lang import INPUT_ERRORS_ZH
    for pattern, zh in INPUT_ERRORS_ZH:
        used = {int(f) for _, f, _, _ in string.Formatter().parse(zh) if f is not None}
        assert used <= set(range(re_.compile(pattern).groups)), (pattern, zh)


# preset-medium-v2.4's X row 2 is (−3, −1, −1.5, 0.5): mean −1.25, deviations ±1.75 and ±0.25, so
# σ² = (2·1.75² + 2·0.25²)/4 = 6.25/4 = 1.5625, an exact tie at 3 places (row 1: mean −1, σ² = 36/4 = 9).
@pytest.mark.parametrize("given, mark", [
    ("1.563", "correct"), ("1.562", "correct"),   # both roundings of the tie are right
    ("1.564", "slip"), ("1.561", "slip"),         # one unit off either: 1.5 units from 1.5625 both ways
    ("1.565", "wrong"), ("1.560", "wrong"),
])
def test_a_slip_at_a_rounding_tie_is_one_unit_off_either_right_rounding(cli, spec_file, given, mark):
    path = spec_file(f"id: preset-medium-v2.4\ndecimals: 3\nsteps:\n  norm1.var: [[9.0], [{given}]]\n", "answers.yaml")
    code, out, err = cli("check", path, "--json")
    step = next(s for s in json.loads(out)["steps"] if s["name"] == "norm1.var")
    assert step["entries"][1]["given"] == given and step["entries"][1]["exact"] == "25/16"
    assert step["entries"][1]["mark"] == mark and code == (1 if mark == "wrong" else 0)


def test_in_chinese_a_rounding_slip_is_not_called_rounding(cli, spec_file):
    """σ² = 0.811801 written 0.813: one unit off, a slip; in Chinese its label is 小错 (a small slip),
    not 舍入 ("rounding"), which read as the status of an answer merely rounded to fewer places."""
    code, out, _, _ = run(cli, spec_file, "decimals: 3\nsteps:\n  norm1.var: [[0.813], [0.0154], [0.185]]\n",
                          "seed-post-ln", "answers.yaml", "--lang", "zh")
    assert code == 0 and "  ~ 小错  norm1.var   舍入失误（末位差一个单位）" in out, out
    assert "0.812 (= 811801/1000000)  小错" in out
