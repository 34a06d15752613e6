"""symblock worksheet: files, the key's numbers against the trace, KaTeX on every Markdown math
fragment, escaping, determinism, IDs and variants, presets, bad input (exit 2).
LaTeX compilation is in test_worksheet_tex.py, the gallery in test_worksheet_gallery.py."""
from __future__ import annotations

from symblock.exercises import variant

import math
from pathlib import Path

import pytest

from symblock.engine import block, spec
from symblock import cli
from symblock.exercises.presets import choose
from symblock.sheets.worksheet import documents
from worksheet_tools import (katex_check, key_answers_md, key_answers_tex, math_fragments, matrices,
                             parse_entry)

EXAMPLES = spec.block_example_names()
BIG = """\
title: "Largest supported size"
dims: {seq_len: 5, d_model: 8, d_ff: 16, heads: 2}
block: {norm_position: pre, norm: layernorm, activation: gelu, causal: true, final_norm: true, bias: true}
random: {seed: 11, low: -2, high: 2}
"""
GATED_BIG = """\
dims: {seq_len: 5, d_model: 8, d_ff: 16, heads: 4}
block: {norm_position: post, norm: rmsnorm, activation: swiglu, eps: "1/100"}
random: {seed: 2, low: -1, high: 1}
"""
EVIL = "\\input{/etc/passwd} \\write18{touch /tmp/pwned} $x$ & % # _ ^ ~ {} <b>*em*</b> [l](x) | `c`"


def big_spec(tmp_path: Path, text: str = BIG, name: str = "big.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run(*argv: str) -> int:
    return cli.main(["worksheet", *argv])


def trace_of(name_or_path) -> block.Trace:
    return block.forward(spec.load(str(name_or_path)))


# ---------------------------------------------------------------- files

def test_default_writes_sheet_and_key_in_both_formats(tmp_path, capsys):
    out = tmp_path / "ws"
    assert run("--out", str(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == ["key.md", "key.tex", "sheet.md", "sheet.tex"]
    sheet, key = (out / "sheet.md").read_text(), (out / "key.md").read_text()
    assert "seed-post-ln" in sheet and "Answer key" in key
    # the seed article's numbers, worked as it does: mean, variance and σ per row
    assert r"\mu_{1} &= \frac{2.401 + 0.599}{2} = 1.5" in key
    assert r"\frac{0.901^2 + (-0.901)^2}{2} = 0.811801" in key
    assert r"(Z)_{11} &= 1 \cdot 1 + (-1) \cdot 0 = 1" in key
    assert r"\begin{array}{|c|c|}" in sheet and "Answer:" not in sheet


def test_format_option_and_no_overwrite_without_force(tmp_path, capsys):
    out = tmp_path / "ws"
    assert run("--out", str(out), "--format", "markdown") == 0
    assert sorted(p.name for p in out.iterdir()) == ["key.md", "sheet.md"]
    before = (out / "key.md").read_bytes()
    assert run("--out", str(out), "--format", "markdown", "--preset", "ffn") == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "key.md").read_bytes() == before
    assert run("--out", str(out), "--format", "markdown", "--preset", "ffn", "--force") == 0
    assert (out / "key.md").read_bytes() != before


def test_failure_leaves_nothing_behind(tmp_path, capsys):
    tdir = tmp_path / "tpl"
    tdir.mkdir()
    (tdir / "worksheet.md.j2").write_text("{{ no_such_variable }}")
    out = tmp_path / "ws"
    assert run("--out", str(out), "--template-dir", str(tdir)) == 2
    assert "no_such_variable" in capsys.readouterr().err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".symblock-")]


def test_user_templates_override_and_are_sandboxed(tmp_path, capsys):
    tdir = tmp_path / "tpl"
    tdir.mkdir()
    (tdir / "worksheet.md.j2").write_text("MINE {{ title }} {{ tasks | length }}\n")
    out = tmp_path / "ws"
    assert run("--out", str(out), "--template-dir", str(tdir)) == 0
    assert (out / "key.md").read_text() == "MINE Post\\-LN block, worked by hand 13\n".replace("\\-", "-")
    assert (out / "key.tex").read_text().startswith("\\documentclass")  # built-in LaTeX still used
    (tdir / "worksheet.md.j2").write_text("{{ ''.__class__.__mro__[1].__subclasses__() }}")
    assert run("--out", str(tmp_path / "ws2"), "--template-dir", str(tdir)) == 2
    assert "SecurityError" in capsys.readouterr().err


