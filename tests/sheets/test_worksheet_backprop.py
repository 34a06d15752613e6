"""The backprop worksheet preset (`symblock worksheet --preset backprop`): the key's gradient
numbers, read back from the Markdown and LaTeX, agree with grad.py's exact result and with torch
autograd (float64); the LaTeX compiles without overfull boxes; the Markdown renders with KaTeX;
bad options exit 2 naming the field."""
from __future__ import annotations

from symblock.exercises import variant

import math
import sys
from pathlib import Path

import pytest

from symblock.engine import block, spec
from symblock import cli
from symblock.calculus import grad
from symblock.sheets.numbers import dec_tex, exact_tex, is_plain
from symblock.sheets.worksheet import documents
from torch_grad_tools import torch_grads
from worksheet_tools import (compile_tex, katex_check, key_answers_md, key_answers_tex,
                             math_fragments, matrices, parse_entry)

# Pre-LN, ReLU with biases, no final norm: the sum loss's gradients are not trivially 0 (a final
# LayerNorm with d_model = 2 would make them 0), and every rule of the FFN path is exercised.
RELU = """\
title: "Pre-LN ReLU block with biases"
dims: {seq_len: 3, d_model: 2, d_ff: 3, heads: 1}
block: {norm_position: pre, norm: layernorm, eps: 0, activation: relu, bias: true}
inputs:
  X: [[1, 0], [0, 2], [2, 1]]
weights:
  W_1: [[1, -1, 2], [0, 1, -1]]
  b_1: [[0, 1, -1]]
  W_2: [[1, 0], [2, -1], [0, 1]]
  b_2: [[1, 0]]
random: {seed: 4, low: -1, high: 1}
exercise:
  preset: backprop
  loss: mse
  wrt: [W_2, b_2, W_1, b_1]
  target: [[1, 0], [0, 1], ["1/2", -2]]
"""
CASES = [("rmsnorm-swiglu", {"preset": "backprop"}), ("relu.yaml", {})]


def _spec(tmp_path, name):
    if name == "relu.yaml":
        path = tmp_path / name
        path.write_text(RELU, encoding="utf-8")
        return str(path)
    return name


def _value(math_tex: str):
    """The printed matrix of an answer: (rows of floats, exact?) — the exact matrix when it is
    the only one, else the decimals (the last matrix)."""
    mats = matrices(math_tex)
    cells = mats[-1]
    vals = [[parse_entry(c) for c in row] for row in cells]
    return [[v for v, _ in row] for row in vals], len(mats) == 1 and "\\approx" not in math_tex


@pytest.mark.parametrize("name, opts", CASES)
def test_key_gradients_match_grad_py_and_torch_autograd(name, opts, tmp_path):
    src = _spec(tmp_path, name)
    s = spec.load(src)
    trace = block.forward(s)
    docs = documents(variant.build("id", trace, variant.Options.of(**opts)), formats=["latex", "markdown"]).files
    ex = s.exercise
    loss, wrt = ex.get("loss", "mse"), ex.get("wrt", ["W_2", "W_1"])  # the preset's default: mse
    if "target" in ex:
        target = spec.parse_matrix(ex["target"], None, "t", "t")
    else:  # the default target: integers in -2..2 drawn from the seed (checked on their own below)
        from symblock.exercises.presets import drawn_target
        target = drawn_target(s.seed, trace["output"].value.shape)
        assert {int(v) for v in target} <= set(range(-2, 3)) and len(set(target)) > 1
    b = grad.backward(s, loss, wrt, target=target, trace=trace)
    want = {g.name: g for g in (*b.steps, *b.wrt.values())}
    L, ref = torch_grads(s, loss, target)
    assert math.isclose(float(b.loss_value), L, rel_tol=1e-12)
    for answers in (key_answers_md(docs["key.md"]), key_answers_tex(docs["key.tex"])):
        assert list(answers) == [g.name for g in b.steps] + [f"grad.{w}" for w in wrt]
        assert {"grad.output", "grad.ffn.out", "grad.ffn.act", "grad.ffn.hidden",
                "grad.W_2", "grad.W_1"} <= set(answers)
        nonzero = 0
        for gname, tex in answers.items():
            g = want[gname]
            printed, is_exact = _value(tex)
            torch_ref = ref[g.of].tolist()
            for i, row in enumerate(g.value.rows):
                for j, e in enumerate(row):
                    got = printed[i][j]
                    if is_exact:  # every entry exact: equal to grad.py's value
                        assert is_plain(e) or exact_tex(e) is not None
                        assert parse_entry(exact_tex(e))[0] == got, (gname, i, j)
                    else:         # decimals: grad.py's value correctly rounded
                        assert float(dec_tex(e, 3)) == got, (gname, i, j)
                    assert abs(got - torch_ref[i][j]) <= 0.5e-3 + 1e-9, (gname, i, j, got, torch_ref[i][j])
                    nonzero += abs(torch_ref[i][j]) > 1e-6
        assert nonzero > 20  # the example is not trivially zero


