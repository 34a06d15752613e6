"""Generator versions compared on the sets `worksheet --variants` draws: how many asked entries
are exact ties at the sheet's places, and how large the asked answers' denominators grow.

    PYTHONPATH=. python bench/bench_gen.py [--n 60] [--places 3] [--write]

A tie is an exact rational whose value times 10^places ends in exactly one half; denominators are
those of the exact rational answers (irrational ones, e.g. softmax weights, are left out).
Both versions are drawn in the same run, preset by preset; `--write` writes bench/README_gen.md.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from fractions import Fraction


def draw(difficulty: str, n: int, generator: int | None, places: int):
    from symblock.exercises import variant
    from symblock.exercises.stress import spread
    from symblock.grading.mistakes import judge
    overrides = {"generator": generator}
    return variant.draw_set(f"preset:{difficulty}", n, 1, variant.Options(), overrides,
                            judge(places), spread(n))


def measure(sets, places: int) -> dict:
    ties, entries, dens, tie_steps = 0, 0, Counter(), Counter()
    step_entries = Counter()
    for v in sets:
        for name, mat in v.answers.items():
            for row in mat.rows:
                for e in row:
                    if not getattr(e, "is_rational", False):
                        continue
                    q = Fraction(int(e.q.p), int(e.q.q))
                    entries += 1
                    step_entries[name] += 1
                    dens[q.denominator] += 1
                    if (q * 10 ** places - Fraction(1, 2)).denominator == 1:
                        ties += 1
                        tie_steps[name] += 1
    return {"entries": entries, "ties": ties, "tie_steps": tie_steps, "step_entries": step_entries,
            "max_den": max(dens), "dens": dens}


def row(difficulty: str, g: int, n: int, places: int) -> str:
    t, cpu = time.perf_counter(), time.process_time()
    sets = draw(difficulty, n, g, places)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    m = measure(sets, places)
    steps = ", ".join(f"{s} {k}/{m['step_entries'][s]}" for s, k in m["tie_steps"].most_common()) or "none"
    big = sum(k for d, k in m["dens"].items() if d > 100)
    return (f"| {difficulty} | {g} | {m['ties']} of {m['entries']} | {steps} | {m['max_den']} | {big} | "
            f"{wall:.1f} s | {cpu:.1f} s |")


def main() -> None:
    import os
    import platform
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--places", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    load0 = os.getloadavg()[0]
    rows = [row(d, g, a.n, a.places) for d in ("easy", "medium", "hard") for g in (1, 2)]
    text = "\n".join([
        "# Generator versions: rounding ties and denominators", "",
        f"`PYTHONPATH=. python bench/bench_gen.py --n {a.n} --write` regenerates this page. Each row draws the",
        f"{a.n}-variant set `worksheet preset:D --variants {a.n}` draws (judge and spread included) with one",
        "generator version; both versions run in the same process, preset by preset. A tie is an exact",
        f"rational asked entry whose value times 10^{a.places} ends in exactly one half (the sheet's {a.places} places);",
        "denominators are those of the exact rational asked entries (softmax weights and what follows",
        "them are irrational and left out).", "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores, shared; "
        f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end. CPU time is the figure to",
        "read under load.", "",
        "| preset | generator | ties at the sheet's places | ties by step | largest denominator | entries with denominator > 100 | wall | CPU |",
        "|---|---|---|---|---|---|---|---|", *rows, "",
        "Version 2 keeps medium and hard at 2 and 3 tokens, d_model 4, with half-integer X in −4..4; the",
        "first norm's σ classes are 3/4, 5/4, 3/2, 5/2, 3, the last three (σ² no tie) twice as often, so a",
        "set still meets five σ values. The remaining ties are rows of σ 3/4 or 5/4 (σ² in sixteenths).", ""])
    if a.write:
        from pathlib import Path
        Path(__file__).with_name("README_gen.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