# ---------------------------------------------------------------- the key against the trace

def _check_answer(name: str, math_tex: str, trace, places: int) -> None:
    value = trace[name].value
    mats = matrices(math_tex)
    assert mats, f"{name}: no matrix in the answer {math_tex[:80]}"
    for m in mats:
        assert (len(m), len(m[0])) == value.shape, f"{name}: printed shape differs"
    exact_m, last = mats[0], mats[-1]
    tol = 0.5 * 10 ** -places + 1e-12
    for i, row in enumerate(value.rows):
        for j, e in enumerate(row):
            want = float(e)
            got, is_exact = parse_entry(last[i][j])
            if math.isinf(want):
                assert got == want, f"{name}[{i}][{j}]"
                continue
            assert is_exact, f"{name}[{i}][{j}]: last matrix entry {last[i][j]!r} is not a number"
            ok = got == pytest.approx(want, rel=1e-12, abs=1e-12) if len(mats) == 1 and \
                r"\approx" not in math_tex else abs(got - want) <= tol
            assert ok, f"{name}[{i}][{j}]: key says {last[i][j]}, trace has {want!r}"
            got0, ex0 = parse_entry(exact_m[i][j])
            if ex0 and r"\approx" not in math_tex.split(r"\begin{bmatrix}")[0]:
                assert got0 == pytest.approx(want, rel=1e-12, abs=1e-12), f"{name}[{i}][{j}] exact form"


@pytest.mark.parametrize("which", EXAMPLES + ["big", "gated"])
def test_key_numbers_match_the_trace(which, tmp_path):
    src = {"big": lambda: big_spec(tmp_path), "gated": lambda: big_spec(tmp_path, GATED_BIG)}.get(which, lambda: which)()
    trace = trace_of(src)
    for places in (3, 5):
        docs = documents(variant.build("t", trace), formats=["latex", "markdown"], places=places).files
        asked = list(choose(trace).ask)
        for answers in (key_answers_md(docs["key.md"]), key_answers_tex(docs["key.tex"])):
            assert list(answers) == asked
            for name, tex in answers.items():
                _check_answer(name, tex, trace, places)


def test_given_data_on_the_sheet_is_the_spec(tmp_path):
    trace = trace_of("seed-post-ln")
    docs = documents(variant.build("t", trace), formats=["markdown"]).files
    sheet = docs["sheet.md"]
    assert r"W_1 = \begin{bmatrix} 1 & 0 & 1 \\ 0 & 1 & -1 \end{bmatrix}" in sheet
    assert r"A = \begin{bmatrix} 1.401 & 0.599 \\ 1.504 & 0.752 \\ 1.576 & 0.716 \end{bmatrix}" in sheet
    assert sheet.index("$X$") < sheet.index("$W_1$")


# ---------------------------------------------------------------- Markdown through KaTeX

def test_every_markdown_math_fragment_renders_with_katex(tmp_path):
    fragments = []
    sources = [(n, {}) for n in EXAMPLES] + [("seed-post-ln", {"lang": "zh"}),
                                             (str(big_spec(tmp_path)), {}),
                                             (str(big_spec(tmp_path, GATED_BIG, "g.yaml")), {"lang": "zh"})]
    for src, opts in sources:
        trace = trace_of(src)
        for preset in (None, "norm"):
            docs = documents(variant.build("id", trace, variant.Options.of(preset=preset)), formats=["markdown"], title=EVIL, **opts).files
            for name, text in docs.items():
                fragments += math_fragments(text, f"{Path(src).name}:{opts}:{preset}:{name}")
    assert katex_check(fragments) > 500


def test_katex_check_really_fails_on_bad_math():
    with pytest.raises(AssertionError, match="KaTeX could not render"):
        katex_check([{"tex": r"\begin{bmatrix} 1 \end{pmatrix}", "display": True, "where": "x"}])


# ---------------------------------------------------------------- escaping

