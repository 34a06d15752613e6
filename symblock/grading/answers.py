"""Read a person's answers file (YAML or JSON) into exact entries that remember how they were
written, so the checker knows which rounding to allow.

    decimals: 3                 # how the person rounded (optional; see below)
    steps:
      resid1: [[2.401, 0.599], [1.504, 1.752], [2.576, 1.716]]
      norm1.mean: [[1.5], [1.628], [2.146]]      # a 1-column step: one-entry rows (or a flat list)
      norm1.var: {decimals: 4, value: [[0.8118], [0.0154], [0.1849]]}   # per-step override
      attn.h0.weights: [["1/2", "1/2"], ["E/(1+E)", "1/(1+E)"]]        # exact entries

An entry is either
* a *decimal* entry: an integer or a decimal as written (`2`, `0.43`, `"0.8118"`). It is judged at
  `places = max(decimals, places written)`: `0.43` with `decimals: 3` means 0.430, and `0.8118`
  with `decimals: 3` is judged at 4 places (more precision than promised is never penalised).
  Without any `decimals`, an integer must be exact and a decimal is judged at its written places;
* an *exact* entry: a string with a fraction or an expression (`"1/3"`, `"sqrt(2)/2"`,
  `"E/(1+E)"`, `"exp(1)/(1+exp(1))"`), which must equal the value exactly;
* `"-inf"` (also `-oo`, `-.inf`, `-∞`) in a `.masked` step (or `.scaled`, masked before scaling), for a masked score.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping

from symblock.engine.spec import kind_of

TOP_KEYS = ("decimals", "steps", "title", "name", "notes")
STEP_KEYS = ("value", "decimals")
MAX_DECIMALS = 30
_DECIMAL = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")
_NEG_INF = {"-inf", "-oo", "-.inf", "-∞", "-infinity"}


@dataclass(frozen=True)
class Entry:
    """One answered number: its exact value, the text as written and, for a decimal entry, the
    places it is judged at (None: an exact entry, judged by exact equality)."""
    value: Any            # exact.Real (exact.NEG_INF for a masked entry)
    text: str
    places: int | None
    decimal: Decimal | None = None


@dataclass(frozen=True)
class StepAnswer:
    name: str
    entries: tuple[tuple[Entry, ...], ...]
    decimals: int | None   # declared places for this step (file default or override)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.entries), len(self.entries[0]))

    def values(self):
        """The person's numbers as an exact matrix (what later steps are recomputed from)."""
        from symblock.engine.matrix import Mat
        return Mat([[e.value for e in row] for row in self.entries])


@dataclass(frozen=True)
class Answers:
    source: str
    decimals: int | None
    steps: Mapping[str, StepAnswer]


def load(path: str | Path, shapes: Mapping[str, tuple[int, int]], computed: set[str] | None = None,
         text: str | None = None) -> Answers:
    """Read and validate an answers file against a block's step shapes (steps.step_shapes).
    `computed`: the steps the trace has (others exist in the vocabulary but only feed a given
    step, so there is nothing to check them against). Errors: SpecError naming file and field."""
    from symblock.engine.spec import read_mapping
    data, source = read_mapping(path, text)
    return from_mapping(data, source, shapes, computed)


