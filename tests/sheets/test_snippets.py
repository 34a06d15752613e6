"""Snippets for lecture notes: `forward --format latex [--step]` and `params --format latex`
compile inside a bare `article` with only amsmath; a task pasted from key.tex compiles with the
one-line preamble the template (and the docs) name; any size renders (d_model 72, e^67)."""
from __future__ import annotations

from symblock.exercises import variant

import pytest

from symblock import cli
from worksheet_tools import compile_tex

BARE = "\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n%s\n\\end{document}\n"


def snippet(capsys, *argv) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def compile_bare(tmp_path, body: str, preamble: str = "", name: str = "s", overfull_ok: bool = False):
    """Compile in a bare article (errors fail; wide displays may overflow a narrow page)."""
    from symblock.sheets.worksheet import compile_pdf
    tex = tmp_path / f"{name}.tex"
    tex.write_text((BARE % body).replace("\\begin{document}", preamble + "\\begin{document}"))
    if overfull_ok:
        assert compile_pdf(tex).stat().st_size > 1000
    else:
        compile_tex(tex, "pdflatex")


@pytest.mark.slow
def test_forward_and_params_snippets_compile_with_amsmath_only(tmp_path, capsys):
    wide = tmp_path / "wide.yaml"
    wide.write_text("dims: {seq_len: 2, d_model: 12, d_ff: 4, heads: 1}\nrandom: {seed: 1}\n")
    parts = [snippet(capsys, "forward", "pre-ln-causal-gelu", "--format", "latex"),
             snippet(capsys, "forward", "rmsnorm-swiglu", "--format", "latex", "--step", "norm1"),
             snippet(capsys, "forward", str(wide), "--format", "latex", "--step", "attn.q"),
             snippet(capsys, "params", "--d-model", "768", "--heads", "12", "--format", "latex")]
    assert r"\begin{array}{cccccccccccc}" in parts[2]      # 12 columns: no MaxMatrixCols needed
    assert "1\\,024" not in parts[3] and "7\\,087\\,872" in parts[3]  # GPT-2 small's block
    assert "\\fitmath" not in "".join(parts) and "\\newcommand" not in "".join(parts)
    compile_bare(tmp_path, "\n".join(parts), overfull_ok=True)


def test_forward_latex_step_shows_formula_and_exact_value(capsys):
    out = snippet(capsys, "forward", "--format", "latex", "--step", "norm1.std")
    assert r"\sigma = \sqrt{\sigma^2}" in out
    assert r"\sigma = \begin{bmatrix} 0.901 \\ 0.124 \\ 0.43 \end{bmatrix}" in out  # the seed article's σ
    out = snippet(capsys, "forward", "pre-ln-causal-gelu", "--format", "latex", "--step", "norm1.std")
    assert r"\frac{\sqrt{5}}{2}" in out and r"\approx \begin{bmatrix} 1.1180" in out
    out = snippet(capsys, "forward", "pre-ln-causal-gelu", "--format", "latex", "--step", "attn.h0.weights")
    # causal row 1 is exactly (1, 0, 0), as the decimals say too; the masked entries stay exact 0
    row1, row2 = out.split(r"P_0 \approx \begin{bmatrix} ")[1].split(r" \\ ")[:2]
    assert row1 == "1 & 0 & 0" and row2.endswith(" & 0") and "0.0000" not in out


def test_forward_latex_says_the_input_once_and_marks_a_given_step(capsys):
    """seed-post-ln pins attn.out (the article's numbers, not worked from O_0 W^O here) and its
    input X has no formula: X is one equation, with its value; the given step says so."""
    out = snippet(capsys, "forward", "--format", "latex")
    x = out.split("% x\n")[1].split("% attn.out\n")[0]
    assert x == "\\begin{equation*}\nX = \\begin{bmatrix} 1 & 0 \\\\ 0 & 1 \\\\ 1 & 1 \\end{bmatrix}\n\\end{equation*}\n"
    assert "\nA = O_0 W^{O}\\ \\text{(given)}\n" in out
    assert "R_1 = X + A\n" in out and "(given)" not in out.split("% resid1")[1]


def test_forward_latex_breaks_a_long_formula_and_puts_the_decimals_below(capsys, tmp_path):
    """rope-gqa's attn.q_rot: RoPE's rule, its angle and pairs (some 170 characters, 240pt wider
    than an article's text) are broken at their top-level commas, never inside (x_a, x_b) or
    (i, i + d_k/2); the exact Q' (sines and cosines) and its decimals are lines of their own."""
    out = snippet(capsys, "forward", "rope-gqa", "--format", "latex", "--step", "attn.q_rot")
    formula, value = [block.split("\\begin{gather*}\n")[1].strip() for block in out.split("\\end{gather*}")[:2]]
    lines = formula.split(" \\\\\n")
    assert lines[0] == r"Q' = \mathrm{RoPE}(Q):" and len(lines) == 3 and all(len(x) < 90 for x in lines)
    assert lines[1].startswith(r"(x_a, x_b) \mapsto (x_a \cos\phi - x_b \sin\phi,\ x_b")
    assert lines[2].endswith(r"(a, b) = (i,\ i + d_k/2),\ \theta = 10000")
    exact_line, decimals = value.split(" \\\\\n")
    assert exact_line.startswith(r"Q' = \begin{bmatrix} 0 & 1 & 2 & 0 \\ \sin{\left(1 \right)}")
    assert decimals.startswith(r"Q' \approx \begin{bmatrix} 0 & 1 & 2 & 0 \\ 0.8415 & -0.5403")   # sin 1, −cos 1
    rule = out.split("% attn.q_rot\n")[1].split("\\end{gather*}")[0] + "\\end{gather*}"
    compile_bare(tmp_path, rule)   # the rule's lines fit the page (one line was 240pt too wide)
    compile_bare(tmp_path, out, name="all", overfull_ok=True)


def test_params_latex_formulas(capsys):
    out = snippet(capsys, "params", "--d-model", "32", "--heads", "4", "--format", "latex")
    assert r"P_{\text{attention}} &= 4 d^{2} + 4 d = 4 \cdot 32^{2} + 4 \cdot 32 = 4\,224" in out
    assert r"b_{Q} &= d = 32 \\" in out


@pytest.mark.slow
def test_a_task_pasted_from_the_key_compiles_with_the_named_preamble(tmp_path):
    from symblock.engine import block, spec
    from symblock.sheets.worksheet import documents
    key = documents(variant.build("t", block.forward(spec.load("pre-ln-causal-gelu"))), formats=["latex"]).files["key.tex"]
    line = next(l for l in key.splitlines() if l.startswith("\\newsavebox\\fitbox"))
    docs = (compile_tex.__globals__["REPO"] / "docs" / "tutorials" / "instructor.md").read_text()
    assert line in docs, "the docs must name the one-line preamble of a pasted task"
    tasks = key.split("\\subsection*{")
    task = "\\subsection*{" + tasks[5].split("\\end{document}")[0]
    task = task.split("\\needspace")[0]   # a task runs from its heading to its answer
    compile_bare(tmp_path, task, "\\usepackage{graphicx}\n" + line + "\n", "pasted")
