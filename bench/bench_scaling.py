"""Time and peak memory of the exact, certified forward against d_model (4 … 64), for a block
and for a 3-layer model, this checkout against a base checkout in the same run.

    git worktree add /tmp/base <commit>                  # the code before (e.g. main)
    python bench/bench_scaling.py --base /tmp/base       # print the table
    python bench/bench_scaling.py --base /tmp/base --write   # also README_scaling.md + the plot

Every measurement runs in a fresh child process (its peak resident memory is the process's own,
ru_maxrss), before and after alternating case by case so that both see the same machine load.
Time is the CPU time of the process (time.process_time) for the forward plus certifying every
entry to 30 digits: on a shared machine it is steadier than the wall clock, which is shown too.
The growth exponent is the slope of log(time) against log(d_model), least squares over the sizes.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DS = (4, 8, 16, 32, 64)
CHILD = r"""
import json, math, resource, sys, time
case = json.loads(sys.argv[1])
from symblock.engine import cost, exact
d = case["d"]
with cost.limit(math.inf):
    if case["kind"] == "block":
        from symblock.engine import block, spec
        s = spec.from_mapping({"dims": {"seq_len": 16, "d_model": d, "d_ff": 2 * d, "heads": 4},
                               "block": {"activation": "gelu", "eps": "1/100000"},
                               "random": {"seed": 1, "low": -2, "high": 2}}, "bench")
        run, units = block.forward, block.cost(s)
    else:
        from symblock.engine import model, model_spec
        s = model_spec.from_mapping({
            "model": {"vocab": [f"t{i}" for i in range(64)], "positions": "learned", "layers": 3,
                      "head": "tied", "final_norm": True, "prompt": [f"t{i}" for i in range(15)],
                      "generate": 1, "kv_cache": True},
            "dims": {"d_model": d, "d_ff": 2 * d, "heads": 4},
            "block": {"norm_position": "pre", "norm": "rmsnorm", "eps": "1/100000",
                      "activation": "swiglu", "attention_scale": "sqrt_dk"},
            "random": {"seed": 2, "low": -2, "high": 2}}, "bench")  # seed 2: no tied logits at d 4
        run, units = model.forward, model.cost(s)
    t0, c0 = time.perf_counter(), time.process_time()
    trace = run(s)
    for step in trace:
        for row in step.value.rows:
            for e in row:
                if e is not exact.NEG_INF:
                    e.digits(30)
    t, c = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"time": c, "wall": t, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "units": units}))
"""


def measure(root: Path, kind: str, d: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("SYMBLOCK_MAX_COST", None)
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps({"kind": kind, "d": d})], env=env,
                         capture_output=True, text=True, check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def slope(ds: list[int], ts: list[float]) -> float:
    """Least-squares slope of log t against log d."""
    if len(set(ds)) < 2:
        return float("nan")
    xs, ys = [math.log(d) for d in ds], [math.log(t) for t in ts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def run_all(base: Path, after: Path, ds: tuple[int, ...]) -> dict:
    res: dict = {}
    for kind in ("block", "model"):
        for d in ds:
            for label, root in (("before", base), ("after", after)):
                res[kind, d, label] = measure(root, kind, d)
                print(kind, d, label, res[kind, d, label], file=sys.stderr)
    return res


def table(res: dict, ds: tuple[int, ...]) -> str:
    out = ["| case | d_model | cost units | before: CPU time | after: CPU time | speed-up | after: wall | "
           "before: peak RSS | after: peak RSS |", "|---|---|---|---|---|---|---|---|---|"]
    names = {"block": "block (seq 16, d_ff 2d, 4 heads, GELU)",
             "model": "3-layer model (prompt 15 + 1 greedy step, d_ff 2d, 4 heads, RMSNorm, SwiGLU)"}
    for kind in ("block", "model"):
        for d in ds:
            b, a = res[kind, d, "before"], res[kind, d, "after"]
            out.append(f"| {names[kind]} | {d} | {a['units']:,} | {b['time']:.2f} s | {a['time']:.2f} s | "
                       f"{b['time'] / a['time']:.1f}× | {a['wall']:.2f} s | {b['rss'] / 2**20:.0f} MiB | {a['rss'] / 2**20:.0f} MiB |")
    big = [d for d in ds if d >= 16]  # past the fixed costs of the smallest sizes
    out += ["", f"| case | growth exponent of time in d_model, {ds[0]}–{ds[-1]}: before | after | "
            f"{big[0] if big else '-'}–{ds[-1]}: before | after |", "|---|---|---|---|---|"]
    for kind in ("block", "model"):
        fit = [slope(list(dd), [res[kind, d, lab]["time"] for d in dd]) for dd in (ds, big) for lab in ("before", "after")]
        out.append(f"| {kind} | " + " | ".join(f"{f:.2f}" for f in fit) + " |")
    return "\n".join(out)


def plot(res: dict, ds: tuple[int, ...], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, what, scale, unit in ((axes[0], "time", 1, "s"), (axes[1], "rss", 2**20, "MiB")):
        for kind, mark in (("block", "o"), ("model", "s")):
            for label, style in (("before", "--"), ("after", "-")):
                ax.plot(ds, [res[kind, d, label][what] / scale for d in ds], style, marker=mark,
                        label=f"{kind}, {label}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("d_model")
        ax.set_ylabel(f"{'time' if what == 'time' else 'peak RSS'} ({unit})")
        ax.legend(fontsize=8)
    fig.suptitle("Exact, certified forward against d_model")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, type=Path, help="a checkout of the code before")
    p.add_argument("--write", action="store_true")
    p.add_argument("--d", type=int, nargs="*", default=list(DS))
    args = p.parse_args()
    ds = tuple(args.d)
    res = run_all(args.base.resolve(), HERE.parent, ds)
    text = table(res, ds)
    print(text)
    if args.write:
        plot(res, ds, HERE / "scaling.png")
        (HERE / "README_scaling.md").write_text(
            "# Scaling: the exact, certified forward against d_model\n\n"
            "CPU time (forward plus certifying every entry to 30 digits) and peak resident memory, each in "
            "a fresh process, before and after in the same run (`python bench/bench_scaling.py --base "
            "DIR --write`, DIR a checkout of the code before). On this 2-core machine, shared.\n\n"
            + text + "\n\n![time and peak memory against d_model](scaling.png)\n", encoding="utf-8")


if __name__ == "__main__":
    main()
