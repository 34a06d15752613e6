"""A set of variants on disk, in two folders: DIR/students/ holds what is handed out (each variant's
sheet, blank answers files, HTML sheet and notebook in students/<ID>/, and an index of the sheets),
DIR/instructor/ what stays with the teacher (each variant's key in instructor/<ID>/, the manifest,
the LMS exports and the set files that put the whole set in one document to print, sheets.tex and
keys.tex, + .pdf with --pdf). Nothing under students/ links to or holds a key (`placed`).

A set file is one LaTeX document, compiled in one run: the variants' shared preamble once, then
each variant's body in a group, starting on an odd page (so a duplex print never puts two students
on one sheet of paper) and numbered from 1. LaTeX writes the pages each variant took to
`<job>.pages`, and with --pdf every variant's own sheet.pdf and key.pdf are cut from the set's
(pypdf, the `pdf` extra): 62 PDFs of 30 variants cost two LaTeX runs, not 62. The cut pages are the
pages a separate compile of the variant gives (tests/sheets/test_worksheet_sets.py compares them).

A variant whose set document fails (or without pypdf) is compiled on its own instead, in parallel
(`--jobs`), so a failure names the variant and keeps the others. Each variant is a unit of output
that lands whole; the set files land only when every variant did.
"""
from __future__ import annotations

import os
import sys
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from symblock.errors import UsageError
from symblock.sheets.worksheet import Stage, check_targets, document_names, output_names, require

SET_NAMES = {"sheet.tex": "sheets.tex", "key.tex": "keys.tex"}
STUDENTS, INSTRUCTOR = "students", "instructor"
_BEGIN, _END = "\\begin{document}", "\\end{document}"
_SET_PREAMBLE = r"""% symblock: a set of variants in one document. Each starts on an odd page, is numbered
% from 1, and its first and last page go to \jobname.pages (to cut each variant's own PDF out).
\makeatletter
\newwrite\symblock@pages\immediate\openout\symblock@pages=\jobname.pages
\newcommand\symblockvariant[1]{\clearpage\setcounter{page}{1}%
  \xdef\symblock@first{\the\numexpr\ReadonlyShipoutCounter+1\relax}}
\newcommand\symblockendvariant{\clearpage
  \immediate\write\symblock@pages{\symblock@first\space\the\ReadonlyShipoutCounter}%
  \ifodd\value{page}\else\null\thispagestyle{empty}\clearpage\fi}
\makeatother
"""


def combined(variants: Sequence[tuple[str, str]]) -> str:
    """One document from (ID, LaTeX document) pairs that share their preamble."""
    from symblock.sheets.render import latex_escape
    preamble = None
    bodies = []
    for ident, text in variants:
        start, end = text.find(_BEGIN), text.rfind(_END)
        if start < 0 or end < start:
            raise UsageError(f"variant {ident}: the LaTeX has no \\begin{{document}} … \\end{{document}}")
        if preamble is None:
            preamble = text[:start]
        elif text[:start] != preamble:
            raise UsageError(f"variant {ident}: its LaTeX preamble differs from the first variant's, so the "
                             "set cannot be one document (keep variant-specific text after \\begin{document})")
        body = text[start + len(_BEGIN):end].strip("\n")
        bodies.append(f"\\symblockvariant{{{latex_escape(ident)}}}\n\\begingroup\n{body}\n\\endgroup\n"
                      "\\symblockendvariant\n")
    return preamble + _SET_PREAMBLE + _BEGIN + "\n" + "\n".join(bodies) + _END + "\n"


@dataclass
class SetResult:
    written: list[Path] = field(default_factory=list)  # in set order: variants, then the set files
    failed: dict[str, str] = field(default_factory=dict)  # ID (or "set") -> what went wrong

    def error(self, out: Path, total: int) -> UsageError:
        """The message for a set with failures: what failed first, and what was still written."""
        bad = [k for k in self.failed if k != "set"]
        if not bad:
            return UsageError(f"the set files failed: {self.failed['set']}; all {total} variants "
                              f"were written to {out}")
        more = f" (and {len(bad) - 1} more: {', '.join(bad[1:4])}{'…' if len(bad) > 4 else ''})" \
            if len(bad) > 1 else ""
        return UsageError(f"variant {bad[0]} failed{more}: {self.failed[bad[0]]}; {total - len(bad)} of "
                          f"{total} variants were written to {out}; the set files were not")


Files = Mapping[str, "str | bytes"]


