"""The size guard's fast way (engine/numbers._fast) for the common closed forms: it reads them
without Python's parser, and it must only ever give what the full way (`ast` + `_walk`) gives;
everything else goes the full way and is accepted or refused as before."""
import ast
from fractions import Fraction

import pytest
from hypothesis import given, strategies as st

from symblock.engine import numbers


def full_way(text: str):
    """check_text's answer without the fast way: ('ok', value) or ('refused', kind)."""
    text = text.replace("^", "**").strip()
    try:
        tree = ast.parse(text, mode="eval")
        return "ok", numbers._walk(tree.body, text, 0).value
    except (SyntaxError, ValueError, MemoryError, RecursionError, numbers.TooLarge) as e:
        return "refused", type(e).__name__


PIECES = ["0", "00", "017", "1", "2", "7", "17", "999999999999", "E", "pi", "oo", "e", "x", "exp", "sqrt",
          "+", "-", "*", "/", "**", "^", " ", "(", ")", "exp(", "sqrt(", "erf(", "cos(", "tanh(", "Rational(", ","]


@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=16).map("".join))
def test_what_the_fast_way_gives_the_full_way_gives(text):
    fast = numbers._fast(text.replace("^", "**").strip())
    if fast is not None:
        assert full_way(text) == ("ok", fast.value)


@pytest.mark.parametrize("text", [
    "exp(17/9)/(exp(17/9) + exp(11/9))", "-exp(17/9)/(3*(exp(17/9) + exp(11/9))) + 4/3",
    "sqrt(5)/2", "-3*sqrt(2)/7 - 1/2", "1 - 2 - 3", "8/4/2", "-2*3", "2/3*3", "--1", "erf(sqrt(2)/2)/2 + 1/2"])
def test_stored_closed_forms_take_the_fast_way_and_keep_their_value(text, monkeypatch):
    want = full_way(text)
    numbers.check_text.cache_clear()
    monkeypatch.setattr(numbers.ast, "parse", lambda *a, **k: pytest.fail("the full way was taken"))
    assert want[0] == "ok" and numbers.check_text(text) == want[1]
    numbers.check_text.cache_clear()


def test_rational_values_are_exact():
    assert numbers.check_text("1 - 2 - 3") == -4 and numbers.check_text("8/4/2") == 1
    assert numbers.check_text("2/3*3") == 2 and numbers.check_text("-(1/3 + 1/6)") == Fraction(-1, 2)
    assert numbers.check_text("sqrt(2)/2") is None


@pytest.mark.parametrize("text, refused", [
    ("017", SyntaxError),                               # no Python literal
    ("(" * 201 + "1" + ")" * 201, SyntaxError),         # Python's parser's nesting limit
    ("-" * 101 + "1", numbers.TooLarge),                # MAX_DEPTH
    ("+".join(["1"] * 102), numbers.TooLarge),          # a left chain past MAX_DEPTH
    ("exp(" * 60 + "1" + ")" * 60, numbers.TooLarge),   # nesting past the fast way's parentheses: the full way's refusal
    ("exp(100000000)", numbers.TooLarge), ("1" + "0" * 1000, numbers.TooLarge),
    ("sqrt(2)(3)", SyntaxError), ("3(2)", SyntaxError), ("pi(2)", SyntaxError), ("2 3", SyntaxError),
])
def test_what_the_full_way_refuses_is_still_refused(text, refused):
    numbers.check_text.cache_clear()
    with pytest.raises(refused):
        numbers.check_text(text)
