"""marking.matches, the acceptance rule for one entry, on a value that sits exactly on a rounding
tie but is not a rational node: √2 · √2/40000 = 1/20000 = 0.00005, built as a graph node (a
denominator over 10⁴ is not snapped to a rational)."""
from fractions import Fraction

import pytest

from symblock.engine import exact
from symblock.grading import answers, marking


def entry(text: str, decimals=None):
    return answers.parse_entry(text, decimals, "<test>", "steps.x[0][0]")


@pytest.fixture(scope="module")
def tie():
    s2 = exact.sqrt(exact.real(2))
    v = s2 * (s2 / 40000)
    assert v.q is None
    return v


@pytest.fixture
def undecidable(tie, monkeypatch):
    """The tie's rounding to 4 places cannot be certified: exact.decimal raises UndecidableError
    (what a ball that never leaves the tie gives; the rounding code may also decide it by its guard
    digits, so the undecidable case is forced here to reach marking's own rule for it)."""
    real_decimal = exact.Real.decimal

    def decimal(self, places):
        if self is tie and places == 4:
            raise exact.UndecidableError("on a rounding tie")
        return real_decimal(self, places)
    monkeypatch.setattr(exact.Real, "decimal", decimal)
    return tie


@pytest.mark.parametrize("text, ok", [
    ("0.0001", True),    # rounded up (half away from zero)
    ("0.0000", True),    # rounded down: the other neighbour of an undecidable tie is fair too
    ("0.0002", False),   # 1.5 units of the last place off
    ("-0.0001", False),
    ("0.00005", True),   # at 5 places the value is decidable: 0.00005
    ("0.00006", False),
])
def test_a_value_on_an_undecidable_rounding_tie(undecidable, text, ok):
    assert marking.matches(entry(text), undecidable) is ok


@pytest.mark.parametrize("text, ok", [("0.0001", True), ("0.0002", False), ("-0.0001", False),
                                      ("0.00005", True), ("0.00004", False)])
def test_the_tie_as_the_engine_rounds_it(tie, text, ok):
    assert marking.matches(entry(text), tie) is ok


def test_exact_entries_against_the_tie(tie):
    assert marking.matches(entry("1/20000"), tie)
    assert not marking.matches(entry("1/20001"), tie)


def test_the_tie_is_shown_with_its_digits(tie, undecidable):
    assert marking.show(undecidable, 4).startswith("5.0000")
    assert marking.show(exact.real(1) / 8, 2) == "0.13"  # a rational tie is decided: half away


@pytest.mark.parametrize("value, text, plain, in_a_set", [
    # 16·2⁻²³·1000 ≈ 0.0019 lets 1000.0013 pass as a float32 print-out; a set asking 3 places
    # also wants it within half a unit there (0.0005), so only 1000.0004 passes in the set
    (1000, "1000.0013", True, False),
    (1000, "1000.0004", True, True),
    (Fraction(1, 3), "0.33333334", True, True),    # float32's 1/3, well inside both
])
def test_a_print_out_in_a_set_is_held_to_the_sets_places(value, text, plain, in_a_set):
    truth = exact.real(value)
    free = answers.parse_entry(text, answers.Policy(print="float32"), "<test>", "x")
    held = answers.parse_entry(text, answers.Policy(decimals=3, print="float32", floor=3).floored(), "<test>", "x")
    assert marking.matches(free, truth) is plain
    assert marking.matches(held, truth) is in_a_set


def test_a_files_own_policy_may_raise_the_sets_places_but_not_lower_them():
    shapes = {"resid1": (1, 2)}
    set_policy = answers.set_policy({"decimals": 3})

    def read(data):
        return answers.from_mapping({"steps": {"resid1": [["2.4", "0.6"]]}, **data}, "a.yaml", shapes,
                                    default=set_policy)
    for data, overruled in (({}, ()), ({"decimals": 1}, ("decimals: 1",)), ({"sig_figs": 2}, ("sig_figs: 2",)),
                            ({"decimals": 5}, ())):
        got = read(data)
        e = got.steps["resid1"].entries[0][0]
        assert got.overruled == overruled, data
        assert e.sig_figs is None and e.places == max(3, data.get("decimals", 0)), data
    step = answers.from_mapping({"steps": {"resid1": {"decimals": 2, "value": [["2.4", "0.6"]]}}}, "a.yaml",
                                shapes, default=set_policy)
    assert step.overruled == ("steps.resid1.decimals: 2",) and step.steps["resid1"].entries[0][0].places == 3
    alone = answers.from_mapping({"decimals": 1, "steps": {"resid1": [["2.4", "0.6"]]}}, "a.yaml", shapes)
    assert alone.overruled == () and alone.steps["resid1"].entries[0][0].places == 1   # `check` of one's own: as declared


@pytest.mark.parametrize("text, value, places", [("\u22121.5", Fraction(-3, 2), 1), ("\u22122/3", Fraction(-2, 3), None)])
def test_the_minus_sign_a_pdf_copies_reads_as_a_minus(text, value, places):
    """Text copied from a key's PDF or HTML carries U+2212 (−1.5), which looks like the
    expected -1.5 and must read as it."""
    e = entry(text)
    assert str(e.value.q) == str(value) and e.places == places


def test_minus_infinity_copied_with_its_minus_sign_reads_as_minus_infinity():
    assert answers.parse_entry("\u2212\u221e", 3, "<test>", "x", masked=True).value is exact.NEG_INF
    assert answers.parse_entry("\u2212inf", 3, "<test>", "x", masked=True).value is exact.NEG_INF


@pytest.mark.parametrize("blank", [None, []])
def test_a_step_written_null_is_not_answered_as_a_step_left_out_is(blank):
    """The answers template says to leave null what was not answered: `ffn.hidden: null` (or
    `[]`) is that step blank, not the whole file refused."""
    shapes = {"resid1": (1, 2), "ffn.hidden": (1, 2)}
    got = answers.from_mapping({"id": "x", "steps": {"resid1": [[1, 2]], "ffn.hidden": blank}}, "<test>", shapes)
    assert list(got.steps) == ["resid1"]
    assert [str(e.value.q) for e in got.steps["resid1"].entries[0]] == ["1", "2"]


def test_minus_infinity_copied_outside_a_masked_step_is_named_as_minus_infinity():
    """−inf with the PDF's minus in a step that has no −∞ is the −∞ slip, as -inf is, not 'not a number'."""
    got = answers.from_mapping({"id": "x", "steps": {"resid1": [["\u2212inf", "-inf"]]}}, "<test>", {"resid1": (1, 2)})
    assert [e.reason for e in got.steps["resid1"].entries[0]] == ["inf", "inf"]
