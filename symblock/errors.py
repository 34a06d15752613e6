"""The errors every layer may raise, and how they reach a person.

- `SpecError`: a bad spec or answers file, said once as `FILE: FIELD: what was expected` (exit 2).
- `UsageError`: a bad command-line option or a refusal the command itself makes (exit 2).
- `UndecidableError`: a sign no certified precision could settle (exit 2).
- `InternalError`: a bug in symblock; the CLI says "internal error, please report" (exit 3).

`printable` makes any text safe for a terminal: a title or key holding escape sequences must not
retitle the window or clear the screen when an error message quotes it.
"""
from __future__ import annotations

import re


class SpecError(ValueError):
    """A spec problem, said once: `FILE: FIELD: what was expected`. `.field` names the field."""

    def __init__(self, source: str, where: str, message: str):
        self.source, self.where, self.message = source, where, message
        super().__init__(f"{source}: {where}: {message}" if where else f"{source}: {message}")

    @property
    def field(self) -> str:
        return self.where


class UsageError(Exception):
    """Bad input found by a command itself, not in a spec (exit 2)."""


class UndecidableError(ArithmeticError):
    """A sign or zero test that certified numerics could not settle (the value is, or is
    indistinguishable from, zero and no short closed form proves it). Exit 2: the input asks
    for a decision that exact arithmetic cannot make within its limits."""


class InternalError(RuntimeError):
    """Something symblock got wrong, not the user (exit 3)."""


# C0 controls but tab and newline, DEL, C1 controls, and lone surrogates (unencodable anywhere)
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with control characters and lone surrogates shown as `\\xNN`/`\\uNNNN` escapes."""
    return _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)
