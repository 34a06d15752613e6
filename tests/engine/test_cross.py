"""A decoder layer with cross-attention (engine/cross.py): its steps in torch's order, numbers
worked by hand (queries from the decoder, keys and values from the memory, no causal mask,
padded memory rows weightless), the step vocabulary, and the spec's errors."""
from __future__ import annotations

import pytest
import sympy
from sympy import E

from symblock.engine import block, kinds, names, spec
from symblock.engine.steps import step_names
from symblock.errors import SpecError

I2 = [[1, 0], [0, 1]]


def layer(**over):
    data = {"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
            "block": {"cross_attention": True, "attention_scale": "none"},
            "weights": {**{k: I2 for k in ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")},
                        "cross": {k: I2 for k in ("W_Q", "W_K", "W_V", "W_O")}},
            "inputs": {"X": [[1, 0], [0, 1]], "memory": [[1, 0], [0, 1], [0, 0]],
                       "memory_padding_mask": [False, False, True]}}
    for key, val in over.items():
        data[key] = {**data.get(key, {}), **val} if isinstance(val, dict) else val
    return spec.from_mapping(data, "dec.yaml")


def values(t, name):
    return t[name].value.to_sympy(10**6)


def test_post_ln_order_is_torchs_decoder_layer():
    t = block.forward(layer())
    got = [n for n in t.names() if "." not in n or n.startswith(("cross.q", "cross.out"))]
    assert got == ["x", "memory", "resid1", "norm1", "cross.q", "cross.out", "resid2", "norm2",
                   "resid3", "norm3", "output"]
    assert "attn.h0.masked" in t  # the self-attention is causal by default


def test_pre_ln_order_and_norms():
    t = block.forward(layer(block={"norm_position": "pre", "eps": "1/10"}))
    order = [n for n in t.names() if n in ("norm1", "attn.out", "resid1", "norm2", "cross.out", "resid2",
                                           "norm3", "ffn.out", "resid3", "output")]
    assert order == ["norm1", "attn.out", "resid1", "norm2", "cross.out", "resid2", "norm3", "ffn.out",
                     "resid3", "output"]


def test_cross_attention_by_hand():
    """H1 pinned to ±(1, −1): scores H1 Mᵀ = [[1, −1, 0], [−1, 1, 0]]; the padded third memory row
    gets −∞ and weight 0; no causal mask (row 0 weighs key 1); V = M, so the output is the
    weights' first two columns."""
    t = block.forward(layer(given={"norm1": [[1, -1], [-1, 1]]}))
    assert values(t, "cross.k") == sympy.Matrix([[1, 0], [0, 1], [0, 0]])  # M W_K, not H1 W_K
    assert values(t, "cross.h0.scores") == sympy.Matrix([[1, -1, 0], [-1, 1, 0]])
    assert values(t, "cross.h0.masked")[0, 2] == -sympy.oo
    w = values(t, "cross.h0.weights")
    a, b = E / (E + 1 / E), (1 / E) / (E + 1 / E)
    assert all(sympy.simplify(x - y) == 0 for x, y in zip(w, [a, b, 0, b, a, 0]))
    assert all(sympy.simplify(x - y) == 0 for x, y in zip(values(t, "cross.out"), [a, b, b, a]))
    assert t["resid2"].inputs == ("norm1", "cross.out")


def test_scaled_scores_and_two_heads_read_their_own_columns():
    s = spec.from_mapping({"dims": {"d_model": 4, "heads": 2, "d_ff": 2, "seq_len": 2},
                           "block": {"cross_attention": True, "eps": "1/10"},
                           "inputs": {"X": [[1, 0, 2, 0], [0, 1, 0, 3]], "memory": [[1, 0, 0, 1], [0, 2, 1, 0]]},
                           "random": {"seed": 2}})
    t = block.forward(s)
    q, k = values(t, "cross.q"), values(t, "cross.k")
    want = q[:, 2:4] * k[:, 2:4].T / sympy.sqrt(2)
    assert sympy.simplify(values(t, "cross.h1.scaled") - want) == sympy.zeros(2, 2)
    assert t["cross.h1.scaled"].value.shape == (2, 2) and "cross.concat" in t


def test_names_and_kinds_of_the_new_steps():
    p = names.parse("layer1.cross.h2.weights")
    assert (p.kind, p.head, p.layer, p.head_prefix, p.section) == ("cross_weights", 2, 1, "layer1.cross.h2", "cross")
    assert names.parse("cross.h0.out").kind == "cross_head_out"
    assert names.parse("attn.h0.out").kind == "head_out"  # unchanged
    assert names.parse("resid3").kind == "resid" and names.parse("norm3.std").norm == "norm3"
    d = layer().dims
    assert kinds.shape("cross.k", d) == (3, 2) and kinds.shape("cross.h0.scores", d) == (2, 3)
    assert kinds.shape("memory", d) == (3, 2) and kinds.shape("cross.q", d) == (2, 2)


def test_existing_blocks_keep_their_steps():
    plain = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2}, "random": {"seed": 1}})
    assert not any(n.startswith(("cross", "memory")) or n.endswith("3") for n in
                   step_names(plain.dims, plain.options))


@pytest.mark.parametrize("over, where, what", [
    ({"block": {"cross_attention": False}}, "inputs.memory", "set block.cross_attention: true"),
    ({"inputs": {"memory": None, "memory_padding_mask": None}}, "inputs.memory", "missing"),
    ({"inputs": {"memory": [[1, 0, 0]] * 3}}, "inputs.memory", "expected shape 3×2, got 3×3"),
    ({"inputs": {"memory_padding_mask": [True, True, True]}}, "inputs.memory_padding_mask",
     "every memory row is padding"),
    ({"inputs": {"memory_padding_mask": [False, True]}}, "inputs.memory_padding_mask",
     "expected 3 entries, one per memory row, got 2 entries"),
    ({"inputs": {"memory_padding_mask": [0, 0, 1]}}, "inputs.memory_padding_mask[0]",
     "expected true or false (true = a padded memory row), got 0"),
    ({"inputs": {"memory_padding_mask": [False, "true", False]}}, "inputs.memory_padding_mask[1]",
     "got the text 'true' (unquoted)"),
    ({"inputs": {"memory_padding_mask": {"0": True}}}, "inputs.memory_padding_mask",
     "expected a list of 3 booleans, one per memory row (true = a padded memory row), got a mapping"),
    ({"weights": {"cross": {"W_X": I2}}}, "weights.cross.W_X", "unknown key"),
    ({"inputs": {"X": [[[1, 0]], [[0, 1]]]}}, "inputs.X", "works one sequence"),
])
def test_bad_decoder_layer_specs_name_the_field(over, where, what):
    with pytest.raises(SpecError) as e:
        layer(**over)
    assert e.value.where == where and what in e.value.message, e.value


def test_missing_cross_weights_are_drawn_with_a_seed_or_refused():
    with pytest.raises(SpecError) as e:
        layer(weights={"cross": {}})
    assert e.value.where == "weights.cross.W_Q" and "missing" in e.value.message
    drawn = layer(weights={"cross": {}}, random={"seed": 4})
    assert drawn.params["cross.W_Q"].shape == (2, 2) and "cross.b_Q" not in drawn.params
