"""The default spec and the documented maximums of what a command takes.

Kept beside `errors.py` at the bottom of the layering: the exercises and the manifest read these
numbers too. The argparse value types that enforce them are commands/arguments.py's.
"""
from __future__ import annotations

from fractions import Fraction

DEFAULT_EXAMPLE = "seed-post-ln"

# Documented maximums of the counts a command takes (README, Limits): each keeps one run of a
# command within minutes, whatever is typed.
MAX_DECIMALS = 30        # --decimals: places of a rounded value (answers' `decimals:` has the same)
MAX_STRESS = 10_000      # stress -n: variants drawn
MAX_VARIANTS = 1_000     # worksheet --variants: document sets written
MAX_SEED = 2**63 - 1     # --seed
MAX_SIZE = 10**9         # params --d-model/--heads/--d-ff/--seq-len

# A sheet prints a number outside [SCI_LOW, SCI_HIGH) in scientific notation (sheets/numbers.py), one
# inside it at the sheet's places; the checker reads given data as printed (grading/plan.as_printed).
SCI_HIGH, SCI_LOW = 10**6, Fraction(1, 10**4)

# How a masked score's −∞ may be written in an answers file (any case; the minus sign a PDF copies,
# U+2212, reads as "-"): `grade` reads these, and the LMS exports accept the same.
NEG_INF = ("-inf", "-oo", "-∞", "-infinity", "-.inf")

# A masked score written as a large finite value, as tutorials' `masked_fill` writes −∞, is read as −∞
# by `grade` when it is at most FILL_LIMIT (grading/answers.is_fill: any such number). The LMS exports
# match text and cannot take a range there (the entry must also take "-inf"): they accept the
# spellings of MASK_FILLS (−1e4, −1e9 as Python, NumPy and PyTorch print them, and torch.finfo's
# minimum), with either minus sign; any other number <= FILL_LIMIT is marked wrong there.
FILL_LIMIT = -10 ** 4
MASK_FILLS = (
    "-1e4", "-1e+4", "-1e+04", "-1.0e4", "-1.0e+4", "-1.0e+04", "-1.e+04", "-1.0000e+04", "-10000", "-10000.0",
    "-1e9", "-1e+9", "-1e+09", "-1.0e9", "-1.0e+9", "-1.0e+09", "-1.e+09", "-1.0000e+09", "-1000000000",
    "-1000000000.0", "-3.4028e+38", "-3.4028235e+38", "-3.4028234663852886e+38", "-1.7976931348623157e+308")

# The width a displayed line of a LaTeX snippet for notes may take (`forward --format latex`,
# `params --format latex`, a key's long formula), in digits as engine/tex_width.py estimates them:
# an article's 345pt text at 5.1pt a digit (the estimate's widest measured digit).
LATEX_LINE = 66

# The width a key's worked line may take before it continues on the next (a sum of products, a
# softmax row's tuples), in the same digits: a key's 483pt line (A4, 2 cm margins) holds 88 digits of
# 11pt math, less 4 for the estimate, which reads a softmax row of fractions up to 3 digits short.
KEY_LINE = 84

# other names a new user gives an output format (--format): offered as the format meant
FORMAT_ALIASES = {"md": "markdown", "tex": "latex", "jupyter": "ipynb", "notebook": "ipynb", "canvas": "qti"}