def test_user_text_is_escaped_in_latex_and_markdown():
    docs = documents(variant.build("id", trace_of("seed-post-ln")), formats=["latex", "markdown"], title=EVIL).files
    tex, md = docs["key.tex"], docs["key.md"]
    assert "\\input{" not in tex and "\\write18{" not in tex
    assert r"\textbackslash{}input\{/etc/passwd\}" in tex
    assert r"\$x\$ \& \% \# {\ttfamily\char95}" in tex
    title_line = md.splitlines()[0]
    assert title_line.startswith("# \\\\input\\{/etc/passwd\\}")
    assert "<b>" not in md and "&lt;b&gt;" in title_line and "\\$x\\$" in title_line
    assert not math_fragments(title_line, "title")


def test_the_markdown_name_line_is_a_paragraph_of_its_own():
    """Markdown joins lines without a blank between them into one paragraph."""
    md = documents(variant.build("id", trace_of("seed-post-ln")), formats=["markdown"]).files["sheet.md"].splitlines()
    k = next(i for i, line in enumerate(md) if line.startswith("Name: ___"))
    assert md[k - 1] == "" and md[k + 1] == ""


def test_an_empty_title_is_refused_not_printed_as_an_empty_heading(tmp_path, capsys):
    for title in ("", "  "):
        assert run("--title", title, "--format", "markdown", "--out", str(tmp_path / "t")) == 2
        assert "--title: expected a title" in capsys.readouterr().err
        assert not (tmp_path / "t").exists()


def test_pdflatex_text_has_no_characters_it_cannot_typeset():
    docs = documents(variant.build("id", trace_of("seed-post-ln")), formats=["latex"], title="√2 ≈ 1.41 — café 中文").files
    line = next(l for l in docs["sheet.tex"].splitlines() if l.startswith(r"{\Large"))
    assert "café" in line and "—" in line and "√" not in line and "中" not in line


# ---------------------------------------------------------------- determinism, IDs, variants

def test_same_inputs_same_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run("pre-ln-causal-gelu", "--out", str(a)) == 0
    assert run("pre-ln-causal-gelu", "--out", str(b)) == 0
    for p in a.iterdir():
        assert p.read_bytes() == (b / p.name).read_bytes(), p.name


def test_variants_and_id_regenerate_byte_for_byte(tmp_path, capsys):
    out = tmp_path / "v"
    assert run("pre-ln-causal-gelu", "--variants", "3", "--seed", "40", "--out", str(out)) == 0
    ids = sorted(p.name for p in (out / "students").iterdir() if p.is_dir())
    assert len(ids) == 3 and all(i.startswith("pre-ln-causal-gelu.") for i in ids)
    assert (out / "instructor" / "manifest.yaml").is_file()   # the set remembers itself (grading/manifest.py)
    keys = {(out / "instructor" / i / "key.md").read_bytes() for i in ids}
    assert len(keys) == 3, "variants must differ"
    for i in ids:
        assert f"`{i}`" in (out / "students" / i / "sheet.md").read_text()
        again = tmp_path / f"again-{i}"
        assert run("--id", i, "--out", str(again)) == 0
        for p in [*(out / "students" / i).iterdir(), *(out / "instructor" / i).iterdir()]:
            if not p.name.startswith("answers."):   # the set's blank answers files
                assert p.read_bytes() == (again / p.name).read_bytes(), (i, p.name)


def test_id_of_a_spec_file(tmp_path, capsys):
    path = big_spec(tmp_path)
    out = tmp_path / "v"
    assert run(str(path), "--variants", "1", "--seed", "3", "--format", "markdown", "--out", str(out)) == 0
    (ident,) = [p.name for p in (out / "students").iterdir() if p.is_dir()]
    assert ident.startswith("h") and ident.endswith(".3")
    assert run("--id", ident, "--out", str(tmp_path / "x")) == 2
    assert "give the file too" in capsys.readouterr().err
    assert run(str(path), "--id", ident, "--format", "markdown", "--out", str(tmp_path / "y")) == 0
    assert (tmp_path / "y" / "key.md").read_bytes() == (out / "instructor" / ident / "key.md").read_bytes()
    # the ID carries the seed, so the file's own seed does not count; its numbers' ranges do
    path.write_text("# a comment\n" + BIG.replace("seed: 11", "seed: 12"))
    assert run(str(path), "--id", ident, "--format", "markdown", "--out", str(tmp_path / "w")) == 0
    assert (tmp_path / "w" / "key.md").read_bytes() == (out / "instructor" / ident / "key.md").read_bytes()
    path.write_text(BIG.replace("low: -2", "low: -1"))
    assert run(str(path), "--id", ident, "--out", str(tmp_path / "z")) == 2
    assert "file changed" in capsys.readouterr().err


