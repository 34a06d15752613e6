"""What a student or an author reads in a key: every symbol names one thing and is defined by the
step before it. The memory of a cross-attention is not written M (the masked scores are M_h and
M^c_h); a final norm reads the symbol its previous task produced; the concatenation says which
head fills which columns; each column of a sinusoidal table writes its angle in one form; and
what `forward` prints can be pasted back into a spec. Expected strings are written by hand."""
from __future__ import annotations

import math
import re

import pytest

import symblock
from symblock.calculus.derive import derive
from symblock.engine import exact
from symblock.engine import spec as specmod

MEMORY = r"H^{\mathrm{enc}}"


def key(name, **kw) -> str:
    return symblock.worksheet(name, format="markdown", **kw)["key.md"]


def task(text: str, name: str) -> str:
    """The task of step `name` in a key."""
    return next(s for s in re.split(r"^### ", text, flags=re.M) if s.splitlines()[0].endswith(f"`{name}`"))


def symbols(trace) -> dict[str, str]:
    return {s.name: s.latex.split(" = ")[0].strip() for s in trace.steps}


@pytest.mark.parametrize("example, memory", [("decoder-layer", "memory"), ("tiny-translate", "enc.norm_final")])
def test_the_memory_has_one_symbol_no_other_step_starts_with(example, memory):
    tr = symblock.forward(example)
    sym = symbols(tr)
    assert sym[memory] == MEMORY
    cross_k = next(n for n in sym if n.endswith("cross.k"))
    assert tr[cross_k].latex.startswith(rf"K^{{c}} = {MEMORY} W^{{K}}_{{c}}")
    # the self-attention's masked scores keep their M_h (old sheets' bytes)
    masked = [n for n in sym if n.endswith("attn.h0.masked")]
    assert masked and all(sym[n] == "M_0" for n in masked)
    # no symbol but the masked scores' is M or M with an index: M_1 is not a row of the memory
    clash = [n for n, s in sym.items() if re.match(r"M(\b|_|\^)", s) and not n.endswith(".masked")]
    assert clash == []


def test_keys_and_their_prose_name_the_memory_in_both_languages():
    en, zh = key("decoder-layer"), key("decoder-layer", lang="zh")
    assert rf"the memory ${MEMORY}$" in en and "memory $M$" not in en
    assert rf"记忆 ${MEMORY}$" in zh and "记忆 $M$" not in zh
    assert rf"K^{{c}} = {MEMORY} W^{{K}}_{{c}}" in task(en, "cross.k")


def test_derive_writes_the_memory_in_entries_of_its_own():
    d = derive("decoder-layer")
    assert d["cross.k"].over == MEMORY
    names = {str(s) for row in d["cross.k"].entries for e in row for s in e.free_symbols}
    assert r"h^{\mathrm{enc}}_{11}" in names and not any(n.startswith("m_") for n in names)


@pytest.mark.parametrize("example, norm, source", [
    ("tiny-translate", "gen1.norm_final", "H_3"),   # Post-LN decoder layer: its last norm
    ("tiny-llama", "gen1.norm_final", "R_2"),       # Pre-LN: its last residual
])
def test_a_final_norm_reads_the_symbol_its_previous_task_produced(example, norm, source):
    text = key(example)
    stat = task(text, f"{norm}.mean" if example == "tiny-translate" else f"{norm}.ms")
    assert f"row of ${source}$" in stat and f"({source})_{{ij}}" in stat
    assert "$Y$" not in stat and "Y_{ij}" not in stat
    before = re.split(r"^### ", text.split(f"`{norm}.")[0], flags=re.M)[-2]   # the task just before
    assert re.search(rf"^{re.escape(source)} = ", before, flags=re.M)


def test_a_later_layers_norm_names_the_rows_its_formula_reads():
    stat = task(key("tiny-llama"), "gen1.layer1.norm1.ms")
    assert "row of $X$" in stat and "X_{ij}^2" in stat


