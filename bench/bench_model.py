"""Time the exact tiny GPT (engine/model.py): forward + certifying every entry, with the KV cache
and with full recompute at every generation step (the baseline, in the same run).

    python bench/bench_model.py            # print the table
    python bench/bench_model.py --write    # also write it into bench/README_model.md
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

CASES = [  # (label, example or mapping changes)
    ("tiny-gpt: 2 layers, d 4, vocab 5, prompt 2, generate 2", {}),
    ("4 layers, d 8, vocab 8, prompt 3, generate 4",
     {"model": {"vocab": [f"t{i}" for i in range(8)], "layers": 4, "prompt": ["t1", "t2", "t3"], "generate": 4},
      "dims": {"d_model": 8, "d_ff": 16, "heads": 2}}),
]


def spec_for(changes: dict, kv_cache: bool):
    from symblock.engine.model_spec import from_mapping
    from symblock.engine.spec import read_spec
    data, _ = read_spec("tiny-gpt")
    data = {**data, **{k: v for k, v in changes.items() if k != "model"}}
    data["model"] = {**data["model"], **changes.get("model", {}), "kv_cache": kv_cache}
    return from_mapping(data, "bench")


def once(spec) -> float:
    from symblock.engine import exact, model
    t0 = time.perf_counter()
    trace = model.forward(spec)
    for step in trace:
        for row in step.value.rows:
            for e in row:
                if e is not exact.NEG_INF:
                    e.digits(30)
    return time.perf_counter() - t0


def measure(runs: int = 3) -> list[tuple[str, float, float, int]]:
    from symblock.engine import model
    rows = []
    for label, changes in CASES:
        cached, full = spec_for(changes, True), spec_for(changes, False)
        tc = statistics.median(once(cached) for _ in range(runs))
        tf = statistics.median(once(full) for _ in range(runs))
        rows.append((label, tc, tf, model.cost(cached), model.cost(full)))
    return rows


def table(rows) -> str:
    out = ["| model | with KV cache | full recompute (baseline) | cost units (engine/cost.py) cached / full |",
           "|---|---|---|---|"]
    for label, tc, tf, cc, cf in rows:
        out.append(f"| {label} | {tc * 1000:.0f} ms | {tf * 1000:.0f} ms | {cc:,} / {cf:,} |")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    text = table(measure(args.runs))
    print(text)
    if args.write:
        path = Path(__file__).with_name("README_model.md")
        path.write_text("# Tiny GPT: exact forward + certification, cached vs recompute\n\n"
                        "Median of runs; forward plus certifying every entry to 30 digits "
                        "(`python bench/bench_model.py --write`).\n\n" + text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
