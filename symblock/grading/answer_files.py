"""Reading an answers file into its raw mapping (answers.py gives it meaning): YAML through libyaml
when it takes the file cleanly, JSON and the rest through the spec reader (whose messages name the
line; both with its nesting limit, engine/files.py, measured before anything is built), and the CSV form a spreadsheet saves (`step,row,col,value`, or `;` where the comma is the
decimal mark) turned into the same mapping; and a step's written matrix as rows (`grid_rows`), or as
the other shape it was written in (`written_shape`)."""
from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from symblock.engine.fields import kind_of
from symblock.grading.students import inert_excerpt

CSV_HEADER = ("step", "row", "col", "value")
_WHOLE = re.compile(r"[0-9]{1,9}", re.ASCII)   # a CSV row or col


def read(path: str | Path, text: str | None = None) -> tuple[dict, str]:
    """The raw mapping of an answers file: YAML/JSON as they are, CSV turned into the same form.
    YAML goes through libyaml when it is there (a class's files are long); anything it does not
    take cleanly is read again by the spec reader, whose messages name the line."""
    from symblock.engine.files import load_yaml, parse, read_text
    from symblock.engine.spec import read_mapping
    from symblock.errors import SpecError
    suffix = Path(path).suffix.lower()
    if text is None:   # bounded, a symbolic link or a pipe refused unread (engine.files)
        text = read_text(path, "an answers file (YAML, JSON or CSV)", follow=False)
    if suffix == ".csv":
        return read_csv(path, text)
    if suffix in (".yaml", ".yml") and _FAST is not None:
        try:   # a file nested too deep is refused here, in the spec reader's words
            data = load_yaml(text, _FAST, str(path))
            if isinstance(data, dict):
                return data, str(path)
        except SpecError:
            raise
        except (_yaml.YAMLError, _Duplicate, ValueError):   # said by the spec reader, which names the line
            pass
    if suffix == ".json" and text.strip():   # the spec reader's JSON, a too-long whole number kept as text
        data = parse(text, str(path), json_syntax=True, whole=_whole)
        if isinstance(data, dict):
            return data, str(path)
    return read_mapping(path, text)


def _too_long(text: str) -> bool:
    """Whether a whole number has more digits than the exact engine reads (MAX_DIGITS): kept as its
    text, one entry that answers.py marks wrong as too large to read, not a refused file."""
    from symblock.engine.numbers import MAX_DIGITS
    return sum(ch.isdigit() for ch in text) > MAX_DIGITS


def _whole(text: str):
    return text if _too_long(text) else int(text)


try:
    import yaml as _yaml

    class _Duplicate(Exception):
        pass

    class _FAST(_yaml.CSafeLoader):
        """libyaml with the spec reader's rules: decimals as written, no duplicate keys."""

        def construct_mapping(self, node, deep=False):
            keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
            if len(set(map(repr, keys))) != len(keys):
                raise _Duplicate
            return super().construct_mapping(node, deep=deep)

    def _decimal(loader, node):
        text = loader.construct_scalar(node)
        try:
            return Decimal(text.replace("_", ""))
        except ArithmeticError:
            return text

    _FAST.add_constructor("tag:yaml.org,2002:float", _decimal)

    def _whole_yaml(loader, node):
        text = loader.construct_scalar(node)
        return text if _too_long(text) else loader.construct_yaml_int(node)

    _FAST.add_constructor("tag:yaml.org,2002:int", _whole_yaml)
except (ImportError, AttributeError):   # PyYAML without libyaml
    _FAST, _Duplicate = None, Exception


