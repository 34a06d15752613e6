"""A RoPE score of a query and a key at the same position is the unrotated q·k (the two rotations
cancel), and a row's own score c/(m_i + ε) without RoPE: the engine hands that rational to the
snap as known instead of certifying it at thousands of bits. Checked against Fractions worked by hand, against the path without the
shortcut node for node (every step of blocks, grouped heads, repeated positions and a model
generating with its KV cache), and by the precision the cos/sin nodes were refined to."""
from __future__ import annotations

from fractions import Fraction

import pytest
import yaml
from flint import fmpq

from symblock.engine import balls, block, cancel, exact, model, model_spec, spec
from symblock.engine.sources import example_text

from tests.engine.test_matmul import _structure


def _block(seed=4, kv_heads=None, positions=None, bias=False, norm="rmsnorm", style="half", seq_len=4, where="pre",
           rope=True):
    dims = {"seq_len": seq_len, "d_model": 8, "d_ff": 4, "heads": 2}
    if kv_heads:
        dims["kv_heads"] = kv_heads
    b = {"norm": norm, "norm_position": where, "activation": "swiglu", "causal": True, "eps": "1/100",
         "bias": bias, **({"rope": {"theta": 10000, "style": style}} if rope else {})}
    data = {"dims": dims, "block": b, "random": {"seed": seed}}
    if positions:
        data["inputs"] = {"positions": positions}
    return spec.from_mapping(data, "t.yaml")




def _without_shortcut(monkeypatch, run):
    """`run()` as the engine worked it before: no same-position score known in advance."""
    with monkeypatch.context() as m:
        m.setattr(cancel, "rational_dot", lambda xs, ys: None)
        return run()


def _shapes(trace):
    """Every step's entries as whole node shapes (−∞ of the mask as itself)."""
    seen: dict = {}
    return [(s.name, [["-oo" if e is exact.NEG_INF else _structure(e, seen) for e in r] for r in s.value.rows])
            for s in trace.steps if s.value is not None]


def _fractions(m):
    return [[Fraction(str(e)) for e in r] for r in m.tolist()]


def test_same_position_scores_are_the_unrotated_products_as_rationals():
    s = _block()
    t = block.forward(s)
    X, g = _fractions(s.params["X"] if "X" in s.params else s.X), _fractions(s.params["ln1.gamma"])[0]
    WQ, WK = _fractions(s.params["W_Q"]), _fractions(s.params["W_K"])
    for i, x in enumerate(X):
        ms = sum(v * v for v in x) / len(x) + Fraction(1, 100)
        n = [v * gj for v, gj in zip(x, g)]                      # x·γ; the 1/r of both factors: 1/ms
        q = [sum(n[a] * WQ[a][c] for a in range(8)) for c in range(8)]
        k = [sum(n[a] * WK[a][c] for a in range(8)) for c in range(8)]
        for h in (0, 1):
            want = sum(q[c] * k[c] for c in range(4 * h, 4 * h + 4)) / ms
            got = t[f"attn.h{h}.scores"].value[i, i]
            assert got.q is not None and Fraction(int(got.q.p), int(got.q.q)) == want
    assert t["attn.h0.scores"].value[2, 1].q is None      # other positions stay irrational


@pytest.mark.parametrize("kw", [{}, {"kv_heads": 1}, {"style": "interleaved"}, {"positions": [3, 5, 5, 3]},
                                {"bias": True}, {"norm": "layernorm"}, {"seed": 9, "kv_heads": 2},
                                {"where": "post", "positions": [2, 0, 2, 1]}, {"rope": False},
                                {"rope": False, "kv_heads": 1, "norm": "layernorm"}])
def test_every_step_is_the_node_the_engine_made_without_the_shortcut(monkeypatch, kw):
    new = _shapes(block.forward(_block(**kw)))
    old = _shapes(_without_shortcut(monkeypatch, lambda: block.forward(_block(**kw))))
    assert new == old


def test_rows_at_one_position_score_rationally_when_their_projections_are():
    """Post-norm: the attention reads X itself, so q_i·k_j is rational for any two rows at one
    position; pre-norm: only a row with itself (1/r_i · 1/r_j is irrational for i ≠ j)."""
    same = [(0, 0), (0, 3), (3, 0), (1, 2), (2, 1), (3, 3)]
    s = block.forward(_block(positions=[3, 5, 5, 3], where="post"))["attn.h0.scores"].value
    assert all(s[i, j].q is not None for i, j in same) and s[0, 1].q is None
    s = block.forward(_block(positions=[3, 5, 5, 3]))["attn.h0.scores"].value
    assert [s[i, j].q is not None for i, j in same] == [True, False, False, False, False, True]


@pytest.mark.parametrize("positions", ["rope", "learned"])
def test_a_model_generating_with_its_cache_is_unchanged_node_for_node(monkeypatch, positions):
    data = yaml.safe_load(example_text("tiny-llama"))   # RoPE, 2 query heads over 1 K/V head, a KV cache
    if positions == "learned":
        data["model"]["positions"] = "learned"
        del data["block"]["rope"]
    llama = model_spec.from_mapping(data, "m")
    new = model.forward(llama)
    old = _without_shortcut(monkeypatch, lambda: model.forward(llama))
    assert _shapes(new) == _shapes(old)
    cached = [n for n in (s.name for s in new.steps) if n.startswith("gen") and n.endswith("layer0.attn.h1.scores")]
    assert cached and all(new[n].value.rows[0][-1].q is not None for n in cached)   # the new row's own key


def test_no_same_position_score_refines_its_cos_and_sin_to_thousands_of_bits(monkeypatch):
    def refined(t):
        return [e for r in t["attn.q_rot"].value.rows for e in r if e._hi and balls.MAX_PREC in e._hi]
    assert not refined(block.forward(_block()))
    assert refined(_without_shortcut(monkeypatch, lambda: block.forward(_block())))   # what it saves


def test_without_rope_a_rows_own_score_is_known_too(monkeypatch):
    """q_i·k_i = c/(m_i + ε) of a normalised row: no snap refines to thousands of bits (seed 5:
    no two rows' mean squares make (m_i + ε)(m_j + ε) a square, which the snap would certify)."""
    calls = []
    real = balls.with_prec
    monkeypatch.setattr(balls, "with_prec", lambda prec, *a: calls.append(prec) or real(prec, *a))
    t = block.forward(_block(rope=False, seed=5))
    assert balls.MAX_PREC not in calls and all(t["attn.h1.scores"].value[i, i].q is not None for i in range(4))
    _without_shortcut(monkeypatch, lambda: block.forward(_block(rope=False, seed=5)))
    assert balls.MAX_PREC in calls                                                     # what it saves


def test_rational_dot_proves_only_what_the_structure_shows():
    r = exact.sqrt(exact.real(3))
    a, b = exact.real(2) / r, exact.real(5) / r
    assert cancel.rational_dot([a, exact.real(1)], [b, exact.real(7)]) == fmpq(10, 3) + 7
    assert cancel.rational_dot([a + 1], [b]) is None                     # 5/√3 is left over
    assert cancel.rational_dot([r, a], [r, exact.real(3) / 2 * r]) == 3 + 3
    e = exact.exp(exact.real(1))
    assert cancel.rational_dot([e], [e]) is None                          # e² is not rational
    assert cancel.rational_dot([e, e], [exact.real(1), exact.real(-1)]) == 0
