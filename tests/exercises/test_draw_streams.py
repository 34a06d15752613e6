"""The stage's batched draws (draws.ints_array, NumPy) are the very numbers of the per-tensor
stream (draws.ints, Python's random.random()), so fitting in batches never changes a variant."""
from hypothesis import given, settings
from hypothesis import strategies as st

import random

import pytest

from symblock.exercises.draws import ints, ints_array, mt_like_python


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(0, 2**64), st.just(0), st.text(max_size=5)), st.text(max_size=12),
       st.integers(0, 3000), st.integers(-1000, 1000), st.integers(0, 10**9))
def test_batched_draws_equal_the_python_stream(seed, name, count, low, width):
    got = ints_array(seed, name, count, low, low + width)
    assert got.tolist() == ints(seed, name, count, low, low + width)



@pytest.mark.parametrize("key", [0, 1, 2**32 - 1, 2**32, 2**32 + 7, 2**63, 2**64 - 1])
def test_numpy_generator_seeded_from_words_is_pythons(key):
    """One word below 2^32, two above, as CPython splits the seed (sha256 keys are almost never
    below 2^32, so the stream test alone would not reach the one-word case)."""
    py = random.Random(key)
    assert mt_like_python(key).random_sample(50).tolist() == [py.random() for _ in range(50)]
