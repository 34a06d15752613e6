"""The type hints of the engine and the public API hold: mypy, configured in pyproject.toml, passes."""
from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "pyproject.toml")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One mypy cache for this module's runs: the second reads the package's types from it."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(cache: Path, *targets: str) -> tuple[int, str]:
    out, err, status = api.run(["--config-file", CONFIG, "--cache-dir", str(cache), "--no-error-summary",
                                *targets])
    return status, out + err


@pytest.mark.slow
def test_engine_and_public_api_pass_mypy(cache, monkeypatch):
    monkeypatch.chdir(ROOT)  # the config's `files` are the checkout's
    status, said = mypy(cache)
    assert status == 0, said


@pytest.mark.slow
def test_the_hints_catch_a_wrong_argument(cache, tmp_path, monkeypatch):
    """The hints are not Any: a trace read as a spec, a spec name given to the engine's forward, and a
    number given to the API's forward (which takes a spec, a name or a path) are errors."""
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "misuse.py"
    bad.write_text("import symblock\n"
                   "from symblock.engine import block, spec\n"
                   "block.forward('seed-post-ln')\n"
                   "block.cost(block.forward(spec.load('seed-post-ln')))\n"
                   "symblock.forward(3)\n"
                   "symblock.forward(symblock.load('seed-post-ln'))['resid2'].value.rows\n"
                   "symblock.forward(symblock.load('seed-post-ln'))['resid2'].value.row\n")
    status, said = mypy(cache, str(bad))
    assert status == 1
    errors = [line.split(": error: ")[0].rsplit(":", 1)[1] for line in said.splitlines() if ": error: " in line]
    assert errors == ["3", "4", "5", "7"], said  # line 6 is right: a trace's step's value has rows
    assert 'misuse.py:3: error: Argument 1 to "forward" has incompatible type "str"' in said, said
    assert 'misuse.py:4: error: Argument 1 to "cost" has incompatible type "Trace[BlockSpec]"' in said, said
    assert ('misuse.py:5: error: Argument 1 to "forward" has incompatible type "int"; '
            'expected "BlockSpec | ModelSpec | str | Path"') in said, said
    assert 'misuse.py:7: error: "Mat" has no attribute "row"' in said, said
