"""Every kind of generated .tex compiles with the real TeX Live (pdflatex for en, xelatex + ctex
for zh) through symblock's compile call: no errors, no overfull box wider than 1pt, up to the
largest supported size (seq_len 5, d_model 8, d_ff 16). Fails, never skips, without TeX."""
from __future__ import annotations

from symblock.exercises import variant

import pytest

from symblock import cli
from test_worksheet import BIG, EVIL, GATED_BIG, big_spec, trace_of
from symblock.sheets.worksheet import documents
from worksheet_tools import compile_tex

pytestmark = pytest.mark.slow


def _write(tmp_path, docs, only=("sheet.tex", "key.tex")):
    paths = []
    for name in only:
        p = tmp_path / name
        p.write_text(docs[name], encoding="utf-8")
        paths.append(p)
    return paths


@pytest.mark.parametrize("which, lang", [("big", "en"), ("gated", "zh")])
def test_largest_size_compiles_without_overfull_boxes(which, lang, tmp_path):
    src = big_spec(tmp_path, BIG if which == "big" else GATED_BIG)
    docs = documents(variant.build("id", trace_of(src)), formats=["latex"], lang=lang).files
    for tex in _write(tmp_path, docs):
        compile_tex(tex, "pdflatex" if lang == "en" else "xelatex")


def test_hostile_title_prints_as_text_and_never_runs(tmp_path):
    docs = documents(variant.build("id", trace_of("seed-post-ln")), formats=["latex"], title=EVIL).files
    (tex,) = _write(tmp_path, docs, only=("key.tex",))
    log = compile_tex(tex, "pdflatex")
    recorded = tex.with_suffix(".fls").read_text()
    assert "/etc/passwd" not in recorded and "/etc/passwd" not in log
    assert not (tmp_path / "pwned").exists()


def test_pdf_option_writes_pdfs_atomically(tmp_path, capsys):
    out = tmp_path / "ws"
    assert cli.main(["worksheet", "rmsnorm-swiglu", "--pdf", "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["key.md", "key.pdf", "key.tex", "sheet.md", "sheet.pdf", "sheet.tex"]  # no aux/log
    assert (out / "key.pdf").read_bytes()[:5] == b"%PDF-"


SHRUNK = r"\typeout{SHRUNK \the\wd\fitbox: \detokenize{#1}}\resizebox"


@pytest.mark.parametrize("spec_text", [
    "pre-ln-causal-gelu",                                 # 4-wide norm rows, four GELU terms
    "rope-gqa",                                           # RoPE's rule, its angle and pairs (over lines)
    "random: {seed: 3, difficulty: hard}\n",              # norm2 with γ and β, GELU notes
    "random: {seed: 1, difficulty: medium}\n",
])
def test_no_line_of_a_key_is_shrunk_to_fit(tmp_path, spec_text):
    """\\fitmath scales a display wider than the line down to fit (as small as 60%, hard to read on
    paper). The keys' working is laid out over rows instead, so no display of these keys needs it:
    the compile records every display \\fitmath would shrink (TeX measures, not an estimate)."""
    from symblock.exercises.generate import load
    from symblock.engine.block import forward
    source = spec_text
    if "\n" in spec_text:
        source = tmp_path / "spec.yaml"
        source.write_text(spec_text, encoding="utf-8")
    docs = documents(variant.build("id", forward(load(str(source)))), formats=["latex"]).files
    key = docs["key.tex"]
    assert r"\ifdim\wd\fitbox>\linewidth\resizebox" in key
    tex = tmp_path / "key.tex"
    tex.write_text(key.replace(r"\ifdim\wd\fitbox>\linewidth\resizebox",
                               r"\ifdim\wd\fitbox>\linewidth" + SHRUNK), encoding="utf-8")
    log = compile_tex(tex, "pdflatex")
    assert "SHRUNK" not in log, "\n".join(line for line in log.splitlines() if "SHRUNK" in line)
