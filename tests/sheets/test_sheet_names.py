"""What a sheet prints from a name it reads with the engine's parsers: the conventions the asked
steps need, the symbols of parameters, and the data packed with each norm's γ beside its β."""
from types import SimpleNamespace

import pytest

from symblock.sheets.builder import Builder
from symblock.sheets.numbers import param_symbol


@pytest.mark.parametrize("ask, uses", [
    (["norm1.mean", "norm1.std"], {"norm"}),
    (["attn.h0.scores", "attn.h1.weights"], {"attn"}),
    (["b1.attn.h0.weights.dropped"], {"attn", "dropout"}),
    (["gen1.layer0.cache.k"], {"attn"}),
    (["ffn.act", "attn.q"], {"ffn", "attn", "order"}),
    (["resid1"], {"resid", "order"}),
    (["layer0.output"], {"output", "order"}),
    (["grad.W_1"], {"ffn"}),
    (["grad.b_Q", "grad.X"], {"attn"}),
    (["grad.ln1.gamma", "x", "logits"], set()),
])
def test_the_conventions_box_states_what_the_asked_steps_work(ask, uses):
    assert Builder.uses(SimpleNamespace(ex=SimpleNamespace(ask=ask))) == uses


@pytest.mark.parametrize("name, tex", [
    ("X", "X"), ("b1.X", "X^{(b1)}"), ("W_Q", "W^{Q}"), ("b_O", "b^{O}"), ("W_1", "W_1"), ("b_3", "b_3"),
    ("ln1.gamma", r"\gamma^{(1)}"), ("ln2.beta", r"\beta^{(2)}"), ("ln_final.gamma", r"\gamma^{(f)}"),
    ("W_E", "W_E"),
])
def test_parameter_symbols(name, tex):
    assert param_symbol(name) == tex


def item(name, width=4):
    return {"name": name, "width": width, "symbol": "s", "rows": 1, "math": name}


def test_a_norms_gamma_and_beta_share_a_line_and_nothing_else_joins_them():
    rows = Builder.data_rows(None, [item("x"), item("W_Q"), item("ln1.gamma"), item("ln1.beta"),
                                    item("ln2.gamma"), item("W_1"), item("b_1")])
    assert [[m["name"] for m in r["members"]] for r in rows] == \
        [["x", "W_Q"], ["ln1.gamma", "ln1.beta"], ["ln2.gamma"], ["W_1", "b_1"]]
