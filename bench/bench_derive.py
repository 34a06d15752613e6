"""Time `symblock derive`: one step, the whole tiny block, and the facts, as a user runs them.

    python bench/bench_derive.py                          # this checkout
    python bench/bench_derive.py --baseline DIR --write   # before/after, write bench/README_derive.md

Each figure is the median wall time of fresh `python -m symblock derive …` processes (imports
included: a user waits for them), this checkout and DIR (a checkout of the code before, its
`symblock` first on PYTHONPATH) interleaved so that a burst of load hits both alike.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDS = [["derive", "--step", "norm1.std"], ["derive", "--step", "attn.h0.weights"], ["derive"],
            ["derive", "--facts"], ["derive", "--facts", "--prove"], ["forward"]]
NEW = {("derive", "--facts", "--prove")}   # options the code before did not have: timed after only


def once(root: Path, args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(root))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "symblock", *args], env=env, cwd=root, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=Path, help="a checkout of the code before")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--write", action="store_true", help="write bench/README_derive.md")
    a = p.parse_args()
    load = os.getloadavg()[0]
    roots = {"after": HERE.parent} | ({"before": a.baseline} if a.baseline else {})
    rows = []
    for args in COMMANDS:
        times = {k: [] for k in roots}
        for _ in range(a.runs):
            for k, root in roots.items():
                if k == "after" or tuple(args) not in NEW:
                    times[k].append(once(root, args))
        rows.append((" ".join(args), {k: statistics.median(v) if v else None for k, v in times.items()}))
    cols = [k for k in ("before", "after") if k in roots]
    lines = ["| command | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    lines += [f"| `symblock {cmd}` | " + " | ".join("–" if t[k] is None else f"{t[k]:.2f} s" for k in cols) + " |"
              for cmd, t in rows]
    table = "\n".join(lines)
    print(table)
    if a.write:
        (HERE / "README_derive.md").write_text(
            "# `symblock derive`: wall time per command\n\n"
            f"`python bench/bench_derive.py --baseline DIR --write`: median of {a.runs} fresh processes "
            "each, before and after interleaved in the same run, on this 2-core machine (imports "
            f"included). Load average at the start: {load:.1f}.\n\n" + table + "\n\n"
            "What changed: the facts are proved, and the built-in tiny block derived, once per release "
            "(`python -m symblock.calculus.proved` writes `symblock/calculus/proved.json`); `derive --facts` "
            "and `derive [--step S]` of the tiny block print them without importing SymPy. Nothing is "
            "taken on trust: `tests/calculus/test_proved.py` proves every fact and derives the block again "
            "on each test run and fails when the store differs, and `derive --facts --prove` proves them "
            "now (the figure above). A spec of one's own (`derive SPEC`) is derived live as before: SymPy's "
            "import (~0.5 s) and `sympy.simplify` are its floor.\n", encoding="utf-8")

if __name__ == "__main__":
    main()
