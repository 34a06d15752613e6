"""Everyday commands, before/after in one run: the waits a person has at every call.

    python bench/bench_startup.py --base REV [--rounds 7] [--write]

Each command is run in a fresh process on an earlier commit (a temporary git worktree) and on this
checkout, alternating call by call; the figures are median wall seconds (start-up and imports
included, which is most of what these commands cost) with the child's CPU seconds beside them.
`--write` puts the table in bench/README_startup.md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench_classroom import ROOT, _rev, timed

PAGE = ROOT / "bench" / "README_startup.md"
COMMANDS = [["--help"], ["forward"], ["forward", "--step", "output"], ["examples"],
            ["worksheet", "--format", "markdown", "--out", "ws", "--force"],
            ["params", "--d-model", "8", "--heads", "2"], ["verify", "--no-torch"]]


def run(base_rev: str, rounds: int) -> str:
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), base_rev], check=True)
        try:
            for _ in range(rounds):
                for cmd in COMMANDS:
                    for label, tree in (("before", base), ("after", ROOT)):
                        times.setdefault((" ".join(cmd), label), []).append(timed(cmd, tree, Path(tmp)))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
    rows = ["| command | before wall (s) | after wall (s) | after / before | before CPU (s) | after CPU (s) |",
            "|---|---|---|---|---|---|"]
    for cmd in COMMANDS:
        name = " ".join(cmd)
        (bc, bw), (ac, aw) = (tuple(statistics.median(x) for x in zip(*times[(name, k)])) for k in ("before", "after"))
        rows.append(f"| `symblock {name}` | {bw:.3f} | {aw:.3f} | {aw / bw:.2f} | {bc:.3f} | {ac:.3f} |")
    return (f"`python bench/bench_startup.py --base {base_rev} --rounds {rounds}`: {base_rev} against {_rev()}, "
            f"alternating call by call, medians of {rounds}; each call a fresh process, on {os.cpu_count()} cores "
            f"(load average at the end: {os.getloadavg()[0]:.1f}).\n\n" + "\n".join(rows) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="an earlier commit to compare with")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    text = run(args.base, args.rounds)
    print(text)
    if args.write:
        PAGE.write_text("# Everyday commands: start-up and the wait at every call\n\n" + text + NOTE, encoding="utf-8")
    shutil.rmtree(ROOT / "bench" / "__pycache__", ignore_errors=True)


NOTE = """
Most of an everyday command is Python's start-up and the imports of what it runs. A command builds only
its own parser from its module; the others are named in `symblock --help` by their one-line help and
are not imported (each command's options pulled in its own modules: the sheets, the grader, the
presets, the formulas). The target is 0.3 s for an everyday command.
"""


if __name__ == "__main__":
    main()
