"""Read a person's answers file (YAML, JSON or CSV) into exact entries that remember how they
were written, so the checker knows which rounding to allow.

    id: pre-ln-causal-gelu.3    # the worksheet ID (optional; `check` and `grade` rebuild that variant)
    name: Ada Lovelace          # optional; names the feedback file in `grade` (title:, notes: free text)
    decimals: 3                 # how the person rounded (optional; see below)
    steps:
      resid1: [[2.401, 0.599], [1.504, 1.752], [2.576, 1.716]]
      norm1.mean: [[1.5], [1.628], [2.146]]      # a 1-column step: one-entry rows (or a flat list)
      norm1.var: {decimals: 4, value: [[0.8118], [0.0154], [0.1849]]}   # per-step override
      attn.h0.weights: [["1/2", "1/2"], ["E/(1+E)", "1/(1+E)"]]        # exact entries
      ffn.act: [[1, 0, 2], null, [1, null, ""]]  # blanks: null, "" or a missing row (unanswered)
      attn.h0.scores: {row: 1, value: [0.5, -1]} # one row (rows and columns count from 0)
      attn.q: {row: 0, col: 1, value: 0.25}      # one entry
      attn.k: {entries: {"[0][1]": 0.5, "2,0": 1}}   # an entry map

An entry is either
* a *decimal* entry: an integer or a decimal as written (`2`, `0.43`, `"0.8118"`). It is judged at
  `places = max(decimals, places written)`: `0.43` with `decimals: 3` means 0.430, and `0.8118`
  with `decimals: 3` is judged at 4 places (more precision than promised is never penalised).
  Without any `decimals`, an integer must be exact and a decimal is judged at its written places.
  In a set (`grade`, and `check` of a file in its set) the sheet's places are a floor
  (`Policy.floor`, `set_policy`): a file's `decimals:` may raise them, not lower them; `sig_figs:`
  is judged as decimal places; a `print:` number must also be within half a unit at them.
  `sig_figs: 3` (file or step) judges at max(3, the significant digits written) instead, and
  `print: float32` / `float64` accepts a number a program printed: within 16 units in the last
  place of that format, 16·2⁻²³ (float32) or 16·2⁻⁵² (float64) times max(1, |value|);
* an *exact* entry: a string with a fraction or an expression (`"1/3"`, `"sqrt(2)/2"`,
  `"E/(1+E)"`, `"exp(1)/(1+exp(1))"`), which must equal the value exactly;
* `"-inf"` (also `-oo`, `-.inf`, `-∞`) in a `.masked` step (or `.scaled`, masked before scaling), for a masked score;
* a blank (`null` or `""`): not answered (the checker counts it, carries the truth on).

A decimal comma is a decimal point when it can be nothing else: one comma between digits, with no
point (`"2,25"` and `"1,234"` are 2.25 and 1.234; thousands separators are never read). An entry
that cannot be read as a number (`abc`, `²`, `"1,234.5"`, `1e99999999999999999999`, `true`) is that
entry marked wrong with the reason (`Entry.reason`), not a refused file. A whole matrix of another
shape than the step's (a slip that changes it: K and V of the decoder's 2 rows where the memory has 3)
is that step wrong, every entry, and kept as written (`StepAnswer.written`) so that the slip can be
named; fewer full rows are read as those rows, the rest blank, and kept as written too. Only the
file's structure (not a mapping, an unknown step, rows of different widths, a row or col out of range,
a list where an entry goes, a bad `decimals`) refuses the file. Other top-level keys (`student_id`, `email`, `section`) are the
student's data, kept as short text in `Answers.student` (keys lower-cased), except a near-miss
of a key above (`decimal:`), which is refused as a typo.

The CSV form (what a spreadsheet exports) has the header `step,row,col,value` (or `step;row;col;value`,
as a spreadsheet of a decimal-comma locale saves it: `resid1;0;0;2,25`), one entry per line,
and lines `id,,,ID`, `name,,,NAME`, `decimals,,,3` (likewise `sig_figs`, `print`); an empty value is a blank.
Any other `KEY,,,VALUE` line is student data; an unquoted decimal comma (`resid1,0,0,2,25`) is read
as one value.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from symblock.engine import exact, names
from symblock.engine.spec import kind_of
from symblock.errors import did_you_mean, excerpt
from symblock.grading.answer_files import blank, grid_rows, written_shape
from symblock.grading.answer_files import read, read_csv  # noqa: F401  (answers.read: the reader callers know)
from symblock.grading.students import EXCERPT, inert_excerpt, one_line, student_data
from symblock.options import FILL_LIMIT, NEG_INF


TOP_KEYS = ("id", "name", "decimals", "sig_figs", "print", "steps", "title", "notes")
STEP_KEYS = ("value", "decimals", "sig_figs", "print", "row", "col", "entries")
PRINTS = {"float32": Fraction(16, 2 ** 23), "float64": Fraction(16, 2 ** 52)}
MAX_DECIMALS = 30
MAX_SIG_FIGS = 30
_DECIMAL = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$", re.ASCII)
_DECIMAL_COMMA = re.compile(r"\s*[+-]?[0-9]+,[0-9]+\s*", re.ASCII)   # "2,25": the only comma read
_COMMA_NUMBER = re.compile(r"[\s0-9.,+-]*,[\s0-9.,+-]*")             # "1,234.5": a comma left ambiguous

_NEG_INF = set(NEG_INF)


def _minus(value: Any) -> Any:
    """The minus sign a PDF or web page copies (U+2212) as a minus, in a text entry."""
    return value.replace("\u2212", "-") if isinstance(value, str) else value
_CELL = re.compile(r"^\s*(?:\[(\d+)\]\s*\[(\d+)\]|(\d+)\s*,\s*(\d+))\s*$")


@dataclass(frozen=True)
class Policy:
    """How one step's decimal entries are judged (see the module docstring)."""
    decimals: int | None = None
    sig_figs: int | None = None
    print: str | None = None     # float32 | float64
    floor: int | None = None     # the places a set asks for (grade): a file's own policy may raise them, not lower them

    @property
    def tolerance(self) -> Fraction | None:
        return PRINTS.get(self.print)

    def floored(self) -> "Policy":
        """This policy held to the set's places: decimals at least `floor`, significant digits
        judged as decimal places (max(floor, places written)), a printed number also within half
        a unit at `floor` places. A file cannot ask to be judged more loosely than its sheet."""
        if self.floor is None:
            return self
        return Policy(max(self.decimals or 0, self.floor), None, self.print, self.floor)


def simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """The rational of smallest denominator in [lo, hi] (Stern–Brocot, by continued fractions)."""
    if lo <= 0 <= hi:
        return Fraction(0)
    if hi < 0:
        return -simplest_between(-hi, -lo)
    whole = lo.numerator // lo.denominator
    if whole == lo or whole + 1 <= hi:
        return Fraction(whole) if whole == lo else Fraction(whole + 1)
    return whole + 1 / simplest_between(1 / (hi - whole), 1 / (lo - whole))


@dataclass(frozen=True)
class Entry:
    """One answered number: its exact value, the text as written and, for a decimal entry, the
    places it is judged at (None: an exact entry, judged by exact equality). `written` is the
    number of places (or, under sig_figs, significant digits) as written; `sig_figs` and `tol`
    carry the step's policy."""
    value: Any            # exact.Real (exact.NEG_INF for a masked entry)
    text: str
    places: int | None
    decimal: Decimal | None = None
    written: int = 0
    sig_figs: int | None = None
    tol: Fraction | None = None
    reason: str | None = None   # unreadable: "number", "large", "comma" or "inf"; value is None
    cap: Fraction | None = None  # under `tol`: also at most this far from the value (Policy.floor's half unit)

    def unrounded(self):
        """What a wrong entry may stand for, unrounded: the simplest rational its digits allow (−5/3
        for −1.667), so a person who worked on with their exact wrong number is followed too."""
        if self.reason is not None:   # unreadable: the chain's own value stands in, as values() has it
            return None
        if self.decimal is None or not self.decimal.is_finite():
            return self.value
        half = Fraction(1, 2 * 10 ** max(0, -self.decimal.as_tuple().exponent))
        return exact.real(simplest_between(Fraction(self.decimal) - half, Fraction(self.decimal) + half))


