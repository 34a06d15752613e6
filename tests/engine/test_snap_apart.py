"""A quotient N/S the snap would refine to 512 bits because its ball at 128 bits still holds a
rational q (a peaked softmax row: the top weight within 2^-128 of 1, P·V within 2^-128 of one
value row) is refused q when the numerator of N/S − q, merged term by term, excludes 0
(cancel.apart). Every step must be the very node the engine made without it: op, coefficients,
factors and sharing, size, and its ball to the bit."""
from __future__ import annotations

import pytest
from flint import fmpq

from symblock.engine import balls, block, cancel, exact, spec
from tests.engine.test_matmul import _structure


def _layer(cross: bool, norm_position: str, padded: bool = False, seed: int = 1):
    """seq_len 8, d_model 16 (the bench's middle shape): peaked rows in every kind of layer."""
    dims = {"seq_len": 8, "d_model": 16, "d_ff": 16, "heads": 4, **({"mem_len": 8} if cross else {})}
    inputs = {"memory_padding_mask": [False, True] + [False] * 6} if padded else {}
    kind = {"cross_attention": True} if cross else {"causal": True}
    return spec.from_mapping({"dims": dims, "block": {"eps": "1e-5", "bias": True, "norm_position": norm_position,
                                                      **kind},
                              "inputs": inputs, "random": {"seed": seed}}, "dec.yaml")


def _shapes(trace):
    seen: dict = {}
    return [(s.name, [["-oo" if e is exact.NEG_INF else _structure(e, seen) for e in r] for r in s.value.rows])
            for s in trace.steps if s.value is not None]


def _refinements(monkeypatch, run, proofs=True):
    """run()'s result and the precisions the snap refined to (`proofs`: with cancel.apart)."""
    calls = []
    real = balls.with_prec
    with monkeypatch.context() as m:
        m.setattr(balls, "with_prec", lambda prec, *a: calls.append(prec) or real(prec, *a))
        if not proofs:
            m.setattr(balls, "apart", lambda r, q: False)
        out = run()
    return out, calls


@pytest.mark.parametrize("cross,norm_position,padded", [(True, "post", False), (True, "pre", True),
                                                        (False, "post", False), (False, "pre", False)])
def test_every_step_is_the_node_the_engine_made_without_the_proof(monkeypatch, cross, norm_position, padded):
    run = lambda: _shapes(block.forward(_layer(cross, norm_position, padded)))  # noqa: E731
    new, calls = _refinements(monkeypatch, run)
    old, old_calls = _refinements(monkeypatch, run, proofs=False)
    assert [n for n, _ in new] == [n for n, _ in old]
    for (name, a), (_, b) in zip(new, old):
        assert a == b, name
    if (cross, norm_position) == (True, "post"):
        assert 512 in old_calls and 512 not in calls  # what it saves
    assert len(calls) <= len(old_calls)


def test_a_peaked_rows_weights_and_weighted_sum_are_not_refined(monkeypatch):
    row = (exact.real(200), exact.real(0), exact.real(-3), exact.NEG_INF)  # 1 − w_0 ≈ e^-200 < 2^-128
    values = [exact.real(2), exact.real(5), exact.real(-1), exact.real(7)]

    def run():
        w = block.softmax(row)
        return w, exact.dot(w, values)

    (w, out), calls = _refinements(monkeypatch, run)
    (w_old, out_old), old_calls = _refinements(monkeypatch, run, proofs=False)
    assert 512 in old_calls and 512 not in calls
    assert w[0].q is None and w[0].enclosure(512) < 1 and out.q is None and out.enclosure(512) > 2
    assert [_structure(x, {}) for x in w + [out]] == [_structure(x, {}) for x in w_old + [out_old]]


def test_apart_proves_only_inequality():
    e = exact.exp(exact.real(1))
    s = exact.total([e, exact.real(1)])
    w = e / s                                                    # e/(e + 1): neither 1 nor 0
    assert cancel.apart(w, fmpq(1)) and cancel.apart(w, fmpq(0))
    assert not cancel.apart(exact.exp(exact.real(2)), fmpq(7))   # not a quotient: says nothing
    inv_s = exact.inv(s)                                         # (2e + 2)/(e + 1), unsimplified, is 2
    two = exact.Real(op="sum", args=(fmpq(0), ((fmpq(2), (e, inv_s)), (fmpq(2), (inv_s,)))), ball=w.ball * 0 + 2)
    assert not cancel.apart(two, fmpq(2)) and cancel.apart(two, fmpq(3))
