"""A set of variants on disk: each variant's files in DIR/<ID>/, and the set files that put the
whole set in one document to print, DIR/sheets.tex and DIR/keys.tex (+ .pdf with --pdf).

A set file is one LaTeX document, compiled in one run: the variants' shared preamble once, then
each variant's body in a group, starting on an odd page (so a duplex print never puts two students
on one sheet of paper), numbered from 1 with its ID in the footer. Compiles run in parallel
(`--jobs`). Each variant is a unit of output that lands as soon as it is done, so a failure keeps
the variants already finished; the set files land only when every variant did.
"""
from __future__ import annotations

import sys
from collections import deque
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from symblock.errors import UsageError
from symblock.sheets.worksheet import Stage, check_targets, document_names, output_names, require

SET_NAMES = {"sheet.tex": "sheets.tex", "key.tex": "keys.tex"}
_BEGIN, _END = "\\begin{document}", "\\end{document}"
_SET_PREAMBLE = r"""% symblock: a set of variants in one document. Each starts on an odd page and is
% numbered from 1, with its worksheet ID in the footer.
\makeatletter
\def\symblock@variant{}
\def\ps@symblockset{\let\@oddhead\@empty\let\@evenhead\@empty
  \def\@oddfoot{\hfil\texttt{\symblock@variant}\quad\thepage\hfil}\let\@evenfoot\@oddfoot}
\newcommand\symblockvariant[1]{\clearpage\gdef\symblock@variant{#1}\setcounter{page}{1}}
\newcommand\symblockendvariant{\clearpage\ifodd\value{page}\else\null\thispagestyle{empty}\clearpage\fi}
\makeatother
\pagestyle{symblockset}
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


def write_set(out: Path, variants: Sequence[tuple[str, Callable[[], dict[str, str]]]], formats,
              force: bool = False, pdf_engine: str | None = None, jobs: int | None = None,
              extra: dict[str, str | bytes] | None = None) -> SetResult:
    """Write each variant (ID, render() -> {name: text}) into out/<ID>/ and the set files into out/;
    `extra` (names relative to out: the HTML/LMS/notebook writers' files, the manifest and blank
    answers) joins the set files' unit.

    Every target is checked first. Variants are rendered in order while their compiles run in
    parallel; once all are rendered the set files' long compiles go first. Each unit lands when
    its compiles are done. A variant that fails is recorded, not fatal: the result names it, and
    the set files, which must hold every variant, are then not written."""
    pdf = bool(pdf_engine)
    per_variant = output_names(document_names(formats), pdf)
    extra = dict(extra or {})
    set_names = output_names([SET_NAMES[n] for n in document_names(formats) if n in SET_NAMES], pdf) + list(extra)
    check_targets(out, [f"{i}/{n}" for i, _ in variants for n in per_variant] + set_names, force)
    if pdf:
        require(pdf_engine)
    result, landed = SetResult(), {}
    texts: dict[str, list[tuple[str, str]]] = {n: [] for n in SET_NAMES}
    with Stage(out, jobs) as stage, _progress(len(variants) + bool(set_names)) as bar:
        work = _Work(stage, pdf_engine)

        def land(unit: str, folder: Path, error: str | None) -> None:
            if error is not None:
                result.failed[unit] = error
            elif unit != "set":
                landed[unit] = stage.land(folder, out / unit, per_variant)
            elif not result.failed:  # the set files only with every variant in them
                landed[unit] = stage.land(folder, out, set_names)
            bar.update(1)

        for ident, render in variants:
            try:
                files = render()
            except UsageError as e:
                raise UsageError(f"variant {ident}: {e}" + _kept(landed, out)) from None
            for name, pairs in texts.items():
                pairs += [(ident, files[name])] if name in files else []
            work.add(ident, stage.write(ident, files), [n for n in files if n.endswith(".tex")] if pdf else [])
            work.step(land, wait=False)
        if set_names and not result.failed:
            try:
                docs = {SET_NAMES[n]: combined(pairs) for n, pairs in texts.items() if pairs}
            except UsageError as e:
                result.failed["set"] = str(e)
            else:
                work.add("set", stage.write("set", {**docs, **extra}), list(docs) if pdf else [], first=True)
        while work:
            work.step(land, wait=True)
    for ident, _ in variants:
        result.written += landed.get(ident, [])
    result.written += landed.get("set", [])
    return result


class _Work:
    """Units waiting for their compiles. At most `jobs` compiles are handed to the pool at a time,
    so that work added later with `first=True` (the long set documents) can still go first."""

    def __init__(self, stage: Stage, engine: str | None):
        self.stage, self.engine = stage, engine
        self.todo: deque = deque()   # (unit, tex path) not yet submitted
        self.running: dict = {}      # future -> unit
        self.units: dict = {}        # unit -> [folder, compiles left, first error]

    def __bool__(self) -> bool:
        return bool(self.units)

    def add(self, unit: str, folder: Path, texs: list[str], first: bool = False) -> None:
        self.units[unit] = [folder, len(texs), None]
        tasks = [(unit, folder / n) for n in texs]
        if first:
            self.todo.extendleft(reversed(tasks))
        else:
            self.todo.extend(tasks)

    def step(self, land: Callable, wait: bool) -> None:
        """Submit what the pool has room for, collect finished compiles, land finished units."""
        self._submit()
        if wait and self.running:
            futures.wait(self.running, return_when=futures.FIRST_COMPLETED)
        for job in [j for j in self.running if j.done()]:
            state = self.units[self.running.pop(job)]
            state[1] -= 1
            try:
                job.result()
            except UsageError as e:
                state[2] = state[2] or str(e)
        for unit, (folder, left, error) in list(self.units.items()):
            if left == 0:
                del self.units[unit]
                land(unit, folder, error)
        self._submit()

    def _submit(self) -> None:
        while self.todo and len(self.running) < self.stage.jobs:
            unit, tex = self.todo.popleft()
            self.running[self.stage.compile(tex, self.engine)] = unit


def _kept(landed: dict, out: Path) -> str:
    return f"; the {len(landed)} variants before it were written to {out}" if landed else ""


def _progress(total: int):
    """A progress bar on a terminal (tqdm), silent when stderr is not one."""
    from tqdm import tqdm
    tty = sys.stderr.isatty()
    # the CLI's stderr escapes control characters; the bar's own \r must reach the terminal
    return tqdm(total=total, desc="worksheets", unit="unit", disable=not tty, leave=False,
                file=sys.__stderr__ if tty else sys.stderr, dynamic_ncols=True)
