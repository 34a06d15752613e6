"""Command-line pieces every command shares: the default spec and argparse value types.

Kept beside `errors.py` at the bottom of the layering, so that a package's command module
(`sheets/worksheet.py`, `grading/check.py`, ...) never imports `cli.py`, which sits on top.
"""
from __future__ import annotations

import argparse

DEFAULT_EXAMPLE = "seed-post-ln"


def nonneg(text: str) -> int:
    """argparse type: a whole number >= 0."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {n}")
    return n


def add_spec_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", nargs="?", default=DEFAULT_EXAMPLE, metavar="SPEC",
                   help=f"a spec file (YAML/JSON) or a built-in example name (default: {DEFAULT_EXAMPLE})")