@dataclass(frozen=True)
class StepAnswer:
    name: str
    entries: tuple[tuple[Entry | None, ...], ...]   # None: a blank entry
    decimals: int | None   # declared places for this step (file default or override)
    policy: Policy = Policy()
    written: StepAnswer | None = None   # as written, when its shape is not the step's (what a diagnosis reads)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.entries), len(self.entries[0]))

    @property
    def answered(self) -> int:
        return sum(e is not None for row in self.entries for e in row)

    def values(self, fill=None):
        """The person's numbers as an exact matrix (what later steps are recomputed from); a
        blank takes the entry of `fill` (their chain's value of this step)."""
        from symblock.engine.matrix import Mat
        return Mat([[e.value if e is not None and e.reason is None else fill.rows[i][j]
                     for j, e in enumerate(row)] for i, row in enumerate(self.entries)])


@dataclass(frozen=True)
class Answers:
    source: str
    decimals: int | None
    steps: Mapping[str, StepAnswer]
    ident: str | None = None
    name: str | None = None
    student: Mapping[str, str] = field(default_factory=dict)   # e.g. {"student_id": "7", "email": ...}
    overruled: tuple[str, ...] = ()   # the file's keys that asked for less than Policy.floor, e.g. "decimals: 1"
    indexed: bool = False   # some step places its entries by row and col (row:, entries:, the CSV form): from 0
    printed: int | None = None   # the places the sheet printed its given data at: the set's, else the file's decimals


def load(path: str | Path, shapes: Mapping[str, tuple[int, int]], computed: set[str] | None = None,
         text: str | None = None, default: Policy | None = None) -> Answers:
    """Read and validate an answers file against a block's step shapes (steps.step_shapes).
    `computed`: the steps the trace has (others exist in the vocabulary but only feed a given
    step, so there is nothing to check them against). `default`: the policy when the file states
    none (e.g. the set's decimals). Errors: SpecError naming file and field."""
    data, source = read(path, text)
    return from_mapping(data, source, shapes, computed, default)


def from_mapping(data: Mapping, source: str, shapes: Mapping[str, tuple[int, int]],
                 computed: set[str] | None = None, default: Policy | None = None) -> Answers:
    from symblock.engine.spec import SpecError
    student = student_data(data, source, shapes, TOP_KEYS)
    default = default or Policy()
    top = _policy(data, source, "", default)
    overruled = _lowered(data, "", default.floor)
    raw = data.get("steps")
    if not isinstance(raw, dict) or not raw:
        raise SpecError(source, "steps", "expected a mapping of step names to answers, e.g. "
                                         "`steps: {resid1: [[1, 2], [3, 4]]}`, got "
                                         + ("an empty mapping" if raw == {} else kind_of(raw)))
    out: dict[str, StepAnswer] = {}
    for name, value in raw.items():
        where = f"steps.{name}"
        if name not in shapes:
            known = [s for s in shapes if computed is None or s in computed]
            raise SpecError(source, where, "no such step in this block; " + did_you_mean(name, known)
                            + "expected one of " + ", ".join(known))
        if computed is not None and name not in computed:
            raise SpecError(source, where, "this step is not worked in this spec (it only feeds a step "
                                           "the spec gives), so there is nothing to check it against")
        if value is None or value == []:   # `step: null`: not answered, as a step left out is
            continue
        policy = top
        if isinstance(value, dict):
            for key in value:
                if key not in STEP_KEYS:
                    raise SpecError(source, f"{where}.{key}", f"unknown key; expected one of "
                                                              f"{', '.join(STEP_KEYS)}")
            policy = _policy(value, source, f"{where}.", top)
            overruled += _lowered(value, f"{where}.", default.floor)
        step = names.parse(name)
        masked = step.kind in ("masked", "scaled", "cross_masked", "cross_scaled") and not step.dropped  # .scaled: masked, then scaled
        out[name] = _step(name, value, shapes[name], policy, source, where, masked)
    indexed = any(isinstance(v, dict) and ("row" in v or "entries" in v) for v in raw.values())
    return Answers(source, top.decimals, out, _text_field(data, "id", source), _text_field(data, "name", source),
                   student, overruled, indexed, default.floor if default.floor is not None else top.decimals)


