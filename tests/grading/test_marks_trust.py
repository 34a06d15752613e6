"""Marks a teacher can trust: provenance of an earlier wrong answer survives a step whose summary is
a rounding slip; an exact tie at the asked places is accepted rounded either way; a partly blank
step names its blank entries; the printed total is the sum of the printed task columns.

Every expected number is worked by hand (or with Python's decimal module), never by symblock."""
import json
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


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def _check_json(tmp_path, capsys, answers: str, spec: str = IDENTITY_SPEC):
    code = main(["check", _write(tmp_path, "spec.yaml", spec), _write(tmp_path, "answers.yaml", answers), "--json"])
    out = capsys.readouterr()
    assert out.err == ""
    return code, {s["name"]: s for s in json.loads(out.out)["steps"]}


# ---------------------------------------------------------------- a slip does not hide a carried error

def test_a_slip_step_passes_on_the_wrong_answer_it_rests_on(tmp_path, capsys):
    code, steps = _check_json(tmp_path, capsys, SLIP_OVER_CARRIED)
    assert code == 1 and steps["attn.h0.scores"]["status"] == "wrong"
    weights = steps["attn.h0.weights"]
    assert weights["status"] == "slip"
    assert [e["mark"] for e in weights["entries"]] == ["carried", "carried", "slip", "correct"]
    assert weights["built_on"] == ["attn.h0.scores"]   # the status does not hide it
    out = steps["attn.h0.out"]
    assert [e["mark"] for e in out["entries"]] == ["carried", "carried", "correct", "correct"]
    assert out["status"] == "carried" and out["built_on"] == ["attn.h0.scores"]


def test_a_slip_over_carried_entries_is_not_full_credit_under_carried_below_1(tmp_path, capsys):
    from symblock.grading import answers, marking
    from symblock.grading.marker import Marker
    from symblock.grading.policy import Credit
    import symblock
    spec = symblock.load(_write(tmp_path, "spec.yaml", IDENTITY_SPEC))
    trace = symblock.forward(spec)
    marker = Marker.for_answers(trace, {})
    data, source = answers.read(_write(tmp_path, "answers.yaml", SLIP_OVER_CARRIED))
    steps = {s.name: s for s in marker.mark(data, source).steps}
    half = Credit(carried=Fraction(1, 2))
    # out: two carried entries at 1/2, two correct at 1, one point shared by 4 entries: 3/4
    assert half.task(steps["attn.h0.out"], 1) == Fraction(3, 4)
    # weights: two carried at 1/2, a slip at 1/2, one correct: (1/2 + 1/2 + 1/2 + 1) / 4 = 5/8
    assert half.task(steps["attn.h0.weights"], 1) == Fraction(5, 8)
    assert marking.CARRIED == steps["attn.h0.out"].status


def test_the_text_report_names_what_a_slip_step_rests_on(tmp_path, capsys):
    main(["check", _write(tmp_path, "spec.yaml", IDENTITY_SPEC), _write(tmp_path, "answers.yaml", SLIP_OVER_CARRIED)])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "attn.h0.weights" in x)
    assert "slip" in line and "attn.h0.scores" in line


def test_a_blank_filled_from_the_wrong_chain_passes_the_wrong_answer_on(tmp_path, capsys):
    # weights row 1 left blank (the chain fills it from the wrong score: softmax(2, 0)), row 2 right:
    # out row 1 = 0.8808, 0.1192 rests on the wrong score all the same.
    code, steps = _check_json(tmp_path, capsys, """\
        decimals: 4
        steps:
          attn.h0.scores: [[2, 0], [0, 1]]
          attn.h0.weights: [null, [0.2689, 0.7311]]
          attn.h0.out: [[0.8808, 0.1192], [0.2689, 0.7311]]
        """)
    assert steps["attn.h0.weights"]["status"] == "correct"
    out = steps["attn.h0.out"]
    assert [e["mark"] for e in out["entries"]] == ["carried", "carried", "correct", "correct"]
    assert out["built_on"] == ["attn.h0.scores"]


def test_a_step_answered_right_passes_nothing_on(tmp_path, capsys):
    # the wrong score, then weights put right from the truth: out from the right weights is correct
    code, steps = _check_json(tmp_path, capsys, """\
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
    ("1.561", "wrong"),     # 1.5 units of the last place from 1.5625
    ("1.564", "slip"),
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
def test_check_marks_a_tie_rounded_half_to_even_correct(tmp_path, capsys, written):
    # X row 2 is zero: its scores are 0, 0, its weights 1/2, 1/2, its out 1/2 · V row 1 = (1/2, 0),
    # so resid1 row 2 = (1/2, 0) and its mean 1/4 = 0.25, a tie at 1 place.
    code, steps = _check_json(tmp_path, capsys, f"decimals: 1\nsteps:\n  norm1.mean: [null, [{written}]]\n", TIE_SPEC)
    assert steps["norm1.mean"]["status"] == "correct" and code == 0


@pytest.mark.parametrize("lang, words", [
    ("en", "half away from zero; a number exactly halfway may be rounded either way"),
    ("zh", "四舍五入；恰好在两数正中的，向上或向下舍入都算对"),
])
def test_the_sheet_states_the_rounding_it_expects(tmp_path, capsys, lang, words):
    assert main(["worksheet", "seed-post-ln", "--out", str(tmp_path / "ws"), "--format", "markdown",
                 "--lang", lang]) == 0
    assert words in (tmp_path / "ws" / "sheet.md").read_text(encoding="utf-8")
