"""The type hints of the engine and the public API hold: mypy, configured in pyproject.toml, passes."""
from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "pyproject.toml")


def mypy(tmp_path: Path, *targets: str) -> tuple[int, str]:
    out, err, status = api.run(["--config-file", CONFIG, "--cache-dir", str(tmp_path / "cache"),
                                "--no-error-summary", *targets])
    return status, out + err


def test_engine_and_public_api_pass_mypy(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the config's `files` are the checkout's
    status, said = mypy(tmp_path)
    assert status == 0, said


def test_the_hints_catch_a_wrong_argument(tmp_path, monkeypatch):
    """The hints are not Any: a trace read as a spec, and a spec name given to forward, are errors."""
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "misuse.py"
    bad.write_text("from symblock.engine import block, spec\n"
                   "block.forward('seed-post-ln')\n"
                   "block.cost(block.forward(spec.load('seed-post-ln')))\n")
    status, said = mypy(tmp_path, str(bad))
    assert status == 1
    assert 'misuse.py:2: error: Argument 1 to "forward" has incompatible type "str"' in said, said
    assert 'misuse.py:3: error: Argument 1 to "cost" has incompatible type "Trace"' in said, said
