"""argparse pieces every command shares: value types that enforce options.py's maximums, the SPEC
argument, and the help layout."""
from __future__ import annotations

import argparse

from symblock.options import DEFAULT_EXAMPLE, FORMAT_ALIASES, MAX_DECIMALS


def nonneg(text: str) -> int:
    """argparse type: a whole number >= 0."""
    return bounded(0)(text)


def bounded(lo: int | None, hi: int | None = None):
    """argparse type: a whole number in lo..hi of at most 30 digits (None: no bound but that)."""
    def whole(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if len(digits) > 30 or not digits.isdigit():
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}"
                                             + ("..." if len(text) > 40 else ""))
        n = int(text)
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            want = f">= {lo}" if hi is None else f"<= {hi:,}" if lo is None else f"in {lo}..{hi:,}"
            raise argparse.ArgumentTypeError(f"expected a whole number {want}, got {n}")
        return n
    whole.__name__ = "whole number"
    return whole


def tolerance(text: str) -> float:
    """argparse type: a finite number >= 0 (verify --tol)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1e-9, got {text!r}") from None
    if not (x >= 0 and x != float("inf")):  # rejects nan too
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return x


def decimals(text: str) -> int:
    """argparse type: --decimals, 0..MAX_DECIMALS."""
    return bounded(0, MAX_DECIMALS)(text)


def add_spec_argument(p: argparse.ArgumentParser, default: str | None = DEFAULT_EXAMPLE, lead: str = "",
                      note: str | None = None) -> None:
    """The SPEC argument, the same for every command (exercises/spec_arg.py reads it); `lead`
    says what the command wants of it, `note` replaces "default: DEFAULT" in the help."""
    from symblock.exercises.spec_arg import HELP
    p.add_argument("spec", nargs="?", default=default, metavar="SPEC",
                   help=f"{lead}{HELP} ({note or f'default: {default}'})")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, except that a paragraph with lines indented by two spaces (the
    `examples:` of a command's epilog) is printed as written instead of being re-wrapped."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        def fill(para: str) -> str:
            if any(line.startswith("  ") for line in para.splitlines()):
                return "\n".join(indent + line for line in para.splitlines())
            return super(HelpFormatter, self)._fill_text(para, width, indent)
        return "\n\n".join(fill(para) for para in text.split("\n\n"))


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusals offer what a typo was meant to be: an option's choice
    (`--preset atention`: attention) and an option of the command (`--varients`: --variants)."""

    def error(self, message: str):
        import re
        from symblock.errors import close_matches
        if (m := re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)):
            choices = re.findall(r"'([^']*)'", m.group(2))
            alias = FORMAT_ALIASES.get(m.group(1).lower())   # `--format tex`: latex, not text
            close = [alias] if alias in choices else close_matches(m.group(1), choices)
            message += f"; did you mean {close[0]}?" if close else ""
        super().error(message)

    def parse_known_args(self, args=None, namespace=None):
        ns, extras = super().parse_known_args(args, namespace)
        from symblock.errors import close_matches
        for extra in extras:   # a command's own options are known here, not where the extras are refused
            close = close_matches(extra.split("=")[0], list(self._option_string_actions)) if extra.startswith("--") else []
            if close:
                self.error(f"unrecognized arguments: {' '.join(extras)} (did you mean {close[0]}?)")
        return ns, extras
