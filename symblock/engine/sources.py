"""Where a spec's text comes from: a YAML or JSON file (read within engine/files.py's bounds), or a
built-in example by name (symblock/examples/*.yaml)."""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from symblock.engine import files
from symblock.engine.fields import kind_of
from symblock.errors import SpecError


def read_mapping(path: Path | str, text: str | None = None) -> tuple[dict, str]:
    """Parse a YAML or JSON file into a dict; errors name the file and the line (engine.files)."""
    path = Path(path)
    source = str(path)
    if text is None:
        if not files.exists(path):
            raise SpecError(source, "", "no such file (give a spec path or a built-in example name; "
                                        "`symblock examples` lists them)")
        text = files.read_text(path, "a YAML or JSON spec file")
    if not text.strip():
        raise SpecError(source, "", "the file is empty; expected a YAML or JSON mapping")
    data = files.parse(text, source, json_syntax=path.suffix.lower() == ".json")
    if not isinstance(data, dict):
        raise SpecError(source, "", f"expected a mapping at the top level, got {kind_of(data)}")
    return data, source


def example_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("symblock.examples").iterdir()
                  if p.name.endswith(".yaml"))


def block_example_names() -> list[str]:
    """The built-in examples that are one block (not a `model:` spec, engine/model_spec.py)."""
    return [n for n in example_names() if not re.search(r"^model:", example_text(n), re.M)]


def example_text(name: str) -> str:
    return resources.files("symblock.examples").joinpath(f"{name}.yaml").read_text(encoding="utf-8")


def read_spec(name_or_path: str | Path) -> tuple[dict, str]:
    """The raw mapping and source name of a spec file, or of a built-in example by name."""
    text = str(name_or_path)
    if text in example_names() and not Path(text).exists():
        data, _ = read_mapping(f"{text}.yaml", example_text(text))
        return data, f"example:{text}"
    not_a_folder(text)
    return read_mapping(name_or_path)


def not_a_folder(text: str) -> None:
    """A folder here named as a built-in example (a worksheet's --out) is refused, saying how to name the example."""
    if text in example_names() and Path(text).is_dir():
        raise SpecError(text, "", f"is a directory here, not a spec file; for the built-in example of that name "
                                  f"write example:{text}")
