"""Generator versions compared on the sets `worksheet --variants` draws: how many asked entries
are exact ties at the sheet's places, and how large the asked answers' denominators grow.

    PYTHONPATH=. python bench/bench_gen.py [--n 60] [--difficulty medium] [--places 3]

A tie is an exact rational whose value times 10^places ends in exactly one half; denominators are
those of the exact rational answers (irrational ones, e.g. softmax weights, are left out).
Writes nothing: the numbers go into bench/README_gen.md by hand, with the command that made them.
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
    overrides = {} if generator in (None, 1) else {"generator": generator}
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--difficulty", default="medium")
    ap.add_argument("--places", type=int, default=3)
    ap.add_argument("--versions", default="1,2")
    a = ap.parse_args()
    for g in [int(x) for x in a.versions.split(",")]:
        t = time.perf_counter()
        sets = draw(a.difficulty, a.n, g, a.places)
        dt = time.perf_counter() - t
        m = measure(sets, a.places)
        big = sorted(d for d in m["dens"] if d > 100)
        print(f"generator {g}: {a.n} {a.difficulty} variants in {dt:.1f} s; "
              f"{m['ties']} of {m['entries']} exact rational asked entries are ties at {a.places} places; "
              f"max denominator {m['max_den']}; denominators > 100: {big}")
        for step, k in m["tie_steps"].most_common():
            print(f"    {step}: {k} of {m['step_entries'][step]} entries are ties")
        print("    denominators:", dict(sorted(m["dens"].items())))


if __name__ == "__main__":
    main()
