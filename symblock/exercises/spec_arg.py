"""SPEC, the block a command works on, read the same way by every command: a spec file (YAML or
JSON), a built-in example by name (NAME, or example:NAME as messages name it), or `preset:D`, the
own block of difficulty D (a title, seed 1 and `random.difficulty: D`; its worksheet IDs are
`preset-D.SEED`). A file of an example's NAME wins over the example, as it always has;
`example:NAME` and `preset:D` always mean the built-in ones.
"""
from __future__ import annotations

from pathlib import Path

from symblock.errors import SpecError, close_matches, did_you_mean, excerpt

# the own block of each difficulty: its title (en, zh)
DIFFICULTY_TITLES = {"easy": ("Exercise (easy)", "练习（简单）"), "medium": ("Exercise (medium)", "练习（中等）"),
                     "hard": ("Exercise (hard)", "练习（困难）")}
FORMS = ("a spec file (YAML or JSON), a built-in example's name (NAME or example:NAME; `symblock examples` "
         "lists them), or preset:D, the own block of difficulty D (easy, medium or hard)")
HELP = "a spec file (YAML/JSON), a built-in example name, or preset:D (D a difficulty: easy, medium, hard)"


def default_spec(overrides: dict | None) -> str:
    """The SPEC of a command given none: `preset:D` with --difficulty D (the difficulty's own dims,
    not the default example's), else the default example."""
    from symblock.options import DEFAULT_EXAMPLE
    d = (overrides or {}).get("difficulty")
    return f"preset:{d}" if d in DIFFICULTY_TITLES else DEFAULT_EXAMPLE


def difficulty_of(text: str, sep: str = ":") -> str | None:
    """D of a SPEC `preset:D` (or, sep "-", of an ID token `preset-D`), else None."""
    head, _, d = text.partition(sep)
    return d if head == "preset" and d in DIFFICULTY_TITLES else None


def difficulty_mapping(d: str) -> dict:
    """The spec mapping of `preset:D`: a title, a seed and the difficulty."""
    en, zh = DIFFICULTY_TITLES[d]
    return {"title": {"en": en, "zh": zh}, "random": {"seed": 1, "difficulty": d}}


def example_of(spec_arg: str) -> str | None:
    """The built-in example a SPEC names (NAME when no file has that name, or example:NAME), else None."""
    from symblock.engine.spec import example_names
    text = str(spec_arg)
    name = text[len("example:"):] if text.startswith("example:") else text
    if name in example_names() and (name != text or not Path(text).exists()):
        return name
    return None


def _meant(text: str, examples) -> str:
    """"did you mean the built-in example NAME? " of a SPEC that is no file but a near miss of an
    example's name (`seed-post-lm`, `seed-post-ln.yaml`), else ""."""
    stem = Path(text).stem if Path(text).suffix.lower() in (".yaml", ".yml", ".json") else text
    close = close_matches(stem, examples)
    return f"did you mean the built-in example {close[0]}? " if close else ""


def read(spec_arg: str | Path) -> tuple[dict, str]:
    """The raw mapping of a SPEC and its source name (as messages name it)."""
    from symblock.engine import files
    from symblock.engine.sources import not_a_folder
    from symblock.engine.spec import example_names, example_text, read_mapping
    text = str(spec_arg)
    if difficulty_of(text):
        return difficulty_mapping(difficulty_of(text)), text
    name = example_of(text)
    if name is not None:
        return read_mapping(f"{name}.yaml", example_text(name))[0], f"example:{name}"
    if text.startswith("example:") and not files.exists(Path(text)):
        asked = text[len('example:'):]
        raise SpecError(text, "", f"no built-in example {excerpt(asked)}; " + did_you_mean(asked, example_names())
                        + "expected one of " + ", ".join(example_names()))
    if text.startswith("preset:") and not files.exists(Path(text)):
        asked = text[len('preset:'):]
        raise SpecError(text, "", f"no difficulty {excerpt(asked)}; " + did_you_mean(asked, DIFFICULTY_TITLES)
                        + "preset:D takes D " + ", ".join(DIFFICULTY_TITLES))
    if not files.exists(Path(text)):
        raise SpecError(text, "", f"no such file; {_meant(text, example_names())}SPEC is {FORMS}")
    not_a_folder(text)
    return read_mapping(spec_arg)
