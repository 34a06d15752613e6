"""Before/after in one run: the same three jobs timed on an earlier commit and on this checkout,
alternating, so a change of the code's structure can be shown to cost no speed.

    python bench/bench_structure.py --base a7b8402 [--rounds 3] [--write]

The jobs: the exact forward of three built-in blocks and the tiny GPT (in-process, median of 5),
`worksheet --difficulty medium --variants 30` (Markdown), and `grade` of that set's 30 answers files.
Each job runs in a fresh process with PYTHONPATH pointing at one tree; the earlier commit is checked
out in a temporary git worktree. `--write` puts the table in bench/README_structure.md.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORWARD = """
import time, statistics, symblock
specs = [symblock.load(n) for n in ("seed-post-ln", "pre-ln-causal-gelu", "rmsnorm-swiglu", "tiny-gpt")]
runs = []
for _ in range(5):
    t = time.perf_counter()
    for s in specs:
        symblock.forward(s)
    runs.append(time.perf_counter() - t)
print(statistics.median(runs))
"""


def timed(cmd: list[str], tree: Path, cwd: Path) -> float:
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed in {tree}:\n{out.stderr[-2000:]}")
    return float(out.stdout.strip()) if cmd[1] == "-c" else took


def jobs(tree: Path, work: Path) -> dict[str, float]:
    py = sys.executable
    work.mkdir(parents=True, exist_ok=True)
    out = {"forward (4 specs, in-process)": timed([py, "-c", FORWARD], tree, work)}
    set_dir, answers = work / "set", work / "answers"
    out["worksheet --variants 30 (medium, md)"] = timed(
        [py, "-m", "symblock", "worksheet", "--difficulty", "medium", "--variants", "30", "--format", "markdown",
         "--out", str(set_dir), "--force"], tree, work)
    answers.mkdir(exist_ok=True)
    for i, f in enumerate(sorted((set_dir / "students").glob("*/answers.yaml"))):
        (answers / f"s{i:02d}.yaml").write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    out["grade 30 files"] = timed([py, "-m", "symblock", "grade", str(set_dir), str(answers), "--out",
                                   str(work / "graded"), "--force"], tree, work)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="a7b8402", help="the earlier commit (default a7b8402)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.base], check=True)
        try:
            times: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
            for r in range(args.rounds):
                for label, tree in (("before", base), ("after", ROOT)):
                    for job, t in jobs(tree, Path(tmp) / f"{label}{r}").items():
                        times[label].setdefault(job, []).append(t)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
    rows = ["| job | before (s) | after (s) | after / before |", "|---|---|---|---|"]
    for job in times["before"]:
        b, a = statistics.median(times["before"][job]), statistics.median(times["after"][job])
        rows.append(f"| {job} | {b:.2f} | {a:.2f} | {a / b:.2f} |")
    table = "\n".join(rows)
    print(table)
    if args.write:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        (ROOT / "bench" / "README_structure.md").write_text(
            "# Structure bench: before and after, in one run\n\n"
            f"`python bench/bench_structure.py --base {args.base}`: the earlier commit {args.base} against "
            f"{rev}, alternating, {args.rounds} rounds, medians (wall seconds on this 2-core machine; "
            "each job in a fresh process, so start-up is included).\n\n" + table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
