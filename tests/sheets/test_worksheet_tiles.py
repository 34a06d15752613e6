"""Worksheets of the online softmax over key tiles: the key works each tile row by row (the running
maximum, the earlier sum and accumulator rescaled by e^(m_old − m_new), then a / ℓ), every number
checked against NumPy written here; and a tiled set goes end to end: `worksheet --variants`, then
`check` of answers filled with NumPy's numbers, and of a planted unrescaled sum."""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import yaml

from symblock.engine import block, spec
from symblock.exercises import variant
from symblock.reference import numeric
from symblock.sheets.worksheet import documents
from worksheet_tools import key_answers_md, matrices, parse_entry

sys.path.insert(0, str(Path(__file__).parent))
from worked_lines import check_key  # noqa: E402

TILE_STEPS = [f"attn.h0.tile{j}.{p}" for j in (0, 1) for p in ("max", "sum", "acc")] + ["attn.h0.tiled"]


def tiles_by_hand(s, v, size=2):
    """The online softmax of masked scores s over values v in NumPy: per tile (m, ℓ, a), then a / ℓ."""
    n = s.shape[1]
    m, l, a, out = np.full((s.shape[0], 1), -np.inf), np.zeros((s.shape[0], 1)), np.zeros((s.shape[0], v.shape[1])), []
    for lo in range(0, n, size):
        blk = s[:, lo:lo + size]
        new = np.maximum(m, blk.max(axis=1, keepdims=True))
        r = np.where(np.isneginf(m), 0.0, np.exp(m - new))
        e = np.exp(blk - new)
        l, a, m = l * r + e.sum(axis=1, keepdims=True), a * r + e @ v[lo:lo + size], new
        out += [m, l, a]
    return out + [a / l]


def key_of(name="tiled-attention", lang="en"):
    v = variant.build("t", block.forward(spec.load(name)), variant.Options(preset="tiles"))
    return documents(v, formats=["markdown"], places=3, lang=lang).files["key.md"]


def test_the_key_asks_the_tiles_and_its_answers_are_numpys():
    key = key_of()
    answers = key_answers_md(key)
    assert list(answers) == TILE_STEPS
    s = np.array([[1, -np.inf, -np.inf, -np.inf], [1, 1, -np.inf, -np.inf], [2, 1, 3, -np.inf], [1, -1, 0, 3]])
    X = np.array([[1, 0], [0, 1], [1, 1], [2, -1]], float)
    want = tiles_by_hand(s, X @ np.array([[1, 2], [3, -1]], float))   # V = X W_V, by hand
    assert np.allclose(want[-1], numeric.forward(spec.load("tiled-attention"))["attn.h0.out"])
    for name, value in zip(TILE_STEPS, want):
        got = np.array([[parse_entry(e)[0] for e in row] for row in matrices(answers[name])[-1]])
        assert np.allclose(got, value, atol=5e-4), name


def test_a_later_tile_prints_its_rescaling_and_the_lines_follow_from_their_numbers():
    key = key_of()
    task = key.split("`attn.h0.tile1.sum`")[1].split("### ")[0]
    # row 4: the maximum moves from 1 to 3, so ℓ_0 = 1 + e^(−2) is rescaled by e^(1 − 3) = e^(−2)
    assert f"{1 + math.exp(-2):.3f} \\cdot e^{{1 - 3}}" in task
    assert f"{math.exp(-2):.4f}" in task and "rescaled by" in task
    acc = key.split("`attn.h0.tile1.acc`")[1].split("### ")[0]
    assert f"{math.exp(-2):.4f} \\cdot \\left(" in acc
    checked, errors = check_key(key, "tiled-attention")
    assert not errors and checked >= 8


def test_the_chinese_key_speaks_of_the_tiles_in_chinese():
    zh = key_of(lang="zh")
    assert "按键分块" in zh and "运行最大值" in zh and "重新缩放" in zh
    assert not re.search(r"Key tile|running sum", zh)


RANDOM = {"title": "Online softmax over key tiles",
          "dims": {"seq_len": 4, "d_model": 2, "d_ff": 2, "heads": 1},
          "block": {"eps": "1/100", "causal": True, "attention_scale": "none", "attention_tiles": 2},
          "weights": {"W_Q": [[1, 0], [0, 1]], "W_O": [[1, 0], [0, 1]]},
          "random": {"seed": 1, "low": -1, "high": 1}, "exercise": {"preset": "tiles"}}


def test_a_tiled_set_goes_from_worksheet_to_check(cli, tmp_path):
    path = tmp_path / "tiles.yaml"
    path.write_text(yaml.safe_dump(RANDOM), encoding="utf-8")
    code, out, err = cli("worksheet", path, "--variants", "3", "--out", tmp_path / "set", "--format", "markdown")
    assert code == 0, err
    ids = sorted(p.name for p in (tmp_path / "set" / "students").iterdir())
    assert len(ids) == 3
    blank = yaml.safe_load((tmp_path / "set" / "students" / ids[0] / "answers.yaml").read_text(encoding="utf-8"))
    assert list(blank["steps"]) == TILE_STEPS
    s = variant.rebuild(ids[0], str(path)).trace.spec
    T = numeric.forward(s)
    want = tiles_by_hand(T["attn.h0.masked"], T["attn.v"])
    filled = {"id": ids[0], "decimals": 6, "steps": {n: np.round(w, 6).tolist() for n, w in zip(TILE_STEPS, want)}}
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(filled), encoding="utf-8")
    code, out, err = cli("check", path, answers, "--json")
    data = json.loads(out)
    status = {x["name"]: x["status"] for x in data["steps"]}
    assert code == 0 and [status[n] for n in TILE_STEPS] == ["correct"] * 7, status
    # the earlier sum carried over unscaled (a row whose maximum moves exists: the draw guarantees it)
    m0, m1 = want[0], want[3]
    assert np.any(m1 > m0)
    e1 = np.exp(T["attn.h0.masked"][:, 2:] - m1).sum(axis=1, keepdims=True)
    wrong = want[1] + e1
    filled["steps"]["attn.h0.tile1.sum"] = np.round(wrong, 6).tolist()
    filled["steps"]["attn.h0.tiled"] = np.round(want[5] / wrong, 6).tolist()
    answers.write_text(json.dumps(filled), encoding="utf-8")
    code, out, err = cli("check", path, answers, "--json")
    steps = {x["name"]: x for x in json.loads(out)["steps"]}
    assert code == 1 and steps["attn.h0.tile1.sum"]["diagnosis"] == ["tile_sum_not_rescaled"]
    assert steps["attn.h0.tiled"]["status"] == "carried"


def test_the_tiled_example_asks_the_online_softmax_by_default(cli, tmp_path):
    """Its point is the tiles: with no --preset its sheet asks them; --preset full asks the block."""
    assert cli("worksheet", "tiled-attention", "--format", "markdown", "--out", tmp_path / "a").code == 0
    key = (tmp_path / "a" / "key.md").read_text(encoding="utf-8")
    assert "### Task 1 · `attn.h0.tile0.max`" in key and "`attn.h0.tile1.acc`" in key
    assert cli("worksheet", "tiled-attention", "--preset", "full", "--format", "markdown", "--out", tmp_path / "b").code == 0
    assert "tile0.max`" not in (tmp_path / "b" / "key.md").read_text(encoding="utf-8").split("## Tasks")[1]
