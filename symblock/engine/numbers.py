"""How large a number a spec or answers file may write, decided before anything is evaluated.

The 500-character limit of an entry bounds its text, not its value: `"9^9^9"` is five characters
and 370 million digits, `1e999999999` is a valid JSON float, and `(1+sqrt(2))**(10**9)` is a
billion multiplications. So every entry is measured first, on its syntax tree (Python's `ast`,
with `^` read as `**` as SymPy's parser does), with cheap upper bounds:

* `digits`: how many decimal digits writing the value exactly may take (numerator and
  denominator together), at most MAX_DIGITS;
* `log10 |value|` for the argument of `exp`, so that `exp(1000)` (435 digits) passes and
  `exp(10**6)` does not;
* nesting depth, at most MAX_DEPTH.

Exponents must be known rationals with denominator 1 or 2 (the engine's exact roots are square
roots); `E**x` is `exp(x)`. Rational subexpressions are evaluated exactly (Fractions), which is
cheap because their size was bounded first. That value is the entry's when it is rational, so a
spec's numbers parse without SymPy (engine/spec.parse_exact); only the other forms (sqrt(2),
E/(1+E), cos(pi/3), …) are handed to SymPy, and only once they pass.
"""
from __future__ import annotations

import ast
import functools
import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Literal, Union, overload

from symblock.engine.fields import kind_of
from symblock.errors import SpecError, excerpt

if TYPE_CHECKING:  # for the hints only: exact.py is imported where an irrational needs it
    from symblock.engine.exact import Real

MAX_DIGITS = 1000   # digits of one exact number (10**400 and exp(1000) pass; 10**10**10 does not)
MAX_DEPTH = 100     # nesting of one expression
MAX_ROOT = 10**6    # the largest n of an n-th root (10**(1/4): n = 4), each certified by Arb
FUNCTIONS = {"sqrt": 1, "exp": 1, "erf": 1, "tanh": 1, "sin": 1, "cos": 1, "Rational": 2}
CONSTANTS = {"E": math.log10(math.e), "pi": math.log10(math.pi), "oo": 0.0}
_LOG10_E = math.log10(math.e)


class TooLarge(ValueError):
    """The reason an entry is refused (the caller names the file and field)."""


class _Num:
    """What the guard knows of a subexpression: a bound on the digits of its exact form, on
    log10 of its absolute value, and its exact value when it is rational."""
    __slots__ = ("digits", "mag", "value")

    def __init__(self, digits: float, mag: float, value: Fraction | None = None) -> None:
        if digits > MAX_DIGITS or mag > MAX_DIGITS:
            raise TooLarge(f"the number is too large (more than {MAX_DIGITS} digits)")
        self.digits, self.mag, self.value = digits, mag, value


def _of(q: Fraction) -> _Num:
    n, d = _log10(abs(q.numerator)), _log10(q.denominator)
    return _Num(n + d + 1, n - d, q)


def _log10(n: int) -> float:
    return math.log10(n) if n else 0.0


def check_int(n: int) -> None:
    if n.bit_length() > MAX_DIGITS * 3.33:
        raise TooLarge(f"the number is too large (more than {MAX_DIGITS} digits)")


def check_decimal(d: Decimal) -> None:
    """A decimal as written (1.401, 2.401e+100000000): digits and exponent, before converting it."""
    t = d.as_tuple()
    if not isinstance(t.exponent, int):
        return  # inf/nan: the caller refuses those by name
    if len(t.digits) + abs(t.exponent) > MAX_DIGITS:
        raise TooLarge(f"the number is too large or too precise (more than {MAX_DIGITS} digits, "
                       f"exponent {t.exponent})")


@functools.lru_cache(maxsize=4096)   # a set's manifest is checked, then read: each text walked once
def check_text(text: str) -> Fraction | None:
    """Raise TooLarge or SyntaxError when the expression `text` is too large or not arithmetic;
    else its exact value when it is rational (numbers and + − · / ** of them, `Rational(a, b)`),
    None when it needs SymPy (sqrt, exp, erf, tanh, sin, cos, E, pi, oo, a division by zero)."""
    text = text.replace("^", "**").strip()
    fast = _fast(text)
    if fast is not None:
        return fast.value
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise SyntaxError("not an arithmetic expression") from None
    return _walk(tree.body, text, 0).value


