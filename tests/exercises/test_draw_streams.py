"""The stage's batched draws (draws.ints_array, NumPy) are the very numbers of the per-tensor
stream (draws.ints, Python's random.random()), so fitting in batches never changes a variant."""
from hypothesis import given, settings
from hypothesis import strategies as st

from symblock.exercises.draws import ints, ints_array


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(0, 2**64), st.just(0), st.text(max_size=5)), st.text(max_size=12),
       st.integers(0, 3000), st.integers(-1000, 1000), st.integers(0, 10**9))
def test_batched_draws_equal_the_python_stream(seed, name, count, low, width):
    got = ints_array(seed, name, count, low, low + width)
    assert got.tolist() == ints(seed, name, count, low, low + width)

