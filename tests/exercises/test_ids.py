"""A worksheet ID is cut into its spec token and seed by one function, `variants.split_id`, the
inverse of `make_id` (the gradebook, the manifest and the Moodle category all read it)."""
from hypothesis import given, strategies as st

from symblock.exercises import variants

TOKENS = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)


@given(TOKENS, st.one_of(st.none(), st.integers(min_value=0, max_value=10**30)))
def test_split_id_undoes_make_id(token, seed):
    assert variants.split_id(variants.make_id(token, seed)) == (token, seed)


def test_a_text_that_is_no_id_keeps_the_part_before_its_last_dot():
    assert variants.split_id("pre-ln-causal-gelu.7") == ("pre-ln-causal-gelu", 7)
    assert variants.split_id("h2x3k4m5q") == ("h2x3k4m5q", None)
    assert variants.split_id("spec.v2.7") == ("spec.v2", None)     # two dots: no ID, no seed read
    assert variants.split_id("my sheet") == ("my sheet", None)
    assert variants.split_id("a.seven") == ("a", None)