# The common entry (a stored closed form: whole numbers, + − · /, parentheses, sqrt(...), exp(...))
# is measured without Python's parser, whose syntax tree costs most of the guard's time: `_fast`
# reads that subset of Python's grammar (same precedence, left-associative) into the tree `ast`
# would build and measures it with `_walk`'s own rules at the same depths. Anything outside the
# subset, and anything the measure refuses, goes the full way (`ast`, `_walk`), which then accepts
# or refuses it with its own message: the fast way only ever returns what the full way would.

_FAST_TEXT = re.compile(r"[0-9A-Za-z+\-*/() ]*")
_FAST_TOKEN = re.compile(r"[0-9]+|[A-Za-z]+|[-+*/()]")
_FAST_PARENS = 50   # deeper nesting: left to Python's parser (its own limit is 200)


def _fast(text: str) -> _Num | None:
    """`_walk` of `text`'s tree when `text` is in the subset above and measures within bounds, else None."""
    tree = closed_tree(text)
    try:
        return None if tree is None else _measure(tree, 0)
    except TooLarge:
        return None


@functools.lru_cache(maxsize=1 << 16)   # read once for `guard` and once more to evaluate a stored answer
def closed_tree(text: str) -> tuple | None:
    """The tree of a closed form in the fast subset above (`_sum`'s trees), so that a stored answer is
    evaluated without SymPy (balls.tree_ball); None outside the subset. It reads, it does not bound
    (`guard` does, before SymPy or a ball sees the text)."""
    if "**" in text or not _FAST_TEXT.fullmatch(text):
        return None
    try:
        tokens = _FAST_TOKEN.findall(text)
        tree, end = _sum(tokens, 0, 0)
    except (_NotFast, IndexError, RecursionError):
        return None
    return tree if end == len(tokens) else None


class _NotFast(Exception):
    """Outside the fast subset (the full way decides)."""


def _sum(tokens: list, i: int, parens: int) -> tuple:
    """expr := term (("+" | "-") term)*, as (tree, next index); trees: ("n", digits), ("c", name),
    ("f", name, arg), ("u", op, arg), ("b", op, left, right)."""
    return _left(tokens, i, parens, ("+", "-"), _product)


def _product(tokens: list, i: int, parens: int) -> tuple:
    """term := factor (("*" | "/") factor)*."""
    return _left(tokens, i, parens, ("*", "/"), _unary)


def _left(tokens: list, i: int, parens: int, ops: tuple[str, str], operand: Callable[[list, int, int], tuple]) -> tuple:
    """operand (op operand)*, left-associative as Python reads it."""
    tree, i = operand(tokens, i, parens)
    while i < len(tokens) and tokens[i] in ops:
        right, j = operand(tokens, i + 1, parens)
        tree, i = ("b", tokens[i], tree, right), j
    return tree, i


def _unary(tokens: list, i: int, parens: int) -> tuple:
    t = tokens[i]
    if t in ("+", "-"):
        arg, i = _unary(tokens, i + 1, parens)
        return ("u", t, arg), i
    if t == "(":
        if parens >= _FAST_PARENS:
            raise _NotFast
        tree, i = _sum(tokens, i + 1, parens + 1)
        return tree, _close(tokens, i)
    if t.isdigit():
        if t[0] == "0" and len(t) > 1:   # 017 is no Python literal (00 is: the full way reads both)
            raise _NotFast
        return ("n", t), i + 1
    if t in CONSTANTS and not (i + 1 < len(tokens) and tokens[i + 1] == "("):
        return ("c", t), i + 1
    if t in FUNCTIONS and FUNCTIONS[t] == 1 and i + 1 < len(tokens) and tokens[i + 1] == "(":
        if parens >= _FAST_PARENS:
            raise _NotFast
        arg, i = _sum(tokens, i + 2, parens + 1)
        return ("f", t, arg), _close(tokens, i)
    raise _NotFast


def _close(tokens: list, i: int) -> int:
    if tokens[i] != ")" or (i + 1 < len(tokens) and tokens[i + 1] == "("):   # f(x)(y): a call of a call
        raise _NotFast
    return i + 1


