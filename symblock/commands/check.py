"""Check hand-worked answers against the exact block, entry by entry: each step is correct, wrong,
carried (right from your own earlier answers) or missing, and a wrong step names the mistake that
reproduces it (sample variance, no 1/sqrt(d_k), softmax down columns, W transposed, ...).

The argparse glue over `symblock.grading`.
"""
from __future__ import annotations

import argparse

from symblock.grading.check import text, to_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="the block: a spec file (YAML/JSON) or a built-in example name")
    p.add_argument("answers", metavar="ANSWERS", help="the hand-worked answers (YAML/JSON)")
    p.add_argument("--json", action="store_true", help="print {ok, first_break, steps: [...]} as JSON")
    p.add_argument("--all", action="store_true", help="list every entry, not only the wrong ones")
    from symblock.options import nonneg
    p.add_argument("--max-cost", type=nonneg, metavar="N", help="raise the exact engine's size limit")


def run(args) -> int:
    from symblock.grading import answers as answers_mod
    from symblock.engine.block import forward
    from symblock.grading.marking import check
    from symblock.exercises.generate import load
    from symblock.engine.steps import step_shapes
    spec = load(args.spec)
    trace = forward(spec, max_cost=args.max_cost)
    answers = answers_mod.load(args.answers, step_shapes(spec.dims, spec.options), set(trace.names()))
    result = check(spec, trace, answers)
    print(to_json(result) if args.json else text(result, trace, every_entry=args.all), end="")
    return 0 if result.ok else 1
