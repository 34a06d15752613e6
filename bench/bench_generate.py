"""Time the exercise generator: 100 valid variants per difficulty preset, checks included.

    python bench/bench_generate.py                          # print the table
    python bench/bench_generate.py --baseline DIR --write   # before/after, write bench/README_generate.md

Each variant is `generate.variant` for one seed (seeds 1..N): rows of X picked from their family,
attention weights fitted in batches (exact integers), exact forward(s), W_1 refitted for
relu_mixed, every constraint checked on the exact trace. Each measurement is a fresh process
(imports not timed); DIR is a checkout of the code before (its `symblock` first on PYTHONPATH),
run interleaved with this one, preset by preset, so that a burst of load hits both alike.
The machine is shared, so CPU time (the process's user + system) is given beside wall time.
The forward column, measured in the same process, is the exact forward alone of the accepted
variants (what one draw costs at the least). Target: 100 variants of every preset in
under 3 s, at most 50 draws per variant on average. "draws" counts candidate blocks.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

N = 100
QUIET_BEFORE = {"easy": 1.89, "medium": 1.91, "hard": 3.36}  # s per 100 variants, quiet machine, commit 15bbb9b
QUIET_COMMIT = "15bbb9b"
HERE = Path(__file__).resolve().parent


def bench(difficulty: str, n: int = N) -> dict:
    from symblock.engine import block
    from symblock.exercises import generate
    generate.variant({"random": {"seed": 10**6, "difficulty": difficulty}}, "warm-up")  # numpy etc.
    t, c = time.perf_counter(), time.process_time()
    draws, forwards, rej, redraws, specs = 0, 0, Counter(), Counter(), []
    for seed in range(1, n + 1):
        v = generate.variant({"random": {"seed": seed, "difficulty": difficulty}}, "bench")
        draws += v.draws
        forwards += v.forwards
        rej.update(v.rejections)
        redraws.update(v.redraws)
        specs.append(v.spec)
    secs, cpu = time.perf_counter() - t, time.process_time() - c
    t = time.process_time()
    for s in specs:
        block.forward(s)
    return {"secs": secs, "cpu": cpu, "forward": time.process_time() - t, "draws": draws,
            "forwards": forwards, "rej": dict(rej), "redraws": dict(redraws)}


def measure(difficulty: str, n: int, code: Path | None) -> dict:
    """One preset in a fresh process (code: a checkout to import symblock from)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if code is not None:
        env["PYTHONPATH"] = str(code)
    out = subprocess.run([sys.executable, __file__, "--one", difficulty, "-n", str(n)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def row(d: str, n: int, r: dict) -> str:
    top = ", ".join(f"{k} {v}" for k, v in Counter(r["rej"]).most_common()) or "none"
    built = ", ".join(f"{k} {v}" for k, v in Counter(r["redraws"]).most_common())
    return (f"| {d} | {r['secs']:.2f} s | {r['cpu']:.2f} s | {1000 * r['cpu'] / n:.1f} ms | "
            f"{1000 * r['forward'] / n:.1f} ms | {r['draws'] / n:.2f} | {r['forwards'] / n:.2f} | {top} | {built} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true")
    p.add_argument("-n", type=int, default=N)
    p.add_argument("--runs", type=int, default=3, help="runs per preset and code (median; default 3)")
    p.add_argument("--baseline", type=Path, help="a checkout of the code before, measured in the same run")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(bench(args.one, args.n)))
        return 0
    load = os.getloadavg()
    head = ["| preset | wall, 100 variants | CPU, 100 variants | CPU per variant | one exact forward (CPU) | "
            "draws/variant | forwards/variant | rejected draws | built into the draws |",
            "|---|---|---|---|---|---|---|---|---|"]
    tables = {"after": list(head), "before": list(head)}
    got_cpu: dict[tuple[str, str], float] = {}
    for d in ("easy", "medium", "hard"):
        got = {"after": [], "before": []}
        for _ in range(args.runs):
            for label, code in (("before", args.baseline), ("after", None)):
                if label == "after" or code is not None:
                    got[label].append(measure(d, args.n, code))
        for label, runs in got.items():
            if runs:
                med = dict(runs[0], **{k: statistics.median(r[k] for r in runs) for k in ("secs", "cpu", "forward")})
                got_cpu[label, d] = med["cpu"]
                tables[label].append(row(d, args.n, med))
                print(label, tables[label][-1], flush=True)
    end = os.getloadavg()
    quiet = ""
    if args.baseline and all(got_cpu.get(k) for k in (("before", d) for d in QUIET_BEFORE)):
        est = ", ".join(f"{d} {QUIET_BEFORE[d] * got_cpu['after', d] / got_cpu['before', d]:.1f} s"
                        for d in QUIET_BEFORE)
        quiet = (f"\n\nOn a quiet machine the code before took {', '.join(f'{d} {v} s' for d, v in QUIET_BEFORE.items())} "
                 f"per 100 variants (commit {QUIET_COMMIT}); scaled by this run's after/before CPU ratio, the code "
                 f"after takes about {est} there (an estimate from a shared machine, not a quiet measurement).")
    if args.write:
        machine = (f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores, shared; "
                   f"load average {load[0]:.1f} at the start, {end[0]:.1f} at the end")
        before = ("\n\n## Before (the code this branch started from), same run\n\n" + "\n".join(tables["before"])
                  if args.baseline else "")
        (HERE / "README_generate.md").write_text(
            README.format(machine=machine, runs=args.runs, after="\n".join(tables["after"]), before=before + quiet),
            encoding="utf-8")
    return 0


README = """# Exercise generator bench

`python bench/bench_generate.py --baseline DIR --write` regenerates this file (DIR: a checkout of
the code before). Each variant is `generate.variant` for one seed (1..100) of a difficulty preset:
rows of X picked from the listed family of rows that pass the first norm's checks, attention
weights fitted in batches of 256 candidates scored in exact integers, W_1 refitted to the exact FFN
input for relu_mixed, and every constraint checked again on the exact trace. Each figure is the
median of {runs} fresh processes (imports not timed), before and after interleaved preset by preset.

Target: 100 variants of every preset in under 3 s, at most 50 draws per variant on
average. The machine is shared by several developers, so CPU time (user + system of the process)
is the figure to read: it hardly depends on the others' load, while wall time does (on an idle
machine wall ≈ CPU for this single-threaded work).

Machine: {machine}.

## After

{after}{before}

Draws/variant counts candidate blocks (the accepted one included); forwards/variant the candidates
worked through exactly (a relu_mixed refit counts as a second one, although it works only the FFN
and what follows; with staging the first work stops at the staged step); rejected draws name the
constraint that failed on the exact trace; the last column counts what was fitted instead of
rejected (a refit of the attention or FFN weights, and the first check that asked for it). The
drawn variants are the same before and after (same tensors, steps and exact values for every seed:
a fingerprint of 200 seeds per preset, and tests/exercises/test_candidates.py).

## Where the time went, and what changed

This round (from commit 15bbb9b), on each candidate:
- **No spec parse per candidate** (engine/spec.py `with_tensors`, `with_given`): the generator
  validated the spec once (the probe) but then wrote every candidate's tensors back into a spec
  mapping and parsed it again, twice with staging; the candidate's spec is now the probe with its
  drawn matrices replaced, and the staged step added through the same validation as `given:`.
- **The FFN is worked once** (`generate.split_step`): with relu_mixed on drawn W_1/b_1 (Pre-LN
  without a norm after the FFN: medium and hard), the first forward stops after `ffn.hidden`, the
  only step relu_mixed reads. A failing sign pattern refits W_1 there, and the forward carries on
  from it; before, the FFN and the residual were worked for the weights the refit threw away, and
  every check ran again. (Post-LN, as in easy, checks norm2 before relu_mixed, so it keeps the
  full forward: splitting would change which seeds are rejected, and so the variants.)
- **Checks build no nodes where the balls decide**: `at_most` replaces `at_least(−e, −hi)` (each
  −e was a new node), and the degenerate-row check compares the balls of (x − μ)² before squaring
  exactly.

Before that (commit 1d8e6ed → 15bbb9b; quiet machine, easy 4.0 → 1.89 s, medium 2.8 → 1.91 s,
hard 5.0 → 3.36 s):
- **The rational snap** (engine/balls.py), run on every graph node the engine builds: its
  candidate rational came from `fractions.Fraction.limit_denominator`; it now comes from an
  integer continued fraction of the midpoint, and Arb still certifies it at up to 16384 bits.
- **Spec building** (engine/spec.py): each candidate's spec was parsed by SymPy entry by entry and
  stored as SymPy matrices; rationals now parse as `Fraction`s (SymPy only for sqrt/exp forms) and
  the matrices are `ExactMatrix`, so the generator never imports SymPy.
- **Work per variant**: the staged easy preset worked the whole block twice; the unstaged pass now
  stops at the staged step. A relu_mixed refit of W_1 worked the whole candidate again; it now keeps
  every step that reads neither W_1 nor b_1.
- Decimals of balls and rationals are rounded in integer arithmetic (no Fractions): the checks and
  the staged step's rounding call them often.

For comparison, the issue-5 generator (rejection only; X rows redrawn one by one) measured on an
idle machine: easy 41.1 ms, medium 22.2 ms, hard 32.6 ms per variant, with 31.7, 8.8 and 2.1 draws
per variant, for blocks with varying dims and without the issue-12 guarantees.
"""

if __name__ == "__main__":
    sys.exit(main())
