"""The generator drawing issue 15's shapes (random.dims, random.padding, random.dropout) and
holding every guarantee in each sequence of a batch. The guarantees are read off the NumPy float64
forward (symblock.reference.numeric, an independent path), not the generator's own checks."""
from __future__ import annotations

import numpy as np
import pytest

from symblock.engine import block
from symblock.engine.spec import SpecError
from symblock.exercises.generate import from_mapping, variant
from symblock.reference import numeric

BATCH = {
    "dims": {"seq_len": 3, "d_model": 4, "d_ff": 2, "heads": 1},
    "block": {"norm_position": "pre", "eps": 0},
    "random": {"dims": {"d_k": [1, 4], "batch": 2}, "padding": [0, 1],
               "dropout": {"p": "1/2", "steps": ["ffn.act"]},
               "ranges": {"X": [-3, 3], "weights": [-1, 1]}, "x_step": "1/2", "exact_norm": ["norm1"],
               "exact_scale": True, "no_degenerate_rows": True, "softmax_distinct": True,
               "scaled_range": [-3, 3], "softmax_weights": ["0.02", "0.9"], "relu_mixed": "rows"},
}


def batch(seed: int):
    return variant({**BATCH, "random": {**BATCH["random"], "seed": seed}}, "t")


@pytest.fixture(scope="module")
def drawn():
    return [batch(seed) for seed in range(1, 7)]


def test_every_sequence_of_a_drawn_batch_meets_the_guarantees(drawn):
    for v in drawn:
        s, T = v.spec, numeric.forward(v.spec)
        assert s.dims.batch == 2 and s.dims.d_k in (1, 4)
        for b, pad in enumerate(s.key_padding_mask):
            p = f"b{b}."
            assert sum(pad) in (0, 1) and list(pad) == sorted(pad)  # padding at the end
            live = ~np.array(pad)
            x = T[p + "attn.h0.masked"][:, live]
            assert np.abs(x).max() <= 3 + 1e-12, (v.spec.seed, p)          # scaled_range
            w = T[p + "attn.h0.weights"]
            assert (w[:, ~live] == 0).all()
            if live.sum() > 1:
                assert ((w[:, live] >= 0.02) & (w[:, live] <= 0.9)).all()  # softmax_weights
            for row in x:
                assert len(np.unique(np.round(row, 9))) == len(row)      # softmax_distinct
            h = T[p + "ffn.hidden"]
            assert ((h > 1e-12).any(axis=1) & (h < -1e-12).any(axis=1)).all()  # relu_mixed rows
            std = T[p + "norm1.std"][:, 0]
            assert (std >= 0.5).all() and np.allclose(std * 4, np.round(std * 4))  # exact σ (quarters)


def test_dims_are_picked_from_the_choices_and_the_weights_have_them(drawn):
    assert {v.spec.dims.d_k for v in drawn} == {1, 4}
    assert {sum(pad) for v in drawn for pad in v.spec.key_padding_mask} == {0, 1}
    for v in drawn:
        assert np.array(v.spec.params["W_Q"].tolist()).shape == (4, v.spec.dims.d_k)
    again = batch(drawn[0].spec.seed)
    assert again.key == drawn[0].key and again.spec.key_padding_mask == drawn[0].spec.key_padding_mask


def test_drawn_dropout_masks_keep_a_row_entry_and_drop_one(drawn):
    for v in drawn:
        s, T = v.spec, numeric.forward(v.spec)
        assert sorted(s.dropout_masks) == ["b0.ffn.act", "b1.ffn.act"]
        for name, m in s.dropout_masks.items():
            m = np.array(m.tolist(), dtype=float)
            assert m.any(axis=1).all() and (m == 0).any()
            np.testing.assert_allclose(T[name + ".dropped"], m * T[name] * 2)  # p = 1/2
    assert len({tuple(map(tuple, np.array(v.spec.dropout_masks["b0.ffn.act"].tolist()))) for v in drawn}) > 1


def test_one_sequence_draws_widths_and_padding_too():
    s = from_mapping({"dims": {"seq_len": 3, "d_model": 3, "d_ff": 2}, "block": {"eps": "1/10", "causal": True},
                      "random": {"seed": 5, "dims": {"d_k": 2, "d_v": [1]}, "padding": [2],
                                 "integer_scores": True}}, "t")
    assert (s.dims.batch, s.dims.d_k, s.dims.d_v) == (0, 2, 1) and s.key_padding_mask == ((False, True, True),)
    t = block.forward(s)
    assert t.names()[0] == "x" and all(e.q.denominator == 1 for r in t["attn.h0.scores"].value.rows for e in r)


def test_the_preset_takes_drawn_widths():
    v = variant({"random": {"seed": 2, "difficulty": "hard", "dims": {"d_k": [4]}, "padding": True}}, "t")
    assert (v.spec.dims.heads, v.spec.dims.d_k, v.spec.dims.d_v) == (2, 4, 2)
    assert np.array(v.spec.params["W_Q"].tolist()).shape == (4, 8)


@pytest.mark.parametrize("rnd, where, words", [
    ({"dims": {"d_k": [2]}}, "random.dims.d_k", "given as well"),
    ({"dims": {"width": [2]}}, "random.dims.width", "unknown"),
    ({"dims": {"d_v": []}}, "random.dims.d_v", "non-empty"),
    ({"padding": [3]}, "random.padding", "below seq_len = 3"),
    ({"dropout": {"p": "1/2", "steps": ["attn.q"]}}, "random.dropout.steps", "no step 'attn.q'"),
    ({"dropout": {"p": 1, "steps": ["ffn.act"]}}, "random.dropout.p", "0 < p < 1"),
    ({"dims": {"batch": 2}}, "random.dims.batch", "inputs.X is given"),
])
def test_bad_shape_draws_are_named(rnd, where, words):
    data = {"dims": {"seq_len": 3, "d_model": 2, "d_ff": 2, "d_k": 2}, "inputs": {"X": [[1, 0], [0, 1], [1, 1]]},
            "random": {"seed": 1, **rnd}}
    with pytest.raises(SpecError) as e:
        from_mapping(data, "t")
    assert e.value.where == where and words in e.value.message, str(e.value)


def test_stress_reports_the_variety_of_each_sequence(tmp_path, capsys):
    import json
    import yaml
    from symblock.cli import main
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump({**BATCH, "random": {**BATCH["random"], "seed": 1}}), encoding="utf-8")
    assert main(["stress", str(path), "-n", "4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    steps = {row["step"]: row for row in report["variety"]}
    for p in ("b0.", "b1."):
        assert steps[p + "attn.h0.weights"]["distinct"] == 4 and steps[p + "norm1.std"]["variants"] == 4
    assert 0 < report["max_exponent"] <= 3   # the softmax inputs of both sequences, within scaled_range
