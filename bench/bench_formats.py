"""Time the worksheet writers: one set of N medium variants, each format on its own, against the
LaTeX + Markdown writers as the baseline measured in the same run.

    python bench/bench_formats.py            # print the table
    python bench/bench_formats.py --write    # also write it into bench/README_formats.md

The variants (draws, exact forwards) and their sheet models are built once and not timed; each row
is the writer alone on all N models: rendering, plus (html) copying KaTeX's files and (qti) zipping.
"""
from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

N = 30
FORMATS = [["latex", "markdown"], ["html"], ["moodle"], ["qti"], ["ipynb"]]


def models(n: int):
    from symblock.exercises import variant as one
    from symblock.exercises.generate import variant
    from symblock.sheets import model as sheet
    out = []
    for seed in range(1, n + 1):
        v = variant({"random": {"seed": seed, "difficulty": "medium"}}, "bench")
        trace = v.trace
        out.append(sheet.build(one.build(f"bench.{seed}", trace)))
    return out


def bench(ms: list[dict], fmts: list[str]) -> tuple[float, int]:
    from symblock.sheets import render
    from symblock.sheets.worksheet import DOCS, bundle
    t = time.perf_counter()
    size = 0
    for fmt in fmts:
        if fmt in render.TEMPLATE:
            size += sum(len(render.render(m, fmt, doc == "key")) for m in ms for doc in DOCS)
    size += sum(len(v) for v in bundle(ms, fmts, many=True).values())
    return time.perf_counter() - t, size


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true")
    p.add_argument("-n", type=int, default=N)
    args = p.parse_args(argv)
    ms = models(args.n)
    rows = ["| format | variants | total time | per variant | output size |", "|---|---|---|---|---|"]
    for fmts in FORMATS:
        secs, size = bench(ms, fmts)
        rows.append(f"| {' + '.join(fmts)} | {args.n} | {secs:.2f} s | {1000 * secs / args.n:.1f} ms | "
                    f"{size / 2**20:.2f} MiB |")
        print(rows[-1], flush=True)
    if args.write:
        machine = f"{platform.machine()}, Python {platform.python_version()}"
        Path(__file__).with_name("README_formats.md").write_text(
            "# Worksheet writers bench\n\n`python bench/bench_formats.py --write` regenerates this file. "
            f"{args.n} medium variants; their traces and sheet models are built once, untimed; each row "
            "is one writer on all of them (the first row, LaTeX + Markdown, is the baseline).\n\n"
            f"Machine: {machine}.\n\n" + "\n".join(rows) + "\n\n"
            "The HTML size includes one copy of KaTeX (script, style sheet, 20 woff2 fonts, ~0.6 MiB) "
            "shared by all the pages of the set.\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
