"""A decoder layer's cross-attention scores (decoder queries, each its own node, against the
memory's rational keys) are gathered entry by entry rather than through one fmpq_mat product
(engine/matmul.py `shares_keys`): every step must be the very node the matrix path made —
op, coefficients, factors and sharing, size, and its ball to the bit."""
from __future__ import annotations

import pytest

from symblock.engine import block, exact, matmul, spec
from tests.engine.test_matmul import _structure


def _layer(norm_position: str, padded: bool):
    dims = {"seq_len": 3, "d_model": 4, "d_ff": 6, "heads": 2, "mem_len": 4}
    inputs = {"memory_padding_mask": [False, True, False, False]} if padded else {}
    return spec.from_mapping({"dims": dims, "block": {"eps": "1e-5", "bias": True, "cross_attention": True,
                                                      "norm_position": norm_position},
                              "inputs": inputs, "random": {"seed": 3}}, "dec.yaml")


def _shapes(trace):
    seen: dict = {}
    return [(s.name, [["-oo" if e is exact.NEG_INF else _structure(e, seen) for e in r] for r in s.value.rows])
            for s in trace.steps if s.value is not None]


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("padded", [False, True])
def test_every_step_is_the_node_the_matrix_path_made(monkeypatch, norm_position, padded):
    new = _shapes(block.forward(_layer(norm_position, padded)))
    calls = []
    with monkeypatch.context() as m:
        m.setattr(matmul, "shares_keys", lambda keys: calls.append(keys) or True)  # the rule before
        old = _shapes(block.forward(_layer(norm_position, padded)))
    assert any(not any(len(ks) > 1 for ks in keys.values()) for keys in calls)  # rows the change gathers
    assert [n for n, _ in new] == [n for n, _ in old]
    for (name, a), (_, b) in zip(new, old):
        assert a == b, name
