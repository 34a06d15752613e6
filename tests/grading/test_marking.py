"""marking.matches, the acceptance rule for one entry, on the values where numerics cannot decide:
a value that sits exactly on a rounding tie but is not a rational node (so its decimal rounding is
undecidable to ~4900 digits), and exact equality with such a value."""
import pytest

from symblock.engine import exact
from symblock.grading import answers, marking


def entry(text: str, decimals=None):
    return answers.parse_entry(text, decimals, "<test>", "steps.x[0][0]")


@pytest.fixture(scope="module")
def tie():
    """√2 · √2/40000 = 1/20000 = 0.00005 exactly, built as a graph node (a denominator over
    10⁴ is not snapped to a rational): rounding it to 4 places cannot be certified."""
    s2 = exact.sqrt(exact.real(2))
    v = s2 * (s2 / 40000)
    assert v.q is None
    with pytest.raises(exact.UndecidableError):
        v.decimal(4)
    return v


@pytest.mark.parametrize("text, ok", [
    ("0.0001", True),    # rounded up (half away from zero)
    ("0.0000", True),    # rounded down: the other neighbour of the tie is a fair rounding too
    ("0.0002", False),   # 1.5 units of the last place off
    ("-0.0001", False),
    ("0.00005", True),   # at 5 places the value is decidable again: 0.00005
    ("0.00006", False),
])
def test_a_value_on_an_undecidable_rounding_tie(tie, text, ok):
    assert marking.matches(entry(text), tie) is ok


def test_exact_entries_against_the_tie(tie):
    assert marking.matches(entry("1/20000"), tie)
    assert not marking.matches(entry("1/20001"), tie)


def test_the_tie_is_shown_with_more_digits(tie):
    assert marking.show(tie, 4).startswith("5.0000")
    assert marking.show(exact.real(1) / 8, 2) == "0.13"  # a rational tie is decided: half away