def test_the_concatenation_says_which_head_fills_which_columns():
    text = key("tiny-translate")
    cat = task(text, "gen1.layer0.attn.concat")
    assert "O = [O_0, \\dots, O_{1}]" in cat
    assert "Put the heads side by side, in order: $O_0$ in columns 1–2, $O_1$ in columns 3–4." in cat
    cross = task(text, "gen1.layer0.cross.concat")
    assert "in order: $O^{c}_0$ in columns 1–2, $O^{c}_1$ in columns 3–4." in cross
    zh = task(key("tiny-translate", lang="zh"), "gen1.layer0.attn.concat")
    assert "按顺序把各个头并排拼接：$O_0$ 在第 1–2 列、$O_1$ 在第 3–4 列。" in zh


POSITIONS = """\
model: {kind: encoder, vocab: [a, b, c], positions: sinusoidal, pe_base: 100, layers: 1, prompt: [a, b, c]}
dims: {d_model: 16, d_ff: 4, heads: 2}
block: {norm_position: post, eps: "1e-5", activation: relu}
random: {seed: 2, low: -1, high: 1}
"""


def test_each_column_of_a_sinusoidal_table_writes_its_angle_in_one_form(tmp_path):
    path = tmp_path / "pe.yaml"
    path.write_text(POSITIONS)
    text = symblock.worksheet(str(path), format="markdown", preset="positions")["key.md"]
    rows = {p: re.search(rf"\\mathrm{{PE}}_{{{p},\\cdot}} = \\left\[\\begin{{array}}{{c+}}(.*?)\\end", text).group(1)
            for p in (1, 2)}
    cells = {p: [c.strip() for c in r.split("&")] for p, r in rows.items()}
    # column 4 (i = 2): angle p / 100^(1/4), irrational: written as that quotient in every row
    assert cells[1][4] == r"\sin\left(1 / 100^{1/4}\right)" and cells[2][4] == r"\sin\left(2 / 100^{1/4}\right)"
    # column 12 (i = 6): p / 100^(3/4)
    assert cells[1][12] == r"\sin\left(1 / 100^{3/4}\right)" and cells[2][12] == r"\sin\left(2 / 100^{3/4}\right)"
    # column 8 (i = 4): 100^(1/2) = 10, a rational angle, p/10 in every row
    assert cells[1][8] == r"\sin\left(0.1\right)" and cells[2][8] == r"\sin\left(0.2\right)"
    assert "sqrt" not in rows[1] + rows[2]


def test_what_forward_prints_for_positions_is_accepted_as_a_spec_entry(tmp_path):
    path = tmp_path / "pe.yaml"
    path.write_text(POSITIONS)
    pos = next(s for s in symblock.forward(str(path)).steps if s.name == "pos")
    for p, row in enumerate(pos.value.rows):
        for j, e in enumerate(row):
            printed = exact.text(e)   # as forward prints it (and --json's "exact")
            want = (math.sin if j % 2 == 0 else math.cos)(p / 100 ** ((j - j % 2) / 16))
            got = float(specmod.parse_exact(printed, "s.yaml", "inputs.X"))
            assert abs(got - want) < 1e-12, (printed, got, want)
    assert abs(float(specmod.parse_exact("sin(10**(-1/4))", "s.yaml", "w")) - math.sin(10 ** -0.25)) < 1e-15


@pytest.mark.parametrize("text, message", [
    ("(-8)**(1/3)", "positive rational base"), ("pi**(1/3)", "positive rational base"),
    ("2**(1/10**7)", "denominator must be at most"),
])
def test_a_root_the_engine_cannot_certify_is_still_refused(text, message):
    with pytest.raises(specmod.SpecError, match=re.escape(message)):
        specmod.parse_exact(text, "s.yaml", "inputs.X[0][0]")


def test_chinese_labels_end_in_a_full_width_colon_english_ones_as_before():
    files = symblock.worksheet("seed-post-ln", format="markdown,html,latex", lang="zh")
    for name in ("key.md", "key.html", "key.tex", "sheet.md"):
        text = files[name]
        assert "练习编号：" in text and "练习编号:" not in text and "答案:" not in text, name
    assert "**答案：**" in files["key.md"] and "<strong>答案：</strong>" in files["key.html"]
    assert "姓名：" in files["sheet.md"] and r"\textbf{答案：}" in files["key.tex"]
    en = symblock.worksheet("seed-post-ln", format="markdown")
    assert "· Worksheet ID: `seed-post-ln`" in en["key.md"] and "**Answer:**" in en["key.md"]