def _step(name: str, value: Any, shape: tuple[int, int], policy: Policy, source: str, where: str,
          masked: bool) -> StepAnswer:
    """One step's answer. A whole matrix of another shape (K/V of the decoder's 2 rows where the
    memory has 3) is that step wrong, every entry, and kept as written for the diagnosis; a matrix
    with fewer full rows is read as its rows (the others blank) and kept as written too."""
    def entries(rows):
        return tuple(tuple(None if blank(v) else _entry(v, policy, source, w, masked) for v, w in row)
                     for row in rows)
    other = written_shape(value, shape)
    written = None
    if other is not None:
        written = StepAnswer(name, entries([(v, f"{where}[{i}][{j}]") for j, v in enumerate(row)]
                                           for i, row in enumerate(value)), policy.decimals, policy)
        if other[0] > shape[0] or other[1] != shape[1]:
            wrong = Entry(None, f"{other[0]}×{other[1]}", policy.decimals, reason="shape")
            grid = tuple(tuple(wrong for _ in range(shape[1])) for _ in range(shape[0]))
            return StepAnswer(name, grid, policy.decimals, policy, written)
    return StepAnswer(name, entries(_grid(value, shape, source, where)), policy.decimals, policy, written)


def set_policy(manifest: Mapping) -> Policy:
    """How a set's answers files are judged: at the places its sheets ask for (the manifest's
    `decimals`), which a file's own `decimals:` may raise but not lower (Policy.floor)."""
    d = manifest.get("decimals")
    return Policy(decimals=d, floor=d)


def _lowered(data: Mapping, prefix: str, floor: int | None) -> tuple[str, ...]:
    """The policy keys of `data` that would judge more loosely than `floor` places (not used)."""
    if floor is None:
        return ()
    dec = _whole(data.get("decimals"), "", prefix + "decimals", MAX_DECIMALS)   # validated by _policy
    sig = _whole(data.get("sig_figs"), "", prefix + "sig_figs", MAX_SIG_FIGS, low=1)
    return tuple(f"{prefix}{k}: {v}" for k, v in (("decimals", dec), ("sig_figs", sig))
                 if v is not None and (k == "sig_figs" or v < floor))


def _entry(value: Any, policy: Policy, source: str, where: str, masked: bool) -> Entry:
    """parse_entry, except that an entry that cannot be read as a number is that entry, unreadable
    (marked wrong, with the reason), not a refused file; a list or a mapping where an entry goes
    is the file's structure and still refused."""
    from symblock.engine.spec import SpecError
    if isinstance(value, (list, dict)):
        raise SpecError(source, where, f"expected a number, a fraction or an exact expression "
                                       f"such as \"sqrt(2)/2\", got {kind_of(value)}")
    try:
        return parse_entry(value, policy, source, where, masked)
    except SpecError as e:
        if isinstance(value, str) and _minus(value).strip().lower() in _NEG_INF:
            reason = "inf"
        elif isinstance(value, str) and _COMMA_NUMBER.fullmatch(value):
            reason = "comma"
        else:
            reason = "large" if "too large" in e.message else "number"
        return Entry(None, one_line(inert_excerpt(value, inert=False), EXCERPT), policy.decimals, reason=reason)


