"""Grade a class: every answers file of ANSWERS_DIR against its own variant of the set SET_DIR
(what `worksheet --variants N` wrote, with its manifest.yaml). Writes gradebook.csv (in the layout
Canvas's and Moodle's grade import read), summary.md, summary.html, plots/*.png and
feedback/<name>.md into --out (default ANSWERS_DIR/graded), never over existing files without
--force. Exit 0 when every file was graded and none is flagged, 1 when some could not be graded or
are flagged (another variant fits a file better, or two files share an ID, a name, their answers, a
student ID or an email, the last two also where a file was not graded: each is named, with the reason, in
summary.md, gradebook.csv and on the terminal), 2 on bad input.

The argparse glue over `symblock.grading.gradebook` and `symblock.grading.report`.
"""
from __future__ import annotations

EXAMPLES = """\
examples:
  symblock worksheet class.yaml --variants 30 --out set   # the set
  symblock grade set answers          # answers/*.yaml, *.json, *.csv
  symblock grade set answers --carried 1/2 --lang zh --out graded
  symblock grade set answers --jobs 2      # two processes: the same files, sooner
  symblock grade set answers --roster roster.csv   # file or name, student_id, email, section"""  # the --help epilog

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    from symblock.commands.arguments import nonneg
    p.add_argument("set_dir", metavar="SET_DIR", help="the set: a folder written by `worksheet --variants N`")
    p.add_argument("answers_dir", metavar="ANSWERS_DIR", help="a folder of answers files (YAML, JSON, CSV), "
                                                              "each with id: and name:")
    p.add_argument("--out", metavar="DIR", help="where to write (default ANSWERS_DIR/graded)")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language of summary and feedback")
    p.add_argument("--carried", default="1", metavar="CREDIT",
                   help="credit of an entry right from the student's own wrong earlier answer "
                        "(error carried forward): 0..1 or a percentage (default 1: full credit)")
    p.add_argument("--rounded", default="9/10", metavar="CREDIT",
                   help="credit of an entry right but rounded to fewer places than asked (default 9/10)")
    p.add_argument("--slip", default="1/2", metavar="CREDIT",
                   help="credit of a rounding slip, one unit off in the last place (default 1/2)")
    p.add_argument("--roster", metavar="FILE", help="a CSV of file or name, student_id, email (and section) "
                                                      "for the gradebook's LMS columns")
    p.add_argument("--jobs", type=nonneg, default=1, metavar="N",
                   help="grade in N processes at once, each building its share of the set's variants "
                        "(default 1; 0: the number of cores; at most 64); the output is the same")
    p.add_argument("--force", action="store_true", help="overwrite existing output files, and remove the feedback (and plots) an earlier grading wrote there that this one does not")
    p.add_argument("--max-cost", type=int, metavar="N", help="raise the exact engine's size limit")


def run(args) -> int:
    from symblock.grading import manifest, report
    from symblock.grading.report import one_line
    manifest.locate(args.set_dir)   # a folder that holds no set is said first, not its --out
    out = Path(args.out) if args.out else Path(args.answers_dir) / "graded"
    if out.resolve() == Path(args.answers_dir).resolve():   # its gradebook would be read as an answers file next time
        from symblock.errors import UsageError
        raise UsageError(f"--out: {out} is the answers folder itself; write elsewhere (the default is "
                         f"{Path(args.answers_dir) / 'graded'})")
    _no_links(out, ("feedback", report.PLOTS))
    if not args.force:   # refuse before the work (write_files checks every file again)
        from symblock.errors import UsageError
        clash = [out / name for name in ("gradebook.csv", "summary.md", "summary.html", report.PLOTS, "feedback")
                 if (out / name).exists()]
        if clash:
            raise UsageError(f"--out: {clash[0]} already exists" + (f" (and {len(clash) - 1} more)" if len(clash) > 1
                             else "") + "; use --force to overwrite, or another directory")
    people, jobs, drawn = _roster(args), _jobs(getattr(args, "jobs", 1)), report.available()
    plotter = Plotter.start() if jobs > 1 and drawn and _can_fork() else None
    try:
        def marked(cls) -> None:   # with --jobs, the plots are drawn while the files are flagged and written
            if plotter and cls.graded:
                plotter.draw(report.plot_data(cls))
        cls, credit = grade(args, people, marked)
        files = documents(cls, credit, args.lang, drawn, plotter if cls.graded else None)
    finally:
        if plotter:
            plotter.close()
    _, removed = write(out, files, args.force)
    print(report.summary_text(cls), end="")
    for file, name, why in report.flagged(cls):
        print(one_line(f"flagged: {file} ({name}): {'; '.join(why)}"))
    _unknown_keys(cls)   # the terminal's words are English (--lang: the summary and feedback)
    if people is not None:
        _roster_gaps(args.roster, people, cls)
    else:
        _no_student_ids(cls)
    if not drawn:
        print("no plots: matplotlib is not installed (pip install 'symblock[plot]')")
    print(f"wrote {out / 'gradebook.csv'}, {out / 'summary.md'} (and .html) and {len(cls.graded)} feedback "
          f"files in {out / 'feedback'}")
    if removed:
        shown = ", ".join(p.name for p in removed[:5]) + (" …" if len(removed) > 5 else "")
        print(f"removed {len(removed)} file{'s' * (len(removed) != 1)} an earlier grading left in {out} that this "
              f"one does not write: {shown}")
    return 1 if cls.rejected or any(g.flags for g in cls.graded) else 0


