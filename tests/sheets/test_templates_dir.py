"""A checkout runs without an install: the templates are found beside the package, not only as the
installed `symblock.templates` package data."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Runs the CLI with `symblock.templates` unimportable, as in a checkout that was never installed.
NOT_INSTALLED = """
import sys
class NoTemplates:
    def find_spec(self, name, path=None, target=None):
        if name == "symblock.templates" or name.startswith("symblock.templates."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, NoTemplates())
sys.path.insert(0, sys.argv[1])
from symblock.cli import main
sys.exit(main(["worksheet", "--format", "latex,html", "--out", sys.argv[2]]))
"""


def test_a_checkout_that_was_not_installed_writes_a_worksheet(tmp_path):
    out = tmp_path / "ws"
    run = subprocess.run([sys.executable, "-c", NOT_INSTALLED, str(REPO), str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert r"\documentclass" in (out / "sheet.tex").read_text()
    assert (out / "katex" / "katex.min.js").read_bytes() == (REPO / "templates/katex/katex.min.js").read_bytes()
