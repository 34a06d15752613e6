"""Sheets and keys of RoPE and grouped K/V heads: cos Φ and sin Φ printed as given data, the
rotations worked pair by pair, each head's scores and output read from its K/V head. Numbers in the
keys are checked against NumPy (reference/ or written here), never against the engine."""
from __future__ import annotations

import math
import re

import numpy as np

from symblock.engine import block, spec
from symblock.exercises import variant
from symblock.exercises.generate import load
from symblock.reference import numeric, numeric_model
from symblock.sheets.worksheet import documents
from worksheet_tools import katex_check, key_answers_md, math_fragments, matrices, parse_entry

# 4 query heads over 2 K/V heads, d_k 4 (two pairs a head), positions as given
GROUPED = {"dims": {"seq_len": 3, "d_model": 4, "d_ff": 2, "heads": 4, "kv_heads": 2, "d_k": 4, "d_v": 2},
           "block": {"norm_position": "post", "eps": "1/10", "causal": True, "attention_scale": "none",
                     "rope": {"theta": 100, "style": "interleaved"}},
           "inputs": {"X": [[1, 0, 2, -1], [0, 1, -1, 2], [2, -1, 0, 1]], "positions": [1, 2, 4]},
           "random": {"seed": 7, "low": -1, "high": 1}}


def key_of(s, lang="en", preset=None):
    v = variant.build("t", block.forward(s), variant.Options(preset))
    return documents(v, formats=["markdown"], places=3, lang=lang).files["key.md"]


def section(key: str, name: str) -> str:
    return next(s for s in re.split(r"^### ", key, flags=re.M) if s.startswith(f"Task") and f"`{name}`" in s.splitlines()[0])


def given(key: str, symbol: str) -> list[list[str]]:
    """The decimals of a given matrix (`symbol = [exact] ≈ [decimals]`)."""
    m = re.search(re.escape(symbol) + r" (?:= \\begin\{bmatrix\}.*?\\end\{bmatrix\} )?\\approx (\\begin\{bmatrix\}.*?\\end\{bmatrix\})", key)
    return matrices(m.group(1))[0]


def test_rope_gqa_key_answers_given_table_and_worked_lines_are_numpys():
    s = load("rope-gqa")
    T = numeric.forward(s)
    key = key_of(s)
    answers = key_answers_md(key)
    assert {"attn.q_rot", "attn.k_rot", "attn.h1.scores"} <= set(answers)
    for name, tex in answers.items():
        for i, row in enumerate(matrices(tex)[-1]):
            for j, cell in enumerate(row):
                got, want = parse_entry(cell)[0], T[name][i, j]
                assert got == want if np.isinf(want) else abs(got - want) <= 0.5e-3 + 1e-12, (name, i, j)
    # cos Φ and sin Φ given: one pair a head (d_k 2), angle m at position m, exact forms beside decimals
    assert r"\cos\Phi = \begin{bmatrix} 1 \\ \cos{\left(1 \right)} \\ \cos{\left(2 \right)} \end{bmatrix}" in key
    assert [float(r[0]) for r in given(key, r"\sin\Phi")] == [round(math.sin(m), 3) + 0.0 for m in range(3)]
    # the rotation worked for row 2 (position 1): K'_21 = K_21 cos 1 − K_22 sin 1
    work = section(key, "attn.k_rot")
    m = re.search(r"\(K'\)_\{21\} &= K_\{21\} \(\\cos\\Phi\)_\{21\} - K_\{22\} \(\\sin\\Phi\)_\{21\} = .*? (?:=|\\approx) (-?[\d.]+)", work)
    assert m and abs(float(m.group(1)) - T["attn.k_rot"][1, 0]) <= 0.5e-3
    # both query heads read the one K/V head
    assert "Query head 1 reads K/V head 0." in section(key, "attn.h1.scores")
    assert r"S_1 = Q'_1 {K'_0}^{\top} \approx " in section(key, "attn.h1.scores")  # rotated: rounded operands
    assert r"$0 \to 0, 1 \to 0$" in key
    assert katex_check(math_fragments(key, "rope-gqa")) > 50


def test_grouped_heads_work_their_k_v_heads_columns():
    """Head 1 of 4 reads K/V head 0 (⌊1·2/4⌋), head 2 reads K/V head 1: the key's first score and
    output entries are the NumPy products with those columns."""
    s = spec.from_mapping(GROUPED)
    T = numeric.forward(s)
    key = key_of(s)
    assert r"$0 \to 0, 1 \to 0, 2 \to 1, 3 \to 1$" in key
    line = re.search(r"\(S_1\)_\{11\} &= .*? (?:=|\\approx) (-?[\d.]+)", section(key, "attn.h1.scores")).group(1)
    assert abs(float(line) - T["attn.q_rot"][0, 4:8] @ T["attn.k_rot"][0, 0:4]) <= 2e-3
    out = re.search(r"\(O_2\)_\{31\} &= .*? (?:=|\\approx) (-?[\d.]+)", section(key, "attn.h2.out")).group(1)
    assert abs(float(out) - T["attn.h2.weights"][2] @ T["attn.v"][:, 2]) <= 2e-3
    assert "Query head 2 reads K/V head 1." in key
    # interleaved pairs (1, 2), (3, 4) of each head; cos Φ has a column per pair, a row per position
    assert "are (1, 2), (3, 4)" in key
    assert r"\Phi = \begin{bmatrix} 1 & 0.1 \\ 2 & 0.2 \\ 4 & 0.4 \end{bmatrix}" in key   # m·100^(−2i/4), exact
    cos = given(key, r"\cos\Phi")
    assert [[float(c) for c in r] for r in cos] == [[round(math.cos(m * 100 ** (-i / 2)), 3) + 0.0 for i in (0, 1)]
                                                    for m in (1, 2, 4)]


def test_rope_preset_asks_the_rotations_and_the_scores_and_zh_prose():
    s = load("rope-gqa")
    key = key_of(s, "zh", preset="rope")
    assert list(key_answers_md(key)) == ["attn.q_rot", "attn.k_rot", "attn.h0.scores", "attn.h1.scores"]
    assert "RoPE：在计算分数之前" in key and "查询头 1 读取 K/V 头 0。" in key
    assert "Rotate" not in key


def test_a_tiny_llama_decoder_key_turns_the_new_row_by_its_position():
    s = load("tiny-llama", allow_model=True)
    from symblock.engine.model import forward_any
    v = variant.build("t", forward_any(s), variant.Options("decoder"))
    key = documents(v, formats=["markdown"], places=3).files["key.md"]
    T = numeric_model.forward(s)
    assert "Row 1 is at position $m = 3$" in key and r"K'_{\text{cache}}" in key
    assert float(given(key, r"\cos\Phi")[0][0]) == round(math.cos(3), 3)
    answers = key_answers_md(key)
    got = [parse_entry(c)[0] for c in matrices(answers["gen1.layer0.attn.q_rot"])[-1][0]]
    assert np.allclose(got, T["gen1.layer0.attn.q_rot"][0], atol=0.5e-3)
