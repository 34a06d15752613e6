"""The classroom's waits, before/after in one run: what a set costs to write and to grade, and what
`--jobs` buys on this machine's cores.

    python bench/bench_classroom.py --base a7b8402 [--rounds 5] [--pdf 300] [--filled 300] [--write]  # no slower
    python bench/bench_classroom.py --jobs 2 [--students 300] [--write]         # --jobs

`--base`: `worksheet --difficulty medium --variants 30 --format markdown` and `grade` of its 30 blank
answers files, timed on an earlier commit (a temporary git worktree) and on this checkout, alternating
round by round, each in a fresh process (`--pdf N`: and a set of N variants with every PDF, `--jobs 2`,
its files compared byte for byte; `--filled N`: and `grade` of a medium set of N variants, its answers
filled in as for `--jobs`, in one process and with `--jobs 2`, the gradebooks compared, and `check` of one
file handed in there under another variant's ID); the figure is the child's CPU time (user + sys), which a
machine shared with other work disturbs far less than wall time, with the wall time beside it.

`--jobs J`: on this checkout only, `grade` of a medium set's N answers files (filled in with the key's
own numbers, one wrong entry in three files) with `--jobs 1` and `--jobs J`, and the set with every PDF
(`worksheet --difficulty medium --variants N --pdf`) with `--jobs 1` and `--jobs J`, alternating; wall
seconds, since parallel work is what wall time shows; then two everyday commands (median of 5). The outputs of each pair are compared byte for byte.
`--write` puts the tables in bench/README_classroom.md (each mode its own section).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "bench" / "README_classroom.md"


def timed(args: list[str], tree: Path, cwd: Path) -> tuple[float, float]:
    """(CPU seconds of the child, wall seconds) of `python -m symblock ARGS` on `tree`."""
    env = {"PYTHONPATH": str(tree), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "SOURCE_DATE_EPOCH": "0", "HOME": os.environ.get("HOME", "/tmp")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "symblock", *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        sys.exit(f"symblock {' '.join(args)} failed in {tree}:\n{out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def blank_class(set_dir: Path, answers: Path) -> None:
    answers.mkdir(exist_ok=True)
    for i, f in enumerate(sorted((set_dir / "students").glob("*/answers.yaml"))):
        (answers / f"s{i:03d}.yaml").write_text(f.read_text(encoding="utf-8"), encoding="utf-8")


def structure_jobs(tree: Path, work: Path, pdf: int = 0, filled: Path | None = None) -> dict[str, tuple[float, float]]:
    """The jobs of the no-slower table on `tree`; `filled`: a folder holding a set and its filled-in
    answers (`filled_class`), graded too."""
    work.mkdir(parents=True, exist_ok=True)
    out = {"worksheet --variants 30 (medium, md)": timed(
        ["worksheet", "--difficulty", "medium", "--variants", "30", "--format", "markdown", "--out", "set",
         "--force"], tree, work)}
    blank_class(work / "set", work / "answers")
    out["grade 30 files"] = timed(["grade", "set", "answers", "--out", "graded", "--force"], tree, work)
    if filled is not None:
        n = len(list((filled / "answers").glob("*.yaml")))
        out[f"grade {n} filled-in files"] = timed(["grade", str(filled / "set"), str(filled / "answers"), "--out",
                                                    str(work / "graded-filled"), "--force"], tree, work)
        swap = next((filled / "set" / "students").glob("*/swap.yaml"))
        out["check of a swapped file inside that set"] = timed(["check", str(swap)], tree, work)
        out[f"grade {n} filled-in files --jobs 2 (wall counts)"] = timed(
            ["grade", str(filled / "set"), str(filled / "answers"), "--out", str(work / "graded-jobs"), "--force",
             "--jobs", "2"], tree, work)
    if pdf:
        out[f"worksheet --variants {pdf} --pdf --jobs 2 (medium)"] = timed(
            ["worksheet", "--difficulty", "medium", "--variants", str(pdf), "--pdf", "--jobs", "2", "--out", "pdf",
             "--force"], tree, work)
    return out


def filled_class(work: Path, students: int) -> Path:
    """A medium set of `students` variants (written by this checkout) and its filled-in answers."""
    work.mkdir(parents=True)
    timed(["worksheet", "--difficulty", "medium", "--variants", str(students), "--format", "markdown", "--jobs", "2",
           "--out", "set"], ROOT, work)
    fill(work / "set", work / "answers", students)
    first, second = sorted((work / "answers").glob("*.yaml"))[1:3]   # a file handed in under another ID
    ident = second.read_text(encoding="utf-8").splitlines()[0].split(": ")[1]
    text = first.read_text(encoding="utf-8").splitlines()
    (work / "set" / "students" / ident / "swap.yaml").write_text("\n".join([f"id: {ident}", *text[1:]]) + "\n",
                                                                 encoding="utf-8")
    return work


def compare_base(base_rev: str, rounds: int, pdf: int = 0, students: int = 0) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), base_rev], check=True)
        times: dict[str, dict[str, list]] = {"before": {}, "after": {}}
        filled = filled_class(Path(tmp) / "filled", students) if students else None
        try:
            for r in range(rounds):
                for label, tree in (("before", base), ("after", ROOT)):
                    for job, t in structure_jobs(tree, Path(tmp) / f"{label}{r}", pdf, filled).items():
                        times[label].setdefault(job, []).append(t)
            same = "" if not filled else ("The graded filled-in files are the same bytes before and after: " + (
                "yes." if same_tree(Path(tmp) / "before0" / "graded-filled", Path(tmp) / "after0" / "graded-filled")
                else "NO.") + "\n")
            same += "" if not pdf else ("The PDF set's files are the same bytes before and after: " + (
                "yes." if same_tree(Path(tmp) / "before0" / "pdf", Path(tmp) / "after0" / "pdf") else "NO."))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
    rows = ["| job | before CPU (s) | after CPU (s) | after / before | before wall (s) | after wall (s) |",
            "|---|---|---|---|---|---|"]
    for job in times["before"]:
        (bc, bw), (ac, aw) = (tuple(statistics.median(x) for x in zip(*times[k][job])) for k in ("before", "after"))
        rows.append(f"| {job} | {bc:.2f} | {ac:.2f} | {ac / bc:.2f} | {bw:.2f} | {aw:.2f} |")
    return (f"`python bench/bench_classroom.py --base {base_rev} --rounds {rounds}"
            f"{f' --pdf {pdf}' if pdf else ''}{f' --filled {students}' if students else ''}`: {base_rev} against "
            f"{_rev()}, alternating, {rounds} rounds, medians; each job a fresh process (start-up included).\n\n"
            + "\n".join(rows) + "\n" + ("\n" + same + "\n" if same else ""))


def _rev() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def fill(set_dir: Path, answers: Path, n: int) -> None:
    """Answers files with the key's numbers (each variant's instructor key, read from the manifest's
    stored answers at 3 places), one entry wrong in every third file, so the marking walks its errors."""
    sys.path.insert(0, str(ROOT))
    from symblock.grading import manifest
    from symblock.exercises.variant import entry
    man = manifest.read(set_dir)
    answers.mkdir(exist_ok=True)
    for k, v in enumerate(man["variants"][:n]):
        lines = [f"id: {v['id']}", f"name: student {k:03d}", "decimals: 3", "steps:"]
        for step, text in v["exercise"]["answers"].items():
            rows = [[f"{float(entry(e, 'bench', step)):.3f}" for e in r.split(",")] for r in text.split(";")]
            if k % 3 == 0 and step == v["exercise"]["ask"][0]:
                rows[0][0] = "7.125"
            lines.append(f"  {step}: [" + ", ".join("[" + ", ".join(r) + "]" for r in rows) + "]")
        (answers / f"s{k:03d}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    _, bad, odd = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not bad and not odd and all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def jobs_run(jobs: int, students: int, rounds: int) -> str:
    rows = ["| job | serial (s) | --jobs " + str(jobs) + " (s) | serial / jobs | same bytes |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        timed(["worksheet", "--difficulty", "medium", "--variants", str(students), "--format", "markdown",
               "--out", "set"], ROOT, work)
        fill(work / "set", work / "answers", students)
        results: dict[str, dict[str, list[float]]] = {}
        for r in range(rounds):
            for label, extra in (("serial", ["--jobs", "1"]), ("jobs", ["--jobs", str(jobs)])):
                g = f"g-{label}"
                _, wall = timed(["grade", "set", "answers", "--out", g, "--force", *extra], ROOT, work)
                results.setdefault(f"grade {students} students", {}).setdefault(label, []).append(wall)
                p = f"pdf-{label}"
                _, wall = timed(["worksheet", "--difficulty", "medium", "--variants", str(students), "--pdf",
                                 "--out", p, "--force", *extra], ROOT, work)
                results.setdefault(f"worksheet --variants {students} --pdf", {}).setdefault(label, []).append(wall)
        same = {f"grade {students} students": same_tree(work / "g-serial", work / "g-jobs"),
                f"worksheet --variants {students} --pdf": same_tree(work / "pdf-serial", work / "pdf-jobs")}
        for cmd in (["forward", "seed-post-ln"], ["worksheet", "--format", "markdown", "--out", "one", "--force"]):
            walls = sorted(timed(cmd, ROOT, work)[1] for _ in range(5))
            rows.append(f"| symblock {' '.join(cmd)} (everyday) | {walls[2]:.2f} | | | |")
    for job, t in results.items():
        s, j = statistics.median(t["serial"]), statistics.median(t["jobs"])
        rows.append(f"| {job} | {s:.1f} | {j:.1f} | {s / j:.2f} | {'yes' if same[job] else 'NO'} |")
    return (f"`python bench/bench_classroom.py --jobs {jobs} --students {students} --rounds {rounds}` on {_rev()}: "
            f"serial and --jobs {jobs} alternating, {rounds} rounds, median wall seconds on {os.cpu_count()} cores "
            f"(load average at the end: {os.getloadavg()[0]:.1f}).\n\n" + "\n".join(rows) + "\n")


def write(section: str, text: str) -> None:
    page = PAGE.read_text(encoding="utf-8") if PAGE.exists() else "# Classroom bench: writing and grading a set\n"
    head = f"\n## {section}\n\n"
    if head in page:
        page = re.sub(re.escape(head) + r".*?(?=\n## |\Z)", lambda m: head + text, page, flags=re.S)
    else:
        page += head + text
    PAGE.write_text(page, encoding="utf-8")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", help="an earlier commit to compare with (the no-slower table)")
    p.add_argument("--jobs", type=int, help="compare serial with --jobs J (the --jobs table)")
    p.add_argument("--students", type=int, default=300)
    p.add_argument("--pdf", type=int, default=0, metavar="N",
                   help="with --base: also time a set of N variants with every PDF, --jobs 2")
    p.add_argument("--filled", type=int, default=0, metavar="N",
                   help="with --base: also grade a medium set of N variants, its answers filled in")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    if args.base:
        text = compare_base(args.base, args.rounds, args.pdf, args.filled)
        print(text)
        if args.write:
            write("No slower: a set of 30 written and graded, before and after" + (
                f"; a class of {args.filled} filled in" if args.filled else ""), text)
    if args.jobs:
        text = jobs_run(args.jobs, args.students, args.rounds)
        print(text)
        if args.write:
            write(f"--jobs: {args.students} students", text)
    shutil.rmtree(ROOT / "bench" / "__pycache__", ignore_errors=True)


if __name__ == "__main__":
    main()
