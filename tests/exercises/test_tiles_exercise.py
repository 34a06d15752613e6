"""A block with the online softmax over key tiles as an exercise: the ordinary presets leave the
tiles out (they ask the head's out), the `tiles` preset asks exactly the tile steps with the scores
and V as data, a block without tiles refuses that preset clearly, and the variety guarantees cover
the tiles."""
from __future__ import annotations

import numpy as np
import pytest

from symblock.engine import block, spec
from symblock.errors import SpecError
from symblock.exercises import stress
from symblock.exercises.presets import choose, tiles_problem
from symblock.reference import numeric

TILE_STEPS = [f"attn.h0.tile{j}.{p}" for j in (0, 1) for p in ("max", "sum", "acc")] + ["attn.h0.tiled"]


def test_the_ordinary_presets_leave_the_tiles_out_and_ask_the_heads_out():
    trace = block.forward(spec.load("tiled-attention"))
    assert "attn.h0.tile1.acc" in trace
    for preset in ("full", "attention"):
        ask = choose(trace, preset).ask
        assert "attn.h0.out" in ask and not any("tile" in n for n in ask), preset


def test_the_tiles_preset_asks_every_tile_step_from_the_scores_and_v():
    ex = choose(block.forward(spec.load("tiled-attention")), "tiles")
    assert list(ex.ask) == TILE_STEPS
    assert set(ex.data_steps) == {"attn.h0.masked", "attn.v"} and ex.data_params == ()


def test_a_tile_step_may_be_asked_by_name():
    data, src = spec.read_spec("tiled-attention")
    sp = spec.from_mapping({**data, "exercise": {"ask": ["attn.h0.tile1.sum"]}}, src)
    ex = choose(block.forward(sp))
    assert ex.ask == ("attn.h0.tile1.sum",)
    assert set(ex.data_steps) == {"attn.h0.tile0.sum", "attn.h0.tile0.max", "attn.h0.tile1.max", "attn.h0.masked"}


def test_the_tiles_preset_on_a_block_without_tiles_is_a_clear_error(cli):
    with pytest.raises(SpecError, match="block.attention_tiles") as e:
        choose(block.forward(spec.load("seed-post-ln")), "tiles")
    assert e.value.where == "--preset"
    code, out, err = cli("worksheet", "seed-post-ln", "--preset", "tiles", "--out", "w")
    assert code == 2 and "the tiles preset asks the online softmax" in err and "Traceback" not in err


def _tiled(X, W_K):
    return spec.from_mapping({
        "dims": {"seq_len": 4, "d_model": 2, "d_ff": 2, "heads": 1},
        "block": {"causal": True, "attention_scale": "none", "attention_tiles": 2, "eps": "1/100"},
        "weights": {"W_Q": [[1, 0], [0, 1]], "W_K": W_K, "W_V": [[1, 0], [0, 1]], "W_O": [[1, 0], [0, 1]],
                    "W_1": [[1, 0], [0, 1]], "W_2": [[1, 0], [0, 1]]},
        "inputs": {"X": X}}, "<t>")


def test_a_draw_whose_running_maximum_never_moves_is_no_tiles_exercise():
    """Scores worked by hand (W_K = 0: every score 0): the maximum is 0 from the first tile on, so
    every rescaling is e^0 = 1 and forgetting it leaves no trace; with W_K = I row 3 of X = (2, 0)
    scores 4 against itself, above its tile-0 maximum 2, and the draw is usable."""
    X = [[1, 0], [0, 1], [2, 0], [0, 1]]
    still = block.forward(_tiled(X, [[0, 0], [0, 0]]))
    assert tiles_problem(still) == "tiles_rescale: the running maximum of attn.h0 never moves after its first key tile"
    moves = block.forward(_tiled(X, [[1, 0], [0, 1]]))
    S = np.array(X, float) @ np.array(X, float).T          # Q Kᵀ with W_Q = W_K = I
    assert S[2, 2] == 4 and S[2, :2].max() == 2
    assert tiles_problem(moves) is None
    assert np.allclose(numeric.forward(moves.spec)["attn.h0.tile1.max"][2], 4)


def test_the_running_values_count_as_per_row_statistics_in_the_variety_guarantee():
    """Five variants whose running maxima take only three values break the guarantee (at least
    min(5, n) values), however different their matrices are; the accumulator is no statistic."""
    from symblock.engine import exact
    from symblock.engine.matrix import Mat

    def mat(rows):
        return Mat([[exact.real(v) for v in r] for r in rows])
    answers = [{"attn.h0.tile0.max": mat([[k % 2], [1], [0], [k // 2]]),
                "attn.h0.tile0.acc": mat([[k, 0]])} for k in range(5)]
    var = stress.variety(answers)
    assert var["attn.h0.tile0.max"].values == 3
    assert "attn.h0.tile0.max: its entries take only 3 distinct values" in var["attn.h0.tile0.max"].problem()
    assert var["attn.h0.tile0.acc"].values is None and var["attn.h0.tile0.acc"].problem() is None


def test_the_time_estimate_counts_the_tiles_exponentials_by_hand():
    """tiled-attention, causal over 4 keys in tiles of 2: tile 0 has 1 + 2 + 2 + 2 live scores (7
    e^(s − m)); tile 1 has 0 + 0 + 1 + 2 live scores plus one rescaling per row (3 + 4 = 7)."""
    from symblock.exercises.presets import estimate
    trace = block.forward(spec.load("tiled-attention"))
    per = {name: (cells, madds, specials) for name, cells, madds, specials in estimate(trace, choose(trace, "tiles")).per_step}
    assert per["attn.h0.tile0.sum"][2] == 7 and per["attn.h0.tile1.sum"][2] == 7
    assert per["attn.h0.tile0.max"] == (4, 8, 0)            # 4 rows × 2 keys compared
    assert per["attn.h0.tile1.acc"] == (8, (3 + 4) * 2, 0)   # each weight times a 2-entry value row
