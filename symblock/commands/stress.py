"""Draw many variants of a spec and report what students would meet (R/exams' stress test).

The argparse glue over `symblock.exercises.stress`.
"""
from __future__ import annotations

EXAMPLES = """\
examples:
  symblock stress --difficulty medium -n 30
  symblock stress class.yaml -n 200 --json
  symblock stress class.yaml --drop softmax_distinct --range X=-2:2"""  # the --help epilog

import json

from symblock.exercises.stress import stress, text


def add_arguments(p) -> None:
    from symblock.commands.arguments import add_spec_argument, bounded
    from symblock.commands.flags import add_random_arguments
    from symblock.options import DEFAULT_EXAMPLE, MAX_SEED, MAX_STRESS
    add_spec_argument(p, None, "a spec with a `random:` section: ",
                      f"default: {DEFAULT_EXAMPLE}; with --difficulty D and no SPEC, preset:D")
    p.add_argument("-n", type=bounded(1, MAX_STRESS), default=200, metavar="N",
                   help=f"variants to draw (default 200, at most {MAX_STRESS:,})")
    p.add_argument("--seed", type=bounded(0, MAX_SEED), default=1, metavar="S", help="first seed (default 1)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--max-cost", type=bounded(0), metavar="N", help="raise the exact engine's size limit")
    add_random_arguments(p)


# the spec forms stress does not draw (engine: `model_spec.form_of`), and why
REFUSED = {"model": "a model spec (a tiny GPT); stress draws variants of one block. A model's decoder sheets "
                    "are drawn by `symblock worksheet SPEC --variants N`, which checks each variant's decoding "
                    "step and refuses a set below the variety guarantee"}


def run(args) -> int:
    from symblock.exercises import variants
    from symblock.errors import UsageError
    from symblock.commands.flags import overrides_from_args
    from symblock.exercises.spec_arg import default_spec
    overrides = overrides_from_args(args)
    spec_arg = args.spec or default_spec(overrides)  # --difficulty D alone: preset:D
    data, source = variants.read(spec_arg)
    from symblock.engine.model_spec import form_of
    if (refusal := REFUSED.get(form_of(data))):
        raise UsageError(f"{source}: {refusal}")
    if not isinstance(data.get("random"), dict) and not overrides:
        raise UsageError(f"{source}: stress needs a `random:` section (or flags such as --difficulty) "
                         "to draw variants from")
    if args.n < 1:
        raise UsageError("-n: expected at least 1")
    from symblock.grading.mistakes import judge
    overrides = variants.new_flags(spec_arg, overrides)  # as a new worksheet set would be drawn
    report = stress(data, source, args.n, args.seed, overrides, judge=judge())
    print(json.dumps(report.to_dict(), indent=1) if args.json else text(report), end="" if not args.json else "\n")
    return 0  # a set below the variety guarantee is reported (warning lines, "variety_problems"), not an error