def _text_field(data: Mapping, key: str, source: str) -> str | None:
    from symblock.engine.spec import SpecError
    v = data.get(key)
    if v is None or isinstance(v, str) and not v.strip():
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise SpecError(source, key, f"expected text, got {kind_of(v)}")
    return str(v).strip()


def _policy(data: Mapping, source: str, prefix: str, base: Policy) -> Policy:
    from symblock.engine.spec import SpecError
    dec = _whole(data.get("decimals"), source, prefix + "decimals", MAX_DECIMALS)
    sig = _whole(data.get("sig_figs"), source, prefix + "sig_figs", MAX_SIG_FIGS, low=1)
    printed = data.get("print")
    if printed is not None and printed not in PRINTS:
        raise SpecError(source, prefix + "print", f"expected one of {', '.join(PRINTS)}, got {kind_of(printed)}")
    if dec is None and sig is None and printed is None:
        return base
    return Policy(dec, sig, printed, base.floor).floored()   # a stated policy replaces the one it is inside


def _grid(value: Any, shape: tuple[int, int], source: str, where: str) -> list[list[tuple[Any, str]]]:
    """The step's r×c grid of (raw entry, field) pairs, blanks (None) where nothing was given."""
    from symblock.engine.spec import SpecError
    r, c = shape
    grid: list[list[tuple[Any, str]]] = [[(None, f"{where}[{i}][{j}]") for j in range(c)] for i in range(r)]
    if not isinstance(value, dict):
        for i, row in enumerate(grid_rows(value, shape, source, where)):
            for j, v in enumerate(row or [None] * c):
                grid[i][j] = (v, f"{where}[{i}][{j}]")
        return grid
    if "entries" in value:
        if "value" in value or "row" in value:
            raise SpecError(source, f"{where}.entries", "give either entries or value (with row/col), not both")
        cells = value["entries"]
        if not isinstance(cells, dict):
            raise SpecError(source, f"{where}.entries", 'expected a map of cells to entries, e.g. {"[0][1]": 0.5}')
        for key, v in cells.items():
            m = _CELL.match(str(key))
            i, j = (int(m.group(1) or m.group(3)), int(m.group(2) or m.group(4))) if m else (-1, -1)
            line = getattr(key, "line", None)   # a CSV line's cell (answer_files.CsvCell)
            if not (0 <= i < r and 0 <= j < c) and line is not None:
                raise SpecError(source, f"line {line}", f"row {i}, col {j} is outside {where.removeprefix('steps.')}'s "
                                f"{r} × {c} grid (row 0..{r - 1}, col 0..{c - 1}, from 0)")
            if not (0 <= i < r and 0 <= j < c):
                raise SpecError(source, f"{where}.entries.{key}", f"expected a cell \"[i][j]\" or \"i,j\" "
                                f"with i in 0..{r - 1} and j in 0..{c - 1}")
            grid[i][j] = (v, f"line {line}" if line is not None else f"{where}.entries[{i}][{j}]")
        return grid
    if "value" not in value:
        raise SpecError(source, f"{where}.value", "missing; expected the step's matrix")
    v, w = value["value"], f"{where}.value"
    if "row" not in value:
        if "col" in value:
            raise SpecError(source, f"{where}.col", "goes with row (one entry: {row: 0, col: 1, value: 0.5})")
        return _grid(v, shape, source, w)
    i = _index(value["row"], r, source, f"{where}.row")
    if "col" in value:
        grid[i][_index(value["col"], c, source, f"{where}.col")] = (v, w)
        return grid
    if not isinstance(v, list) or len(v) != c or any(isinstance(x, (list, dict)) for x in v):
        raise SpecError(source, w, f"expected one row of {c} entries, got {kind_of(v)}")
    grid[i] = [(x, f"{w}[{j}]") for j, x in enumerate(v)]
    return grid