def placed(name: str) -> str:
    """Where a set's file goes, from its name relative to the set (`<ID>/sheet.tex`, `manifest.yaml`):
    a variant's key (`key.*`) and every set-level file to instructor/, the rest of a variant's
    files to students/; a name already under students/ or instructor/ (the HTML's) stays."""
    parts = Path(name).parts
    if parts[0] in (STUDENTS, INSTRUCTOR):
        return name
    side = INSTRUCTOR if len(parts) == 1 or parts[-1].startswith("key.") else STUDENTS
    return f"{side}/{name}"


def _land(folder: Path, out: Path, names: Sequence[str], prefix: str = "") -> list[Path]:
    """Move the staged `names` (under `folder`; `prefix`+name relative to the set) to their place
    under `out` (`placed`), onto targets that check_targets cleared."""
    import os
    landed = []
    for name in names:
        dest = out / placed(prefix + name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(folder / name, dest)
        landed.append(dest)
    return landed


def write_set(out: Path, variants: Sequence[tuple[str, Callable[[], dict[str, str]]]], formats,
              force: bool = False, pdf_engine: str | None = None, jobs: int | None = None,
              extra: Files | Callable[[], Files] | None = None) -> SetResult:
    """Write each variant (ID, render() -> {name: text}) and the set files into out/students/ and
    out/instructor/ (`placed`);
    `extra` (names relative to out: the HTML/LMS/notebook writers' files, the manifest and blank
    answers), or a function that gives it once every variant is rendered, joins the set files' unit.

    Every target is checked before anything lands. The variants are rendered in order (one that
    fails to render ends the set there; the variants before it still land), then the set documents
    are compiled and each variant's PDFs cut from them. A variant that fails is recorded, not
    fatal: the result names it, and the set files, which must hold every variant, are then not written."""
    pdf = bool(pdf_engine)
    per_variant = output_names(document_names(formats), pdf)
    set_docs = [SET_NAMES[n] for n in document_names(formats) if n in SET_NAMES]
    known = {} if callable(extra) else dict(extra or {})
    check_targets(out, [placed(n) for n in [f"{i}/{n}" for i, _ in variants for n in per_variant]
                        + output_names(set_docs, pdf) + list(known)], force)
    if pdf:
        require(pdf_engine)
    result, stopped = SetResult(), None
    steps = len(variants) + (len(set_docs) if pdf else 0) + bool(set_docs or extra)
    with Stage(out, jobs) as stage, _progress(steps) as bar:
        folders: dict[str, Path] = {}
        texts: dict[str, list[tuple[str, str]]] = {n: [] for n in SET_NAMES}
        for ident, render in variants:
            try:
                files = render()
            except UsageError as e:
                stopped = f"variant {ident}: {e}"
                break
            for name, pairs in texts.items():
                pairs += [(ident, files[name])] if name in files else []
            folders[ident] = stage.write(ident, files)
            bar.update(1)
        if stopped is None and callable(extra):
            known = dict(extra())
            check_targets(out, [placed(n) for n in known], force)
        try:
            docs = {SET_NAMES[n]: combined(pairs) for n, pairs in texts.items() if pairs}
            parts = {SET_NAMES[n]: [combined(pairs[k:k + PART]) for k in range(0, len(pairs), PART)]
                     for n, pairs in texts.items() if len(pairs) > PART} if pdf else {}
        except UsageError as e:
            docs, parts, result.failed["set"] = {}, {}, str(e)
        folder = stage.write("set", {**docs, **known})
        if pdf:
            pieces = {name: [stage.write(f"part-{name}-{k + 1}", {name: text}) / name for k, text in enumerate(texts)]
                      for name, texts in parts.items()}
            _pdfs(stage, pdf_engine, folders, folder, docs, result, bar, pieces)
        for ident, variant in folders.items():
            if ident not in result.failed:
                result.written += _land(variant, out, per_variant, f"{ident}/")
        if stopped is not None:
            kept = sum(i not in result.failed for i in folders)
            said = "the variant before it was" if kept == 1 else f"the {kept} variants before it were"
            raise UsageError(stopped + (f"; {said} written to {out}" if kept else ""))
        if not result.failed and (docs or known):  # the set files only with every variant in them
            result.written += _land(folder, out, output_names(docs, pdf) + list(known))
        bar.update(1)
    return result


def _pdfs(stage: Stage, engine: str, folders: dict[str, Path], set_folder: Path, docs: dict[str, str],
          result: SetResult, bar, pieces: Mapping[str, list[Path]] | None = None) -> None:
    """Compile the set documents and cut each variant's PDF from them; a variant document whose set
    document failed (or every one, without pypdf) is compiled on its own. A set document of more
    than PART variants is compiled in `pieces` (PART variants each, at once) and joined. Failures
    go to `result`."""
    cut = _cutter()
    own = {v: k for k, v in SET_NAMES.items()}  # sheets.tex -> sheet.tex
    idents = list(folders)

    def alone(doc: str, first: int = 0, last: int | None = None) -> dict:
        return {stage.compile(folders[i] / doc, engine): (i, doc, 0) for i in idents[first:last]}
    pieces = dict(pieces or {}) if cut else {}
    tex = {name: pieces.get(name) or [set_folder / name] for name in docs}
    pending = {stage.compile(t, engine): ("set", name, k) for name in docs for k, t in enumerate(tex[name])}
    for name in docs if cut is None else ():
        pending.update(alone(own[name]))
    made: dict[str, dict[int, Path]] = {name: {} for name in docs}
    while pending:
        done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
        for job in done:
            unit, name, k = pending.pop(job)
            if unit in ("cut", "join"):   # a failure here is a bug, not the user's: raised as it is
                job.result()
                if unit == "join":
                    bar.update(1)
                continue
            try:
                pdf = job.result()
            except UsageError as e:
                result.failed.setdefault(unit, str(e))
                pdf = None
            if unit != "set":
                continue
            first, last = (k * PART, (k + 1) * PART) if name in pieces else (0, None)
            share = idents[first:last]
            ranges = _ranges(tex[name][k], len(share)) if pdf and cut else None
            if ranges:
                pending[stage.pool.submit(cut, pdf, ranges, [folders[i] / own[name] for i in share],
                                          stage.children)] = ("cut", name, k)
            elif cut:  # the set document failed, or its page record is unusable (a user's template)
                pending.update(alone(own[name], first, last))
            if pdf:
                made[name][k] = pdf
            if name not in pieces:
                bar.update(1)
            elif len(made[name]) == len(tex[name]):
                pending[stage.pool.submit(join_pdfs, [made[name][n] for n in range(len(tex[name]))],
                                          set_folder / Path(name).with_suffix(".pdf"),
                                          stage.children)] = ("join", name, k)


PART = 50   # variants compiled in one LaTeX run of a set document; a larger set is compiled in parts


def join_pdfs(pdfs: Sequence[Path], dest: Path, children) -> None:
    """The parts' pages one after the other in `dest`, with the first part's metadata (each part
    holds whole variants of even length, so every variant still starts on an odd page); in a
    process of its own (pages.py)."""
    _in_child("join", [dest, *pdfs], dest.parent, children)


def _ranges(tex: Path, count: int) -> list[tuple[int, int]] | None:
    """The (first, last) page of each variant in the compiled set document, as LaTeX wrote them;
    None unless there is one increasing range per variant."""
    path = tex.with_suffix(".pages")
    try:
        ranges = [(int(a), int(b)) for a, b in (line.split() for line in path.read_text().splitlines())]
    except (OSError, ValueError):
        return None
    ends = [0] + [b for _, b in ranges]
    ok = len(ranges) == count and all(prev < a <= b for prev, (a, b) in zip(ends, ranges))
    return ranges if ok else None


def _cutter() -> Callable | None:
    """The page cutter (pypdf, the `pdf` extra), or None when pypdf is not installed."""
    try:
        import pypdf  # noqa: F401
    except ImportError:
        return None
    return cut_pages


def cut_pages(pdf: Path, ranges: Sequence[tuple[int, int]], texs: Sequence[Path], children) -> None:
    """Write the pages first..last (from 1) of `pdf` beside each .tex in `texs`, as its PDF; in a
    process of its own (pages.py)."""
    args = [pdf, *(x for (first, last), tex in zip(ranges, texs, strict=True)
                   for x in (first, last, tex.with_suffix(".pdf")))]
    _in_child("cut", args, pdf.parent, children)


def _in_child(verb: str, args: list, cwd: Path, children) -> None:
    """Run pages.py's `verb` in a Python process, one of the run's `children` (Stage.children:
    stopped with its compilers)."""
    from symblock.sheets import pages
    code, output = children.run(pages.command(verb, args), cwd, dict(os.environ))
    if code != 0:
        raise RuntimeError(f"pypdf could not {verb} the set's PDFs: {output.decode(errors='replace')[-2000:]}")


def _progress(total: int):
    """A progress bar on a terminal (tqdm), silent when stderr is not one."""
    from tqdm import tqdm
    tty = sys.stderr.isatty()
    # the CLI's stderr escapes control characters; the bar's own \r must reach the terminal
    return tqdm(total=total, desc="worksheets", unit="step", disable=not tty, leave=False,
                file=sys.__stderr__ if tty else sys.stderr, dynamic_ncols=True)
