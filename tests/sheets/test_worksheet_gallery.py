"""The committed gallery (worksheets/) is what `python -m symblock.commands.gallery worksheets --pdf`
generates today, byte for byte (every file but the PDFs: .tex, .md, .html with katex/, moodle.xml,
qti.zip, notebook.ipynb, README.md), and its LaTeX compiles. This says the gallery is current, not
that it is right (test_key_numbers.py checks the keys' numbers). PDFs are not
compared (TeX output is not byte-stable across TeX Live versions); they are recompiled instead."""
from __future__ import annotations

import pytest

from symblock.commands.gallery import COMMAND, GALLERY, generate
from worksheet_tools import REPO, compile_tex

GALLERY_DIR = REPO / "worksheets"


def _texts(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix != ".pdf"}  # .tex .md .html .xml .zip .ipynb, katex/


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("gallery")
    generate(out)
    return out


def test_committed_gallery_is_current(fresh):
    want, have = _texts(fresh), _texts(GALLERY_DIR)
    stale = sorted(n for n in want if have.get(n) != want[n])
    extra = sorted(set(have) - set(want))
    assert not stale and not extra, (
        f"worksheets/ differs from a fresh generation (differs: {stale}, not generated any more: "
        f"{extra}). Read the differences first (`python -m symblock.commands.gallery /tmp/gallery && "
        "diff -r worksheets /tmp/gallery`): a changed number in a key is a bug until shown "
        f"otherwise. Only when every change is one you meant, run `{COMMAND}` and commit it")
    for name, *_ in GALLERY:
        for doc in ("sheet", "key"):
            assert (GALLERY_DIR / name / f"{doc}.pdf").is_file(), f"missing PDF: run `{COMMAND}`"


@pytest.mark.slow
@pytest.mark.parametrize("name, lang", [(g[0], g[2].get("lang", "en")) for g in GALLERY])
def test_gallery_latex_compiles(fresh, name, lang, tmp_path):
    for doc in ("sheet", "key"):
        tex = tmp_path / f"{doc}.tex"
        tex.write_bytes((fresh / name / f"{doc}.tex").read_bytes())
        compile_tex(tex, "xelatex" if lang == "zh" else "pdflatex")