def _measure(tree: tuple, depth: int) -> _Num:
    """`_walk` of the tree `_sum` read (the same rules; refused where a node lies deeper than
    MAX_DEPTH). A subtree's measure depends on nothing else, so each is worked once (`_MEASURED`):
    a stored closed form repeats its exp(17/9) and its 1/3 many times, and across variants."""
    num, height = _measured(tree)
    if depth + height > MAX_DEPTH:
        raise TooLarge(f"the expression is nested more than {MAX_DEPTH} deep")
    return num


_MEASURED: dict = {}   # subtree -> (its _Num, its height); cleared past MAX_MEASURED
MAX_MEASURED = 1 << 16


def _measured(tree: tuple) -> tuple[_Num, int]:
    if tree in _MEASURED:
        return _MEASURED[tree]
    kind = tree[0]
    if kind == "n":
        out = _whole(tree[1]), 0
    elif kind == "c":
        out = _Num(1, CONSTANTS[tree[1]]), 0
    elif kind == "u":
        x, h = _measured(tree[2])
        out = _Num(x.digits, x.mag, None if x.value is None else -x.value if tree[1] == "-" else x.value), h + 1
    elif kind == "f":
        x, h = _measured(tree[2])
        out = _function(tree[1], [x]), h + 1
    else:
        (a, ha), (b, hb) = _measured(tree[2]), _measured(tree[3])
        out = _arith(tree[1], a, b), max(ha, hb) + 1
    if len(_MEASURED) >= MAX_MEASURED:
        _MEASURED.clear()
    _MEASURED[tree] = out
    return out


@functools.lru_cache(maxsize=4096)
def _whole(written: str) -> _Num:
    """`_literal` of a whole-number literal (its _Num is never changed: shared)."""
    _Num(len(written), 0)  # bound before converting
    return _of(Fraction(int(written)))


def _walk(node: ast.AST, text: str, depth: int) -> _Num:
    if depth > MAX_DEPTH:
        raise TooLarge(f"the expression is nested more than {MAX_DEPTH} deep")
    if isinstance(node, ast.Constant):
        return _literal(node, text)
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return _Num(1, CONSTANTS[node.id])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        x = _walk(node.operand, text, depth + 1)
        return _Num(x.digits, x.mag, None if x.value is None else (-x.value if isinstance(node.op, ast.USub)
                                                                   else x.value))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(node, text, depth)
    if isinstance(node, ast.BinOp) and type(node.op) in _SYMBOLS:
        return _arith(_SYMBOLS[type(node.op)], _walk(node.left, text, depth + 1), _walk(node.right, text, depth + 1))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS \
            and not node.keywords and 1 <= len(node.args) <= FUNCTIONS[node.func.id]:
        args = [_walk(a, text, depth + 1) for a in node.args]
        return _function(node.func.id, args)
    raise SyntaxError("not an arithmetic expression of numbers, + - * / ** and "
                      + ", ".join(FUNCTIONS))


_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_ARITH = {"+": Fraction.__add__, "-": Fraction.__sub__, "*": Fraction.__mul__, "/": Fraction.__truediv__}


def _arith(op: str, a: _Num, b: _Num) -> _Num:
    """a op b for + - * /: exact when both are rational (bounded first), else bounds only."""
    if a.value is not None and b.value is not None:
        if op == "/" and b.value == 0:
            return _Num(1, 0)  # SymPy's zoo: refused later as not finite
        _Num(a.digits + b.digits, 0)  # bound before computing
        return _of(_ARITH[op](a.value, b.value))
    mag = max(a.mag, b.mag) + 0.302 if op in ("+", "-") else a.mag + (b.mag if op == "*" else b.digits)
    return _Num(a.digits + b.digits, mag)


def _literal(node: ast.Constant, text: str) -> _Num:
    if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
        raise SyntaxError("not a real number literal")
    # one ASCII line (the usual case): slice at the offsets; get_source_segment splits the whole text each time
    one_line = text.isascii() and node.lineno == node.end_lineno == 1
    written = (text[node.col_offset:node.end_col_offset] if one_line
               else ast.get_source_segment(text, node) or "").replace("_", "")
    mantissa, _, exponent = written.lower().partition("e")
    bad_exponent = bool(exponent) and not exponent.lstrip("+-").isdigit()
    if not mantissa.replace(".", "").isdigit() or bad_exponent:
        raise SyntaxError("not a decimal literal")  # 0x10, 0o7, 1j, ...
    e = int(exponent) if exponent else 0
    digits = sum(ch.isdigit() for ch in mantissa)
    _Num(digits + abs(e), 0)  # bound before converting
    return _of(Fraction(written))