def read_csv(path: str | Path, text: str | None = None) -> tuple[dict, str]:
    """`step,row,col,value` lines as {id, name, decimals, ..., steps: {STEP: {entries: {...}}}}.
    A spreadsheet of a decimal-comma locale separates with `;` (`step;row;col;value`, `2,25`):
    the header says which, and a value's decimal comma is then the only comma."""
    from symblock.engine.spec import SpecError
    source = str(path)
    if text is None:
        from symblock.engine.files import read_text
        text = read_text(path, "an answers file (CSV)", follow=False)
    text = text.lstrip("\ufeff")
    first = next((line for line in text.splitlines() if line.strip()), "")
    semicolons = tuple(c.strip().strip('"').lower() for c in first.split(";")[:4]) == CSV_HEADER
    try:   # (line number, fields) of each line that is not blank: messages name the file's own lines
        reader = csv.reader(io.StringIO(text), delimiter=";" if semicolons else ",")
        numbered = [(reader.line_num, r) for r in reader if any(c.strip() for c in r)]
    except csv.Error as e:   # a field over the reader's limit, a NUL: the file's fault, named
        raise SpecError(source, "", f"not a readable CSV table: {e}") from None
    rows = [r for _, r in numbered]
    if not rows or tuple(c.strip().lower() for c in rows[0][:4]) != CSV_HEADER:
        raise SpecError(source, "line 1", "expected the header step,row,col,value (or step;row;col;value, "
                                          "as a spreadsheet of a decimal-comma locale saves it)")
    data: dict[str, Any] = {"steps": {}}
    for n, r in numbered[1:]:
        step, row, col = (list(r) + ["", "", ""])[:3]
        value = ",".join(r[3:]).strip()   # an unquoted decimal comma splits the value in two
        step = step.strip()
        if not row.strip() and not col.strip() and step != "steps":
            data[step] = int(value) if step in ("decimals", "sig_figs") and _WHOLE.fullmatch(value) \
                else (value or None)
            continue
        if not (_WHOLE.fullmatch(row.strip()) and _WHOLE.fullmatch(col.strip())):
            raise SpecError(source, f"line {n}", f"expected whole-number row and col (from 0), got "
                                                 f"{inert_excerpt(row)!r}, {inert_excerpt(col)!r}")
        cells = data["steps"].setdefault(step, {"entries": {}})["entries"]
        cells[CsvCell(f"{int(row)},{int(col)}", n)] = value if value else None
    return data, source


class CsvCell(str):
    """A cell key "i,j" read from a CSV line, which keeps its line number for the messages."""
    line: int

    def __new__(cls, text: str, line: int):
        cell = super().__new__(cls, text)
        cell.line = line
        return cell

    def __reduce__(self):   # grade --jobs hands read files to other processes
        return CsvCell, (str(self), self.line)


# ---------------------------------------------------------------- a step's written matrix

def blank(v) -> bool:
    return v is None or isinstance(v, str) and not v.strip()


def grid_rows(value: Any, shape: tuple[int, int], source: str, where: str) -> list:
    """A full or partial matrix: a list of at most r rows (missing rows and `null` rows are blank)."""
    from symblock.engine.spec import SpecError
    r, c = shape
    if isinstance(value, list) and value and all(not isinstance(v, (list, dict)) for v in value):
        if c == 1 and len(value) == r:       # a 1-column step written as a flat list
            value = [[v] for v in value]
        elif r == 1:                         # a 1-row step written as a flat list
            value = [value]
        elif len(value) == c and not all(blank(v) for v in value):
            raise SpecError(source, where, f"one row of {c} for a {r}×{c} step: say which, e.g. "
                                           f"{{row: 0, value: [...]}}")
    if isinstance(value, list) and value and any(isinstance(row, list) for row in value):
        for i, row in enumerate(value):   # rows, one of them not: that row is named, not "got a list"
            if row is not None and not isinstance(row, list):
                raise SpecError(source, f"{where}[{i}]", f"expected one row of {c} entries, got {kind_of(row)}")
    if not isinstance(value, list) or not value or not all(row is None or isinstance(row, list) for row in value):
        raise SpecError(source, where, f"expected a {r}×{c} matrix: a list of rows, e.g. "
                                       f"[[1, 2], [3, 4]], got {kind_of(value)}")
    if len(value) > r:
        raise SpecError(source, where, f"expected shape {r}×{c}, got {len(value)} rows")
    for i, row in enumerate(value):
        if row is not None and len(row) != c:
            hint = " (a 1-column step is a list of one-entry rows: [[a], [b], ...])" if c == 1 else ""
            raise SpecError(source, f"{where}[{i}]", f"expected shape {r}×{c}, got a row of {len(row)}{hint}")
    return value


MAX_WRITTEN_ROWS = 4096   # a matrix written in another shape is read to this size; past it, refused as before


def written_shape(value: Any, shape: tuple[int, int]) -> tuple[int, int] | None:
    """The shape of a whole matrix written in another shape than the step's r×c (more rows, or
    other rows of one width; fewer full rows too), else None: rows of one width, every entry a
    number or a text, none blank."""
    if not (isinstance(value, list) and value and all(isinstance(row, list) and row for row in value)):
        return None
    width = len(value[0])
    if any(len(row) != width or any(isinstance(v, (list, dict)) or blank(v) for v in row) for row in value):
        return None
    if (len(value), width) == tuple(shape) or len(value) > MAX_WRITTEN_ROWS or width > MAX_WRITTEN_ROWS:
        return None
    return (len(value), width)