NO_BIAS = """\
dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
block: {norm_position: post, norm: layernorm, eps: 0, activation: relu%s}
weights: {W_Q: [[1, 0], [0, 1]], W_K: [[1, 0], [0, 1]], W_V: [[1, 0], [0, 1]], W_O: [[1, 0], [0, 1]],
          W_1: [[1, 0], [0, 1]], W_2: [[1, 0], [0, 1]]}
inputs: {X: [[1, 0], [0, 2]]}
"""


def test_bias_false_shows_no_beta_as_params_counts_none(tmp_path, capsys):
    from symblock.cli import main
    path = tmp_path / "nob.yaml"
    path.write_text(NO_BIAS % ", bias: false")
    text = symblock.worksheet(str(path), format="markdown")["key.md"]
    assert "`ln1.beta`" not in text and "`ln2.beta`" not in text                # no β given
    norm = task(text, "norm1")
    assert "H_1 = (R_1 - \\mu) / \\sigma \\cdot \\gamma\n" in norm and "+ \\beta" not in norm
    assert "shift by $\\beta$" not in text and "\\gamma + \\beta" not in text
    assert main(["params", str(path)]) == 0
    out = capsys.readouterr().out
    assert "beta" not in out and re.search(r"^total .* 28 ", out, flags=re.M)   # 16 + 8 + 2·2 (γ only)
    # the numbers are the same: H_1 rows (1, −1) and (−1, 1), worked by hand
    assert "H_1 = \\begin{bmatrix} 1 & -1 \\\\ -1 & 1 \\end{bmatrix}" in norm
    # a spec that does not write `bias` keeps its β = 0 on the sheet, as every sheet before
    path.write_text(NO_BIAS % "")
    old = symblock.worksheet(str(path), format="markdown")["key.md"]
    assert "`ln1.beta`" in old and "\\cdot \\gamma + \\beta" in task(old, "norm1")


def test_one_kv_head_is_singular_in_the_key():
    text = key("tiny-llama")          # 2 query heads over 1 K/V head
    assert r"1 \text{ K/V head for } 2 \text{ query heads}" in text and "K/V heads for" not in text


def bias_false(example: str, tmp_path, extra: str = "") -> str:
    """The built-in model `example` with `bias: false` written in its block section (and `extra` lines)."""
    text = specmod.example_text(example).replace("bias: true", "bias: false")
    if "bias: false" not in text:
        text = text.replace("block: {", "block: {bias: false, ")
    path = tmp_path / f"{example}-nob.yaml"
    path.write_text(text + extra, encoding="utf-8")
    return str(path)


def test_a_model_with_bias_false_shows_no_beta_in_its_layers_nor_its_final_norm(tmp_path, capsys):
    from symblock.cli import main
    from symblock.engine.report import exact_str
    path = bias_false("tiny-gpt", tmp_path)
    text = symblock.worksheet(path, format="markdown")["key.md"]
    assert ".beta`" not in text                                   # no β given: not the layers', not ln_final's
    assert "shift by $\\beta$" not in text and "\\gamma + \\beta" not in text and "+ \\beta" not in text
    assert "N_f = (R_2 - \\mu) / \\sigma \\cdot \\gamma\n" in task(text, "gen1.norm_final")
    assert "(no $\\beta$: the block has no biases)" in text
    assert main(["params", path]) == 0
    assert "beta" not in capsys.readouterr().out
    # the numbers are those of β = 0, which the spec without `bias` written shows
    plain, nob = symblock.forward("tiny-gpt"), symblock.forward(path)
    assert [[exact_str(e) for e in r] for r in nob["norm_final"].value.rows] == \
        [[exact_str(e) for e in r] for r in plain["norm_final"].value.rows]
    assert "\\gamma + \\beta" in plain["norm_final"].latex and "\\beta" not in nob["norm_final"].latex
    # a β given is used and shown, as a block's is
    given = bias_false("tiny-gpt", tmp_path, "weights: {ln_final: {beta: [1, 0, 0, 0]}}\n")
    text = symblock.worksheet(given, format="markdown")["key.md"]
    assert "`ln_final.beta`" in text and "`layer0.ln1.beta`" not in text
    assert "N_f = (R_2 - \\mu) / \\sigma \\cdot \\gamma + \\beta" in task(text, "gen1.norm_final")


