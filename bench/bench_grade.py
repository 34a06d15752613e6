"""Grading a class: `symblock grade` on 30 answers files in one process, against the baseline of
one `symblock check --json` process per file (what a shell loop does).

    python bench/bench_grade.py [--write] [-n 30] [--spec pre-ln-causal-gelu]

The class: `worksheet SPEC --variants N` (full preset), each student's answers the NumPy float64
forward of their own variant rounded to 3 places, every third student with the first asked
step doubled (so the mistake catalogue runs and the rest is carried). Prints a Markdown table;
--write puts it into bench/README_grade.md between the bench markers.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).parent


def make_class(root: Path, spec: str, n: int) -> tuple[Path, Path]:
    from symblock.cli import main
    from symblock.exercises import variant
    from symblock.reference import numeric
    set_dir, answers = root / "set", root / "answers"
    assert main(["worksheet", spec, "--variants", str(n), "--out", str(set_dir), "--format", "markdown",
                 "--preset", "full"]) == 0
    man = yaml.safe_load((set_dir / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    answers.mkdir()
    for i, v in enumerate(man["variants"]):
        s = variant.rebuild(v["id"], spec if Path(spec).exists() else None).spec
        T = numeric.forward(s)
        lines = [f"id: {v['id']}", f"name: student{i:02d}", "decimals: 3", "steps:"]
        for k, name in enumerate(man["asked"]):
            m = T[name] * (2 if i % 3 == 0 and k == 0 else 1)
            rows = ["[" + ", ".join("-inf" if np.isneginf(x) else f"{x:.3f}" for x in row) + "]" for row in m]
            lines.append(f"  {name}: [{', '.join(rows)}]")
        (answers / f"student{i:02d}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return set_dir, answers


def time_grade(set_dir: Path, answers: Path, runs: int = 3) -> tuple[float, float]:
    """Median (wall, CPU) seconds of the whole grade command in this process (a fresh run each
    time: the variants are rebuilt). CPU time is what a quiet machine's wall time would be."""
    import contextlib
    import io
    from symblock.cli import main
    times = []
    for k in range(runs):
        t, c = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            main(["grade", str(set_dir), str(answers), "--out", str(answers.parent / f"graded{k}")])
        times.append((time.perf_counter() - t, time.process_time() - c))
    return statistics.median(w for w, _ in times), statistics.median(c for _, c in times)


def time_check_processes(answers: Path, spec: str, k: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds per file of `symblock check SPEC FILE --json` in a new process each."""
    import resource
    files = sorted(answers.glob("*.yaml"))[:k]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    for f in files:
        subprocess.run([sys.executable, "-m", "symblock", "check", spec, str(f), "--json"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (time.perf_counter() - t) / len(files), cpu / len(files)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=30)
    p.add_argument("--spec", default="pre-ln-causal-gelu")
    p.add_argument("--write", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        set_dir, answers = make_class(Path(d), a.spec, a.n)
        (gw, gc), (pw, pc) = time_grade(set_dir, answers), time_check_processes(answers, a.spec)
    load = os.getloadavg()[0]
    table = ("| class | `symblock grade` (one process): wall / CPU | one `check --json` process per file: "
             "wall / CPU for the class |\n|---|---|---|\n"
             f"| {a.n} students, `{a.spec}`, full preset (3 decimals, every third with a planted mistake) | "
             f"{gw:.2f} s / {gc:.2f} s | {pw * a.n:.1f} s / {pc * a.n:.1f} s ({pc:.2f} s CPU per file) |\n\n"
             f"Load average during the run: {load:.1f} on {os.cpu_count()} cores (CPU time is what a quiet "
             "machine's wall time would be).\n")
    print(table)
    if a.write:
        readme = HERE / "README_grade.md"
        text = readme.read_text(encoding="utf-8")
        start, end = "<!-- bench:start -->\n", "<!-- bench:end -->"
        i, j = text.index(start) + len(start), text.index(end)
        readme.write_text(text[:i] + table + text[j:], encoding="utf-8")


if __name__ == "__main__":
    main()
