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


@pytest.mark.slow
def test_forward_latex_breaks_a_long_formula_and_puts_the_decimals_below(capsys, tmp_path):
    """rope-gqa's attn.q_rot: RoPE's rule, its angle and pairs (some 170 characters, 240pt wider
    than an article's text) are broken at their top-level commas, never inside (x_a, x_b) or
    (i, i + d_k/2); the exact Q' (sines and cosines, 43pt wider than the text on one line) has
    its columns over two lines, two and two, the bracket opened on the first and closed on the
    second; its decimals are a line of their own. Every line fits: no overfull box."""
    out = snippet(capsys, "forward", "rope-gqa", "--format", "latex", "--step", "attn.q_rot")
    formula = out.split("\\begin{gather*}\n")[1].split("\\end{gather*}")[0].strip()
    lines = formula.split(" \\\\\n")
    assert lines[0] == r"Q' = \mathrm{RoPE}(Q):" and len(lines) == 3 and all(len(x) < 90 for x in lines)
    assert lines[1].startswith(r"(x_a, x_b) \mapsto (x_a \cos\phi - x_b \sin\phi,\ x_b")
    assert lines[2].endswith(r"(a, b) = (i,\ i + d_k/2),\ \theta = 10000")
    value = out.split("\\begin{align*}\n")[1].split("\n\\end{align*}")[0]
    first, second, decimals = value.split(" \\\\\n")
    s1, c1, s2, c2 = r"\sin{\left(1 \right)}", r"\cos{\left(1 \right)}", r"\sin{\left(2 \right)}", r"\cos{\left(2 \right)}"
    # Q's row 2 (0, −1, −1, 1) turned by 1 radian, row 3 (3, 2, 0, 2) by 2: pairs (1, 2), (3, 4)
    assert first == (rf"Q' &= \left[\begin{{matrix}} 0 & 1 \\ {s1} & - {c1} \\ "
                     rf"- 2 {s2} + 3 {c2} & 2 {c2} + 3 {s2} \end{{matrix}}\right.")
    assert second == (rf"&\quad \left.\begin{{matrix}} 2 & 0 \\ - {s1} - {c1} & - {s1} + {c1} \\ "
                      rf"- 2 {s2} & 2 {c2} \end{{matrix}}\right]")
    assert decimals.startswith(r"Q' &\approx \begin{bmatrix} 0 & 1 & 2 & 0 \\ 0.8415 & -0.5403")   # sin 1, −cos 1
    compile_bare(tmp_path, out)   # no overfull box: the exact Q' on one line was 43pt too wide


@pytest.mark.slow
def test_forward_latex_breaks_a_kv_cache_formula_before_its_remarks(capsys, tmp_path):
    """A Llama's cache step: its rows, then its shape remark (one line was 44pt too wide)."""
    out = snippet(capsys, "forward", "tiny-llama", "--format", "latex", "--step", "gen1.layer0.cache.k")
    formula = out.split("\\begin{gather*}\n")[1].split("\n\\end{gather*}")[0]
    rows, shape = formula.split(" \\\\\n")
    assert rows.endswith(r"k']\ \text{(rows reused, one appended)}")
    assert shape == r"(4 \times 2:\ 1 \text{ K/V head for } 2 \text{ query heads})"
    compile_bare(tmp_path, out)


def test_params_latex_formulas(capsys):
    out = snippet(capsys, "params", "--d-model", "32", "--heads", "4", "--format", "latex")
    assert r"P_{\text{attention}} &= 4 d^{2} + 4 d = 4 \cdot 32^{2} + 4 \cdot 32 = 4\,224" in out
    assert r"b_{Q} &= d = 32 \\" in out


def test_params_latex_of_a_model_has_the_formulas_of_its_table(capsys):
    """A model's snippet shows what its text table shows, formulas and all: tiny-gpt is a
    5-token vocabulary, d = 4, 4 learned positions, two blocks of 4·4² + 2·4·8 + 2·4 = 136
    (no biases: γ only), a final γ of 4 and a tied head; tiny-translate's layers are 4·d² + 2·d·f
    + 2·d and 8·d² + 2·d·f + 3·d (nn.Transformer's, without biases)."""
    out = snippet(capsys, "params", "tiny-gpt", "--format", "latex")
    assert r"\text{token embedding }W_E &= \text{vocab} \cdot d = 5 \cdot 4 = 20 \\" in out
    assert r"\text{positions }W_P &= \text{context} \cdot d = 4 \cdot 4 = 16 \\" in out
    assert r"\text{2 blocks} &= 2 \cdot 136 = 272 \\" in out
    assert r"\text{final norm} &= d = 4 \quad (\gamma) \\" in out
    assert r"\text{head} &= 0 \quad \text{(tied to $W_E$: no parameters)} \\" in out
    assert r"\text{total} &= 312" in out
    assert "% one block: symblock params --d-model 4 --heads 2 --d-ff 8 --no-bias\n" in out   # a comment: -- stays --
    out = snippet(capsys, "params", "tiny-translate", "--format", "latex")
    assert r"\text{1 encoder layer} &= 1 \cdot (4 d^{2} + 2 d f + 2 d) = 136 \\" in out
    assert r"\text{1 decoder layer} &= 1 \cdot (8 d^{2} + 2 d f + 3 d) = 204 \\" in out
    assert r"\text{2 final norms} &= 2 d = 2 \cdot 4 = 8 \quad \text{(encoder, decoder)} \\" in out
    out = snippet(capsys, "params", "tiny-bert", "--format", "latex")
    assert r"\text{embedding norm} &= 2 d = 2 \cdot 4 = 8 \quad (\gamma, \beta) \\" in out
    from dataclasses import replace
    from symblock.calculus.transformer_params import count_transformer
    separate = replace(count_transformer(8, 2, 16, 1, 1, vocab=10), separate=True).latex()   # src's own table
    assert r"\text{source embedding }W_{E,\text{src}} &= \text{vocab} \cdot d = 10 \cdot 8 = 80 \\" in separate


@pytest.mark.slow
def test_params_latex_of_models_compiles_and_fits(tmp_path, capsys):
    parts = [snippet(capsys, "params", spec, "--format", "latex") for spec in ("tiny-gpt", "tiny-llama", "tiny-bert", "tiny-translate")]
    parts.append(snippet(capsys, "params", "--d-model", "512", "--heads", "8", "--encoder-layers", "6",
                         "--decoder-layers", "6", "--vocab", "32000", "--context", "512", "--untied", "--format", "latex"))
    compile_bare(tmp_path, "\n".join(parts))   # no overfull box


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
