"""How well the size guard's cost predicts the time of an exact forward (engine/cost.py).

For blocks of very different shapes (wide, long and thin, many heads, gated), time
`block.forward` and divide by the cost: a good cost model gives about the same µs per unit for
every shape, so that one limit means one waiting time. The baseline, in the same run, is the
model it replaced (multiply-adds of the projections, 2·n²·d for attention and the FFN, no
softmax or node terms): seq_len 512 with d_model 1 was under its limit and ran past 60 s.

    python bench/bench_cost.py [--write]    # --write: the table into bench/README_cost.md
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from symblock.engine import block, cost
from symblock.exercises.generate import from_mapping

SHAPES = [  # (seq_len, d_model, d_ff, heads, norm_position, activation)
    (3, 2, 3, 1, "post", "relu"), (16, 32, 128, 4, "pre", "gelu"), (4, 128, 128, 1, "pre", "relu"),
    (64, 8, 8, 2, "pre", "relu"), (96, 1, 1, 1, "post", "relu"), (32, 16, 16, 1, "post", "swiglu"),
]


def old_cost(n: int, d: int, f: int, gated: bool) -> int:
    return n * d * d * 4 + 2 * n * n * d + (3 if gated else 2) * n * d * f


def measure() -> list[dict]:
    rows = []
    for n, d, f, h, pos, act in SHAPES:
        data = {"dims": {"seq_len": n, "d_model": d, "d_ff": f, "heads": h},
                "block": {"eps": "1/10", "norm_position": pos, "activation": act}, "random": {"seed": 1}}
        with cost.limit(10**12):
            s = from_mapping(data)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            with cost.limit(10**12):
                block.forward(s)
            times.append(time.perf_counter() - t)
        sec = statistics.median(times)
        new, old = block.cost(s), old_cost(n, d, f, s.options.gated)
        rows.append({"shape": f"({n}, {d}, {f}, {h}) {pos} {act}", "s": sec, "new": new, "old": old})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| (seq, d, d_ff, heads) | forward | cost | µs / unit | old cost | µs / old unit |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['shape']} | {r['s']:.2f} s | {r['new']:,} | {r['s'] / r['new'] * 1e6:.1f} | "
                   f"{r['old']:,} | {r['s'] / r['old'] * 1e6:.1f} |")
    spread = lambda key: max(r["s"] / r[key] for r in rows) / min(r["s"] / r[key] for r in rows)
    out += ["", f"spread of µs per unit (largest / smallest): cost {spread('new'):.1f}×, "
                f"old cost {spread('old'):.1f}×; the default limit of {cost.MAX_COST:,} units is about "
                f"{cost.MAX_COST * statistics.median(r['s'] / r['new'] for r in rows):.0f} s at the median rate"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    text = table(measure())
    print(text)
    if "--write" in sys.argv:
        head = (Path(__file__).with_name("README_cost.md").read_text(encoding="utf-8").split("<!-- bench:start -->")[0]
                if Path(__file__).with_name("README_cost.md").exists() else "")
        Path(__file__).with_name("README_cost.md").write_text(
            head + "<!-- bench:start -->\n" + text + "<!-- bench:end -->\n", encoding="utf-8")
