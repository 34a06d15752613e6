"""Every kind of generated .tex compiles with the real TeX Live (pdflatex for en, xelatex + ctex
for zh) through symblock's compile call: no errors, no overfull box wider than 1pt, up to the
largest supported size (seq_len 5, d_model 8, d_ff 16). Fails, never skips, without TeX."""
from __future__ import annotations

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
    docs = documents(trace_of(src), "id", formats=["latex"], lang=lang)
    for tex in _write(tmp_path, docs):
        compile_tex(tex, "pdflatex" if lang == "en" else "xelatex")


def test_hostile_title_prints_as_text_and_never_runs(tmp_path):
    docs = documents(trace_of("seed-post-ln"), "id", formats=["latex"], title=EVIL)
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
