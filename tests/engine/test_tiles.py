"""The online softmax over key tiles: its step names, its exact values worked by hand, the
algebra that proves the tiled result equal to softmax·V, and its spec errors."""
from __future__ import annotations

import math
import textwrap

import pytest
import sympy

from symblock.cli import main
from symblock.engine import block, exact, names, online_softmax, proof, spec, steps, tiles
from symblock.engine.steps import Dims, Options
from symblock.errors import SpecError

E = sympy.E

# Scores S = Q Kᵀ (no 1/√d_k), causal: [[1, −∞, −∞], [1, 1, −∞], [2, 1, 3]]; V = [[1, 2], [3, −1], [4, 1]]
BASE = {
    "dims": {"seq_len": 3, "d_model": 2, "d_ff": 2, "heads": 1},
    "block": {"attention_tiles": 2, "causal": True, "attention_scale": "none", "eps": "1/10"},
    "weights": {"W_Q": [[1, 0], [0, 1]], "W_K": [[1, 1], [0, 1]], "W_V": [[1, 2], [3, -1]],
                "W_O": [[1, 0], [0, 1]], "W_1": [[1, 0], [0, 1]], "W_2": [[1, 0], [0, 1]]},
    "inputs": {"X": [[1, 0], [0, 1], [1, 1]]},
}


def load(**block):
    return spec.from_mapping({**BASE, "block": {**BASE["block"], **block}})


def form(v):
    return sympy.sympify(exact.to_sympy(v))


def same(v, expected) -> bool:
    return sympy.simplify(form(v) - sympy.sympify(expected)) == 0


# ---------------------------------------------------------------- names and the step graph

def test_a_tile_step_name_is_parsed_into_head_tile_and_kind():
    p = names.parse("gen2.b1.layer0.attn.h2.tile3.acc")
    assert (p.kind, p.head, p.tile, p.batch, p.layer, p.gen, p.part) == ("tile_acc", 2, 3, 1, 0, 2, "acc")
    assert p.head_step("out") == "gen2.b1.layer0.attn.h2.out"
    assert names.parse("attn.h0.tile0.max").kind == "tile_max"
    assert names.parse("attn.h1.tile10.sum").tile == 10
    assert (names.parse("attn.h0.tiled").kind, names.parse("attn.h0.tiled").tile) == ("tiled", None)
    assert names.parse("attn.h0.tile0.weights").kind == "other"   # a tile has max, sum, acc only
    assert names.parse("attn.h1.scores").tile is None


def test_the_tiles_come_after_their_heads_out_and_read_what_the_recurrence_reads():
    dims, opts = Dims(seq_len=5, d_model=4, d_ff=2, heads=2), Options(causal=True, attention_tiles=2)
    order = steps.step_names(dims, opts)
    h0 = order[order.index("attn.h0.out") + 1:order.index("attn.h1.scores")]
    assert h0 == [f"attn.h0.tile{j}.{p}" for j in range(3) for p in ("max", "sum", "acc")] + ["attn.h0.tiled"]
    g = steps.step_inputs(dims, opts)
    assert g["attn.h1.tile0.max"] == ("attn.h1.masked",)
    assert g["attn.h1.tile2.sum"] == ("attn.h1.tile1.sum", "attn.h1.tile1.max", "attn.h1.tile2.max", "attn.h1.masked")
    assert g["attn.h1.tiled"] == ("attn.h1.tile2.acc", "attn.h1.tile2.sum")
    assert steps.step_shape("attn.h0.tile1.acc", Dims(seq_len=5, d_model=4, d_ff=2, heads=2, d_v=3)) == (5, 3)
    assert steps.step_shape("attn.h0.tile1.max", dims) == (5, 1)
    # the output does not read them, yet they are worked; a given out leaves nothing to prove
    assert "attn.h1.tiled" in steps.computed_steps(dims, opts, set())
    assert not any("tile" in n for n in steps.computed_steps(dims, opts, {"attn.h0.out", "attn.h1.out"}))
    assert tiles.key_blocks(5, 2) == [range(0, 2), range(2, 4), range(4, 5)]


def test_the_tiles_cost_is_counted_by_the_size_guard():
    from symblock.engine import cost
    dims = Dims(seq_len=4, d_model=2, d_ff=2, heads=1)
    plain, tiled = cost.cost(dims, Options()), cost.cost(dims, Options(attention_tiles=2))
    # per tile: max 4·(2 + 6), sum 4·((2 + 1)·(1 + 12) + 6), acc 4·2·(3 + 6); the tiled result 4·2·6
    assert tiled - plain == 2 * (4 * 8 + 4 * 45 + 8 * 9) + 8 * 6


