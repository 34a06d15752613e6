"""RoPE and grouped K/V heads: what they add to a block's exact forward, measured in one run.

    python bench/bench_rope.py            # print the table
    python bench/bench_rope.py --write    # also write bench/README_rope.md
    python bench/bench_rope.py --rounds 3 # three times the runs (a loaded machine: steadier medians)

For each shape the same block (same seed, same dims) is worked four ways: plain multi-head
attention, RoPE, grouped K/V heads, and both; runs are interleaved (plain, rope, gqa, both, plain,
…) so that the shared machine's load falls on all alike, and the median of the runs is reported.
Also the tiny Llama (2 layers, RoPE, 2 query heads over 1 K/V head, a KV cache) end to end.
Times are the engine's (`block.forward` / `model.forward` in this process: no imports).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from symblock.engine import block, cost, model, spec  # noqa: E402

SHAPES = [  # (label, dims, runs)
    ("5×8, 4 heads, d_ff 16", {"seq_len": 5, "d_model": 8, "d_ff": 16, "heads": 4}, 9),
    ("8×16, 4 heads, d_ff 32", {"seq_len": 8, "d_model": 16, "d_ff": 32, "heads": 4}, 5),
    ("16×64, 4 heads, d_ff 128", {"seq_len": 16, "d_model": 64, "d_ff": 128, "heads": 4}, 3),
]
VARIANTS = {"plain": {}, "rope": {"rope": True}, "gqa": {"kv_heads": 2}, "rope+gqa": {"rope": True, "kv_heads": 2}}


def block_spec(dims: dict, variant: dict):
    d = dict(dims)
    if "kv_heads" in variant:
        d["kv_heads"] = variant["kv_heads"]
    b = {"norm": "rmsnorm", "norm_position": "pre", "activation": "swiglu", "causal": True, "eps": "1/100"}
    if variant.get("rope"):
        b["rope"] = True
    with cost.limit(10**9):
        return spec.from_mapping({"dims": d, "block": b, "random": {"seed": 4}}, "bench")


def timed(fn) -> float:
    t0 = time.process_time()  # CPU seconds of this process: the shared machine's load counts less
    fn()
    return time.process_time() - t0


def measure(rounds: int = 1) -> tuple[list[tuple[str, dict[str, float]]], list[float]]:
    rows = []
    for label, dims, runs in SHAPES:
        runs *= rounds
        specs = {k: block_spec(dims, v) for k, v in VARIANTS.items()}
        times: dict[str, list[float]] = {k: [] for k in VARIANTS}
        for _ in range(runs):
            for k, s in specs.items():
                with cost.limit(10**9):
                    times[k].append(timed(lambda s=s: block.forward(s)))
        med = {k: statistics.median(v) for k, v in times.items()}
        med.update({f"{k} units": block.cost(s) for k, s in specs.items()})
        rows.append((label, med))
    from symblock.exercises.generate import load
    llama = load("tiny-llama", allow_model=True)   # the built-in example
    llama_times = [timed(lambda: model.forward(llama)) for _ in range(5 * rounds)]
    return rows, llama_times


def report(rows, llama_times) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = ["# RoPE and grouped K/V heads: the exact forward's cost", "",
             "Measured by `python bench/bench_rope.py --write` in one run (variants interleaved, median",
             f"of the runs, CPU seconds of the process; {platform.python_implementation()} {platform.python_version()}, load average "
             f"{load:.1f} on 2 shared cores). Pre-LN, RMSNorm, SwiGLU, causal; `gqa` is 2 K/V heads",
             "for the 4 query heads; RoPE θ 10000, half style. Cost units: the size guard's estimate",
             "(engine/cost.py), exact and machine-independent.", "",
             "| block | plain | rope | gqa | rope+gqa | rope vs plain | rope+gqa vs plain | cost units plain → rope+gqa |",
             "|---|---|---|---|---|---|---|---|"]
    for label, t in rows:
        lines.append(f"| {label} | {t['plain']:.3f} s | {t['rope']:.3f} s | {t['gqa']:.3f} s | "
                     f"{t['rope+gqa']:.3f} s | {t['rope'] / t['plain'] - 1:+.0%} | "
                     f"{t['rope+gqa'] / t['plain'] - 1:+.0%} | {t['plain units']:,} → {t['rope+gqa units']:,} "
                     f"({t['rope+gqa units'] / t['plain units'] - 1:+.0%}) |")
    lines += ["", f"tiny Llama (2 layers, RoPE, 2 query heads over 1 K/V head, prompt 3 + 2 generated "
              f"tokens with the KV cache), exact: median {statistics.median(llama_times):.3f} s over "
              f"{len(llama_times)} runs.", "",
              "RoPE adds two steps per layer (seq_len × heads·d_k and seq_len × kv_heads·d_k entries,",
              "each one node: an entry times an exact cos plus its pair's entry times an exact sin; the",
              "cos/sin nodes are made once per position and pair). Grouped heads shrink K and V by",
              "heads/kv_heads, which is why the cost units fall. What the units do not see: a score of",
              "a query and a key at the same position is rational again (the two rotations cancel,",
              "cos² + sin² = 1); the engine takes that rational from the unrotated q·k (engine/rope.py",
              "`scores`, engine/cancel.py `rational_dot`) instead of certifying it numerically at up to",
              "16384 bits (engine/balls.py `snap`), and likewise a row's own score without RoPE.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="also write bench/README_rope.md")
    ap.add_argument("--rounds", type=int, default=1, help="multiply every shape's number of runs")
    args = ap.parse_args()
    text = report(*measure(args.rounds))
    print(text)
    if args.write:
        (HERE / "README_rope.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
