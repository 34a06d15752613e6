"""RoPE and grouped K/V heads as exercises: the rope preset asks the rotations and the grouped
scores with q and k as data, a block without RoPE refuses it clearly, a set of variants keeps the
variety guarantee on the new steps, and distinct_mistakes tells the new slips apart."""
from __future__ import annotations

import numpy as np
import pytest

from symblock.engine import block, spec
from symblock.errors import SpecError
from symblock.exercises import stress, variant
from symblock.exercises.presets import choose
from symblock.grading import mistakes
from symblock.reference import numeric


def test_the_rope_preset_asks_the_rotations_and_every_heads_scores_from_q_and_k():
    ex = choose(block.forward(spec.load("rope-gqa")), "rope")
    assert list(ex.ask) == ["attn.q_rot", "attn.k_rot", "attn.h0.scores", "attn.h1.scores"]
    assert set(ex.data_steps) == {"attn.q", "attn.k"} and ex.data_params == ()


def test_the_rope_preset_on_a_block_without_rope_is_a_clear_error(cli):
    with pytest.raises(SpecError, match="block.rope") as e:
        choose(block.forward(spec.load("seed-post-ln")), "rope")
    assert e.value.where == "--preset"
    code, out, err = cli("worksheet", "seed-post-ln", "--preset", "rope", "--out", "w")
    assert code == 2 and "the rope preset asks RoPE's rotated" in err and "Traceback" not in err


def test_a_set_of_rope_variants_differs_on_every_asked_step():
    """Six variants of rope-gqa (weights drawn, X given): each asked step's answers, worked here in
    NumPy from the variant's own spec, are six different matrices; stress's guarantee agrees."""
    vs = variant.draw_set("rope-gqa", 6, 1, variant.Options("rope"))
    for name in vs[0].ask:
        seen = {tuple(np.round(numeric.forward(v.spec)[name], 6).ravel()) for v in vs}
        assert len(seen) == 6, name
    assert not stress.problems(stress.variety([v.answers for v in vs]))


def test_distinct_mistakes_finds_no_tie_between_the_rope_slips():
    """On rope-gqa's rotations (d_k 2: the two pair styles are one formula, so that slip does not
    apply) positions from 1 and the flipped sign give different numbers: no ambiguity."""
    trace = block.forward(spec.load("rope-gqa"))
    assert mistakes.ambiguous(trace, ["attn.q_rot", "attn.k_rot"]) is None
    codes = {m.code for m in mistakes.CATALOGUE if m.applies("attn.q_rot", trace.spec)}
    assert codes == {"rope_positions_from_one", "rope_sign_flipped"}