# ---------------------------------------------------------------- values worked by hand

def test_each_tile_as_worked_by_hand():
    tr = block.forward(load())
    m0, l0, a0 = (tr[f"attn.h0.tile0.{p}"].value.rows for p in ("max", "sum", "acc"))
    m1, l1, a1 = (tr[f"attn.h0.tile1.{p}"].value.rows for p in ("max", "sum", "acc"))
    # row 0 sees key 0 alone: tile 1 is fully masked and changes nothing
    assert form(m0[0][0]) == 1 and form(m1[0][0]) == 1
    assert form(l0[0][0]) == 1 and form(l1[0][0]) == 1 and [form(x) for x in a1[0]] == [1, 2]
    # row 1: scores 1, 1 in tile 0, so m = 1 and l = e^0 + e^0 = 2, a = v0 + v1
    assert form(l0[1][0]) == 2 and [form(x) for x in a0[1]] == [4, 1]
    # row 2: tile 0 has scores 2, 1 (m0 = 2), tile 1 score 3 (m1 = 3)
    assert form(m0[2][0]) == 2 and form(m1[2][0]) == 3
    assert same(l0[2][0], 1 + 1 / E)
    assert same(a0[2][0], 1 + 3 / E) and same(a0[2][1], 2 - 1 / E)
    assert same(l1[2][0], (1 + 1 / E) / E + 1)                      # rescaled by e^(2 − 3)
    assert same(a1[2][0], (1 + 3 / E) / E + 4) and same(a1[2][1], (2 - 1 / E) / E + 1)
    tiled, out = tr["attn.h0.tiled"].value.rows, tr["attn.h0.out"].value.rows
    assert same(tiled[2][0], (4 * E**2 + E + 3) / (E**2 + E + 1))
    assert all(math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-15) for ra, rb in zip(tiled, out)
               for a, b in zip(ra, rb))


def test_a_fully_masked_block_leaves_the_running_max_at_minus_infinity_and_adds_nothing():
    tr = block.forward(spec.from_mapping({**BASE, "block": {"attention_tiles": 2, "eps": "1/10"},
                                          "inputs": {**BASE["inputs"], "key_padding_mask": [True, True, False]}}))
    assert all(r[0] is exact.NEG_INF for r in tr["attn.h0.tile0.max"].value.rows)
    assert all(form(r[0]) == 0 for r in tr["attn.h0.tile0.sum"].value.rows)
    assert all(form(x) == 0 for r in tr["attn.h0.tile0.acc"].value.rows for x in r)
    assert all(form(r[0]) == 1 for r in tr["attn.h0.tile1.sum"].value.rows)      # e^(s₂ − s₂)
    assert [[form(x) for x in r] for r in tr["attn.h0.tiled"].value.rows] == [[4, 1]] * 3   # v₂ alone
    assert online_softmax.prove(tr) == [("attn.h0.tiled", "exact")]


def test_the_tile_recomputes_give_the_traces_values_from_its_own_inputs():
    tr = block.forward(load(attention_scale="sqrt_dk"))
    env = {s.name: s.value for s in tr}
    checked = 0
    for st in tr:
        kind = names.parse(st.name).kind
        if kind in online_softmax.RECOMPUTE:
            got = online_softmax.RECOMPUTE[kind](st.name, st.inputs, env, tr.spec)
            assert got.floats() == st.value.floats(), st.name
            checked += 1
    assert checked == 7


# ---------------------------------------------------------------- the proof

def test_the_algebra_proves_exponentials_multiply_and_cancel():
    a, b = exact.real(sympy.Rational(1, 3)), exact.sqrt(2) / 2
    assert proof.equal(exact.exp(a) * exact.exp(b), exact.exp(a + b))
    assert proof.equal(1 / exact.sqrt(2), exact.sqrt(2) / 2)
    # (e^(1−3) v + e^0 w) / (e^(1−3) + 1) = (e^1 v + e^3 w) / (e^1 + e^3)
    e = exact.exp
    lhs = (e(exact.real(-2)) * 5 + 7) / (e(exact.real(-2)) + 1)
    rhs = (e(exact.real(1)) * 5 + e(exact.real(3)) * 7) / (e(exact.real(1)) + e(exact.real(3)))
    assert proof.equal(lhs, rhs)
    # unequal values are never proved equal
    assert not proof.equal(lhs, (e(exact.real(1)) * 7 + e(exact.real(3)) * 5) / (e(exact.real(1)) + e(exact.real(3))))
    assert not proof.equal(exact.exp(a), exact.exp(b))
    assert not proof.equal(exact.sqrt(2), exact.sqrt(3))


