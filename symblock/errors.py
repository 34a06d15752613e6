"""The errors every layer may raise, and how they reach a person.

- `SpecError`: a bad spec or answers file, said once as `FILE: FIELD: what was expected` (exit 2).
- `UsageError`: a bad command-line option or a refusal the command itself makes (exit 2).
- `UndecidableError`: a sign no certified precision could settle (exit 2).
- `InternalError`: a bug in symblock; the CLI says "internal error, please report" (exit 3).

`printable` makes any text safe for a terminal: a title or key holding escape sequences must not
retitle the window or clear the screen when an error message quotes it. `excerpt` is how every
message quotes an input: short, escaped, never the whole of a long value (a 100,000-digit entry or a
file's whole text must not be repeated back, nor leak through a message into a report).
`did_you_mean` is how a message offers the name a misspelt one was meant to be (a step, a key).
"""
from __future__ import annotations

import math
import re
import reprlib
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterable


class SpecError(ValueError):
    """A spec problem, said once: `FILE: FIELD: what was expected`. `.field` names the field."""

    def __init__(self, source: str, where: str, message: str):
        if len(where) > 2 * EXCERPT:  # a field named by a long key the input made up
            where = where[:2 * EXCERPT] + "…"
        if len(source) > PATH_EXCERPT:  # a file name past the system's limit
            source = source[:PATH_EXCERPT] + "…"
        self.source, self.where, self.message = source, where, message
        super().__init__(f"{source}: {where}: {message}" if where else f"{source}: {message}")

    @property
    def field(self) -> str:
        return self.where

    def __reduce__(self):   # pickled from a `--jobs` process, raised again by its parent as it was
        return type(self), (self.source, self.where, self.message)


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


EXCERPT = 40  # characters of an input a message quotes
PATH_EXCERPT = 6 * EXCERPT  # characters of a file's path: its name is at the end, so a path is quoted whole


def excerpt(value: Any, limit: int = EXCERPT) -> str:
    """`value` as a message quotes it: its repr (escaped: controls and lone surrogates show as
    `\\xNN`/`\\uNNNN`), cut to about `limit` characters with the full length said after it."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, Fraction):
        return excerpt(value.numerator, limit) if value.denominator == 1 else \
            f"{excerpt(value.numerator, limit)}/{excerpt(value.denominator, limit)}"
    if isinstance(value, int):
        if value.bit_length() <= 3.3 * limit:
            return repr(value)
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"a whole number of about {digits:,} digits"
    if isinstance(value, Decimal) and value.is_finite():   # YAML's 1.5, read exactly: shown as written
        text = str(value)
        return text if len(text) <= limit else f"a number of {len(text):,} characters"
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    short = reprlib.Repr()
    short.maxstring = short.maxother = short.maxlong = limit
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 4
    short.maxlevel = 2
    try:
        text = short.repr(value)
    except ValueError:  # an int too long for str() inside a container
        text = f"a {type(value).__name__}"
    return text if len(text) <= 2 * limit else text[:2 * limit] + "…"


NEAR_LIMIT = 100  # characters of a name past which no near miss is looked for (no known name is so long)


def close_matches(asked: Any, known: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The (at most `n`) names of `known` that `asked` is closest to by difflib's ratio, at least
    `cutoff`, best first (a name that differs only in case first of all); none for a name too long
    to be a misspelling of any."""
    text = str(asked)
    if len(text) > NEAR_LIMIT:
        return []
    import difflib
    known = [str(k) for k in known]
    cased = [k for k in known if k.lower() == text.lower()]   # `Cat` of `cat` before `sat`, which difflib ties
    near = difflib.get_close_matches(text, known, n=n, cutoff=cutoff)
    return (cased + [k for k in near if k not in cased])[:n]


def did_you_mean(asked: Any, known: Iterable[str]) -> str:
    """"did you mean NAME? " when `asked` is a near miss of one of `known` (`norm1.men` of
    `norm1.mean`), else "": said before a message's "expected one of …" list."""
    close = close_matches(asked, known)
    return f"did you mean {close[0]}? " if close else ""
