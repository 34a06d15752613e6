"""Time a class set of decoder worksheets (exercises/decoder.py): drawing 30 usable variants of
`tiny-decoder` (each seed worked exactly; most are turned down as no hand exercise), then
building their sheet models and Markdown/LaTeX documents; the baseline in the same run is 30
variants of the block example `pre-ln-causal-gelu` through the same two stages.

    python bench/bench_decoder.py            # print the table
    python bench/bench_decoder.py --write    # also write it into bench/README_decoder.md
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

N = 30
CASES = [("tiny-decoder (decoder preset)", "tiny-decoder"),
         ("pre-ln-causal-gelu (full preset, baseline)", "pre-ln-causal-gelu")]


def run(spec: str) -> tuple[float, float, int, int]:
    """(seconds to draw, seconds to write the documents, seeds tried, tasks per sheet)."""
    from symblock.exercises import variant
    from symblock.sheets.worksheet import documents
    t0 = time.perf_counter()
    drawn = variant.draw_set(spec, N, 1)
    t1 = time.perf_counter()
    for v in drawn:
        documents(v, formats=["latex", "markdown"])
    t2 = time.perf_counter()
    last_seed = int(drawn[-1].ident.rsplit(".", 1)[1])
    return t1 - t0, t2 - t1, last_seed, len(drawn[0].ask)


def table() -> str:
    lines = [f"# Decoder worksheets: a set of {N}", "",
             f"One run each (`python bench/bench_decoder.py --write`): draw {N} distinct usable variants "
             "(seeds from 1), then build every variant's sheet and key in LaTeX and Markdown.", "",
             "| spec | draw | documents | seeds tried | tasks per sheet |", "|---|---|---|---|---|"]
    for label, spec in CASES:
        draw, docs, seeds, tasks = run(spec)
        lines.append(f"| {label} | {draw:.1f} s | {docs:.1f} s | {seeds} | {tasks} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    text = table()
    print(text, end="")
    if args.write:
        (Path(__file__).parent / "README_decoder.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