# ---------------------------------------------------------------- presets and exercise section

def test_presets_choose_steps_and_give_their_inputs():
    trace = trace_of("pre-ln-causal-gelu")
    att = choose(trace, "attention")
    assert all(n.startswith("attn.") for n in att.ask) and "attn.h1.weights" in att.ask
    assert att.data_steps == ("norm1",) and "W_Q" in att.data_params
    norm = choose(trace, "norm")
    assert norm.ask[0] == "norm1.mean" and "norm_final" in norm.ask
    assert set(norm.data_steps) == {"x", "resid1", "resid2"}
    ffn = choose(trace, "ffn")
    assert ffn.ask == ("ffn.hidden", "ffn.act", "ffn.out") and ffn.data_steps == ("norm2",)


def test_exercise_section_ask_and_give(tmp_path):
    data, source = spec.read_mapping("x.yaml", spec.example_text("seed-post-ln"))
    data["exercise"] = {"ask": ["norm1.mean", "norm1.var", "norm1.std", "norm1", "ffn"], "give": ["norm1.std"]}
    trace = block.forward(spec.from_mapping(data, source))
    ex = choose(trace)
    assert ex.ask == ("norm1.mean", "norm1.var", "norm1", "ffn.hidden", "ffn.act", "ffn.out")
    assert "norm1.std" in ex.data_steps and "resid1" in ex.data_steps


@pytest.mark.parametrize("exercise, where", [
    ({"ask": ["resid1", "no.such.step"]}, "exercise.ask[1]"),
    ({"ask": ["attn.out"]}, "exercise.ask[0]"),          # given in the spec
    ({"give": ["bogus"]}, "exercise.give[0]"),
    ({"preset": "everything"}, "exercise.preset"),
    ({"ask": ["resid1"], "give": ["resid1"]}, "exercise.ask"),
    ({"asks": ["resid1"]}, "exercise.asks"),
])
def test_bad_exercise_sections_exit_2_naming_the_field(tmp_path, capsys, exercise, where):
    import json
    path = tmp_path / "s.yaml"
    path.write_text(spec.example_text("seed-post-ln") + "exercise: " + json.dumps(exercise) + "\n")
    assert run(str(path), "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert f"{path}: {where}:" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [
    (["--format", "docx"], "--format"),
    (["--format", "latex,pdf"], "a PDF comes from the LaTeX: add --pdf"),
    (["--id", "no/such id"], "not a worksheet ID"),
    (["--id", "nosuchexample.3"], "no built-in example"),
    (["--variants", "2"], "variants need a `random:` section"),
    (["--seed", "3"], "--seed goes with --variants"),
    (["--id", "seed-post-ln", "--variants", "2"], "cannot be combined"),
    (["--pdf", "--format", "markdown"], "--pdf needs the latex format"),
    (["no-such-spec.yaml"], "no such file"),
    (["--template-dir", "/no/such/dir"], "--template-dir"),
])
def test_bad_input_exits_2(tmp_path, capsys, argv, message):
    assert run(*argv, "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_pdf_without_tex_names_the_missing_program(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert run("--pdf", "--out", str(tmp_path / "o")) == 2
    assert "needs pdflatex, which is not installed" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_help_stays_light():
    import subprocess
    import sys
    code = ("import sys, symblock.cli as c; c.build_parser(); "
            "bad = [m for m in ('jinja2', 'sympy', 'flint') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("preset, shown, absent", [
    ("norm", ["LayerNorm per row", "population variance"], ["Attention per head", "Causal mask", "FFN:", "order:"]),
    ("ffn", ["FFN: $F ="], ["Attention per head", "Causal mask", "LayerNorm per row", "order:"]),
    ("attention", ["Attention per head", "Causal mask"], ["LayerNorm per row", "FFN:", "order:"]),
    ("full", ["Attention per head", "Causal mask", "LayerNorm per row", "Pre-LN order:", "FFN: $F ="], []),
])
def test_conventions_box_states_only_what_the_asked_tasks_use(tmp_path, preset, shown, absent):
    """A norm-only sheet says nothing of attention (softmax, heads, the causal mask) or the FFN;
    the full sheet states every convention; sheet and key agree, LaTeX and Markdown alike."""
    out = tmp_path / preset
    assert run("pre-ln-causal-gelu", "--preset", preset, "--out", str(out)) == 0
    for doc in ("sheet.md", "key.md", "sheet.tex", "key.tex"):
        text = (out / doc).read_text(encoding="utf-8")
        box = text[text.index("Conventions"):text.index("Given")]
        for words in shown:
            assert words in box, (doc, words)
        for words in absent:
            assert words not in box, (doc, words)
        assert "Tokens are rows" in box and "Round answers to 3 decimal places" in box


