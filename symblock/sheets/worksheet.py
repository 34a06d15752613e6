"""Write a worksheet and its answer key (LaTeX and Markdown, optionally PDF) for a block spec.

The sheet has the conventions, the given matrices and one task per asked step with an empty grid;
the key shows, for every task, the formula, the numbers going in, the work (entries written out)
and the exact result with its decimal. `--preset` or the spec's `exercise:` section chooses the
steps; `--variants N --seed S` draws N variants, each with a worksheet ID that `--id` regenerates.

Files: DIR/sheet.tex, DIR/key.tex, DIR/sheet.md, DIR/key.md (+ .pdf with --pdf); with --variants,
one sub-directory DIR/<ID>/ per variant. Existing files are never overwritten without --force, and
files appear only when everything was written (and compiled) without error.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

DOCS = ("sheet", "key")
ENGINES = {"en": "pdflatex", "zh": "xelatex"}
# formats written once per set by a writer module: files(models, many=..., template_dir=...)
SET_WRITERS = {"html": "symblock.sheets.html", "moodle": "symblock.sheets.moodle",
               "qti": "symblock.sheets.qti", "ipynb": "symblock.sheets.notebook"}


# ---------------------------------------------------------------- orchestration


def documents(trace, ident: str, *, formats, preset=None, lang="en", places=3, title=None,
              template_dir=None, loss=None, wrt=None, models: list | None = None) -> dict[str, str]:
    """{file name: text} for one variant: sheet and key in each format (the SET_WRITERS' files
    come from `bundle`, which reads the sheet models collected into `models`)."""
    from symblock.exercises import presets
    from symblock.sheets import render, model as sheet
    ex = presets.choose(trace, preset, loss=loss, wrt=wrt)
    model = sheet.build(trace, ex, lang=lang, places=places, ident=ident, title=title)
    if models is not None:
        models.append(model)
    out = {}
    for fmt in (f for f in formats if f not in SET_WRITERS):
        for doc in DOCS:
            out[doc + render.FORMATS[fmt]] = render.render(model, fmt, key=(doc == "key"),
                                                           template_dir=template_dir)
    return out


def bundle(models: list[dict], formats, many: bool, template_dir=None) -> dict[str, str | bytes]:
    """{file name: text or bytes} of the set-level formats (html, moodle, qti, ipynb) for the
    sheet models of a set; `many`: variants live in sub-directories named by their ID."""
    from importlib import import_module
    out: dict[str, str | bytes] = {}
    for fmt in formats:
        if fmt in SET_WRITERS:
            out.update(import_module(SET_WRITERS[fmt]).files(models, many=many, template_dir=template_dir))
    return out


# ---------------------------------------------------------------- files

def write_files(out: Path, files: dict[str, str | bytes], force: bool = False, pdf_engine: str | None = None) -> list[Path]:
    """Write `files` (relative name -> text) under `out`, compiling each .tex to PDF when
    `pdf_engine` is set. Refuses to overwrite unless `force`; everything is written and compiled
    in a temporary directory first and moved into place only when all of it succeeded."""
    from symblock.errors import UsageError
    names = list(files)
    if pdf_engine:
        names += [n[:-4] + ".pdf" for n in files if n.endswith(".tex")]
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} exists and is not a directory")
    clash = [n for n in names if (out / n).exists()]
    if clash and not force:
        raise UsageError(f"--out: {out / clash[0]} already exists"
                         + (f" (and {len(clash) - 1} more)" if len(clash) > 1 else "")
                         + "; use --force to overwrite, or another directory")
    if pdf_engine:
        _require("latexmk")
        _require(pdf_engine)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".symblock-", dir=parent))
    try:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        if pdf_engine:
            for name in files:
                if name.endswith(".tex"):
                    compile_pdf(tmp / name, pdf_engine)
        out.mkdir(parents=True, exist_ok=True)
        done = []
        for name in names:
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / name, target)
            done.append(target)
        return done
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _require(program: str) -> None:
    from symblock.errors import UsageError
    if shutil.which(program) is None:
        raise UsageError(f"--pdf needs {program}, which is not installed (TeX Live: e.g. `apt-get install "
                         "latexmk texlive-latex-extra texlive-xetex texlive-lang-chinese`)")


def compile_pdf(tex: Path, engine: str = "pdflatex") -> Path:
    """Compile one .tex with latexmk (never with shell escape) in its own directory; the log
    stays beside it. Raises UsageError with the log's first error when it fails."""
    from symblock.errors import UsageError
    flag = {"pdflatex": "-pdf", "xelatex": "-xelatex", "lualatex": "-lualatex"}[engine]
    cmd = ["latexmk", flag, "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
           "-file-line-error", "-quiet", tex.name]
    env = dict(os.environ, SOURCE_DATE_EPOCH="0", FORCE_SOURCE_DATE="1")
    proc = subprocess.run(cmd, cwd=tex.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, timeout=600)
    pdf = tex.with_suffix(".pdf")
    if proc.returncode != 0 or not pdf.exists():
        log = tex.with_suffix(".log")
        text = log.read_text(errors="replace") if log.exists() else proc.stdout.decode(errors="replace")
        errors = [line for line in text.splitlines() if line.startswith("!") or ":error" in line.lower()
                  or ".tex:" in line]
        raise UsageError(f"{engine} failed on {tex.name}: " + ("; ".join(errors[:3]) or text[-500:]))
    return pdf
