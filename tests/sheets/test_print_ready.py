"""Print-ready sets: a task's heading is never the bottom of a page without its body (read back
from the PDF with pdftotext -bbox), sets of each difficulty compile without overfull boxes,
Chinese sheets have no English prose, points and per-language titles print, and any size renders
(d_model 72, values of any magnitude in scientific notation)."""
from __future__ import annotations

from symblock.exercises import variant

import re
import subprocess
import sys
from pathlib import Path

import pytest

from symblock.engine import block, spec
from symblock.sheets.sets import combined
from symblock.sheets.worksheet import documents
from worksheet_tools import compile_tex, need

sys.path.insert(0, str(Path(__file__).parent))
from prose import prose_words  # noqa: E402


# ---------------------------------------------------------------- reading pages back

def page_lines(pdf: Path) -> list[list[str]]:
    """The text lines of each page, top to bottom (words grouped by their baseline)."""
    need("pdftotext")
    html = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    pages = []
    for page in re.findall(r"<page[^>]*>(.*?)</page>", html, re.S):
        rows: dict[int, list[tuple[float, str]]] = {}
        for x, y, word in re.findall(r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="[\d.]+" yMax="([\d.]+)">(.*?)</word>', page):
            key = round(float(y) / 3)
            rows.setdefault(key, []).append((float(x), word))
        pages.append([" ".join(w for _, w in sorted(rows[k])) for k in sorted(rows)])
    return pages


def orphaned_headings(pdf: Path, heading: str, body_lines: int) -> list[str]:
    """Headings matching `heading` with fewer than `body_lines` lines after them on their page
    (the footer at the bottom, worksheet ID and page number, does not count)."""
    bad = []
    for n, lines in enumerate(page_lines(pdf), 1):
        content = list(lines)
        for _ in range(2):   # the footer: "ID 6" on one baseline, or the ID and the page number apart
            if content and re.fullmatch(r"(\S+ )?\d+|\S+\.\d+", content[-1]):
                content.pop()
        for i, line in enumerate(content):
            if re.match(heading, line) and len(content) - 1 - i < body_lines:
                bad.append(f"page {n}: {line!r} is followed by {len(content) - 1 - i} lines")
    return bad


def variant_docs(tmp_path, difficulty: str, n: int, **kw) -> list[dict]:
    path = tmp_path / f"{difficulty}.yaml"
    path.write_text(f"random: {{difficulty: {difficulty}, seed: 1}}\n")
    return [{"id": v.ident, **documents(v, formats=["latex"], **kw).files}
            for v in variant.draw_set(str(path), n, 1, None, {})]


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_sets_compile_without_overfull_boxes_and_keep_headings_with_their_grids(tmp_path, difficulty):
    docs = variant_docs(tmp_path, difficulty, 10)
    for doc, body in (("sheet", 2), ("key", 3)):
        tex = tmp_path / f"{difficulty}-{doc}.tex"
        tex.write_text(combined([(d["id"], d[f"{doc}.tex"]) for d in docs]))  # the set's own document
        compile_tex(tex, "pdflatex")                 # fails on any overfull box wider than 1pt
        pdf = tex.with_suffix(".pdf")
        bad = orphaned_headings(pdf, r"Task \d+ ", body)
        if doc == "sheet":   # the grid's symbol line follows "Write your answer in the grid."
            bad += orphaned_headings(pdf, r"Write your answer in the grid\.", 1)
        bad += orphaned_headings(pdf, r".*\(\w[\w.]* ?, \d+ × \d+", 1)   # a given matrix's label
        bad += orphaned_headings(pdf, r"Answer:", 1)
        assert not bad, "\n".join(bad[:10])


def test_the_tasks_heading_stays_with_task_1(tmp_path):
    """The key of pre-ln-causal-gelu's norm preset ended page 1 with "Tasks" and its note."""
    docs = documents(variant.build("t", block.forward(spec.load("pre-ln-causal-gelu")), variant.Options.of(preset="norm")), formats=["latex"]).files
    for name in ("sheet.tex", "key.tex"):
        tex = tmp_path / name
        tex.write_text(docs[name])
        compile_tex(tex, "pdflatex")
        pages = page_lines(tex.with_suffix(".pdf"))
        where = [n for n, lines in enumerate(pages) if "Tasks" in lines]
        assert len(where) == 1 and any(line.startswith("Task 1 ") for line in pages[where[0]]), (name, where)


def test_answer_stays_with_its_matrix(tmp_path):
    """tiny-translate's key ended page 6 with a bare "Answer:" and put its matrix on page 7."""
    from symblock.cli import main
    assert main(["worksheet", "tiny-translate", "--format", "latex", "--out", str(tmp_path)]) == 0
    tex = tmp_path / "key.tex"
    compile_tex(tex, "pdflatex")
    pages = page_lines(tex.with_suffix(".pdf"))
    assert sum("Answer:" in lines for lines in pages) > 5
    assert not orphaned_headings(tex.with_suffix(".pdf"), r"Answer:", 1)


def test_the_page_reader_sees_an_orphaned_heading(tmp_path):
    """A heading that ends its page is found (here forced by a page break after it)."""
    tex = tmp_path / "o.tex"
    filler = "\n\n".join(f"Line {i}." for i in range(20))
    tex.write_text("\\documentclass[a4paper,11pt]{article}\\usepackage[margin=2cm]{geometry}\\begin{document}"
                   + filler + "\n\\subsection*{Task 9 \\quad x}\\clearpage\nWrite your answer in the grid.\n\n"
                   "$X = 1$\\end{document}")
    compile_tex(tex, "pdflatex")
    assert orphaned_headings(tex.with_suffix(".pdf"), r"Task \d+ ", 2)


def test_every_heading_and_given_label_asks_for_room(tmp_path):
    """The templates put \\needspace (room for the grid, or for the heading's first lines) before
    every task heading and every given matrix, so neither starts a page bottom alone."""
    docs = documents(variant.build("t", block.forward(spec.load("pre-ln-causal-gelu"))), formats=["latex"]).files
    for name, body in (("sheet.tex", r"\d+"), ("key.tex", "10")):
        text = docs[name]
        headings = text.count("\\subsection*{")
        assert len(re.findall(r"\\needspace\{" + body + r"\\baselineskip\}\n\\subsection\*\{", text)) == headings
        labels = re.findall(r"\\needspace\{(\d+)\\baselineskip\}\n[^\n]*:\n\\fitmath", text)
        assert labels and all(int(n) >= 5 for n in labels)


# ---------------------------------------------------------------- Chinese

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_section_headings_start_at_the_left_margin(tmp_path, lang):
    """ctexart centres \\section; a Chinese sheet's headings sit at the margin as the English ones do."""
    from symblock.sheets.lang import TEXTS
    t = TEXTS[lang]
    tex = tmp_path / "sheet.tex"
    tex.write_text(documents(variant.build("t", block.forward(spec.load("seed-post-ln"))), formats=["latex"],
                             lang=lang).files["sheet.tex"])
    compile_tex(tex, "xelatex" if lang == "zh" else "pdflatex")
    need("pdftotext")
    html = subprocess.run(["pdftotext", "-bbox", str(tex.with_suffix(".pdf")), "-"], capture_output=True,
                          text=True, check=True).stdout
    left = {w: float(x) for x, w in re.findall(r'<word xMin="([\d.]+)"[^>]*>(.*?)</word>', html)[::-1]}
    margin = 2 / 2.54 * 72   # geometry's 2 cm, in points
    for heading in (t["data"], t["tasks"]):
        assert abs(left[heading] - margin) < 3, (heading, left[heading])


def test_chinese_sheets_have_no_english_prose():
    from symblock.commands.gallery import GALLERY
    sources = [(s, o) for _, s, o, _ in GALLERY if o.get("lang") == "zh"]
    sources += [(s, {"lang": "zh", "preset": p, "title": "练习"}) for s in spec.block_example_names()
                for p in (None, "backprop") if not (p == "backprop" and s != "rmsnorm-swiglu")]
    from symblock.engine.model import forward_any
    from symblock.exercises.generate import load
    for src, opts in sources:
        trace = forward_any(load(src, allow_model=True))   # a gallery entry may be a model (tiny-bert-zh)
        docs = documents(variant.build("x", trace, variant.Options.of(preset=opts.get("preset"))), formats=["markdown"], lang="zh", title=opts.get("title")).files
        for name, text in docs.items():
            assert not prose_words(text), (src, name, sorted(set(prose_words(text))))
    from worksheet_tools import REPO
    committed = sorted((REPO / "worksheets").glob("*-zh/*.md"))
    assert committed
    for path in committed:                       # the gallery as committed, too
        assert not prose_words(path.read_text()), (path, sorted(set(prose_words(path.read_text()))))
    en = documents(variant.build("x", block.forward(spec.load("seed-post-ln"))), formats=["markdown"]).files["key.md"]
    assert {"Row", "the"} <= set(prose_words(en))   # the reader does see English


@pytest.mark.parametrize("example", ["tiny-gpt", "tiny-translate"])
def test_chinese_decoding_sheets_have_no_english_prose(example):
    """A cached decoding step's formulas and its reused-rows task say their words in Chinese too
    ((new row), (rows reused, one appended), reused); the names logit(s), KV and GPT stay."""
    from symblock.engine.model import forward_any
    from symblock.exercises.generate import load
    trace = forward_any(load(example, allow_model=True))
    docs = documents(variant.build("x", trace), formats=["markdown"], lang="zh").files
    for name, text in docs.items():
        assert not set(prose_words(text)) - {"logit", "logits", "KV", "GPT"}, (example, name, sorted(set(prose_words(text))))
    assert r"\text{（新行）}" in docs["key.md"] and r"\text{复用} = " in docs["sheet.md"]


def test_title_per_language_and_bad_titles(tmp_path, capsys):
    from symblock import cli
    text = spec.example_text("seed-post-ln")
    line = next(l for l in text.splitlines() if l.startswith("title:"))
    path = tmp_path / "t.yaml"
    path.write_text(text.replace(line, 'title: {en: "Worked by hand", zh: "手算 Post-LN block"}'))
    trace = block.forward(spec.load(str(path)))
    assert trace.spec.title == "Worked by hand"
    zh = documents(variant.build("x", trace), formats=["markdown"], lang="zh").files
    assert zh["sheet.md"].startswith("# 手算 Post-LN block\n")
    en = documents(variant.build("x", trace), formats=["markdown"]).files
    assert en["sheet.md"].startswith("# Worked by hand\n")
    path.write_text(text.replace(line, "title: {en: [1]}"))
    assert cli.main(["worksheet", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "title.en" in capsys.readouterr().err


# ---------------------------------------------------------------- points

def test_points_per_task_and_total(tmp_path, capsys):
    from symblock import cli
    data, source = spec.read_mapping("p.yaml", spec.example_text("seed-post-ln"))
    data["exercise"] = {"points": {"norm1.std": 2, "ffn.out": 3}}
    trace = block.forward(spec.from_mapping(data, source))
    docs = documents(variant.build("x", trace), formats=["latex", "markdown"]).files
    n = len(re.findall(r"^### ", docs["sheet.md"], re.M))
    assert "Total: " + str(n - 2 + 2 + 3) + " points" in docs["sheet.md"]
    assert "· `norm1.std` (2 pts)" in docs["sheet.md"] and "(1 pt)" in docs["sheet.md"]
    assert "\\hfill \\normalfont\\small 3 pts}" in docs["key.tex"]
    plain = documents(variant.build("x", block.forward(spec.load("seed-post-ln"))), formats=["markdown"]).files
    assert "pt)" not in plain["sheet.md"] and "Total" not in plain["sheet.md"]
    path = tmp_path / "p.yaml"
    path.write_text(spec.example_text("seed-post-ln") + "exercise: {points: {norm9: 2}}\n")
    assert cli.main(["worksheet", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "exercise.points.norm9" in capsys.readouterr().err


def test_working_space_under_each_grid(tmp_path, capsys):
    from symblock import cli
    assert cli.main(["worksheet", "--space", "2.5", "--format", "latex", "--out", str(tmp_path / "w")]) == 0
    assert "\\vspace{2.5cm}" in (tmp_path / "w" / "sheet.tex").read_text()
    assert "\\vspace" not in (tmp_path / "w" / "key.tex").read_text()
    assert cli.main(["worksheet", "--space", "-1", "--out", str(tmp_path / "x")]) == 2
    assert "--space" in capsys.readouterr().err
    from symblock.sheets import render, sheet
    trace = block.forward(spec.load("seed-post-ln"))
    m = sheet.build(variant.build("", trace), space=3)
    tex = render.render(m, "latex", key=False)
    assert tex.count("\\vspace{3cm}") == len(m["tasks"])
    assert "\\vspace" not in render.render(sheet.build(variant.build("", trace)), "latex", key=False)


# ---------------------------------------------------------------- any size

def test_huge_and_tiny_values_in_scientific_notation(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}\n"
                    "block: {attention_scale: none}\n"
                    "inputs: {X: [[30, 0], [0, 1]]}\n"
                    "weights: {W_Q: [[1, 0], [0, 1]], W_K: [[1, 0], [0, 1]], W_V: [[1, 0], [0, 1]],\n"
                    "          W_O: [[1, 0], [0, 1]], W_1: [[1000, 0], [0, 1]], W_2: [[1000, 0], [0, 1]]}\n")
    trace = block.forward(spec.load(str(path)))
    docs = documents(variant.build("t", trace), formats=["latex", "markdown"]).files
    assert re.search(r"\d\.\d{3} \\times 10\^\{-\d+\}", docs["key.md"])    # e^-900 / … in the weights
    tex = tmp_path / "key.tex"
    tex.write_text(docs["key.tex"])
    compile_tex(tex, "pdflatex")


def test_values_past_decimals_28_digits_print():
    """e^67 ≈ 1.25·10²⁹ has more digits than Decimal's default context (issue 13's crash)."""
    from symblock.engine import exact
    from symblock.sheets.numbers import dec_tex
    big = exact.exp(exact.real(67))
    assert dec_tex(big, 3) == r"1.252 \times 10^{29}"
    assert str(big.decimal(2)).startswith("125236317084221")
    assert dec_tex(exact.real(10**6), 3) == r"1.000 \times 10^{6}" and dec_tex(exact.real(999999), 3) == "999999.000"
    assert dec_tex(exact.exp(exact.real(-10)), 3) == r"4.540 \times 10^{-5}"


@pytest.mark.slow
def test_d_model_72_renders(tmp_path):
    path = tmp_path / "wide.yaml"
    path.write_text("dims: {seq_len: 2, d_model: 72, d_ff: 4, heads: 1}\nrandom: {seed: 3}\n")
    trace = block.forward(spec.load(str(path)))
    docs = documents(variant.build("t", trace, variant.Options.of(preset="ffn")), formats=["latex"]).files
    for name in ("sheet.tex", "key.tex"):
        assert "MaxMatrixCols" not in docs[name]
        tex = tmp_path / name
        tex.write_text(docs[name])
        compile_tex(tex, "pdflatex")


def test_text_copied_from_the_pdf_keeps_underscores_and_straight_quotes(tmp_path):
    need("pdftotext")
    docs = documents(variant.build("x", block.forward(spec.load("seed-post-ln"))), formats=["latex"],
                     title='The "b_1" block, ``a\'\' and `c\'').files
    tex = tmp_path / "sheet.tex"
    tex.write_text(docs["sheet.tex"])
    compile_tex(tex, "pdflatex")
    text = subprocess.run(["pdftotext", str(tex.with_suffix(".pdf")), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert 'The "b_1" block, ``a\'\' and `c\'' in text and "norm1.mean" in text and "ffn.hidden" in text


def test_scientific_notation_starts_exactly_at_its_bounds():
    """Positional for 10⁻⁴ ≤ |x| < 10⁶, scientific outside, for rationals and irrational nodes
    whose balls sit right at a bound (the bounds are decided from the ball when it is clear of
    them): the choice is checked against Python's decimal at 60 digits."""
    from decimal import Decimal, localcontext
    from fractions import Fraction
    from symblock.engine import exact
    from symblock.sheets.numbers import dec_tex
    cases = []
    for q in (Fraction(1, 10**4), Fraction(1, 10**4) - Fraction(1, 10**30), Fraction(10**6),
              Fraction(10**6) - Fraction(1, 10**20), Fraction(-10**6), Fraction(-1, 10**4), Fraction(3, 7)):
        cases.append((exact.real(q), Decimal(q.numerator) / Decimal(q.denominator)))
    with localcontext() as c:
        c.prec = 60
        for k, scale in ((2, 10**6), (10**12 - 1, 10**10), (10**12 + 1, 10**10), (2, 20000), (3, 17320),
                         (10**12 - 1, 1), (10**12 + 1, 1), (2 * 10**12, 2)):
            x = exact.sqrt(exact.real(k)) * exact.real(Fraction(1, scale))   # √k / scale: just under and over a bound
            cases += [(x, Decimal(k).sqrt() / scale), (-x, -Decimal(k).sqrt() / scale)]
        for x, ref in cases:
            science = abs(ref) >= 10**6 or 0 < abs(ref) < Decimal(1) / 10**4
            assert (r"\times 10^" in dec_tex(x, 3)) == science, (ref, dec_tex(x, 3))


@pytest.mark.slow
@pytest.mark.parametrize("example", ["tiny-translate", "tiny-llama"])
def test_keys_wide_worked_lines_continue_on_the_next_line_instead_of_shrinking(tmp_path, example):
    """A key's eight-wide softmax row and its six-term sums with wide decimals are broken over
    lines, so that pdflatex prints every display at full size: `\\fitmath` scales a display down only
    when it is wider than the line, and here it says so in the log."""
    from symblock.cli import main
    assert main(["worksheet", example, "--format", "latex", "--out", str(tmp_path / "ws")]) == 0
    tex = tmp_path / "ws" / "key.tex"
    text = tex.read_text(encoding="utf-8")
    shrink = r"\ifdim\wd\fitbox>\linewidth\resizebox"
    assert shrink in text
    tex.write_text(text.replace(shrink, r"\ifdim\wd\fitbox>\linewidth\typeout{SHRUNK \the\wd\fitbox}\resizebox"),
                   encoding="utf-8")
    log = compile_tex(tex, "pdflatex")
    assert "SHRUNK" not in log, re.findall(r"SHRUNK [\d.]+pt", log)
    assert r"\\ &\quad + " in text or r"\right) \\ &\quad \approx" in text   # a line continued