@pytest.mark.parametrize("example, lang, linear", [
    ("seed-post-ln", "en", "$y = xW$ (no bias)"), ("padding-batch", "en", "$y = xW + b$"),
    ("tiny-gpt", "en", "$y = xW$ (no bias)"), ("tiny-bert", "en", "$y = xW + b$"),
    ("seed-post-ln", "zh", "$y = xW$（无偏置）"), ("tiny-bert", "zh", "$y = xW + b$"),
])
def test_the_conventions_write_a_linear_layer_with_a_bias_only_where_the_block_has_one(tmp_path, example, lang,
                                                                                      linear):
    """A block without biases (block.bias false: no b_Q, b_1, ... given or drawn) is not told
    y = xW + b; one with them is. Blocks, a tiny GPT's and a BERT encoder's sheets alike."""
    assert run(example, "--lang", lang, "--format", "markdown", "--out", str(tmp_path)) == 0
    for doc in ("sheet.md", "key.md"):
        text = (tmp_path / doc).read_text(encoding="utf-8")
        assert linear in text, (doc, linear)
        assert ("+ b$" in text) == ("+ b" in linear), doc


def test_backprop_conventions_state_the_parts_the_gradients_go_through(tmp_path):
    """∂L/∂W₂, ∂L/∂W₁ (the default) go back through resid2 and the FFN only: no attention box line,
    no RMSNorm line; the order (where R₂ comes from) and the gradient convention stay."""
    out = tmp_path / "bp"
    assert run("rmsnorm-swiglu", "--preset", "backprop", "--out", str(out), "--format", "markdown") == 0
    text = (out / "sheet.md").read_text(encoding="utf-8")
    box = text[text.index("Conventions"):text.index("Given")]
    assert "FFN: $F =" in box and "order:" in box and "Gradients:" in box
    assert "Attention per head" not in box and "RMSNorm per row" not in box


def test_difficulty_without_a_spec_draws_the_presets_own_block(tmp_path, capsys):
    """`worksheet --difficulty medium` alone draws medium's block (2 tokens, d_model 4, Pre-LN), not
    the seed example's given one under medium's constraints (whose error named seed-post-ln's d_k);
    its IDs rebuild the same sheet with no file, and check finds the set from an answers file."""
    import yaml
    out = tmp_path / "class"
    assert run("--difficulty", "medium", "--variants", "2", "--format", "markdown", "--out", str(out)) == 0
    manifest = yaml.safe_load((out / "instructor" / "manifest.yaml").read_text())
    assert [v["id"] for v in manifest["variants"]] == ["preset-medium-v2.1", "preset-medium-v2.2"]
    sheet = (out / "students" / "preset-medium-v2.2" / "sheet.md").read_text()
    assert sheet.startswith("# Exercise (medium)") and "`preset-medium-v2.2`" in sheet and "Pre-LN" in sheet
    X = sheet[sheet.index("X ="):].split("\\end{bmatrix}")[0]
    assert X.count("\\\\") == 1 and X.split("\\\\")[0].count("&") == 3  # 2 rows of 4 entries
    assert run("--id", "preset-medium-v2.2", "--format", "markdown", "--out", str(tmp_path / "again")) == 0
    assert (tmp_path / "again" / "sheet.md").read_text() == sheet
    capsys.readouterr()
    assert cli.main(["check", str(out / "students" / "preset-medium-v2.2" / "answers.yaml")]) == 1  # blank: nothing answered
    assert "21 missing" in capsys.readouterr().out


AFFINE_NORM = """\
dims: {seq_len: 2, d_model: 4, d_ff: 2, heads: 1}
block: {norm_position: pre}
weights:
  ln1: {gamma: [2, 1, 2, 1], beta: [1, -1, 0, -1]}
inputs:
  X: [[1.5, -3, 3, 1.5], [-2, 2.5, 0, -1.5]]
random: {seed: 1, low: -1, high: 1}
exercise: {ask: [norm1.mean, norm1.var, norm1.std, norm1]}
"""