def _unknown_keys(cls) -> None:
    """Name each key kept as student data that no roster column takes, once, with the files that
    have it (as `check` names it for one file): a misspelt key is not silent in a class either."""
    from symblock.grading.answers import TOP_KEYS
    from symblock.grading.report import one_line
    from symblock.grading.students import unknown_key_note, unknown_keys
    files: dict[tuple[str, str], list[str]] = {}
    for g in cls.graded:
        for key in unknown_keys(g.result.student, TOP_KEYS):
            files.setdefault(key, []).append(g.file)
    for (key, near), names in files.items():
        shown = ", ".join(names[:5]) + (f" (and {len(names) - 5} more)" if len(names) > 5 else "")
        print(one_line(unknown_key_note(shown, key, near, TOP_KEYS)))


def _roster(args) -> dict | None:
    from symblock.grading import students
    return students.read(args.roster) if args.roster else None


def _roster_gaps(path: str, people: dict, cls) -> None:
    """Say which roster rows no file matched and which files no row did (a misspelt name would
    otherwise leave a student's LMS columns empty without a word)."""
    from symblock.grading import students
    from symblock.grading.report import one_line
    everyone = [*cls.graded, *cls.rejected]
    rows, alone = students.unmatched(people, [(g.file, g.name) for g in everyone])
    known = {g.file for g in everyone if g.student.get("student_id") or g.student.get("email")}
    alone = [f for f in alone if f not in known]   # a file that carries its own student_id or email is found
    for names, one, many in ((rows, "row matches no answers file", "rows match no answers file"),
                             (alone, "answers file has no row", "answers files have no row")):
        if names:
            shown = ", ".join(names[:8]) + (f" (and {len(names) - 8} more)" if len(names) > 8 else "")
            print(one_line(f"{path}: {len(names)} {one if len(names) == 1 else many}: {shown}"))
    from symblock.errors import close_matches
    name_of, row_of = {g.file: g.name for g in everyone}, {r.casefold(): r for r in rows}
    for file in alone:   # a row and a file that nearly match: most likely one person, misspelt on one side
        near = close_matches(name_of[file].casefold(), row_of) or close_matches(Path(file).stem.casefold(), row_of)
        if near:
            print(one_line(f"{path}: did you mean the row {row_of[near[0]]} for {file} ({name_of[file]})? Its "
                           "gradebook row has no student ID until the names agree"))


def _no_student_ids(cls) -> None:
    """Without --roster, say how many gradebook rows carry neither a student ID nor an email: an
    LMS import matches a row by them (SIS User ID, SIS Login ID), never by the name, so those rows
    would be left out without a word. Nothing when every row has one."""
    from symblock.grading.report import one_line
    rows = [*cls.graded, *cls.rejected]
    bare = [g for g in rows if not (g.student.get("student_id") or g.student.get("email"))]
    if bare:
        verb = "has" if len(bare) == 1 else "have"
        print(one_line(f"note: {len(bare)} of {len(rows)} gradebook rows {verb} no student ID or email (the SIS "
                       "User ID and SIS Login ID an LMS import matches a row by); --roster FILE (a CSV of file or "
                       "name, student_id, email) fills them"))


def _jobs(n: int) -> int:
    from symblock.errors import UsageError
    from symblock.sheets.worksheet import default_jobs
    if n > 64:
        raise UsageError(f"--jobs: expected at most 64, got {n}")
    return n or default_jobs()