def test_the_algebra_adds_fractions_over_different_denominators():
    x = exact.exp(exact.real(sympy.Rational(1, 3)))
    lhs = 1 / (x + 1) + 1 / (x + 2)
    rhs = (2 * x + 3) / ((x + 1) * (x + 2))
    assert proof.equal(lhs, rhs) and proof.equal(rhs, lhs)
    assert not proof.equal(lhs, (2 * x + 4) / ((x + 1) * (x + 2)))
    # 1/√q and powers of √q are read in one form
    r = exact.sqrt(5)
    assert proof.equal(r * r * r, 5 * r) and proof.equal(1 / (r * r * r), r / 25)


def test_every_head_of_the_examples_is_proved_exactly_for_every_tile_size():
    for name in ("pre-ln-causal-gelu", "padding-batch", "rmsnorm-swiglu"):
        data, src = spec.read_spec(name)
        for size in (1, 2, 3):
            data = {**data, "block": {**(data.get("block") or {}), "attention_tiles": size}}
            tr = block.forward(spec.from_mapping(data, src))
            verdicts = online_softmax.prove(tr)
            assert verdicts and all(v == "exact" for _, v in verdicts), (name, size, verdicts)


def test_a_wrong_tile_given_is_shown_to_differ_and_verify_fails(capsys, tmp_path):
    import json
    wrong = {"attn.h0.tile1.acc": [[1, 2], [4, 1], [5, 2]]}
    sp = spec.from_mapping({**BASE, "given": wrong})
    assert online_softmax.prove(block.forward(sp)) == [("attn.h0.tiled", "differs")]
    path = tmp_path / "wrong.yaml"
    path.write_text(json.dumps({**BASE, "given": wrong}), encoding="utf-8")
    assert main(["verify", str(path), "--no-torch"]) == 1
    assert "tiled results differ from softmax·V: attn.h0.tiled" in capsys.readouterr().out


def test_verify_shows_the_tiles_proved(capsys, tmp_path):
    import json
    path = tmp_path / "tiles.json"
    path.write_text(json.dumps(BASE), encoding="utf-8")
    assert main(["verify", str(path), "--no-torch"]) == 0
    out = capsys.readouterr().out
    assert "Online softmax: 1 tiled head vs softmax·V: 1 equal exactly (by algebra)" in out
    assert "attn.h0.tile1.acc" in out
    assert main(["verify", str(path), "--no-torch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tiles"] == {"attn.h0.tiled": "exact"}


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("value", [0, -2, "2", True, 1.5, [2]])
def test_a_tile_size_that_is_not_a_positive_whole_number_is_refused(tmp_path, capsys, value):
    import json
    with pytest.raises(SpecError) as e:
        load(attention_tiles=value)
    assert e.value.where == "block.attention_tiles"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**BASE, "block": {**BASE["block"], "attention_tiles": value}}), encoding="utf-8")
    assert main(["forward", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: block.attention_tiles: expected a whole number of keys per tile, at least 1" in err
    assert "Traceback" not in err


def test_tiles_with_dropout_on_the_weights_or_in_a_model_are_refused():
    with pytest.raises(SpecError, match="dropout mask") as e:
        spec.from_mapping({**BASE, "dropout": {"p": "1/2", "masks": {"attn.h0.weights": [[1, 0, 0], [1, 1, 0], [0, 1, 1]]}}})
    assert e.value.where == "block.attention_tiles"
    from symblock.engine import model_spec
    text = textwrap.dedent("""\
        model: {vocab: [a, b], prompt: [a, b]}
        dims: {d_model: 2, d_ff: 2, heads: 1}
        block: {attention_tiles: 2}
        random: {seed: 1}
        """)
    import yaml
    with pytest.raises(SpecError, match="single block") as e:
        model_spec.from_mapping(yaml.safe_load(text))
    assert e.value.where == "block.attention_tiles"


def test_a_tile_larger_than_the_sequence_is_one_tile():
    tr = block.forward(load(attention_tiles=7))
    assert [n for n in tr.names() if "tile" in n] == ["attn.h0.tile0.max", "attn.h0.tile0.sum",
                                                       "attn.h0.tile0.acc", "attn.h0.tiled"]
    assert online_softmax.prove(tr) == [("attn.h0.tiled", "exact")]
