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
def test_notebook_marks_only_the_asked_steps_and_reports_blanks(tmp_path):
    """A --preset norm sheet: its check cell marks the norm steps (as `symblock check --preset norm`),
    never the attention or FFN steps the sheet does not ask, and a half-filled grid is marked."""
    nb = nbformat.read(_write(tmp_path, "--preset", "norm") / "notebook.ipynb", as_version=4)
    answers = nb.cells[2]
    assert "'resid1'" not in answers.source and "'ffn.out'" not in answers.source
    answers.source = answers.source.replace(
        "'norm1.mean': [[None], [None], [None]]", "'norm1.mean': [[1.5], [1.628], [2.146]]").replace(
        "'norm1.var': [[None], [None], [None]]", "'norm1.var': [[1.624], [0.031], [0.370]]").replace(
        "'norm1.std': [[None], [None], [None]]", "'norm1.std': [[1.274], [None], [0.608]]")  # √ of own var
    report = _run(nb)[3]
    assert re.search(r"✓ correct\s+norm1.mean", report) and re.search(r"✗ wrong\s+norm1.var", report)
    assert re.search(r"◐ carried\s+norm1.std\s+.*partly blank: 2 of 3 entries answered", report), report
    for unasked in ("resid1", "ffn.", "output"):   # attn.out is printed as given data
        assert unasked not in report, (unasked, report)
    # missing: the asked steps left blank, norm1 and the four of norm2
    assert re.search(r"NOT OK \(1 correct, 1 wrong, 1 partly blank, 5 missing\)", report), report


def test_chinese_notebooks_have_no_english_comments(tmp_path):
    """The comments and messages a student reads, in a forward and a gradient notebook."""
    for n, argv in enumerate([[], ["rmsnorm-swiglu", "--preset", "backprop"]]):
        nb = nbformat.read(_write(tmp_path / str(n), *argv, "--lang", "zh") / "notebook.ipynb", as_version=4)
        for cell in nb.cells[1:]:
            said = " ".join(re.findall(r"#(.*)", cell.source) + re.findall(r"print\('([^']*)'\)", cell.source))
            assert re.search(r"[\u4e00-\u9fff]", said), cell.source
            assert not set(re.findall(r"[A-Za-z]{3,}", said)) - {"None", "sqrt", "inf", "block", "spec", "trace"}, said


@pytest.mark.slow
def test_backprop_notebook_checks_gradient_answers_in_chinese(tmp_path):
    nb = nbformat.read(_write(tmp_path, "rmsnorm-swiglu", "--preset", "backprop", "--loss", "sum",
                              "--lang", "zh") / "notebook.ipynb", as_version=4)
    answers = nb.cells[2]
    # L = Σ Y: ∂L/∂Y is all ones; a W_2 gradient of zeros is wrong
    answers.source = re.sub(r"'grad.output': \[(.*)\],", lambda m: "'grad.output': [" + m.group(1).replace(
        "None", "1") + "],", answers.source)
    answers.source = re.sub(r"'grad.W_2': \[(.*)\],", lambda m: "'grad.W_2': [" + m.group(1).replace(
        "None", "0") + "],", answers.source)
    out = _run(nb)
    assert out[1].endswith("个步骤\n")
    assert re.search(r"✓ 正确\s+grad.output", out[3]) and re.search(r"✗ 错误\s+grad.W_2", out[3]), out[3]


@pytest.mark.slow
def test_notebook_of_a_drawn_variant_rebuilds_it_from_the_id(tmp_path):
    spec = tmp_path / "easy.yaml"
    spec.write_text("random: {seed: 1, difficulty: easy}\n")
    out = _write(tmp_path, "--id", "seed-post-ln", "--preset", "norm")
    nb = nbformat.read(out / "notebook.ipynb", as_version=4)
    assert "Nothing to check yet" in _run(nb)[3]
    out2 = _write(tmp_path / "b", str(spec), "--variants", "2")
    [first, second] = sorted(out2.glob("students/*/notebook.ipynb"))
    nb = nbformat.read(first, as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace("SPEC = None", f"SPEC = {str(spec)!r}")
    nb.cells[4].source = nb.cells[4].source.replace("# trace", "print(trace['x'].value.latex())")
    printed = _run(nb)[4].strip()
    # the kernel rebuilt this variant: its X is the one printed on the variant's sheet
    assert printed.startswith(r"\begin{bmatrix}") and f"X = {printed}" in nb.cells[0].source
    assert f"X = {printed}" not in nbformat.read(second, as_version=4).cells[0].source


def test_first_cell_says_the_notebook_is_for_self_study_in_both_languages(tmp_path):
    """The kernel rebuilds the exact answers, so the sheet cell opens by saying so (en and zh)."""
    for lang, words in (("en", "For self-study"), ("zh", "仅供自学")):
        nb = nbformat.read(_write(tmp_path / lang, "--lang", lang) / "notebook.ipynb", as_version=4)
        first = nb.cells[0].source.splitlines()[0]
        assert first.startswith("> ") and words in first, first


@pytest.mark.slow
@pytest.mark.parametrize("lang, said", [("en", ("set SPEC in this cell", "private", "symblock check SPEC answers.yaml")),
                                        ("zh", ("SPEC 设为该文件的路径", "私有的", "symblock check SPEC answers.yaml"))])
def test_notebook_of_a_private_sheet_asks_for_its_spec_in_its_own_terms(tmp_path, lang, said):
    """A sheet drawn from a spec file with a secret: its load cell, run as handed out, says to set SPEC
    (the command line's `--id` and "no built-in example" mean nothing in a notebook) and that a private
    spec is the instructor's to check, with the command that does; with SPEC set, the cell rebuilds it."""
    spec = tmp_path / "class.yaml"
    spec.write_text("dims: {seq_len: 2, d_model: 3, d_ff: 2, heads: 1}\n"
                    "random: {seed: 3, difficulty: easy, secret: 'group B 7f3c'}\n")
    out = _write(tmp_path, str(spec), "--variants", "2", "--lang", lang)
    first = sorted(out.glob("students/*/notebook.ipynb"))[0]
    ident = first.parent.name
    nb = nbformat.read(first, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    [error] = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error.ename == "FileNotFoundError" and error.evalue.startswith(ident)
    assert all(s in error.evalue for s in said), error.evalue
    assert "--id" not in error.evalue and "built-in example '" not in error.evalue
    # the hinted command checks the answers file handed out with the sheet (nothing answered: exit 1)
    assert cli.main(["check", str(spec), str(first.parent / "answers.yaml")]) == 1
    nb = nbformat.read(first, as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace("SPEC = None", f"SPEC = {str(spec)!r}")
    nb.cells[4].source = nb.cells[4].source.replace("# trace", "print(trace['x'].value.latex())")
    printed = _run(nb)[4].strip()
    assert printed.startswith(r"\begin{bmatrix}") and f"X = {printed}" in nb.cells[0].source