def _power(node: ast.BinOp, text: str, depth: int) -> _Num:
    base = node.left
    if isinstance(base, ast.Name) and base.id == "E":
        return _function("exp", [_walk(node.right, text, depth + 1)])
    b, e = _walk(base, text, depth + 1), _walk(node.right, text, depth + 1)
    if e.value is None:
        raise TooLarge("an exponent must be a number such as 2, 1/2 or -1/4 (write exp(x) for e^x)")
    if e.value.denominator > 2 and (b.value is None or b.value <= 0):   # 10**(-1/4): a certified root
        raise TooLarge("an exponent other than a whole number or a half-integer needs a positive rational "
                       "base, such as 10**(-1/4) (write exp(x) for e^x)")
    if e.value.denominator > MAX_ROOT:
        raise TooLarge(f"an exponent's denominator must be at most {MAX_ROOT} (10**(-1/4) is a 4th root)")
    p = abs(e.value.numerator)
    if b.value is not None and abs(b.value) in (0, 1):
        if e.value.denominator == 1 and (b.value != 0 or e.value > 0):
            return _of(b.value ** int(e.value))  # (−1)^k alternates
        return _Num(1, 0)  # 0^0, 0^−k, (±1)^(1/2): SymPy decides (and refuses what is not finite)
    digits = (b.digits - 1) * p + 1  # digits of the exact form grow p-fold (a root keeps them)
    mag = abs(b.mag) * p / e.value.denominator
    _Num(digits, mag)  # bound before computing
    if b.value is not None and e.value.denominator == 1:
        return _of(b.value ** int(e.value))
    return _Num(digits, mag)


def _function(name: str, args: list[_Num]) -> _Num:
    if name == "Rational":
        if any(a.value is None for a in args):
            raise SyntaxError("Rational takes whole numbers")
        if len(args) == 2 and args[1].value == 0:
            return _Num(1, 0)
        p, q = args[0].value, args[1].value if len(args) == 2 else Fraction(1)
        assert p is not None and q is not None  # whole numbers: the test above
        return _of(p / q)
    (x,) = args
    if name == "sqrt":
        return _Num(x.digits, x.mag / 2)
    if name == "exp":
        if x.value is not None:
            grow = float(x.value) * _LOG10_E if 0 < x.value < 10**6 else math.inf if x.value > 0 else 0.0
        else:
            grow = 10 ** min(x.mag, 20) * _LOG10_E
        return _Num(x.digits + 1, grow + 1)
    return _Num(x.digits, 0.0)  # erf, tanh, sin, cos: |value| <= 1


# ---------------------------------------------------------------- the parser (engine/spec.py re-exports it)

_NAMES = ("sqrt", "exp", "E", "pi", "erf", "tanh", "sin", "cos", "Rational", "oo")
_INT = r"(0+|[1-9]\d{0,39})"  # Python's integer literals (no leading zeros), as the full path reads them
_PLAIN = re.compile(rf"[-+]?({_INT}(/{_INT})?|\d{{0,40}}\.\d{{1,40}}|\d{{1,40}}\.)")  # no exponent: bounded size
_TRANSFORMS = None
# what the parser returns: a Fraction, exact.NEG_INF, or a SymPy expression (SymPy has no hints)
ExactNumber = Union[Fraction, "Real", Any]
SpecScalar = Union[Fraction, Any]  # a spec's scalar (ε, dropout p): a Fraction, or a SymPy form when irrational


@overload
def parse_exact(value: Any, source: str, where: str, allow_inf: Literal[False] = False) -> SpecScalar: ...
@overload
def parse_exact(value: Any, source: str, where: str, allow_inf: bool) -> ExactNumber: ...


