"""Time the exact forward of a block with and without the online softmax over key tiles (same
dims, seed and options, one run each, in the same process), and the proof that every head's
tiled result equals softmax·V (engine/online_softmax.py `prove`).

    python bench/bench_tiles.py            # print the table
    python bench/bench_tiles.py --write    # also write it into bench/README_tiles.md
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

CASES = [((8, 16, 32, 2), "post", "relu", False),
         ((16, 32, 64, 4), "pre", "gelu", True),
         ((16, 64, 128, 4), "pre", "gelu", True)]
TILES = (0, 2, 4)
NOTE = """
What the tiles add: per head a second exponential for every live score (e^(s − m_j), beside the
softmax's e^s), one rescaling exponential per row and tile, and the accumulators' sums. The size
guard counts them (`engine/kinds.py`: the cost column), so a block near the limit is refused
with its tiles rather than run slowly. Single runs on the shared 2 cores vary by ±30 % or more
between runs (an earlier run had tiles of 2 on the largest block at 0.89×); the cost units do
not. The proof
reads each tiled entry and its softmax·V entry as fractions of polynomials in exponentials and
shows the tiled sum to be the plain one times the single term e^(−m) (engine/proof.py).
"""


def spec_for(dims, norm_position, activation, causal, tiles):
    from symblock.engine import spec
    n, d, f, h = dims
    block = {"norm_position": norm_position, "activation": activation, "causal": causal}
    if tiles:
        block["attention_tiles"] = tiles
    return spec.from_mapping({"dims": {"seq_len": n, "d_model": d, "d_ff": f, "heads": h},
                              "block": block, "random": {"seed": 1}}, "<bench>", max_cost=10**9)


def run(case, tiles) -> tuple[float, float, int]:
    """(seconds of the exact forward, seconds of the proof, cost units)."""
    from symblock.engine import block, online_softmax
    sp = spec_for(*case, tiles)
    t0 = time.perf_counter()
    trace = block.forward(sp, max_cost=10**9)
    t1 = time.perf_counter()
    verdicts = online_softmax.prove(trace)
    t2 = time.perf_counter()
    assert all(v == "exact" for _, v in verdicts), verdicts
    return t1 - t0, t2 - t1, block.cost(sp)


def table() -> str:
    load = os.getloadavg()[0]
    lines = ["# The online softmax over key tiles (`bench/bench_tiles.py`)", "",
             "The exact forward (`block.forward`) of the same block, seed 1, without tiles and with "
             "`attention_tiles` 2 and 4, one run each in one process; then the proof that each head's "
             "tiled result equals softmax·V exactly (`online_softmax.prove`). Regenerate with "
             f"`python bench/bench_tiles.py --write`. Load average at the start: {load:.1f} (2 cores).", "",
             "| (seq, d, d_ff, heads) | tiles | forward | vs no tiles | proof | cost units | vs no tiles |",
             "|---|---|---|---|---|---|---|"]
    for case in CASES:
        base = base_cost = None
        for tiles in TILES:
            fwd, prf, cost = run(case, tiles)
            base, base_cost = base or fwd, base_cost or cost
            name = f"{case[0]} {case[1]} {case[2]}{' causal' if case[3] else ''}"
            proof = f"{prf:.2f} s" if tiles else "–"
            lines.append(f"| {name} | {tiles or '–'} | {fwd:.2f} s | {fwd / base:.2f}× | {proof} | "
                         f"{cost:,} | {cost / base_cost:.2f}× |")
    return "\n".join(lines) + "\n" + NOTE


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    text = table()
    print(text, end="")
    if args.write:
        (Path(__file__).parent / "README_tiles.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
