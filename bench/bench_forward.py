"""Time the exact forward against the NumPy path and a naive SymPy baseline.

    python bench/bench_forward.py            # print the table
    python bench/bench_forward.py --write    # also replace the table in bench/README.md

Exact: `block.forward` (median of runs, in this process) plus certifying every entry to 30 digits
and rounding it to a double; peak memory by tracemalloc. Naive: SymPy matrices pushed through the
same block and evaluated with `evalf` — the approach the design rules out — in a child process
with a time cap, so a size that explodes is reported as "> cap" instead of hanging the bench.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

SIZES = [  # (seq_len, d_model, d_ff, heads, activation)
    (3, 2, 3, 1, "relu"), (3, 4, 8, 2, "relu"), (4, 6, 12, 2, "gelu"),
    (4, 8, 16, 2, "gelu"), (8, 16, 64, 4, "gelu"), (16, 32, 128, 4, "gelu"),
]
NAIVE_CAP = 120.0  # seconds
NAIVE_SIZES = 3    # the naive baseline only for the first sizes (the rest are far beyond the cap)


def make_spec(n, d, f, h, act):
    from symblock.engine import spec
    return spec.from_mapping({"dims": {"seq_len": n, "d_model": d, "d_ff": f, "heads": h},
                              "block": {"activation": act, "eps": "1/100000"},
                              "random": {"seed": 1, "low": -2, "high": 2}}, "bench")


def exact_once(s):
    from symblock.engine import block
    t0 = time.perf_counter()
    trace = block.forward(s)
    t1 = time.perf_counter()
    for step in trace:
        for row in step.value.rows:
            for e in row:
                if e is not block.exact.NEG_INF:
                    e.digits(30)
                    float(e)
    return t1 - t0, time.perf_counter() - t1


def time_exact(s, runs=5):
    build, certify = zip(*(exact_once(s) for _ in range(runs)))
    tracemalloc.start()
    exact_once(s)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(build), statistics.median(certify), peak


def time_numpy(s, runs=20):
    from symblock.reference import numeric
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        numeric.forward(s)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def naive_forward(size):
    """A plain SymPy forward: exact matrices, sqrt/exp/erf as SymPy builds them, then evalf."""
    import sympy as sp
    s = make_spec(*size)
    p = {k: sp.Matrix(v) for k, v in s.params.items()}
    X = sp.Matrix(s.X)
    n, d, h = s.dims.seq_len, s.dims.d_model, s.dims.heads
    dh = d // h

    def ln(x, g, b):
        rows = []
        for i in range(x.rows):
            r = x.row(i)
            mu = sum(r) / d
            var = sum((v - mu) ** 2 for v in r) / d
            rows.append([(v - mu) / sp.sqrt(var + s.options.eps) * g[j] + b[j] for j, v in enumerate(r)])
        return sp.Matrix(rows)

    def act(z):
        if s.options.activation == "relu":  # SymPy cannot order these: decide with evalf
            return z if sp.N(z, 30) > 0 else sp.Integer(0)
        return z / 2 * (1 + sp.erf(z / sp.sqrt(2)))

    t0 = time.perf_counter()
    Q, K, V = X * p["W_Q"], X * p["W_K"], X * p["W_V"]
    heads = []
    for k in range(h):
        q, kk, v = Q[:, k * dh:(k + 1) * dh], K[:, k * dh:(k + 1) * dh], V[:, k * dh:(k + 1) * dh]
        S = q * kk.T / sp.sqrt(dh)
        W = sp.Matrix(n, n, lambda i, j, S=S: sp.exp(S[i, j]) / sum(sp.exp(S[i, m]) for m in range(n)))
        heads.append(W * v)
    A = sp.Matrix.hstack(*heads) * p["W_O"]
    H1 = ln(X + A, p["ln1.gamma"], p["ln1.beta"])
    F = (H1 * p["W_1"]).applyfunc(act) * p["W_2"]
    H2 = ln(H1 + F, p["ln2.gamma"], p["ln2.beta"])
    t1 = time.perf_counter()
    [sp.N(e, 30) for e in H2]
    return t1 - t0, time.perf_counter() - t1


def _naive_child(size, q):
    q.put(naive_forward(size))


def time_naive(size):
    q = mp.Queue()
    proc = mp.Process(target=_naive_child, args=(size, q))
    proc.start()
    proc.join(NAIVE_CAP)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return None
    return q.get()


def time_help(runs=5):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "symblock", "--help"], capture_output=True, check=True)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def fmt(t):
    if t is None:
        return f"> {NAIVE_CAP:.0f} s"
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="replace the table in bench/README.md")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive SymPy baseline")
    args = ap.parse_args()
    lines = ["| (seq, d, d_ff, heads) act | exact build | certify all entries (30 digits + double) | "
             "peak memory | NumPy float64 | naive SymPy build / evalf |",
             "|---|---|---|---|---|---|"]
    for i, size in enumerate(SIZES):
        s = make_spec(*size)
        build, certify, peak = time_exact(s, runs=3 if size[1] >= 16 else 5)
        npy = time_numpy(s)
        naive = "not run"
        if i < NAIVE_SIZES and not args.no_naive:
            r = time_naive(size)
            naive = f"> {NAIVE_CAP:.0f} s" if r is None else f"{fmt(r[0])} / {fmt(r[1])}"
        line = (f"| {size[:4]} {size[4]} | {fmt(build)} | {fmt(certify)} | {peak / 2**20:.1f} MiB | "
                f"{npy * 1e6:.0f} µs | {naive} |")
        print(line, flush=True)
        lines.append(line)
    help_line = f"`symblock --help`: {fmt(time_help())} (median of 5, new process each)"
    print(help_line)
    table = "\n".join(lines) + "\n\n" + help_line + "\n"
    if args.write:
        readme = Path(__file__).with_name("README.md")
        text = readme.read_text(encoding="utf-8")
        start, end = "<!-- bench:start -->\n", "<!-- bench:end -->"
        a, b = text.index(start) + len(start), text.index(end)
        readme.write_text(text[:a] + table + text[b:], encoding="utf-8")


if __name__ == "__main__":
    main()