def grade(args, people: dict | None = None, marked=None):
    """(the graded class, the credit) of SET_DIR's variants and ANSWERS_DIR's files; nothing written.
    `people`: the roster already read (else read from --roster); `marked`: gradebook.grade's."""
    from symblock.grading import gradebook, manifest
    from symblock.grading.points import Credit, parse_credit
    credit = Credit(parse_credit(args.carried, "--carried"), parse_credit(args.rounded, "--rounded"),
                    parse_credit(args.slip, "--slip"))
    jobs = _jobs(getattr(args, "jobs", 1))
    man = manifest.read(args.set_dir, entries=jobs < 2)   # --jobs: each process checks its variants' entries
    source = str(manifest.find(Path(args.set_dir)))
    people = people if people is not None else _roster(args)
    marks = None if jobs < 2 else lambda read, pool, how: in_processes(
        read, pool, how, jobs, lambda ids: manifest.check_entries(man, source, ids))
    files = gradebook.answer_files(Path(args.answers_dir))
    if not files:   # most likely the wrong folder: an empty gradebook would look like a graded class
        from symblock.errors import UsageError
        raise UsageError(f"{args.answers_dir}: no answers files in it (expected the students' "
                         f"{', '.join(gradebook.SUFFIXES)} files)")
    return gradebook.grade(man, files, credit, roster=people, marks=marks, marked=marked), credit


def documents(cls, credit, lang: str, drawn: bool, plotter: "Plotter | None" = None) -> dict[str, str | bytes]:
    """The gradebook, summary (Markdown, HTML), plots (`drawn`) and feedback files, by relative name.
    `plotter`: the process drawing the plots meanwhile (`Plotter`), else they are drawn here."""
    from symblock.grading import gradebook, report
    from symblock.sheets.render import environment
    files: dict[str, str | bytes] = {
        "gradebook.csv": gradebook.gradebook_csv(cls, lang), "summary.md": report.summary_md(cls, credit, lang, drawn),
        "summary.html": environment("html").get_template("summary.html.j2").render(
            **report.html_context(cls, credit, lang, drawn))}
    names = gradebook.feedback_files(cls)   # the names the gradebook's feedback column gives
    feedback: dict[str, str | bytes] = {names[g.file]: report.feedback_md(g, cls, credit, lang) for g in cls.graded}
    plots = plotter.pngs() if plotter else report.pngs(cls) if drawn and cls.graded else {}
    files.update({f"{report.PLOTS}/{k}": v for k, v in plots.items()})
    return {**files, **feedback}


class Plotter:
    """`grade --jobs`: the plots drawn in a forked process that imports matplotlib at once, on the
    core that idles while this one reads the manifest, and draws as soon as the scores are in,
    while this one flags the files and writes the text."""

    def __init__(self, conn, proc):
        self.conn, self.proc = conn, proc

    @classmethod
    def start(cls) -> "Plotter":
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_plot, args=(child, parent), daemon=True)
        proc.start()
        child.close()
        return cls(parent, proc)

    def draw(self, data: tuple) -> None:
        self.conn.send(data)

    def pngs(self) -> dict[str, bytes]:
        return _receive(self.conn)

    def close(self) -> None:
        self.conn.close()   # a plotter still waiting for data reads the end and stops
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.terminate()


def _plot(conn, other) -> None:
    from symblock.grading import report
    other.close()   # this process's copy of the parent's end: else closing that end ends nothing
    try:
        report.warm()
        data = conn.recv()
        conn.send(("ok", {name: report.png(data, name) for name in report.PNGS}))
    except EOFError:   # nothing to draw: the grading stopped first
        pass
    except BaseException as e:   # raised again by the parent
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def write(out: Path, files: dict[str, str | bytes], force: bool) -> tuple[list[Path], list[Path]]:
    """(the files written, those of an earlier grading that `force` removed: `_left_over`)."""
    from symblock.sheets.worksheet import write_files
    try:
        written = write_files(out, files, force=force)
        return written, _left_over(out, written) if force else []
    except OSError as e:  # /proc/..., /sys/..., a read-only disk: the folder, not a bug
        from symblock.errors import UsageError
        raise UsageError(f"--out {out}: cannot write there: {e.strerror or e}") from None


