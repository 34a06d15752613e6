"""Read a spec or answers file (YAML or JSON) into plain data, safely and exactly.

Decimals stay as written (1.401 is Decimal('1.401'), never a binary float). Whatever a file
holds, reading it is bounded and every refusal names the file (and the line, when the parser
knows it): at most MAX_BYTES are read (so /dev/zero or a huge file is refused, not swallowed),
text must be UTF-8 without NUL bytes (a binary file), whole numbers have at most
numbers.MAX_DIGITS digits (Python's own limit of 4300 would end in a traceback), a key may not
appear twice in one mapping (YAML and JSON would silently keep the last), nesting is at most
MAX_NESTING deep and YAML aliases may not expand past MAX_NODES values.

The nesting is measured before anything is built, never left to Python's recursion limit: JSON's
brackets are counted in the text (`check_json_depth`), YAML's in the node graph its parser
composes (`load_yaml`; the pure-Python composer counts as it goes). The answers reader's fast
paths (grading/answer_files.py) read through the same two functions, so a deep file is refused
with the same words whichever reader meets it.
"""
from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable

import yaml

from symblock.engine import numbers
from symblock.errors import SpecError, excerpt

MAX_BYTES = 16 * 2**20   # 16 MiB: a 512 × 512 spec in YAML is ~2 MiB
MAX_NESTING = 32         # a spec nests 5 deep (weights.ln1.gamma: a list); answers 4
MAX_NODES = 2_000_000    # values after YAML aliases are expanded (a 512 × 512 matrix is 262,144)
NESTED = f"nested more than {MAX_NESTING} levels deep"


class _Refused(Exception):
    """Raised inside a parser hook; turned into a SpecError naming the file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class _OnceEach(yaml.constructor.SafeConstructor):
    """A YAML loader's mappings, each key once (mixed into the loaders below)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise _Refused(f"the key {excerpt(key)} appears twice in one mapping (lines "
                                   f"{seen[key] + 1} and {key_node.start_mark.line + 1}); "
                                   "expected each key once", key_node.start_mark.line + 1)
                seen[key] = key_node.start_mark.line
            except TypeError:
                pass  # an unhashable key: SafeLoader's own error follows
        return super().construct_mapping(node, deep)