def test_an_encoder_with_bias_false_shows_no_beta_in_its_embeddings_norm(tmp_path):
    text = symblock.worksheet(bias_false("tiny-bert", tmp_path), format="markdown")["key.md"]
    assert ".beta`" not in text and "\\gamma + \\beta" not in text
    assert "(its own $\\gamma$; no $\\beta$: the model has no biases)" in text
    assert "then scaled by $\\gamma$ (no $\\beta$)" in task(text, "norm_embed")
    assert "N_e = (X - \\mu) / \\sigma \\cdot \\gamma\n" in task(text, "norm_embed")


@pytest.mark.parametrize("spec, lang, convention, formulas", [
    ("pre-ln-causal-gelu", "en",
     r"LayerNorm per row $i$: $\mu_i = \frac{1}{d}\sum_j x_{ij}$, population variance "
     r"$\sigma_i^2 = \frac{1}{d}\sum_j (x_{ij} - \mu_i)^2$ (divide by $d$, not $d-1$), "
     r"$\mathrm{LN}(x)_{ij} = \frac{x_{ij} - \mu_i}{\sqrt{\sigma_i^2 + \varepsilon}} \cdot \gamma_j + \beta_j$",
     {"norm1.mean": r"\mu_i = \tfrac{1}{4} \textstyle\sum_j X_{ij}",
      "norm1.var": r"\sigma_i^2 = \tfrac{1}{4} \textstyle\sum_j (X_{ij} - \mu_i)^2"}),
    ("pre-ln-causal-gelu", "zh", r"LayerNorm 逐行计算（第 $i$ 行）：$\mu_i = \frac{1}{d}\sum_j x_{ij}$，总体方差 "
     r"$\sigma_i^2 = \frac{1}{d}\sum_j (x_{ij} - \mu_i)^2$", {"norm1.mean": r"\mu_i = \tfrac{1}{4} \textstyle\sum_j X_{ij}"}),
    ("rmsnorm-swiglu", "en", r"RMSNorm per row $i$: $m_i = \frac{1}{d}\sum_j x_{ij}^2$, "
     r"$\mathrm{RMS}(x)_{ij} = \frac{x_{ij}}{\sqrt{m_i + \varepsilon}} \cdot \gamma_j$",
     {"norm1.ms": r"m_i = \tfrac{1}{4} \textstyle\sum_j X_{ij}^2"}),
])
def test_a_norms_row_statistics_name_their_row(tmp_path, spec, lang, convention, formulas):
    """The conventions and the tasks work a norm row by row, so μ, σ² and m carry the row i their
    sums run over, as the working's μ_1, μ_2 do (they read μ = 1/d Σ_j x_j and μ = ¼ Σ_j X_ij), in
    the LaTeX, Markdown and HTML alike; the answer is the column μ, unindexed."""
    files = symblock.worksheet(spec, format=["latex", "markdown", "html"], lang=lang)
    for name in ("key.tex", "key.md", "sheet.md"):
        text = files[name]
        assert convention in text, name
        for formula in formulas.values():
            assert formula in text, (name, formula)
    for math in re.findall(r"\$([^$]+)\$", convention) + list(formulas.values()):   # HTML: each formula a span or div
        assert f'class="math">{math}<' in files["key.html"] or f'class="math display">{math}<' in files["key.html"], math
    md = files["key.md"]
    first = next(iter(formulas))
    assert task(md, first).count(formulas[first]) == 1
    assert re.search(r"\n(\\mu|m) = \\begin\{bmatrix\}", task(md, first))   # the answer: the whole column