def _left_over(out: Path, written: list[Path]) -> list[Path]:
    """Remove what an earlier `grade` wrote into `out` that this one did not: the feedback of a
    student no longer in the class (mailed out with the rest, it would be out of date), a plot not
    drawn now. Only feedback/*.md and the plots' names; nothing else in `out` is touched."""
    import os
    from symblock.grading import report
    from symblock.sheets.worksheet import remove_files
    kept = {os.path.abspath(p) for p in written}
    feedback = out / "feedback"
    names = sorted(feedback.glob("*.md")) + [out / report.PLOTS / n for n in report.PNGS]
    return remove_files(out, [p for p in names if (p.is_file() or p.is_symlink()) and os.path.abspath(p) not in kept])


def _no_links(out: Path, folders) -> None:
    """Refuse an --out (or a folder in it) that is a symbolic link: one planted in a class folder
    (`graded` -> elsewhere) would send the gradebook and feedback outside; nothing is written."""
    from symblock.errors import UsageError
    for path in (out, *(out / f for f in folders)):
        if path.is_symlink():
            raise UsageError(f"--out: {path} is a symbolic link; refusing to write through it "
                             "(remove the link, or give the real folder with --out)")


# grade --jobs N: N forked processes, each owning a contiguous share of the set's variants. A worker
# builds its variants (the costly part: each trace drawn again), marks the files that name them, sends
# the outcomes back, then the rounded values the identity check asks of its variants at the entries
# every file answered. The parent puts the outcomes back in the files' order and flags as one process
# does, so the gradebook is the same byte for byte; a variant is built in one process only.


def _can_fork() -> bool:
    import multiprocessing
    return "fork" in multiprocessing.get_all_start_methods()


def in_processes(read: list, pool, how, jobs: int, entries) -> tuple[list, object]:
    """gradebook.grade's `marks` in `jobs` processes (see above); in this one where it cannot fork.
    `entries(ids)`: checks the stored entries of those variants (None: all), before they are marked."""
    import multiprocessing
    from symblock.grading import gradebook
    from symblock.grading.students import Truths
    if not _can_fork() or len(pool.seeds) < 2:
        entries(None)
        return gradebook.mark_all(read, pool, how)
    ids = list(pool.seeds)
    jobs = min(jobs, len(ids))
    share = [ids[k * len(ids) // jobs:(k + 1) * len(ids) // jobs] for k in range(jobs)]
    owner = {i: k for k, part in enumerate(share) for i in part}
    todo: list[list[int]] = [[] for _ in share]
    outcomes: list = [None] * len(read)
    for n, r in enumerate(read):
        if isinstance(r, gradebook.Rejected):
            outcomes[n] = (r, None)
        else:
            todo[owner[r[2]]].append(n)
    ctx = multiprocessing.get_context("fork")
    pipes, procs = [], []
    for k, part in enumerate(share):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, [(n, read[n]) for n in todo[k]], part, pool, how, entries),
                           daemon=True)
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)
    try:
        for conn in pipes:
            for n, outcome in _receive(conn):
                outcomes[n] = outcome
        keys = sorted({(e[0], e[1], e[2], e[3]) for g, es in outcomes if isinstance(g, gradebook.Graded)
                       for e in es if e[3] is not None})   # no places: unreadable or −∞, nothing to fit
        truths = Truths(pool)
        for conn in pipes:
            conn.send(keys)
        for conn in pipes:
            truths.cache.update(_receive(conn))
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
    return outcomes, truths


def _worker(conn, files: list, part: list, pool, how, entries) -> None:
    """One process of `in_processes`: check the entries of the variants `part`, mark `files`
    ((index, read) pairs), then answer the keys."""
    from symblock.errors import SpecError, UsageError
    from symblock.grading import gradebook
    from symblock.grading.students import Truths
    try:
        entries(set(part))
        conn.send(("ok", [(n, gradebook.mark_one(r, pool, how)) for n, r in files]))
        keys = conn.recv()
        truths = Truths(pool)
        conn.send(("ok", {(i, *k): truths.rounded(i, *k) for i in part for k in keys}))
    except BaseException as e:   # raised again by the parent, as one process would raise it
        conn.send(("error", e if isinstance(e, (SpecError, UsageError)) else f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _receive(conn):
    try:
        status, payload = conn.recv()
    except EOFError:
        raise RuntimeError("a grading process ended without its results") from None
    if status != "ok":
        raise payload if isinstance(payload, Exception) else RuntimeError(f"a grading process failed: {payload}")
    return payload
