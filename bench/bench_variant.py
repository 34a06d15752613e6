"""Time `worksheet --difficulty medium --variants 30 --format markdown` in two checkouts, rounds
interleaved so that both see the same machine load, and count the exercise choices per variant.

    python bench/bench_variant.py --before /path/to/other/checkout [--rounds 3] [--n 30]

Each run is a fresh process (`python -m symblock worksheet ...`) with PYTHONPATH set to the
checkout; the figures are the median wall and CPU time (CPU: what a quiet machine's wall time
would be). Results: bench/README_variant.md.
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

HERE = Path(__file__).resolve().parents[1]
COUNT = """\
import collections, sys
from symblock.exercises import presets
from symblock import cli
seen = collections.Counter()
real = presets.choose
def counting(trace, *a, **k):
    seen[trace.spec.seed] += 1
    return real(trace, *a, **k)
presets.choose = counting
assert cli.main(sys.argv[1:]) == 0
print("choices per variant:", sorted(collections.Counter(seen.values()).items()))
"""


def command(n: int, out: str) -> list[str]:
    return ["worksheet", "--difficulty", "medium", "--variants", str(n), "--out", out, "--format", "markdown"]


def run(checkout: Path, n: int, code: str | None = None) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-c", code, *command(n, tmp + "/set")] if code else \
            [sys.executable, "-m", "symblock", *command(n, tmp + "/set")]
        t0, c0 = time.perf_counter(), os.times()
        done = subprocess.run(argv, env=env, cwd=checkout, capture_output=True, text=True, check=True)
        c1 = os.times()
        cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
        return time.perf_counter() - t0, cpu, done.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", type=Path, required=True, help="the other checkout")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--n", type=int, default=30)
    args = p.parse_args()
    sides = {"before": args.before.resolve(), "after": HERE}
    times: dict[str, list[float]] = {k: [] for k in sides}
    cpus: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(args.rounds):
        for name, checkout in sides.items():
            wall, cpu, _ = run(checkout, args.n)
            times[name].append(wall)
            cpus[name].append(cpu)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, checkout in sides.items():
        counted = run(checkout, args.n, COUNT)[2].strip().splitlines()[-1]
        print(f"{name:<7} wall median {statistics.median(times[name]):6.2f} s, CPU median "
              f"{statistics.median(cpus[name]):6.2f} s  (CPU {', '.join(f'{t:.2f}' for t in cpus[name])})  {counted}")


if __name__ == "__main__":
    main()
