"""The table of step kinds is whole: every step of every configuration has a kind, and each
kind's rule, working and cost exist where the table says they are."""
import itertools

import pytest

from symblock.calculus.grad import RULES
from symblock.engine import kinds
from symblock.engine.steps import Dims, Options, step_names
from symblock.sheets.builder import Builder

CONFIGS = [Options(norm_position=p, norm=n, activation=a, causal=c, out_proj=o, final_norm=f,
                   attention_scale=s)
           for p, n, a, c, o, f, s in itertools.product(("pre", "post"), ("layernorm", "rmsnorm"),
                                                         ("relu", "swiglu"), (False, True), (False, True),
                                                         (False, True), ("sqrt_dk", "none"))]
CONFIGS += [Options(attention_tiles=2), Options(causal=True, attention_scale="none", attention_tiles=1)]


@pytest.mark.parametrize("opts", CONFIGS[:-2:7] + CONFIGS[-2:])
def test_every_step_of_a_block_has_a_kind_with_a_rule_and_a_working(opts):
    dims = Dims(seq_len=3, d_model=4, d_ff=6, heads=2)
    for name in step_names(dims, opts):
        kind = kinds.of(name)
        assert kind.rule_for(opts) in RULES, name
        how = kind.work_for(opts)
        assert how is None or hasattr(Builder, f"work_{how}"), (name, how)


def test_shapes_and_costs_follow_the_dims_as_worked_by_hand():
    dims = Dims(seq_len=3, d_model=4, d_ff=6, heads=2, d_k=3, d_v=5)
    opts = Options()
    assert kinds.shape("attn.q", dims) == (3, 6)          # heads · d_k
    assert kinds.shape("attn.v", dims) == (3, 10)         # heads · d_v
    assert kinds.shape("attn.h1.out", dims) == (3, 5)
    assert kinds.shape("b1.norm1.std", dims) == (3, 1)
    assert kinds.shape("attn.h0.weights.dropped", dims) == (3, 3)
    # Q: 3 × 6 entries, each a sum of d_model = 4 products, plus a node each (6)
    assert kinds.cost("attn.q", dims, opts) == 18 * (4 + 6)
    # the scores: 3 × 3 entries, a sum of d_k = 3 products each
    assert kinds.cost("attn.h0.scores", dims, opts) == 9 * (3 + 6)
    # a softmax weight: an exp, a term of the row's sum and a division (1 + NODE), plus its node
    assert kinds.cost("attn.h1.weights", dims, opts) == 9 * (1 + 6 + 6)
    assert kinds.cost("x", dims, opts) == 0 and kinds.cost("attn.concat", dims, opts) == 0
    assert kinds.cost("attn.h0.weights.dropped", dims, opts) == 9 * 6


def test_an_attention_output_without_projection_is_a_copy():
    opts = Options(out_proj=False)
    dims = Dims(seq_len=2, d_model=2, d_ff=2, heads=1)
    assert kinds.of("attn.out").rule_for(opts) == "identity"
    assert kinds.of("attn.out").work_for(opts) is None
    assert kinds.cost("attn.out", dims, opts) == 0
    assert kinds.of("attn.out").work_for(Options()) == "linear"


def test_every_kind_can_be_recomputed_from_a_persons_own_inputs():
    from symblock.engine import online_softmax, rope
    from symblock.grading.recompute import RECOMPUTE
    # the online softmax's tiles and RoPE's rotations are recomputed by the engine's own functions
    assert set(kinds.KINDS) <= set(RECOMPUTE) | set(online_softmax.RECOMPUTE) | set(rope.RECOMPUTE)
    assert "dropped" in RECOMPUTE     # a mask applied: recomputed from the step it masks
