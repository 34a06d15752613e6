"""Cutting a set document's pages into each variant's PDF, and joining a set document's parts
(pypdf, the `pdf` extra).

pypdf is pure Python: a 300-variant set is 600 cuts and two joins, about half a minute of one core.
So each cut of a compiled part and each join runs in its own Python process, started from the
set's compile pool like the LaTeX runs (`--jobs` of them at once), where it overlaps the other
parts' LaTeX runs (`command`). The bytes are those of the same pypdf calls made in one process.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Sequence


def cut(pdf: Path, ranges: Sequence[tuple[int, int]], outs: Sequence[Path]) -> None:
    """Write the pages first..last (from 1) of `pdf` to each out."""
    from pypdf import PdfReader, PdfWriter
    reader = PdfReader(pdf)
    for (first, last), out in zip(ranges, outs, strict=True):
        writer = PdfWriter()
        for page in reader.pages[first - 1:last]:
            writer.add_page(page)
        writer.add_metadata(reader.metadata or {})  # pdfTeX's Producer and (SOURCE_DATE_EPOCH) dates
        writer.write(out)


def join(pdfs: Sequence[Path], dest: Path) -> None:
    """The parts' pages one after the other in `dest`, with the first part's metadata."""
    from pypdf import PdfReader, PdfWriter
    writer = PdfWriter()
    readers = [PdfReader(p) for p in pdfs]
    for reader in readers:
        for page in reader.pages:
            writer.add_page(page)
    writer.add_metadata(readers[0].metadata or {})
    writer.write(dest)


# The child imports this module from this process's own sys.path (as multiprocessing's spawn does),
# so that it runs the same code, installed or not, whatever its working directory.
_BOOT = "import json, sys; sys.path[:] = json.loads(sys.argv[1]); from symblock.sheets.pages import main; main(sys.argv[2:])"


def command(verb: str, args: Sequence[object]) -> list[str]:
    """The command line of one cut (args: PDF, then FIRST LAST OUT per variant) or join (DEST, PDF...)."""
    path = [p if p else os.getcwd() for p in sys.path]
    return [sys.executable, "-c", _BOOT, json.dumps(path), verb, *map(str, args)]


def main(argv: Sequence[str]) -> None:
    verb, *args = argv
    if verb == "cut":
        pdf, rest = Path(args[0]), args[1:]
        triples = [rest[i:i + 3] for i in range(0, len(rest), 3)]
        cut(pdf, [(int(a), int(b)) for a, b, _ in triples], [Path(o) for _, _, o in triples])
    elif verb == "join":
        join([Path(p) for p in args[1:]], Path(args[0]))
    else:
        raise SystemExit(f"unknown verb {verb!r}: expected cut or join")
