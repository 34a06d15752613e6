"""Checks of one spec field each, with the message every error shares: `FILE: FIELD: expected …,
got …`. Used by the spec loader and by every section parser that extends it (model, inputs,
random constraints), so that all of them word their errors alike."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from symblock.errors import SpecError, close_matches, excerpt

MAX_DIM = 512  # a typo guard for dims; the engine's cost limit (engine/cost.py) is the real one
def kind_of(v: Any) -> str:
    if v is None:
        return "nothing (null)"
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, (list, tuple)):
        return "a list" if v else "an empty list"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, str):
        return f"the text {excerpt(v)}"
    return excerpt(v)


def check_text(value: Any, source: str, where: str) -> str:
    """Text that can be written to a UTF-8 file (no lone surrogates such as "\\ud800")."""
    if not isinstance(value, str):
        raise SpecError(source, where, f"expected text, got {kind_of(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SpecError(source, where, f"expected text that UTF-8 can hold; character {e.start} is "
                        f"{ascii(value[e.start])} (a lone surrogate, or a byte that was not UTF-8)") from None
    return value


def near(value: Any, known: Iterable[str]) -> str:
    """" (did you mean NAME?)" when a text `value` is a near miss of one of `known` (`dimz` of
    `dims`, `Relu` of `relu`), else ""."""
    close = close_matches(value, known) if isinstance(value, str) else []
    return f" (did you mean {close[0]}?)" if close else ""


def check_keys(data: Mapping, allowed: tuple[str, ...], source: str, where: str) -> None:
    if not isinstance(data, dict):
        raise SpecError(source, where, f"expected a mapping, got {kind_of(data)}")
    for key in data:
        if key not in allowed:
            prefix = f"{where}." if where else ""
            raise SpecError(source, f"{prefix}{key}", f"unknown key{near(key, allowed)}; "
                                                      f"expected one of {', '.join(allowed)}")


def choice(value: Any, choices: Sequence[str], source: str, where: str) -> Any:
    """`value` when it is one of `choices`, else the error naming them (and the near miss)."""
    if value not in choices:
        raise SpecError(source, where, f"expected one of {', '.join(choices)}, got {kind_of(value)}"
                        + near(value, choices))
    return value


def int_field(value: Any, source: str, where: str, lo: int = 1, hi: int | None = MAX_DIM) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(source, where, f"expected a whole number, got {kind_of(value)}")
    if value < lo or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise SpecError(source, where, f"expected a whole number in {rng}, got {excerpt(value)}")
    return value


def title_field(title: Any, source: str) -> tuple[str, dict[str, str]]:
    """The title, and one per language when the spec gives `title: {en: ..., zh: ...}`."""
    titles: dict[str, str] = {}
    if isinstance(title, dict):
        for lang, text in title.items():
            if not isinstance(lang, str):
                raise SpecError(source, f"title.{lang}", f"expected text, got {kind_of(text)}")
            check_text(lang, source, f"title.{excerpt(lang)}")
            check_text(text, source, f"title.{lang}")
        titles = dict(title)
        title = titles.get("en") or next(iter(titles.values()), "")
    if not isinstance(title, str):
        raise SpecError(source, "title", f"expected text or a mapping of languages to text "
                                         f"({{en: ..., zh: ...}}), got {kind_of(title)}")
    return check_text(title, source, "title"), titles


def entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def bool_list(raw: Any, n: int, source: str, where: str, per: str, meaning: str) -> tuple[bool, ...]:
    """A mask: a list of n booleans, one per `per` (true = `meaning`). The error says what is wrong:
    not a list, the wrong length, or which entry is not true or false."""
    if not isinstance(raw, list):
        raise SpecError(source, where, f"expected a list of {n} booleans, one per {per} (true = {meaning}), "
                        f"got {kind_of(raw)}")
    if len(raw) != n:
        raise SpecError(source, where, f"expected {entries(n)}, one per {per}, got {entries(len(raw))}")
    for i, v in enumerate(raw):
        if not isinstance(v, bool):
            hint = " (write true or false, not 1 or 0)" if v in (0, 1) else \
                " (unquoted)" if isinstance(v, str) and v.lower() in ("true", "false") else ""
            raise SpecError(source, f"{where}[{i}]", f"expected true or false (true = {meaning}), "
                            f"got {kind_of(v)}{hint}")
    return tuple(raw)
