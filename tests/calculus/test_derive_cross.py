"""`symblock derive` on a decoder layer with cross-attention: each step in symbols, checked
against formulas written here by hand with SymPy (not the engine's code)."""
from __future__ import annotations

import json

import pytest
import sympy

from symblock.calculus.derive import derive
from symblock.cli import main
from symblock.engine import spec


def layer(norm_position="post", mem_len=3, pad=None):
    inputs = {"memory_padding_mask": pad} if pad else {}
    return spec.from_mapping({
        "dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1, "mem_len": mem_len},
        "block": {"cross_attention": True, "norm_position": norm_position, "eps": "1/10"},
        "inputs": inputs, "random": {"seed": 3}}, "dec.yaml")


def sym(name):
    return sympy.Symbol(name, real=True)


def mat(base, r, c):
    return sympy.Matrix(r, c, lambda i, j: sym(f"{base}_{{{i + 1}{j + 1}}}"))


def test_the_cross_attention_reads_the_decoder_for_queries_and_the_memory_for_keys():
    d = derive(layer())
    h1, m = mat("h^{(1)}", 2, 2), mat(r"h^{\mathrm{enc}}", 3, 2)
    for step, x, w in (("cross.q", h1, "Q"), ("cross.k", m, "K"), ("cross.v", m, "V")):
        want = x * mat(f"w^{{{w},c}}", 2, 2)
        got = sympy.Matrix(d[step].entries)
        assert got.shape == want.shape and sympy.simplify(got - want) == sympy.zeros(*want.shape), step
    assert d["cross.q"].over == "H_1" and d["cross.k"].over == r"H^{\mathrm{enc}}"
    # the scores: Q^c K^cᵀ over the memory's 3 rows
    want = mat("q^{c}", 2, 2) * mat("k^{c}", 3, 2).T
    assert sympy.simplify(sympy.Matrix(d["cross.h0.scores"].entries) - want) == sympy.zeros(2, 3)


def test_no_causal_mask_on_the_cross_attention_only_padding():
    d = derive(layer(pad=[False, True, False]))
    s = mat("m^{c}", 2, 3)   # the masked scores' symbols
    weights = sympy.Matrix(d["cross.h0.weights"].entries)
    for i in range(2):   # every query row attends to memory rows 0 and 2, whatever its position
        z = sympy.exp(s[i, 0]) + sympy.exp(s[i, 2])
        assert sympy.simplify(weights[i, 0] - sympy.exp(s[i, 0]) / z) == 0
        assert weights[i, 1] == 0
    self_w = d["attn.h0.weights"].entries   # the self-attention is causal: row 0 sees key 0 only
    assert self_w[0][0] == 1 and self_w[0][1] == 0


@pytest.mark.parametrize("norm_position, reads", [("post", {"norm3": "R_3", "cross.q": "H_1", "resid2": "H_1, C"}),
                                                  ("pre", {"norm3": "R_2", "cross.q": "N_2", "resid2": "R_1, C"})])
def test_both_norm_orders_place_the_cross_attention_as_torch(norm_position, reads):
    d = derive(layer(norm_position))
    for step, over in reads.items():
        assert d[step].over == over, step
    assert list(d).index("resid1") < list(d).index("cross.q") < list(d).index("ffn.hidden")


def test_derive_command_on_a_decoder_layer(tmp_path, capsys):
    path = tmp_path / "dec.yaml"
    path.write_text(json.dumps({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1, "mem_len": 2},
                                "block": {"cross_attention": True, "eps": "1/10"}, "random": {"seed": 3}}))
    assert main(["derive", str(path), "--step", "cross.k", "--format", "latex"]) == 0
    out = capsys.readouterr().out
    assert r"h^{\mathrm{enc}}_{11}" in out and "w^{K,c}_{11}" in out
