"""Jupyter: Trace, Step and Mat display themselves (KaTeX renders every fragment), and
`--format ipynb` writes a notebook that a real kernel (ipykernel, run by nbclient) executes: it
rebuilds the block from the ID and checks the answers typed into its answer cell."""
from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

import symblock
from symblock import cli
from worksheet_tools import katex_check, math_fragments


def test_step_and_matrix_show_exact_value_and_decimal():
    trace = symblock.forward(symblock.load("seed-post-ln"))
    md = trace["norm1.std"]._repr_markdown_()
    # σ = 0.901, 0.124, 0.43 in the seed article
    assert r"\frac{901}{1000} \\ \frac{31}{250} \\ \frac{43}{100}" in md
    assert r"\approx \begin{bmatrix} 0.9010 \\ 0.1240 \\ 0.4300 \end{bmatrix}" in md
    assert "`norm1.std`" in md and r"\sigma = \sqrt{\sigma^2}" in md
    assert trace["norm1"].value._repr_latex_() == \
        r"$\begin{bmatrix} 1 & -1 \\ -1 & 1 \\ 1 & -1 \end{bmatrix}$"  # ±1 rows: nothing to approximate


def test_trace_is_a_table_of_steps_that_katex_renders():
    trace = symblock.forward(symblock.load("pre-ln-causal-gelu"))
    md, html = trace._repr_markdown_(), trace._repr_html_()
    rows = md.splitlines()[2:]
    assert [r.split("`")[1] for r in rows] == trace.names()
    assert html.count("<tr>") == len(trace.steps) + 1
    masked = next(r for r in rows if r.startswith("| `attn.h0.masked`"))
    assert r"-\infty" in masked
    frags = [{"tex": t, "display": False, "where": f"trace:{n}"}
             for n, r in enumerate(rows) for t in re.findall(r"\$([^$]+)\$", r)]
    frags += math_fragments(trace["ffn.act"]._repr_markdown_(), "step")
    assert katex_check(frags) == len(frags) > 2 * len(trace.steps)  # formula, decimal, some exact


def _write(tmp_path, *argv):
    out = tmp_path / "nb"
    assert cli.main(["worksheet", *argv, "--out", str(out), "--format", "ipynb"]) == 0
    return out


def _run(nb):
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False).execute()
    return ["".join(o.get("text", "") for o in c.get("outputs", [])) for c in nb.cells]


@pytest.mark.slow
def test_notebook_runs_on_a_kernel_and_checks_typed_answers(tmp_path):
    nb = nbformat.read(_write(tmp_path) / "notebook.ipynb", as_version=4)
    assert nb.cells[0].cell_type == "markdown" and "Write your answer in the grid." in nb.cells[0].source
    answers = nb.cells[2]
    # the seed article's numbers, with the variance divided by n − 1 (its famous mistake)
    answers.source = answers.source.replace(
        "'resid1': [[None, None], [None, None], [None, None]]",
        "'resid1': [[2.401, 0.599], [1.504, 1.752], [2.576, 1.716]]").replace(
        "'norm1.mean': [[None], [None], [None]]", "'norm1.mean': [[1.5], [1.628], [2.146]]").replace(
        "'norm1.var': [[None], [None], [None]]", "'norm1.var': [[1.624], [0.031], [0.370]]")
    out = _run(nb)
    assert out[1].startswith("seed-post-ln · ")
    report = out[3]
    assert re.search(r"✓ correct\s+resid1", report) and re.search(r"✓ correct\s+norm1.mean", report)
    assert re.search(r"✗ wrong\s+norm1.var", report) and "ln_sample_variance" in report


@pytest.mark.slow
def test_notebook_of_a_drawn_variant_rebuilds_it_from_the_id(tmp_path):
    spec = tmp_path / "easy.yaml"
    spec.write_text("random: {seed: 1, difficulty: easy}\n")
    out = _write(tmp_path, "--id", "seed-post-ln", "--preset", "norm")
    nb = nbformat.read(out / "notebook.ipynb", as_version=4)
    assert "Nothing to check yet" in _run(nb)[3]
    out2 = _write(tmp_path / "b", str(spec), "--variants", "2")
    [first, second] = sorted(out2.glob("*/notebook.ipynb"))
    nb = nbformat.read(first, as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace("SPEC = None", f"SPEC = {str(spec)!r}")
    nb.cells[4].source = nb.cells[4].source.replace("# trace", "print(trace['x'].value.latex())")
    printed = _run(nb)[4].strip()
    # the kernel rebuilt this variant: its X is the one printed on the variant's sheet
    assert printed.startswith(r"\begin{bmatrix}") and f"X = {printed}" in nb.cells[0].source
    assert f"X = {printed}" not in nbformat.read(second, as_version=4).cells[0].source
