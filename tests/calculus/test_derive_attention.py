"""derive with issue 15's options: a padded key is an exact 0 in symbols too, a fixed dropout
mask scales by 1/(1 − p), widths d_k ≠ d_model/heads give the head's formula; a batch is a clear error."""
import pytest
import sympy

from symblock.calculus.derive import derive
from symblock.engine import spec


def padded():
    return spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 1, "heads": 1, "d_k": 1, "d_v": 1},
                              "block": {"eps": "1/10", "attention_scale": "none"},
                              "inputs": {"key_padding_mask": [False, True]},
                              "dropout": {"p": "1/2", "masks": {"ffn.act": [[1], [0]]}},
                              "random": {"seed": 1}})


def test_padding_dropout_and_widths_in_symbols():
    d = derive(padded())
    assert d["attn.h0.weights"].entries == [[1, 0], [1, 0]]  # the only key left gets weight 1
    scores = d["attn.h0.scores"].entries
    assert sympy.Matrix(scores).shape == (2, 2)
    assert all(len(e.free_symbols) <= 2 for r in scores for e in r)  # d_k = 1: one product each
    act, dropped = d["ffn.act"].entries, d["ffn.act.dropped"].entries
    assert sympy.simplify(dropped[0][0] - 2 * act[0][0]) == 0 and dropped[1][0] == 0


def test_a_batch_is_one_sequence_at_a_time():
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 1, "heads": 1},
                           "inputs": {"key_padding_mask": [[False, True], [False, False]]}, "random": {"seed": 1}})
    with pytest.raises(spec.SpecError, match="derive writes one sequence"):
        derive(s)


def test_grad_of_a_batch_takes_x_as_every_sequences_input(capsys):
    """`symblock grad padding-batch`: --wrt X means b0.X and b1.X; the target is the batch's
    outputs stacked (6 × 4); the padded row of b1 still gets a gradient through its own query."""
    from symblock.calculus import grad
    s = spec.load("padding-batch")
    b = grad.backward(s, "sum", ["X"])
    assert list(b.wrt) == ["b0.X", "b1.X"] and b.wrt["b1.X"].latex.endswith("X^{(b1)}")
    import sympy as sp
    with pytest.raises(spec.SpecError, match=r"6×4 matrix \(the batch's outputs stacked\)"):
        grad.backward(s, "mse", ["X"], target=sp.zeros(3, 4))
