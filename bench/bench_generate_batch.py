"""Time the generator on batched shapes: one sequence, then batches of 2 and 3 sequences with
drawn padding (and dropout masks), every guarantee held in each sequence.

    python bench/bench_generate_batch.py            # print the table
    python bench/bench_generate_batch.py --write    # also write bench/README_generate_batch.md

Each variant is `generate.variant` for one seed (1..N) of a Pre-LN block (seq_len 3, d_model 4)
with exact σ from half-integer rows, exact scale (d_k drawn from [1, 4]), softmax inputs within ±3,
weights in [0.02, 0.9], distinct live scores and mixed ReLU signs. The baseline, measured in the
same run, is one exact forward of each accepted variant: what a batch costs at the least.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

N = 20
BASE = {"dims": {"seq_len": 3, "d_model": 4, "d_ff": 2, "heads": 1}, "block": {"norm_position": "pre", "eps": 0},
        "random": {"dims": {"d_k": [1, 4]}, "ranges": {"X": [-3, 3], "weights": [-1, 1]}, "x_step": "1/2",
                   "exact_norm": ["norm1"], "exact_scale": True, "no_degenerate_rows": True,
                   "softmax_distinct": True, "scaled_range": [-3, 3], "softmax_weights": ["0.02", "0.9"],
                   "relu_mixed": "rows"}}
CASES = [("one sequence", {}),
         ("batch 2, padding [0, 1]", {"batch": 2, "padding": [0, 1]}),
         ("batch 3, padding [0, 1], dropout on ffn.act", {"batch": 3, "padding": [0, 1],
                                                         "dropout": {"p": "1/2", "steps": ["ffn.act"]}})]


def bench(extra: dict, n: int):
    from symblock.engine import block
    from symblock.exercises import generate
    rnd = {**BASE["random"], **{k: v for k, v in extra.items() if k != "batch"}}
    if "batch" in extra:
        rnd["dims"] = {**rnd["dims"], "batch": extra["batch"]}
    t = time.perf_counter()
    draws = forwards = 0
    specs = []
    for seed in range(1, n + 1):
        v = generate.variant({**BASE, "random": {**rnd, "seed": seed}}, "bench")
        draws, forwards = draws + v.draws, forwards + v.forwards
        specs.append(v.spec)
    secs = time.perf_counter() - t
    t = time.perf_counter()
    for s in specs:
        block.forward(s)
    return secs, time.perf_counter() - t, draws, forwards


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true")
    p.add_argument("-n", type=int, default=N)
    args = p.parse_args(argv)
    import symblock.engine.block  # noqa: F401  (import time not measured)
    rows = ["| shape | variants | per variant | baseline: one exact forward | draws/variant | forwards/variant |",
            "|---|---|---|---|---|---|"]
    for label, extra in CASES:
        secs, base, draws, forwards = bench(extra, args.n)
        rows.append(f"| {label} | {args.n} | {1000 * secs / args.n:.0f} ms | {1000 * base / args.n:.0f} ms | "
                    f"{draws / args.n:.2f} | {forwards / args.n:.2f} |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = "\n".join(["# Generator bench: batches, padding and dropout drawn", "",
                      "`python bench/bench_generate_batch.py --write` regenerates this file. " + __doc__.split("\n\n")[2]
                      .replace("\n", " "), "", *rows, "",
                      f"Python {platform.python_version()} on {platform.machine()}, load average {load:.1f} "
                      "while it ran.", ""])
    print(text)
    if args.write:
        (Path(__file__).parent / "README_generate_batch.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