class _Bounded(yaml.composer.Composer):
    """A pure-Python composer that refuses a node nested past MAX_NESTING as it reaches it (its
    recursion never nears Python's limit). libyaml's composer stops at its own 1000 levels."""
    level = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.level += 1
        try:
            if self.level > MAX_NESTING + 1:   # the top node is level 1, at depth 0
                raise _Refused(NESTED, self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self.level -= 1


class ExactLoader(_Bounded, _OnceEach, yaml.SafeLoader):
    """YAML loader that keeps decimals as written, bounds whole numbers and refuses a key that
    appears twice in one mapping."""


def _decimal(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    text = loader.construct_scalar(node)
    try:
        return Decimal(text.replace("_", ""))
    except InvalidOperation:  # .inf, .nan: let validation reject them by name
        return text


def _int(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    text = loader.construct_scalar(node)
    if sum(ch.isdigit() for ch in text) > numbers.MAX_DIGITS:
        raise _Refused(f"a whole number of more than {numbers.MAX_DIGITS} digits",
                       node.start_mark.line + 1)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


ExactLoader.add_constructor("tag:yaml.org,2002:float", _decimal)
ExactLoader.add_constructor("tag:yaml.org,2002:int", _int)

# The same loader on libyaml's C parser where PyYAML has it: ten times faster on a set's manifest
# (one exercise per variant). It builds the same data; any YAML error is reported by the pure-Python
# parser, reading again, so that every message is the same on every machine.
FAST_LOADER: type = ExactLoader
if getattr(yaml, "__with_libyaml__", False):
    class _CExactLoader(_OnceEach, yaml.CSafeLoader):
        """ExactLoader on libyaml's parser."""
    _CExactLoader.add_constructor("tag:yaml.org,2002:float", _decimal)
    _CExactLoader.add_constructor("tag:yaml.org,2002:int", _int)
    FAST_LOADER = _CExactLoader


def _json_decimal(text: str) -> Any:
    try:
        return Decimal(text)
    except InvalidOperation:  # 1e99999999999999999999: past `decimal`'s exponents; refused by name later
        return text


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > numbers.MAX_DIGITS:
        raise _Refused(f"a whole number of more than {numbers.MAX_DIGITS} digits")
    return int(text)


def _json_object(pairs: list) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"the key {excerpt(key)} appears twice in one object; expected each key once")
        out[key] = value
    return out


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def check_json_depth(text: str, source: str) -> None:
    """Refuse JSON text whose brackets (outside strings) nest past MAX_NESTING, before it is parsed."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > MAX_NESTING + 1:
        raise SpecError(source, "", NESTED)


def load_json(text: str, source: str, whole: Callable[[str], Any] | None = None) -> Any:
    """JSON text as plain data: decimals exact, each key once, the nesting bounded first. `whole`
    reads a whole number (default: refused past numbers.MAX_DIGITS digits)."""
    check_json_depth(text, source)
    return json.loads(text, parse_float=_json_decimal, parse_int=whole or _json_int,
                      parse_constant=lambda c: c, object_pairs_hook=_json_object)


def _too_deep(root: yaml.Node) -> yaml.Node | None:
    """The node where a composed YAML graph nests past MAX_NESTING, or None: its longest path,
    aliases followed (a shared node measured once), a node that holds itself endless. No recursion;
    a scalar is 0 high, a collection one more than its highest item (as _check_shape counts)."""
    height: dict[int, int] = {}   # of each collection measured
    open_: set[int] = set()       # the collections on the path being walked
    stack: list[tuple[yaml.Node, bool]] = [(root, False)] if isinstance(root, yaml.CollectionNode) else []
    while stack:
        node, done = stack.pop()
        kids = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else node.value
        if done:
            open_.discard(id(node))
            height[id(node)] = 1 + max((height.get(id(k), 0) for k in kids), default=-1)
            if height[id(node)] > MAX_NESTING:
                return node
        elif id(node) in open_:
            return node
        elif id(node) not in height:
            open_.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in kids if isinstance(k, yaml.CollectionNode) and id(k) not in height)
    return None


def load_yaml(text: str, loader: type, source: str) -> Any:
    """YAML text through `loader` (ExactLoader, FAST_LOADER, or another with their rules): the
    node graph composed and its nesting bounded before any value is built."""
    ld = loader(text)
    try:
        node = ld.get_single_node()
        if node is None:
            return None
        if (deep := _too_deep(node)) is not None:
            raise SpecError(source, f"line {deep.start_mark.line + 1}", NESTED)
        return ld.construct_document(node)
    finally:
        ld.dispose()


def exists(path: Path) -> bool:
    """Whether `path` exists; a name the system cannot take (longer than its limit) is bad input."""
    try:
        return path.exists()
    except OSError as e:
        raise SpecError(str(path), "", f"cannot be opened: {e.strerror or e}") from None


def read_text(path: Path | str, what: str = "a YAML or JSON file", follow: bool = True) -> str:
    """A file's text: UTF-8, at most MAX_BYTES, not binary, not a directory, a pipe or a socket
    (opened without blocking and checked before reading, so a FIFO cannot hang the run); with
    `follow` False a symbolic link is refused unread (a class folder's file must be its own)."""
    path, source = Path(path), str(path)
    if path.is_dir() and (follow or not path.is_symlink()):
        raise SpecError(source, "", f"is a directory, expected {what}")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_BINARY", 0) | (0 if follow else os.O_NOFOLLOW)
    try:
        if not follow and path.is_symlink():
            raise SpecError(source, "", f"is a symbolic link, expected {what} (not read)")
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                raise SpecError(source, "", f"is a pipe or socket, not a regular file; expected {what} (not read)")
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(source, "", "no such file") from None
    except OSError as e:
        raise SpecError(source, "", f"cannot be read: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise SpecError(source, "", f"is larger than {MAX_BYTES // 2**20} MiB; expected {what}")
    if b"\0" in raw:
        raise SpecError(source, "", f"is a binary file, expected {what}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(source, "", "is not UTF-8 text") from None


def parse(text: str, source: str, json_syntax: bool, whole: Callable[[str], Any] | None = None) -> Any:
    """YAML (or JSON) text as plain data, decimals exact; every refusal a SpecError naming `source`.
    `whole` reads a JSON whole number (load_json)."""
    try:
        if json_syntax:
            data = load_json(text, source, whole)
        else:
            try:
                data = load_yaml(text, FAST_LOADER, source)
            except yaml.YAMLError:
                data = load_yaml(text, ExactLoader, source)   # the error, said as everywhere
    except _Refused as e:
        raise SpecError(source, f"line {e.line}" if e.line else "", str(e)) from None
    except json.JSONDecodeError as e:
        raise SpecError(source, f"line {e.lineno}", f"malformed JSON: {e.msg}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise SpecError(source, where, f"malformed YAML: {getattr(e, 'problem', None) or e}") from None
    _check_shape(data, source)
    return data


def _check_shape(data: Any, source: str) -> None:
    """Nesting depth and the number of values with YAML aliases expanded (each shared value is
    measured once, so a 'billion laughs' file is refused without being expanded)."""
    sizes: dict[int, tuple[int, int]] = {}

    def measure(v: Any, depth: int) -> tuple[int, int]:
        if depth > MAX_NESTING:
            raise SpecError(source, "", NESTED)
        if not isinstance(v, (list, dict)):
            return 1, 0
        if id(v) in sizes:
            if depth + sizes[id(v)][1] > MAX_NESTING:
                raise SpecError(source, "", NESTED)
            return sizes[id(v)]
        items = v.values() if isinstance(v, dict) else v
        count, deep = 1, 0
        for item in items:
            c, d = measure(item, depth + 1)
            count, deep = count + c, max(deep, d + 1)
            if count > MAX_NODES:
                raise SpecError(source, "", f"holds more than {MAX_NODES:,} values (counting what "
                                            "YAML aliases repeat)")
        sizes[id(v)] = (count, deep)
        return count, deep

    measure(data, 0)
