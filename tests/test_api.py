"""The public API: its docstring examples run as doctests (so the documented calls and outputs are
real), `import symblock` stays light, and the names it exposes are the documented ones."""
from __future__ import annotations

import doctest
import subprocess
import sys

import symblock
from symblock import api


def test_the_api_docstring_examples_run():
    for module in (api, symblock):
        result = doctest.testmod(module, extraglobs={"symblock": symblock}, optionflags=doctest.ELLIPSIS)
        assert result.attempted >= 1 and result.failed == 0, (module.__name__, result)


def test_import_symblock_loads_no_engine_numpy_sympy_or_torch():
    code = ("import sys, symblock; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'sympy', 'torch', 'flint') or m.startswith('symblock.engine')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_public_names():
    assert set(symblock.__all__) == {"load", "from_mapping", "forward", "verify", "spec_from", "SpecError"}
    for name in symblock.__all__:
        assert getattr(symblock, name).__doc__, name
