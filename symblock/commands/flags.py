"""Command-line flags that override a spec's `random:` section (stress, worksheet)."""
from __future__ import annotations

import sys
from typing import Any

from symblock.exercises.constraints import CONSTRAINT_KEYS, DIFFICULTIES, FLAG_KEYS, MAX_DRAWS, MAX_DRAWS_LIMIT

PAIR_FLAGS = ("--score-range", "--scaled-range", "--softmax-weights")  # LO:HI values, often negative


def join_values(argv: list[str] | None) -> list[str]:
    """`--score-range -6:6` as `--score-range=-6:6`: argparse takes a value that starts with "-"
    and is not a plain number for an option, so the README's spelling would fail."""
    argv = list(sys.argv[1:] if argv is None else argv)
    out, i = [], 0
    while i < len(argv):
        if argv[i] in PAIR_FLAGS and i + 1 < len(argv) and argv[i + 1].startswith("-") and ":" in argv[i + 1]:
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out

def add_random_arguments(p) -> None:
    """Flags that override the spec's `random:` section (the same keys, same validation)."""
    g = p.add_argument_group("random section overrides")
    g.add_argument("--difficulty", choices=DIFFICULTIES, help="a difficulty: the sizes, options and constraints it fills in")
    g.add_argument("--require", action="append", default=[], metavar="NAME",
                   choices=(*FLAG_KEYS, "exact_norm", "relu_mixed"),
                   help="turn a constraint on (repeatable): " + ", ".join((*FLAG_KEYS, "exact_norm", "relu_mixed")))
    g.add_argument("--range", action="append", default=[], metavar="TENSOR=LO:HI",
                   help="entry range of a tensor or group (X, weights, biases, W_Q, ...), e.g. X=-2:2")
    g.add_argument("--sparsity", metavar="P", help="share of zeros in each drawn weight matrix, e.g. 0.25")
    g.add_argument("--drop", action="append", default=[], metavar="NAME", choices=CONSTRAINT_KEYS[1:],
                   help="turn a constraint off, also one --difficulty sets (repeatable), e.g. scaled_range")
    g.add_argument("--score-range", metavar="LO:HI", help="bound every raw attention score, e.g. -4:4")
    g.add_argument("--scaled-range", metavar="LO:HI", help="bound every softmax input (scaled score), e.g. -3:3")
    g.add_argument("--softmax-weights", metavar="LO:HI", help="bound every live softmax weight, e.g. 0.02:0.9")
    g.add_argument("--norm-min", metavar="S", help="smallest σ (rms) of a norm row, e.g. 1/2")
    g.add_argument("--staged", metavar="STEP:K", help="give STEP rounded to K decimals, e.g. attn.out:3")
    from symblock.commands.arguments import bounded
    g.add_argument("--max-draws", type=bounded(1, MAX_DRAWS_LIMIT), metavar="N",
                   help=f"candidate draws before giving up (default {MAX_DRAWS}, at most {MAX_DRAWS_LIMIT:,})")


def overrides_from_args(args) -> dict:
    """The `random:` keys the flags set (validated later by parse_random, naming random.KEY)."""
    from symblock.errors import UsageError

    def pair(text: str, flag: str, conv=int, form: str = "LO:HI") -> list:
        lo, sep, hi = text.rpartition(":")
        try:
            if not sep:
                raise ValueError
            return [conv(lo), conv(hi)]
        except ValueError:
            raise UsageError(f"{flag}: expected {form}, got {text!r}") from None
    out: dict[str, Any] = {}
    if getattr(args, "difficulty", None):
        out["difficulty"] = args.difficulty
    for name in getattr(args, "require", None) or []:
        out[name] = True
    ranges = {}
    for item in getattr(args, "range", None) or []:
        name, eq, rng = item.partition("=")
        if not eq:
            raise UsageError(f"--range: expected TENSOR=LO:HI, got {item!r}")
        ranges[name] = pair(rng, "--range")
    if ranges:
        out["ranges"] = ranges
    if getattr(args, "sparsity", None) is not None:
        out["sparsity"] = args.sparsity
    for key in ("score_range", "scaled_range", "softmax_weights"):
        if getattr(args, key, None):
            out[key] = pair(getattr(args, key), "--" + key.replace("_", "-"), str)
    if getattr(args, "norm_min", None) is not None:
        out["norm_min"] = args.norm_min
    for name in getattr(args, "drop", None) or []:
        out[name] = False
    if getattr(args, "staged", None):
        step, k = pair(args.staged, "--staged", str, "STEP:K, e.g. attn.out:3")
        if not k.isdigit() or len(k) > 6:
            raise UsageError(f"--staged: expected STEP:K with K a whole number, e.g. attn.out:3, got {args.staged!r}")
        out["staged"] = {"step": step, "decimals": int(k)}
    if getattr(args, "max_draws", None) is not None:
        out["max_draws"] = args.max_draws
    return out

