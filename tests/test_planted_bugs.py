"""The planted-bug check (bench/mutants.py, run by hand: it takes minutes) stays runnable: each planted
bug is a one-line change that must still match the source exactly once. A refactor that moves the
line leaves the bug stale, and then the check silently tests nothing for it."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_planted_bug_still_applies_to_the_source():
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "mutants.py"), "--list"],
                         cwd=ROOT, capture_output=True, text=True)
    lines = run.stdout.splitlines()
    assert len(lines) > 40   # every planted bug was looked at
    assert [ln for ln in lines if not ln.strip().startswith("ok")] == []
    assert run.returncode == 0