def _index(v: Any, n: int, source: str, where: str) -> int:
    from symblock.engine.spec import SpecError
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n:
        got = inert_excerpt(v) if isinstance(v, int) and not isinstance(v, bool) else \
            kind_of(inert_excerpt(v) if isinstance(v, str) else v)
        raise SpecError(source, where, f"expected a whole number 0..{n - 1} (counted from 0), got {got}")
    return v


def is_fill(entry) -> bool:
    """Whether a finite entry is how tutorials' `masked_fill` writes −∞: a rational <= FILL_LIMIT
    (its softmax weight is 0 to far below any printed place); marking accepts it where −∞ is due."""
    v = entry.value
    return v is not None and getattr(v, "is_rational", False) and v.q <= FILL_LIMIT


def parse_entry(value: Any, policy: Policy | int | None, source: str, where: str, masked: bool = False) -> Entry:
    """One entry: see the module docstring for the kinds and the places they are judged at."""
    from symblock.engine import exact
    from symblock.engine.spec import SpecError, parse_exact
    if not isinstance(policy, Policy):
        policy = Policy(decimals=policy)
    decimals = policy.decimals
    value = _minus(value)
    if isinstance(value, str) and value.strip().lower() in _NEG_INF:
        if not masked:
            raise SpecError(source, where, "−∞ only appears in a `.masked` step; expected a finite number")
        return Entry(exact.NEG_INF, "-inf", decimals)   # its places: how the truth it misses is shown
    if isinstance(value, float) and not isinstance(value, bool):  # from Python callers
        value = Decimal(repr(value))
    if isinstance(value, str) and _DECIMAL_COMMA.fullmatch(value):
        value = value.replace(",", ".")   # "2,25": a decimal comma (see the module docstring)
    if isinstance(value, str) and _DECIMAL.match(value):
        try:
            value = Decimal(value.strip())
        except ArithmeticError:   # an exponent beyond what `decimal` holds
            raise SpecError(source, where, f"the number is too large to read, got {inert_excerpt(value)!r}") from None
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        if isinstance(value, Decimal) and not value.is_finite():
            raise SpecError(source, where, f"expected a finite number, got {value}")
        written = max(0, -value.as_tuple().exponent) if isinstance(value, Decimal) else 0
        number = parse_exact(value, source, where)
        if policy.tolerance is not None or policy.sig_figs is not None:
            sig = len(Decimal(value).as_tuple().digits)
            return Entry(exact.from_sympy(number), _text(value), None, Decimal(value),
                         written=sig, sig_figs=max(policy.sig_figs or 0, sig) if policy.sig_figs else None,
                         tol=policy.tolerance,
                         cap=None if policy.floor is None or policy.tolerance is None
                         else Fraction(1, 2 * 10 ** policy.floor))
        if decimals is None:
            places = written if written > 0 else None
        else:
            places = max(decimals, written)
        return Entry(exact.from_sympy(number), _text(value), places,
                     Decimal(value) if places is not None else None, written=written)
    if not isinstance(value, str):
        raise SpecError(source, where, f"expected a number, a fraction or an exact expression "
                                       f"such as \"sqrt(2)/2\", got {kind_of(value)}")
    number = parse_exact(value, source, where)
    try:
        real = exact.from_sympy(number)
    except ValueError as e:
        raise SpecError(source, where, f"cannot use {excerpt(value)} exactly: {e}") from None
    return Entry(real, value.strip(), None)


def _text(value) -> str:
    """The entry as a report shows it: positional (1.50 stays 1.50), scientific when that would run
    past 24 characters (1e999 is 1E+999, not a thousand digits); a long whole number by its first
    digits and its length."""
    text = str(value) if isinstance(value, int) else format(value, "f")
    if len(text) <= 24:
        return text
    return f"{text[:16]}…({len(text.lstrip('-'))} digits)" if isinstance(value, int) else str(value)


def _whole(value: Any, source: str, where: str, high: int, low: int = 0) -> int | None:
    from symblock.engine.spec import SpecError
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(source, where, f"expected a whole number {low}..{high}, got {kind_of(value)}")
    return value
