"""The online softmax over key tiles, three ways: the exact engine, the NumPy path
(reference/numeric_tiles.py) and a plain Python loop written here from FlashAttention's
recurrence; and, for any tile size, the tiled result against softmax·V."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from symblock.engine import block, online_softmax, spec, steps
from symblock.reference import numeric, verify
from tests.strategies import matrix

NEG = -math.inf


def loop_tiles(S, V, size):
    """{(tile, part): rows} by the recurrence, one query row and one key at a time."""
    n, dv = len(S), len(V[0])
    out = {}
    for i in range(n):
        m, l, a = NEG, 0.0, [0.0] * dv
        for j, lo in enumerate(range(0, n, size)):
            live = [k for k in range(lo, min(lo + size, n)) if S[i][k] != NEG]
            new = max([m] + [S[i][k] for k in live])
            r = 0.0 if m == NEG else math.exp(m - new)
            w = {k: math.exp(S[i][k] - new) for k in live}
            l = l * r + sum(w.values())
            a = [a[c] * r + sum(w[k] * V[k][c] for k in live) for c in range(dv)]
            m = new
            for part, val in (("max", [m]), ("sum", [l]), ("acc", a)):
                out.setdefault((j, part), []).append(val)
        out.setdefault(("tiled", None), []).append([x / l for x in a])
    return out


def check_against_loop(sp, tol=1e-12):
    """Every tile step of every head and sequence: NumPy path, exact engine and the loop agree."""
    num = numeric.forward(sp)
    ex = verify.exact_floats(block.forward(sp))
    checked = 0
    for prefix in steps.batch_prefixes(sp.dims):
        for h in range(sp.dims.heads):
            head = f"{prefix}attn.h{h}"
            last = [n for n in (f"{head}.masked", f"{head}.scaled", f"{head}.scores") if n in num][0]
            dv = sp.dims.d_v
            want = loop_tiles(num[last].tolist(), num[f"{prefix}attn.v"][:, h * dv:(h + 1) * dv].tolist(),
                              sp.options.attention_tiles)
            for (j, part), rows in want.items():
                name = f"{head}.tiled" if j == "tiled" else f"{head}.tile{j}.{part}"
                for got in (num[name], ex[name]):
                    np.testing.assert_allclose(got, np.array(rows), rtol=tol, atol=tol, err_msg=name)
                checked += 1
            np.testing.assert_allclose(num[f"{head}.tiled"], num[f"{head}.out"], rtol=tol, atol=tol)
    return checked


CAUSAL = {
    "dims": {"seq_len": 5, "d_model": 4, "d_ff": 2, "heads": 2},
    "block": {"attention_tiles": 2, "causal": True, "norm_position": "pre", "bias": True},
    "random": {"seed": 3},
}


def test_causal_tiles_three_ways():
    assert check_against_loop(spec.from_mapping(CAUSAL)) == 2 * (3 * 3 + 1)


def test_padded_tiles_three_ways_with_a_fully_masked_first_block():
    sp = spec.from_mapping({**CAUSAL, "block": {"attention_tiles": 2},
                            "inputs": {"key_padding_mask": [True, True, False, False, True]}})
    num = numeric.forward(sp)
    assert np.isneginf(num["attn.h0.tile0.max"]).all() and (num["attn.h0.tile0.sum"] == 0).all()
    assert check_against_loop(sp) == 20


def test_a_batch_works_each_sequences_tiles():
    data, src = spec.read_spec("padding-batch")
    sp = spec.from_mapping({**data, "block": {**(data.get("block") or {}), "attention_tiles": 2}}, src)
    assert sp.dims.batch and check_against_loop(sp) > 0
    assert all(v == "exact" for _, v in online_softmax.prove(block.forward(sp)))


def test_torch_works_the_tiles_too():
    from symblock.reference import torch_ref
    sp = spec.from_mapping({**CAUSAL, "block": {"attention_tiles": 2},
                            "inputs": {"key_padding_mask": [True, True, False, False, False]}})
    got, want = torch_ref.forward(sp), numeric.forward(sp)
    tile_names = [n for n in want if "tile" in n]
    assert len(tile_names) == 2 * (3 * 3 + 1)
    for name in tile_names:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12, err_msg=name)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), n=st.integers(1, 5), causal=st.booleans())
def test_the_tiled_result_is_softmax_times_v_for_any_number_of_tiles(data, n, causal):
    size = data.draw(st.integers(1, n), label="tile size")
    X = data.draw(matrix(n, 2, bound=3), label="X")
    sp = spec.from_mapping({"dims": {"seq_len": n, "d_model": 2, "d_ff": 2, "heads": 1},
                            "block": {"attention_tiles": size, "causal": causal, "eps": "1/10"},
                            "inputs": {"X": X}, "random": {"seed": 5}})
    tr = block.forward(sp)
    assert online_softmax.prove(tr) == [("attn.h0.tiled", "exact")]
    num = numeric.forward(sp)
    s = num["attn.h0.masked" if causal else "attn.h0.scaled"]
    e = np.exp(s - s.max(axis=1, keepdims=True))
    softmax_v = (e / e.sum(axis=1, keepdims=True)) @ num["attn.v"]
    np.testing.assert_allclose(num["attn.h0.tiled"], softmax_v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(verify.exact_floats(tr)["attn.h0.tiled"], softmax_v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_verify_agrees_with_numpy_and_torch_on_every_tile(size):
    res = verify.run(spec.from_mapping({**CAUSAL, "block": {**CAUSAL["block"], "attention_tiles": size}}))
    assert res.ok, res.problems
    assert res.tiles == [("attn.h0.tiled", "exact"), ("attn.h1.tiled", "exact")]
    assert any("tile" in n for n in res.backends["torch"].steps)