def test_preset_flag_and_spec_options(tmp_path, capsys):
    out = tmp_path / "ws"
    assert cli.main(["worksheet", "rmsnorm-swiglu", "--preset", "backprop", "--loss", "mse",
                     "--wrt", "W_2", "--out", str(out)]) == 0
    key = (out / "key.md").read_text()
    assert r"L = \tfrac{1}{8} \sum_{ij} (Y_{ij} - T_{ij})^2" in key
    assert list(key_answers_md(key)) == ["grad.output", "grad.resid2", "grad.ffn.out", "grad.W_2"]
    assert "`target`" in key  # mse: the target (zeros by default) is given
    sheet = (out / "sheet.md").read_text()
    assert "**Answer:**" not in sheet and r"\partial L / \partial W_{2} = \begin{array}" in sheet
    # the spec's exercise section: loss, wrt and target
    src = _spec(tmp_path, "relu.yaml")
    docs = documents(variant.build("id", block.forward(spec.load(src))), formats=["markdown"]).files
    assert "T = \\begin{bmatrix} 1 & 0 \\\\ 0 & 1 \\\\ 0.5 & -2 \\end{bmatrix}" in docs["sheet.md"]
    assert "Sum the columns" in docs["key.md"]  # dL/db: column sums


def test_forward_worksheets_are_unchanged_by_the_backprop_keys(tmp_path):
    docs = documents(variant.build("id", block.forward(spec.load("seed-post-ln"))), formats=["markdown"]).files
    assert "The loss is" not in docs["key.md"] and "grad." not in docs["key.md"]


@pytest.mark.parametrize("name", ["rmsnorm-swiglu", "relu.yaml", "pre-ln-causal-gelu"])
def test_markdown_renders_with_katex(name, tmp_path):
    src = _spec(tmp_path, name)
    trace = block.forward(spec.load(src))
    fragments = []
    # the whole backward pass (attention, norms, masks) for the wrt X case
    for wrt in (None, ["X", "W_Q"]):
        docs = documents(variant.build("id", trace, variant.Options.of(preset="backprop", wrt=wrt)), formats=["markdown"]).files
        for doc, text in docs.items():
            fragments += math_fragments(text, f"{name}:{wrt}:{doc}")
    assert katex_check(fragments) > 50


@pytest.mark.slow
@pytest.mark.parametrize("name, wrt", [("rmsnorm-swiglu", None), ("relu.yaml", None),
                                       ("pre-ln-causal-gelu", ["X", "W_Q"])])
def test_latex_compiles_without_overfull_boxes(name, wrt, tmp_path):
    src = _spec(tmp_path, name)
    docs = documents(variant.build("id", block.forward(spec.load(src)), variant.Options.of(preset="backprop", wrt=wrt)), formats=["latex"]).files
    for doc in ("sheet.tex", "key.tex"):
        tex = tmp_path / doc
        tex.write_text(docs[doc], encoding="utf-8")
        compile_tex(tex, "pdflatex")


@pytest.mark.parametrize("exercise, argv, field", [
    ("{preset: backprop, loss: l1}", [], "exercise.loss"),
    ("{preset: backprop, wrt: [W_9]}", [], "exercise.wrt[0]"),
    ("{preset: backprop, wrt: []}", [], "exercise.wrt"),
    ("{preset: backprop, target: [[1, 0]]}", [], "exercise.target"),
    ("{preset: backprop, loss: mse, target: [[1, 0]]}", [], "exercise.target"),
    ("{preset: backprop, ask: [resid1]}", [], "exercise.ask"),
    ("{preset: full, loss: mse}", [], "exercise.loss"),
    ("{preset: full}", ["--wrt", "W_1"], "--wrt"),
    ("{preset: backprop}", ["--wrt", "W_1,nope"], "--wrt"),
])
def test_bad_options_exit_2_naming_the_field(exercise, argv, field, tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(RELU.split("exercise:")[0] + f"exercise: {exercise}\n", encoding="utf-8")
    assert cli.main(["worksheet", str(path), "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err
    assert f": {field}:" in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()
