"""The default spec and the documented maximums of what a command takes.

Kept beside `errors.py` at the bottom of the layering: the exercises and the manifest read these
numbers too. The argparse value types that enforce them are commands/arguments.py's.
"""
from __future__ import annotations

DEFAULT_EXAMPLE = "seed-post-ln"

# Documented maximums of the counts a command takes (README, Limits): each keeps one run of a
# command within minutes, whatever is typed.
MAX_DECIMALS = 30        # --decimals: places of a rounded value (answers' `decimals:` has the same)
MAX_STRESS = 10_000      # stress -n: variants drawn
MAX_VARIANTS = 1_000     # worksheet --variants: document sets written
MAX_SEED = 2**63 - 1     # --seed
MAX_SIZE = 10**9         # params --d-model/--heads/--d-ff/--seq-len

# How a masked score's −∞ may be written in an answers file (any case; the minus sign a PDF copies,
# U+2212, reads as "-"): `grade` reads these, and the LMS exports accept the same.
NEG_INF = ("-inf", "-oo", "-∞", "-infinity", "-.inf")
