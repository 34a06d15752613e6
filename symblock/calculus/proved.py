"""What `derive` proves and derives with SymPy, done once per release and stored, so that
`derive --facts` and `derive [--step S]` of the built-in tiny block answer without importing SymPy.

    python -m symblock.calculus.proved        # re-prove every fact, re-derive the tiny block, store

The store (proved.json, beside this module) holds each fact (statement, identity, how SymPy proved
it) and the tiny block's rendered derivation in every format, whole and step by step. Nothing is
taken on trust: the test suite proves every fact again and derives the block again, and fails when
the store differs (tests/calculus/test_proved.py); `derive --facts --prove` proves them now.
A fact is stored only once proved: `build` refuses a store with an unproved fact.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from symblock.calculus.fact import Fact

STORE = Path(__file__).with_name("proved.json")
ALL = ""   # the tiny block's whole derivation, under this key beside its steps
FORMATS = ("latex", "markdown", "text")  # derive.FORMATS (derive imports nothing heavy, but this stays SymPy-free)


def build() -> dict:
    """Prove every fact and derive the tiny block now (SymPy: a few seconds)."""
    from symblock.calculus import derive
    fs = derive.facts()
    unproved = [f.name for f in fs if not f.verified]
    if unproved:
        raise AssertionError(f"not proved, so not stored: {', '.join(unproved)}")
    s = derive.symbolic(None)
    steps = list(derive.derive(s).values())
    tiny = {fmt: {ALL: derive.render(steps, fmt, s.title),
                  **{d.name: derive.render([d], fmt, s.title, strict=True) for d in steps}}
            for fmt in FORMATS}
    return {"facts": [{"name": f.name, "statement": f.statement, "latex": f.latex, "how": f.how} for f in fs],
            "tiny": tiny}


@functools.lru_cache(maxsize=1)
def stored() -> dict:
    return json.loads(STORE.read_text(encoding="utf-8"))


def facts() -> list[Fact]:
    """The stored facts, each proved when the store was written (and by every test run since)."""
    return [Fact(f["name"], f["statement"], f["latex"], True, f["how"]) for f in stored()["facts"]]


def tiny(step: str | None, fmt: str) -> str | None:
    """The tiny block's stored derivation (one step, or all of it); None for a step it lacks,
    which the live derivation then explains."""
    return stored()["tiny"][fmt].get(step or ALL)


def write(path: Path = STORE) -> None:
    path.write_text(json.dumps(build(), ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write()
    print(f"wrote {STORE}")