def parse_exact(value: Any, source: str, where: str, allow_inf: bool = False) -> ExactNumber:
    """An exact real number from an int, a decimal (exact as written) or a string such as
    "1/2", "1e-5", "sqrt(2)/2", "E/(1+E)": a `Fraction` when it is rational, parsed without
    SymPy (plain numbers by `Fraction`, arithmetic on the size guard's syntax tree above);
    `exact.NEG_INF` for "-oo" where allowed; else the SymPy expression,
    SymPy's parser being the fallback for the irrational forms only."""
    if isinstance(value, bool) or value is None:
        raise SpecError(source, where, f"expected a number, got {kind_of(value)}")
    try:
        if isinstance(value, int):
            check_int(value)
            return Fraction(value)
        if isinstance(value, float):  # from Python callers: take the shortest repr, as written
            value = Decimal(repr(value))
        if isinstance(value, Decimal):
            if not value.is_finite():
                raise SpecError(source, where, f"expected a finite number, got {value}")
            check_decimal(value)
            return Fraction(value)
    except TooLarge as e:
        raise SpecError(source, where, f"{e}; expected a number of at most {MAX_DIGITS} digits") from None
    if not isinstance(value, str):
        raise SpecError(source, where, f"expected a number, got {kind_of(value)}")
    text, q = guard(value, source, where)
    if q is not None:
        return q
    if allow_inf and re.fullmatch(r"-\s*oo", text):
        from symblock.engine import exact
        return exact.NEG_INF
    return _parse_with_sympy(value, text, source, where, allow_inf)


def unknown_names(text: str) -> list[str]:
    """The words of an exact entry that are no number or function it may use (sqrt, sin, pi, ...)."""
    words = set(re.findall(r"[A-Za-z_]+", text)) - {"e"}
    return sorted(w for w in words if w not in _NAMES and not re.fullmatch(r"[eE]", w))


def guard(value: str, source: str, where: str) -> tuple[str, Fraction | None]:
    """The checks of a text entry before SymPy sees it (names, length, size, syntax): its stripped
    text and its value when rational (None: an irrational form, or -oo, for SymPy to read)."""
    text = value.strip()
    if _PLAIN.fullmatch(text):
        try:
            return text, Fraction(text)
        except ZeroDivisionError:
            pass  # "1/0": refused below, as SymPy's zoo
    bad = unknown_names(text)
    if not text or bad or len(text) > 500:
        extra = f" (unknown name {', '.join(bad)})" if bad else ""
        raise SpecError(source, where, f"expected a number or exact expression such as 3, 1.25, "
                                       f"\"1/2\", \"sqrt(2)\", got {excerpt(value)}{extra}")
    try:
        q = check_text(text)
    except TooLarge as e:
        raise SpecError(source, where, f"{e}, got {excerpt(value)}") from None
    except SyntaxError:
        raise SpecError(source, where, f"could not parse {excerpt(value)} as an exact number: expected numbers, "
                        "+ - * / ** and sqrt, exp, erf, tanh, sin, cos, E, pi") from None
    return text, q


def _parse_with_sympy(value: str, text: str, source: str, where: str, allow_inf: bool) -> Any:
    """The forms that are not rational (sqrt, exp, erf, tanh, sin, cos, E, pi), parsed by SymPy once the
    size guard has passed them; what the exact engine cannot hold is refused with its field."""
    global _TRANSFORMS
    import sympy
    from sympy.parsing.sympy_parser import parse_expr
    if _TRANSFORMS is None:
        from sympy.parsing.sympy_parser import (convert_xor, rationalize,
                                                standard_transformations)
        _TRANSFORMS = standard_transformations + (convert_xor, rationalize)
    names = {n: getattr(sympy, n) for n in _NAMES}
    try:
        expr = parse_expr(text, local_dict=names, global_dict={"Integer": sympy.Integer,
                          "Rational": sympy.Rational, "Float": sympy.Float, "Symbol": sympy.Symbol},
                          transformations=_TRANSFORMS)
    except Exception:
        raise SpecError(source, where, f"could not parse {excerpt(value)} as an exact number") from None
    if expr.free_symbols or not expr.is_number:
        raise SpecError(source, where, f"expected a number, got {excerpt(value)}")
    from symblock.engine import exact
    if allow_inf and expr == -sympy.oo:
        return exact.NEG_INF
    if expr.has(sympy.oo, -sympy.oo, sympy.zoo, sympy.nan) or expr.is_real is False:
        raise SpecError(source, where, f"expected a finite real number, got {excerpt(value)}")
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    try:  # what the exact engine cannot hold is refused here, with its field
        exact.from_sympy(expr)
    except (ValueError, ZeroDivisionError) as e:
        raise SpecError(source, where, f"cannot use {excerpt(value)} exactly: {e}") from None
    return expr