def test_a_norm_row_with_gamma_and_beta_is_split_not_shrunk(tmp_path):
    """Four `(x − μ)/σ · γ + β` fractions are wider than the page, and \\fitmath shrank the whole
    block (every row) to some 60 %: each row now goes over aligned rows of two entries, and reads
    (x − μ)/σ · γ + β with the numbers worked here: row 1 has μ = 0.75, σ = 2.25."""
    spec_file = tmp_path / "affine.yaml"
    spec_file.write_text(AFFINE_NORM, encoding="utf-8")
    assert run(str(spec_file), "--out", str(tmp_path / "ws")) == 0
    key = (tmp_path / "ws" / "key.tex").read_text(encoding="utf-8")
    block = next(line for line in key.splitlines() if r"i = 1:\ & \left(" in line and r"\cdot 2 + 1" in line)
    row1 = block.split(r"\\")[:3]   # two entries, two entries, then the four results
    assert [r.count(r"\cdot") for r in row1] == [2, 2, 0], row1
    assert r"\frac{1.5 - 0.75}{2.25} \cdot 2 + 1, \frac{-3 - 0.75}{2.25} \cdot 1 + (-1), \right." in row1[0]
    assert r"\left. \frac{3 - 0.75}{2.25} \cdot 2 + 0, \frac{1.5 - 0.75}{2.25} \cdot 1 + (-1)\right)" in row1[1]
    # (1.5 − 0.75)/2.25·2 + 1 = 5/3, (−3 − 0.75)/2.25 − 1 = −8/3, 2.25/2.25·2 = 2, 0.75/2.25 − 1 = −2/3
    assert row1[2].strip() == r"& \approx \left(1.667, -2.667, 2, -0.667\right)", row1[2]


def test_a_projection_with_a_bias_names_it_before_its_numbers(cli, spec_file, tmp_path):
    """Q = X W^Q + b^Q = [X] [W^Q] + [b^Q]: the substituted line says the bias it adds (it read
    `Q = X W^{Q} = [X][W][+ b]`), for a bias given with block.bias left false too (the forward adds it)."""
    path = spec_file("""\
dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
weights:
  W_Q: [[1, 0], [0, 1]]
  b_Q: [5, 7]
  W_K: [[1, 0], [0, 1]]
  W_V: [[1, 0], [0, 1]]
  W_O: [[1, 0], [0, 1]]
  W_1: [[1, 0], [0, 1]]
  W_2: [[1, 0], [0, 1]]
inputs:
  X: [[2, 0], [0, 1]]
""")
    code, _, err = cli("worksheet", path, "--out", tmp_path / "ws", "--format", "markdown")
    assert code == 0, err
    key = (tmp_path / "ws" / "key.md").read_text(encoding="utf-8")
    assert (r"Q = X W^{Q} + b^{Q} = \begin{bmatrix} 2 & 0 \\ 0 & 1 \end{bmatrix} "
            r"\begin{bmatrix} 1 & 0 \\ 0 & 1 \end{bmatrix} + \begin{bmatrix} 5 & 7 \end{bmatrix}") in key
    assert r"Q = X W^{Q} = " not in key
    # and its answer is X W + b, worked by hand: [[2+5, 0+7], [0+5, 1+7]]
    assert r"Q = \begin{bmatrix} 7 & 7 \\ 5 & 8 \end{bmatrix}" in key


@pytest.mark.parametrize("example, en, zh", [("tiny-gpt", "Tiny GPT", "微型 GPT 手算练习"),
                                              ("tiny-bert", "Tiny encoder", "微型编码器手算练习"),
                                              ("seed-post-ln", "Transformer block", "Transformer block 手算练习")])
def test_an_untitled_spec_is_titled_by_what_it_is(cli, tmp_path, example, en, zh):
    text = spec.example_text(example)
    body = "\n".join(line for line in text.splitlines() if not line.startswith("title:"))
    path = tmp_path / "s.yaml"
    path.write_text(body, encoding="utf-8")
    for lang, want in (("en", en), ("zh", zh)):
        out = tmp_path / lang
        code, _, err = cli("worksheet", path, "--out", out, "--format", "markdown", "--lang", lang)
        assert code == 0, err
        assert (out / "sheet.md").read_text(encoding="utf-8").startswith(f"# {want}\n")
