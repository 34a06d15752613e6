"""Marks a teacher can trust: provenance of an earlier wrong answer survives a step whose summary is
a rounding slip; an exact tie at the asked places is accepted rounded either way; a partly blank
step names its blank entries; the printed total is the sum of the printed task columns.

Every expected number is worked by hand (or with Python's decimal module), never by symblock."""
import json
import re
import textwrap
from decimal import Decimal
from fractions import Fraction

import pytest

from symblock.cli import main

# A 2×2 block with identity weights and no scaling: X = I, so the scores are Q Kᵀ = I, each weight
# row is softmax(1, 0) or softmax(0, 1), and attn.h0.out = weights · V = weights (V = X = I).
# By hand: e/(1+e) = 0.731059 → 0.7311, 1/(1+e) = 0.268941 → 0.2689; e²/(1+e²) = 0.880797 → 0.8808,
# 1/(1+e²) = 0.119203 → 0.1192.
IDENTITY_SPEC = """\
    dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
    block: {attention_scale: none}
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

# scores[0][0] answered 2 (truth 1); weights row 1 from that wrong score (softmax(2, 0), carried),
# row 2 with a one-unit slip (0.2690 for 0.2689); out row 1 follows the carried weights.
SLIP_OVER_CARRIED = """\
    decimals: 4
    steps:
      attn.h0.scores: [[2, 0], [0, 1]]
      attn.h0.weights: [[0.8808, 0.1192], [0.2690, 0.7311]]
      attn.h0.out: [[0.8808, 0.1192], [0.2689, 0.7311]]
    """


def _write(spec_file, name: str, text: str) -> str:
    return str(spec_file(textwrap.dedent(text), name))


def _check_json(cli, spec_file, answers: str, spec: str = IDENTITY_SPEC):
    code, out, err = cli("check", _write(spec_file, "spec.yaml", spec), _write(spec_file, "answers.yaml", answers), "--json")
    assert err == ""
    return code, {s["name"]: s for s in json.loads(out)["steps"]}


# ---------------------------------------------------------------- a slip does not hide a carried error

def test_a_slip_step_passes_on_the_wrong_answer_it_rests_on(cli, spec_file):
    code, steps = _check_json(cli, spec_file, SLIP_OVER_CARRIED)
    assert code == 1 and steps["attn.h0.scores"]["status"] == "wrong"
    weights = steps["attn.h0.weights"]
    assert weights["status"] == "slip"
    assert [e["mark"] for e in weights["entries"]] == ["carried", "carried", "slip", "correct"]
    assert weights["built_on"] == ["attn.h0.scores"]   # the status does not hide it
    out = steps["attn.h0.out"]
    assert [e["mark"] for e in out["entries"]] == ["carried", "carried", "correct", "correct"]
    assert out["status"] == "carried" and out["built_on"] == ["attn.h0.scores"]


def test_a_slip_over_carried_entries_is_not_full_credit_under_carried_below_1(spec_file):
    from symblock.grading import answers, marking
    from symblock.grading.marking import Marker
    from symblock.grading.points import Credit
    import symblock
    spec = symblock.load(_write(spec_file, "spec.yaml", IDENTITY_SPEC))
    trace = symblock.forward(spec)
    from symblock.exercises import variant
    marker = Marker.of(variant.build("", trace, variant.Options.for_answers(spec, {})))
    data, source = answers.read(_write(spec_file, "answers.yaml", SLIP_OVER_CARRIED))
    steps = {s.name: s for s in marker.mark(data, source).steps}
    half = Credit(carried=Fraction(1, 2))
    # out: two carried entries at 1/2, two correct at 1, one point shared by 4 entries: 3/4
    assert half.task(steps["attn.h0.out"], 1) == Fraction(3, 4)
    # weights: two carried at 1/2, a slip at 1/2, one correct: (1/2 + 1/2 + 1/2 + 1) / 4 = 5/8
    assert half.task(steps["attn.h0.weights"], 1) == Fraction(5, 8)
    assert marking.CARRIED == steps["attn.h0.out"].status


def test_the_text_report_names_what_a_slip_step_rests_on(spec_file, capsys):
    main(["check", _write(spec_file, "spec.yaml", IDENTITY_SPEC), _write(spec_file, "answers.yaml", SLIP_OVER_CARRIED)])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "attn.h0.weights" in x)
    assert "slip" in line and "attn.h0.scores" in line


def test_a_blank_filled_from_the_wrong_chain_passes_the_wrong_answer_on(cli, spec_file):
    # weights row 1 left blank (the chain fills it from the wrong score: softmax(2, 0)), row 2 right:
    # out row 1 = 0.8808, 0.1192 rests on the wrong score all the same.
    code, steps = _check_json(cli, spec_file, """\
        decimals: 4
        steps:
          attn.h0.scores: [[2, 0], [0, 1]]
          attn.h0.weights: [null, [0.2689, 0.7311]]
          attn.h0.out: [[0.8808, 0.1192], [0.2689, 0.7311]]
        """)
    assert steps["attn.h0.weights"]["status"] == "partly_blank"   # its answered row right, one blank
    assert [e["mark"] for e in steps["attn.h0.weights"]["entries"]] == ["blank", "blank", "correct", "correct"]
    out = steps["attn.h0.out"]
    assert [e["mark"] for e in out["entries"]] == ["carried", "carried", "correct", "correct"]
    assert out["built_on"] == ["attn.h0.scores"]


def test_a_step_answered_right_passes_nothing_on(cli, spec_file):
    # the wrong score, then weights put right from the truth: out from the right weights is correct
    code, steps = _check_json(cli, spec_file, """\
        decimals: 4
        steps:
          attn.h0.scores: [[2, 0], [0, 1]]
          attn.h0.weights: [[0.7311, 0.2689], [0.2689, 0.7311]]
          attn.h0.out: [[0.7311, 0.2689], [0.2689, 0.7311]]
        """)
    assert "built_on" not in steps["attn.h0.weights"] and "built_on" not in steps["attn.h0.out"]
    assert steps["attn.h0.out"]["status"] == "correct"


# ---------------------------------------------------------------- an exact tie, rounded either way

def _entry(text: str, decimals=None):
    from symblock.grading import answers
    return answers.parse_entry(text, decimals, "<test>", "steps.x[0][0]")


@pytest.mark.parametrize("text, mark", [
    ("1.563", "correct"),   # half away from zero (the sheets' rounding)
    ("1.562", "correct"),   # half to even, as Python's round() and NumPy give 25/16 at 3 places
    ("1.561", "slip"),      # one unit off 1.562, 1.5 units of the last place from 1.5625 ...
    ("1.564", "slip"),      # ... as 1.564 is, one unit off 1.563
    ("1.560", "wrong"),
    ("1.56", "rounded"),    # 2 places: 1.5625 is no tie there
    ("-1.562", "wrong"),
])
def test_an_exact_tie_is_accepted_rounded_either_way(text, mark):
    from symblock.engine import exact
    from symblock.grading import marking
    assert f"{round(1.5625, 3)}" == "1.562" and f"{Decimal('1.5625').quantize(Decimal('0.001'), 'ROUND_HALF_UP')}" == "1.563"
    assert marking.judge(_entry(text, 3), exact.real(Fraction(25, 16)), None, None)[0] == mark


def test_a_negative_tie_and_a_near_tie():
    from symblock.engine import exact
    from symblock.grading import marking
    tie = exact.real(Fraction(-25, 16))             # −1.5625
    assert marking.matches(_entry("-1.563", 3), tie) and marking.matches(_entry("-1.562", 3), tie)
    near = exact.real(Fraction(15626, 10000))      # 1.5626: no tie, only 1.563
    assert marking.matches(_entry("1.563", 3), near) and not marking.matches(_entry("1.562", 3), near)


TIE_SPEC = IDENTITY_SPEC.replace("X: [[1, 0], [0, 1]]", "X: [[1, 0], [0, 0]]")


@pytest.mark.parametrize("written", ["0.3", "0.2"])
def test_check_marks_a_tie_rounded_half_to_even_correct(cli, spec_file, written):
    # X row 2 is zero: its scores are 0, 0, its weights 1/2, 1/2, its out 1/2 · V row 1 = (1/2, 0),
    # so resid1 row 2 = (1/2, 0) and its mean 1/4 = 0.25, a tie at 1 place.
    code, steps = _check_json(cli, spec_file, f"decimals: 1\nsteps:\n  norm1.mean: [null, [{written}]]\n", TIE_SPEC)
    mean = steps["norm1.mean"]   # row 1 left blank: partly blank (exit 1), its answered tie correct
    assert mean["status"] == "partly_blank" and [e["mark"] for e in mean["entries"]] == ["blank", "correct"]
    assert code == 1 and all(s["status"] != "wrong" for s in steps.values())


# TIE_SPEC's norm1.mean row 2 is 1/4 (see above), exactly halfway at 1 place: 0.3 (half away from zero)
# and 0.2 (half to even) are both right, and the report must say so, not just "expected 0.3".
@pytest.mark.parametrize("lang, words", [
    ("en", "expected 0.3 or 0.2 (= 1/4, exactly halfway: either rounding is right)  ok"),
    ("zh", "应为 0.3 或 0.2 (= 1/4，恰好在两者正中：两种舍入都算对)  对"),
])
def test_check_all_says_that_both_roundings_of_a_tie_are_right(spec_file, capsys, lang, words):
    spec = _write(spec_file, "spec.yaml", TIE_SPEC)
    answers = _write(spec_file, "answers.yaml", "decimals: 1\nsteps:\n  norm1.mean: [null, [0.2]]\n")
    main(["check", spec, answers, "--all", "--lang", lang])
    line = next(x for x in capsys.readouterr().out.splitlines() if "0.2 " in x and ("col 1" in x or "第 1 列" in x))
    assert line.strip().endswith(words), line


def test_check_json_gives_a_ties_other_rounding_and_only_there(cli, spec_file):
    code, steps = _check_json(cli, spec_file, "decimals: 3\nsteps:\n  norm1.mean: [null, [0.25]]\n", TIE_SPEC)
    assert [e.get("tie") for e in steps["norm1.mean"]["entries"] if e["mark"] != "blank"] == [None]   # 0.250 is no tie at 3
    code, steps = _check_json(cli, spec_file, "decimals: 1\nsteps:\n  norm1.mean: [null, [0.3]]\n", TIE_SPEC)
    entry = steps["norm1.mean"]["entries"][1]
    assert entry["expected"] == "0.3" and entry["tie"] == "0.2" and entry["mark"] == "correct"


@pytest.mark.parametrize("value, places, other", [
    ("25/16", 3, "1.562"), ("-25/16", 3, "-1.562"), ("1/8", 2, "0.12"), ("-1/8", 2, "-0.12"),
    ("1/2000", 3, "0"), ("15626/10000", 3, None), ("1/3", 3, None), ("5/2", 0, "2")])
def test_the_other_rounding_of_an_exact_tie(value, places, other):
    """Half away from zero gives 1.563, 0.13, 0.001, 3; the other rounding is one unit nearer zero."""
    from symblock.engine import exact
    from symblock.grading.points import other_rounding
    got = other_rounding(exact.real(Fraction(value)), places)
    assert got == (None if other is None else Fraction(other))


@pytest.mark.parametrize("lang, words", [
    ("en", "half away from zero; a number exactly halfway may be rounded either way"),
    ("zh", "四舍五入；恰好在两数正中的，向上或向下舍入都算对"),
])
def test_the_sheet_states_the_rounding_it_expects(tmp_path, capsys, lang, words):
    assert main(["worksheet", "seed-post-ln", "--out", str(tmp_path / "ws"), "--format", "markdown",
                 "--lang", lang]) == 0
    assert words in (tmp_path / "ws" / "sheet.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------- blanks named

def test_check_names_the_blank_entries_of_a_partly_blank_step(spec_file, capsys):
    spec, answers = _write(spec_file, "spec.yaml", IDENTITY_SPEC), _write(
        spec_file, "answers.yaml", "steps:\n  attn.v: [[1, null], [null, 1]]\n")   # V = X = I
    assert main(["check", spec, answers]) == 1   # nothing wrong, but not done
    out = capsys.readouterr().out
    # half answered, the half given right: partly blank (◐), never ✓, and counted so
    assert re.search(r"◐ correct  attn\.v +partly blank: 2 of 4 entries answered", out) and "✓ correct  attn.v" not in out
    assert "2 blank: row 1 col 2, row 2 col 1" in out and "(1 partly blank, " in out and " correct" not in out.splitlines()[-1]
    assert main(["check", spec, answers, "--lang", "zh"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"◐ 正确 +attn\.v +部分未答：答了 2/4 个数", out) and "（部分未答 1，" in out
    assert "2 个数未答：第 1 行第 2 列，第 2 行第 1 列" in out


def test_grade_feedback_names_the_blank_entries(tmp_path, capsys, monkeypatch):
    import numpy as np
    import yaml
    from symblock.engine.spec import example_text
    monkeypatch.chdir(tmp_path)
    assert main(["worksheet", "pre-ln-causal-gelu", "--preset", "norm", "--variants", "2", "--out", "set"]) == 0
    X = np.array(yaml.safe_load(example_text("pre-ln-causal-gelu"))["inputs"]["X"], dtype=float)
    path = tmp_path / "set" / "students" / "pre-ln-causal-gelu.1" / "answers.yaml"
    data = yaml.safe_load(path.read_text())
    mean0 = Decimal(repr(float(X[0].mean()))).quantize(Decimal("0.001"), "ROUND_HALF_UP")   # worked in NumPy
    data["name"] = "Ada"
    data["steps"]["norm1.mean"] = [[str(mean0)]] + [None] * (len(X) - 1)
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "ada.yaml").write_text(yaml.safe_dump(data))
    blank_rows = ", ".join(f"row {i + 1} col 1" for i in range(1, len(X)))
    for lang, words, line in (("en", "correct, partly blank", f"{len(X) - 1} blank: {blank_rows}"),
                              ("zh", "正确，部分未答", f"{len(X) - 1} 个数未答：第 2 行第 1 列")):
        capsys.readouterr()
        assert main(["grade", "set", "answers", "--lang", lang, "--out", f"graded-{lang}"]) == 0
        feedback = (tmp_path / f"graded-{lang}" / "feedback" / "Ada.md").read_text(encoding="utf-8")
        row = next(x for x in feedback.splitlines() if x.startswith("| `norm1.mean`"))
        assert words in row
        assert line in feedback
        # the summary's blank column: the share of the class's entries left blank, len(X) − 1 of len(X)
        summary = (tmp_path / f"graded-{lang}" / "summary.md").read_text(encoding="utf-8")
        head = next(x for x in summary.splitlines() if x.startswith("| task") or x.startswith("| 题目"))
        assert head.split(" | ")[4] == ("blank entries" if lang == "en" else "未答数占比")
        row = next(x for x in summary.splitlines() if x.startswith("| `norm1.mean`"))
        assert row.split(" | ")[4] == f"{round(100 * (len(X) - 1) / len(X))}%", row


# ---------------------------------------------------------------- totals add up

def _klass(scores: list[dict], asked=("a", "b", "c")):
    from symblock.grading.gradebook import Class, Graded
    graded = [Graded(f"s{i}.yaml", f"S{i}", f"set.{i}", None, dict(sc)) for i, sc in enumerate(scores)]
    return Class({"asked": list(asked), "points": {}, "spec_token": "set"}, graded, [])


def test_a_gradebook_total_is_the_sum_of_its_task_columns():
    import csv
    import io
    from symblock.grading import gradebook
    third = Fraction(1, 3)   # 0.333…: printed 0.33 three times, exact total 1 (printed 1.00 until now)
    cls = _klass([{"a": third, "b": third, "c": third}, {"a": Fraction(2, 3), "b": Fraction(1, 2), "c": Fraction(1)}])
    rows = list(csv.DictReader(io.StringIO(gradebook.gradebook_csv(cls))))
    for row in rows:
        assert Decimal(row["total"]) == sum(Decimal(row[s]) for s in "abc"), row
    assert [row["total"] for row in rows] == ["0.99", "2.17"]   # 0.33·3; 0.67 + 0.50 + 1.00


def test_the_feedback_total_and_the_mean_use_the_printed_totals():
    from symblock.grading import report
    from symblock.grading.points import Credit
    third = Fraction(1, 3)
    cls = _stepped(_klass([{"a": third, "b": third, "c": third}, {"a": third, "b": third, "c": third}]))
    assert "mean total 0.99 of 3" in report.summary_text(cls)
    assert "0.99 of 3 points" in report.feedback_md(cls.graded[0], cls, Credit())


def _stepped(cls):
    """The class with a marked result per file (feedback reads each task's status)."""
    from symblock.grading.marking import CheckResult, StepResult
    for g in cls.graded:
        g.result = CheckResult([StepResult(s, "correct") for s in cls.asked], "spec", g.file, None)
    return cls


@pytest.mark.parametrize("lang, words", [("en", "no file graded"), ("zh", "没有批改任何文件")])
def test_a_summary_with_no_file_graded_says_so(lang, words):
    from symblock.grading import report
    from symblock.grading.gradebook import Rejected
    from symblock.grading.points import Credit
    cls = _klass([])
    cls.rejected.append(Rejected("x.yaml", "X", None, "no id"))
    summary = report.task_table_md(cls, Credit(), lang)
    assert words in summary and "0.00" not in summary
    if lang == "en":
        assert report.summary_text(cls).startswith("no file graded, 1 not graded")


# ---------------------------------------------------------------- a carried error worked on unrounded

# X = I, W_Q = I, W_K = 9·I, no scaling: Q = I, K = 9·I, scores = Q Kᵀ = 9·I. A student who takes
# Q₁₁ as 1/3 writes 0.333 and, working on with 1/3 itself, scores₁₁ = 9 · 1/3 = 3.000; from the
# 0.333 they wrote it would be 2.997, three units away.
AMPLIFIED_SPEC = IDENTITY_SPEC.replace("W_K: [[1, 0], [0, 1]]", "W_K: [[9, 0], [0, 9]]")
UNROUNDED_CARRY = """\
    decimals: 3
    steps:
      attn.q: [[0.333, 0], [0, 1]]
      attn.k: [[9, 0], [0, 9]]
      attn.h0.scores: [[{s}, 0], [0, 9]]
    """


@pytest.mark.parametrize("written", ["3.000", "2.997"])
def test_an_error_carried_on_unrounded_or_as_written_is_charged_once(cli, spec_file, written):
    code, steps = _check_json(cli, spec_file, UNROUNDED_CARRY.format(s=written), AMPLIFIED_SPEC)
    assert code == 1 and steps["attn.q"]["status"] == "wrong"
    scores = steps["attn.h0.scores"]
    assert scores["status"] == "carried" and scores["built_on"] == ["attn.q"]
    assert [e["mark"] for e in scores["entries"]] == ["carried", "correct", "correct", "correct"]


def test_a_carried_value_neither_unrounded_nor_as_written_is_wrong(cli, spec_file):
    code, steps = _check_json(cli, spec_file, UNROUNDED_CARRY.format(s="3.010"), AMPLIFIED_SPEC)
    assert steps["attn.h0.scores"]["status"] == "wrong"


@pytest.mark.parametrize("lo, hi, simplest", [
    ("-1.6675", "-1.6665", "-5/3"), ("0.3325", "0.3335", "1/3"), ("7.1245", "7.1255", "57/8"),
    ("-0.0005", "0.0005", "0"), ("2.0825", "2.0835", "25/12"), ("1.4995", "1.5005", "3/2")])
def test_the_simplest_rational_a_written_decimal_allows(lo, hi, simplest):
    from symblock.grading.answers import simplest_between
    assert simplest_between(Fraction(lo), Fraction(hi)) == Fraction(simplest)


@pytest.mark.parametrize("text, places, expected", [
    ("7/2", 0, "4"), ("-5/2", 0, "-3"), ("1/8", 2, "0.13"), ("-1/8", 2, "-0.13"),     # halves away from zero
    ("exp(17/9)/(exp(17/9) + exp(11/9))", 3, "0.661"),     # 1/(1 + e^(-2/3)) = 0.66075…
    ("sqrt(2)", 12, "1.414213562373"), ("-sqrt(3)/2", 4, "-0.8660"), ("4 - E", 5, "1.28172"),
    ("tanh(1/2) + erf(1)", 6, "1.304818"), ("sin(pi/6)", 3, "0.500"),
])
def test_a_stored_answer_is_rounded_without_its_variant(text, places, expected):
    """What the identity check reads of a variant it has not drawn: the stored entry rounded half away
    from zero (hand-worked and float values: tanh(½) = 0.462117…, erf(1) = 0.842701…)."""
    from decimal import Decimal
    from symblock.exercises.variant import stored_rounded
    assert stored_rounded(text, places, "answers.x[0][0]") == Decimal(expected)


@pytest.mark.parametrize("text, places", [
    ("0.1235000000000000000000000000000000000000", 3),   # a stored decimal on a tie: its digits cannot tell
    ("2**(1/2)", 3),                                      # outside the forms read without SymPy
])
def test_a_stored_answer_that_cannot_decide_its_rounding_leaves_it_to_the_drawn_variant(text, places):
    from symblock.exercises.variant import UNDECIDED, stored_rounded
    assert stored_rounded(text, places, "answers.x[0][0]") is UNDECIDED


def test_a_stored_minus_infinity_has_no_rounded_value():
    from symblock.exercises.variant import stored_rounded
    assert stored_rounded("-oo", 3, "answers.x[0][0]") is None


# ---------------------------------------------------------------- a rounding slip carried on is charged once

# resid1 = X + A: row 1 (0, 0, 1), mean 1/3, σ² = 2/9, σ = √2/3 = 0.471405 → 0.471; row 2 (0, 1, 1),
# mean 2/3, the same σ. The student slips on σ₁ (0.472) and works on with it, keeping the mean 1/3
# unrounded, as a calculator's memory does:
#   norm1₁ = (−1/3, −1/3, 2/3) / 0.472 = (−0.706215, −0.706215, 1.412429) → −0.706, −0.706, 1.412
#   (the truth is −0.707, −0.707, 1.414; from 0.333 and 0.472 as written, 1.413);
#   ffn.hidden₁ = (7·n₀ + 2·n₂, n₁) = −2.118644 → −2.119, −0.706 (the truth −2.121; from the written
#   −0.706 and 1.412, −2.118; with n₀ from the written mean, −2.114). Row 2 is the truth:
#   norm1₂ = (−√2, √2/2, √2/2) → −1.414, 0.707, 0.707; ffn.hidden₂ = (−3√2·2 + √2, √2/2) → −8.485, 0.707.
SLIP_SPEC = """\
    dims: {seq_len: 2, d_model: 3, d_ff: 2, heads: 1}
    weights:
      W_1: [[7, 0], [0, 1], [2, 0]]
    inputs:
      X: [[1, 0, 0], [0, 1, 0]]
    given:
      attn.out: [[-1, 0, 1], [0, 0, 1]]
    random: {seed: 1}
    exercise:
      ask: [norm1.mean, norm1.var, norm1.std, norm1, ffn.hidden]
    """
SLIP_CARRIED_ON = """\
    decimals: 3
    steps:
      norm1.mean: [[0.333], [0.667]]
      norm1.var: [[0.222], [0.222]]
      norm1.std: [[0.472], [0.471]]
      norm1: [[-0.706, -0.706, 1.412], [-1.414, 0.707, 0.707]]
      ffn.hidden: [[-2.119, -0.706], [-8.485, 0.707]]
    """


def test_a_rounding_slip_worked_on_with_the_rest_unrounded_is_charged_once(cli, spec_file):
    """The slip costs its own entry; the steps worked from it are right (they were slips too)."""
    code, steps = _check_json(cli, spec_file, SLIP_CARRIED_ON, SLIP_SPEC)
    assert code == 0
    assert [e["mark"] for e in steps["norm1.std"]["entries"]] == ["slip", "correct"]
    for name in ("norm1", "ffn.hidden"):
        assert steps[name]["status"] == "correct", (name, steps[name])
        assert {e["mark"] for e in steps[name]["entries"]} == {"correct"}
    assert steps["norm1"]["entries"][2]["own"] == "1.412"   # what their own numbers give, said


@pytest.mark.parametrize("carried", ["1", "1/2"])
def test_grade_charges_a_rounding_slip_once(tmp_path, carried):
    """σ: (1/2 + 1)/2 = 0.75; everything else full: 4.75 of 5, whatever --carried (no error is carried)."""
    import csv
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(SLIP_SPEC), encoding="utf-8")
    assert main(["worksheet", str(spec), "--variants", "1", "--allow-repeats", "--format", "markdown",
                 "--out", str(tmp_path / "set")]) == 0
    ident = next((tmp_path / "set" / "students").iterdir()).name
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "ada.yaml").write_text(f"id: {ident}\nname: Ada\n" + textwrap.dedent(SLIP_CARRIED_ON),
                                                   encoding="utf-8")
    assert main(["grade", str(tmp_path / "set"), str(tmp_path / "answers"), "--carried", carried]) == 0
    with open(tmp_path / "answers" / "graded" / "gradebook.csv", newline="", encoding="utf-8") as f:
        row = next(csv.DictReader(f))
    assert [row[s] for s in ("norm1.mean", "norm1.var", "norm1.std", "norm1", "ffn.hidden")] == \
        ["1.00", "1.00", "0.75", "1.00", "1.00"]
    assert row["total"] == "4.75"