def from_mapping(data: Mapping, source: str, shapes: Mapping[str, tuple[int, int]],
                 computed: set[str] | None = None) -> Answers:
    from symblock.engine.spec import SpecError
    for key in data:
        if key not in TOP_KEYS:
            raise SpecError(source, str(key), f"unknown key; expected one of {', '.join(TOP_KEYS)}")
    default = _decimals(data.get("decimals"), source, "decimals")
    raw = data.get("steps")
    if not isinstance(raw, dict) or not raw:
        raise SpecError(source, "steps", "expected a mapping of step names to answers, e.g. "
                                         "`steps: {resid1: [[1, 2], [3, 4]]}`, got " + kind_of(raw))
    out: dict[str, StepAnswer] = {}
    for name, value in raw.items():
        where = f"steps.{name}"
        if name not in shapes:
            raise SpecError(source, where, "no such step in this block; expected one of "
                                           + ", ".join(s for s in shapes if computed is None or s in computed))
        if computed is not None and name not in computed:
            raise SpecError(source, where, "this step is not worked in this spec (it only feeds a step "
                                           "the spec gives), so there is nothing to check it against")
        places = default
        if isinstance(value, dict):
            for key in value:
                if key not in STEP_KEYS:
                    raise SpecError(source, f"{where}.{key}", f"unknown key; expected one of "
                                                              f"{', '.join(STEP_KEYS)}")
            if "value" not in value:
                raise SpecError(source, f"{where}.value", "missing; expected the step's matrix")
            if "decimals" in value:
                places = _decimals(value["decimals"], source, f"{where}.decimals")
            value, where = value["value"], f"{where}.value"
        rows = _rows(value, shapes[name], source, where)
        masked = name.endswith((".masked", ".scaled"))  # .scaled: masked, then scaled
        entries = tuple(tuple(parse_entry(v, places, source, f"{where}[{i}][{j}]", masked)
                              for j, v in enumerate(row)) for i, row in enumerate(rows))
        out[name] = StepAnswer(name, entries, places)
    return Answers(source, default, out)


def parse_entry(value: Any, decimals: int | None, source: str, where: str, masked: bool = False) -> Entry:
    """One entry: see the module docstring for the kinds and the places they are judged at."""
    from symblock.engine import exact
    from symblock.engine.spec import SpecError, parse_exact
    if isinstance(value, str) and value.strip().lower() in _NEG_INF:
        if not masked:
            raise SpecError(source, where, "−∞ only appears in a `.masked` step; expected a finite number")
        return Entry(exact.NEG_INF, "-inf", None)
    if isinstance(value, float) and not isinstance(value, bool):  # from Python callers
        value = Decimal(repr(value))
    if isinstance(value, str) and _DECIMAL.match(value):
        value = Decimal(value.strip())
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        if isinstance(value, Decimal) and not value.is_finite():
            raise SpecError(source, where, f"expected a finite number, got {value}")
        written = max(0, -value.as_tuple().exponent) if isinstance(value, Decimal) else 0
        if decimals is None:
            places = written if written > 0 else None
        else:
            places = max(decimals, written)
        number = parse_exact(value, source, where)
        return Entry(exact.from_sympy(number), _text(value), places,
                     Decimal(value) if places is not None else None)
    if not isinstance(value, str):
        raise SpecError(source, where, f"expected a number, a fraction or an exact expression "
                                       f"such as \"sqrt(2)/2\", got {kind_of(value)}")
    number = parse_exact(value, source, where)
    try:
        real = exact.from_sympy(number)
    except ValueError as e:
        raise SpecError(source, where, f"cannot use {value!r} exactly: {e}") from None
    return Entry(real, value.strip(), None)


def _text(value) -> str:
    return str(value) if isinstance(value, int) else format(value, "f")


def _rows(value: Any, shape: tuple[int, int], source: str, where: str) -> list[list]:
    from symblock.engine.spec import SpecError
    r, c = shape
    if isinstance(value, list) and value and all(not isinstance(v, (list, dict)) for v in value):
        if c == 1 and len(value) == r:       # a 1-column step written as a flat list
            value = [[v] for v in value]
        elif r == 1:                         # a 1-row step written as a flat list
            value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(row, list) for row in value):
        raise SpecError(source, where, f"expected a {r}×{c} matrix: a list of rows, e.g. "
                                       f"[[1, 2], [3, 4]], got {kind_of(value)}")
    widths = {len(row) for row in value}
    if len(widths) != 1:
        raise SpecError(source, where, f"rows have different lengths {sorted(widths)}; expected "
                                       f"{r} rows of {c}")
    got = (len(value), len(value[0]))
    if got != shape:
        hint = " (a 1-column step is a list of one-entry rows: [[a], [b], ...])" if c == 1 else ""
        raise SpecError(source, where, f"expected shape {r}×{c}, got {got[0]}×{got[1]}{hint}")
    return value


def _decimals(value: Any, source: str, where: str) -> int | None:
    from symblock.engine.spec import SpecError
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DECIMALS:
        raise SpecError(source, where, f"expected a whole number of decimal places 0..{MAX_DECIMALS}, "
                                       f"got {kind_of(value)}")
    return value


