"""Worksheets with issue 15's attention: the padding mask is shown like the causal one, fixed
dropout masks are given data, other widths name their columns; a batch works each sequence.
Numbers in the key are checked against NumPy (an independent path), not the engine."""
from __future__ import annotations

from symblock.exercises import variant

import numpy as np

from symblock.engine import block, spec
from symblock.exercises.presets import choose
from symblock.reference import numeric
from symblock.sheets.worksheet import documents
from worksheet_tools import katex_check, key_answers_md, matrices, math_fragments, parse_entry

PADDED = {"title": "padding", "dims": {"d_model": 3, "d_ff": 2, "heads": 1, "d_k": 2, "d_v": 2},
          "block": {"eps": "1/10", "attention_scale": "none"},
          "inputs": {"X": [[1, 0, 1], [0, 2, 1], [1, 1, 0]], "key_padding_mask": [False, False, True]},
          "dropout": {"p": "1/2", "masks": {"ffn.act": [[1, 0], [1, 1], [0, 1]]}},
          "random": {"seed": 3, "low": -1, "high": 1}}


def docs_of(s, **kw):
    return documents(variant.build("t", block.forward(s)), formats=["markdown"], places=3, **kw).files


def test_padding_and_dropout_are_shown():
    s = spec.from_mapping(PADDED)
    key = docs_of(s)["key.md"]
    assert "Padding mask: key(s) 3 are padding" in key
    assert "Padding mask for head 0" in key and "The columns of padding keys become" in key
    assert "`dropout.masks.ffn.act`" in key and "ffn.act.dropped" in key
    assert r"d_k = 2;\ V\!: d_v = 2" in key
    zh = documents(variant.build("t", block.forward(s)), formats=["markdown"], places=3, lang="zh").files["key.md"]
    assert "填充掩码" in zh


def test_key_numbers_of_a_padded_batch_are_numpys():
    s = spec.load("padding-batch")
    T = numeric.forward(s)
    key = docs_of(s)["key.md"]
    answers = key_answers_md(key)
    assert list(answers) == list(choose(block.forward(s)).ask)
    assert "b1.attn.h0.weights" in answers and "b0: —; b1: 3 are padding" in key
    for name, tex in answers.items():
        for i, row in enumerate(matrices(tex)[-1]):
            for j, cell in enumerate(row):
                got, want = parse_entry(cell)[0], T[name][i, j]
                assert got == want if np.isinf(want) else abs(got - want) <= 0.5e-3 + 1e-12, (name, i, j)
    assert (T["b1.attn.h0.weights"][:, 2] == 0).all()
    frags = math_fragments(key, "padding-batch")
    assert katex_check(frags) > 100


def test_readers_of_a_dropped_step_print_its_tilde():
    """A step after a dropout mask computes from the dropped value, so its formula (key and
    `forward`) and its substituted working name it: Ũ W_2, P̃_0 V_0, X + Ã, H_1 + F̃ (issue 15)."""
    data = {**PADDED, "dropout": {"p": "1/2", "masks": {
        "ffn.act": [[1, 0], [1, 1], [0, 1]], "attn.h0.weights": [[1, 1, 0], [0, 1, 1], [1, 0, 1]],
        "attn.out": [[1, 1, 0], [0, 1, 1], [1, 0, 1]], "ffn.out": [[1, 0, 1], [1, 1, 0], [0, 1, 1]]}}}
    t = block.forward(spec.from_mapping(data))
    assert t["ffn.out"].latex == r"F = \tilde{U} W_2"
    assert t["attn.h0.out"].latex == r"O_0 = \tilde{P_0} V_0"
    assert t["resid1"].latex == r"R_1 = X + \tilde{A}"
    assert t["resid2"].latex == r"R_2 = H_1 + \tilde{F}"
    key = documents(variant.build("t", t), formats=["markdown"], places=3).files["key.md"]
    # their operands are rounded decimals (softmax weights, GELU of a sum), so the line says ≈
    assert r"O_0 = \tilde{P_0} V_0 \approx \begin{bmatrix}" in key and r"F = \tilde{U} W_2 \approx \begin{bmatrix}" in key
    assert r"F = U W_2" not in key and r"O_0 = P_0 V_0" not in key
    plain = block.forward(spec.from_mapping({k: v for k, v in PADDED.items() if k != "dropout"}))
    assert plain["ffn.out"].latex == r"F = U W_2" and plain["attn.h0.out"].latex == r"O_0 = P_0 V_0"


def test_a_batch_gives_its_inputs_apart(cli, tmp_path):
    """padding-batch gives two input matrices side by side: each is named by its sequence,
    X^{(b0)} and X^{(b1)} (as `derive` names them), in every format, ahead of the weights."""
    assert cli("worksheet", "padding-batch", "--out", tmp_path, "--format", "latex,markdown,html").code == 0
    b0 = r"X^{(b0)} = \begin{bmatrix} 1 & 0 & 2 & -1 \\ 0 & 1 & -1 & 2 \\ 2 & -1 & 0 & 1 \end{bmatrix}"
    b1 = r"X^{(b1)} = \begin{bmatrix} 1 & 2 & 0 & -1 \\ -1 & 0 & 1 & 2 \\ 0 & 0 & 0 & 0 \end{bmatrix}"
    for name in ("key.tex", "sheet.tex", "key.md", "sheet.md", "key.html", "sheet.html"):
        text = (tmp_path / name).read_text(encoding="utf-8").replace("&amp;", "&")
        assert f"{b0} ,\\qquad {b1}" in text, name     # the spec's inputs.X[0] and inputs.X[1]
        labels = next(line for line in text.splitlines() if "b1.x" in line)   # the labels over the matrices
        assert "X^{(b0)}" in labels and "X^{(b1)}" in labels and "X$" not in labels and "X<" not in labels, name
        assert text.index("X^{(b1)} =") < text.index("W^{Q} ="), name
