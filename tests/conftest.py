"""Hypothesis profiles: no per-example deadline (exact arithmetic and torch start-up vary with the
machine's load), and in CI (CI=true) a derandomized run, so a landing never depends on luck.
Fixtures many test files share: `cli`, a command line run in this process, and `spec_file`,
a spec written into the test's folder."""
import os
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("dev"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


class Ran(NamedTuple):
    """What one `symblock` command line did: its exit code and what it printed."""
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """Run `symblock ARGV...` in this process (symblock.cli.main), capturing stdout and stderr:
    `code, out, err = cli("forward", path)`. An argparse refusal raises SystemExit, as it does."""
    from symblock.cli import main

    def run(*argv) -> Ran:
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return Ran(code, out, err)
    return run


@pytest.fixture
def spec_file(tmp_path):
    """Write a spec (or answers) file, exactly as given, into the test's folder and give its path:
    `spec_file(text)` is tmp_path/spec.yaml, `spec_file(text, "s.json")` another name."""
    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path
    return write
