"""The package layout is the data flow of docs/development.md: every import goes down the layers (or stays
in its own package), no two modules import each other in a circle, and no module imports another
module's `_private` names. Imports inside functions count too: a lazy import is still a dependency.
Read with `ast` from the sources, so nothing is imported."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "symblock"

# the lowest layer first; a package may import its own modules and any package of a lower layer
LAYERS = [
    {"symblock.errors", "symblock.options"},
    {"symblock.engine"},
    {"symblock.reference", "symblock.calculus"},
    {"symblock.exercises"},
    {"symblock.sheets", "symblock.grading"},
    {"symblock.commands"},
    {"symblock.cli"},
    {"symblock.__main__", "symblock"},
]
# modules and functions still to be split along their seams: this list must end empty
STILL_LONG: set[str] = set()
DATA = {"symblock.examples", "symblock.templates"}


def module_name(path: Path) -> str:
    parts = ["symblock", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def unit(module: str) -> str:
    """The layer member a module belongs to: its package (symblock.engine) or itself."""
    parts = module.split(".")
    for n in (2, 1):
        if ".".join(parts[:n]) in set().union(*LAYERS) | DATA:
            return ".".join(parts[:n])
    raise AssertionError(f"{module} belongs to no layer of LAYERS: add it there")


def layer(module: str) -> int:
    u = unit(module)
    return -1 if u in DATA else next(i for i, group in enumerate(LAYERS) if u in group)


def imports(path: Path, name: str) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in the file."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("symblock")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("symblock"):
                out.append((mod, [a.name for a in node.names], node.lineno))
    return out


def resolve(mod: str, names: list[str], known: dict[str, Path]) -> list[str]:
    """`from symblock.engine import block` imports the module symblock.engine.block."""
    subs = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in known]
    return subs or [mod]


def graph() -> dict[str, set[str]]:
    known = modules()
    g = {}
    for name, path in known.items():
        g[name] = {t for mod, names, _ in imports(path, name) for t in resolve(mod, names, known)
                   if t != name}
    return g


def test_every_module_has_a_layer():
    for name in modules():
        layer(name)


def test_imports_only_go_down_the_layers():
    known = modules()
    bad = []
    for name, path in known.items():
        for mod, names, line in imports(path, name):
            for target in resolve(mod, names, known):
                if target == name or unit(target) == unit(name):
                    continue
                if layer(target) >= layer(name):
                    bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert not bad, "imports that go up or sideways:\n" + "\n".join(bad)


def test_no_import_circles():
    g = graph()
    state, stack, circles = {}, [], []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if state.get(m) == "open":
                circles.append(" -> ".join(stack[stack.index(m):] + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"
    for n in sorted(g):
        if n not in state:
            visit(n)
    # a package's __init__ importing its own modules is not a circle worth naming
    def inside(p: str, package: str) -> bool:
        return p == package or p.startswith(package + ".")
    circles = [c for c in circles if not all(inside(p, c.split(" -> ")[0]) for p in c.split(" -> "))]
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_no_private_names_cross_modules():
    known = modules()
    bad = [f"{path.relative_to(ROOT.parent)}:{line} imports {n} from {mod}"
           for name, path in known.items() for mod, names, line in imports(path, name)
           for n in names if n.startswith("_") and not n.startswith("__")]
    assert not bad, "\n".join(bad)


def test_no_module_is_too_long():
    long = {str(p.relative_to(ROOT.parent)): n for p in ROOT.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450
            and str(p.relative_to(ROOT.parent)) not in STILL_LONG}
    assert not long, f"modules over 450 lines (split them along their seams): {long}"


def test_grading_is_a_dozen_concepts():
    """Grading's files are named by concept (answers, recompute, mistakes, plan, marking, report, ...),
    not split by history: a twelfth module is the most it holds."""
    grading = sorted(p.stem for p in (ROOT / "grading").glob("*.py") if p.stem != "__init__")
    assert len(grading) <= 12, f"grading has {len(grading)} modules: {grading}"


def test_no_function_is_too_long():
    long = []
    for p in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 80 and node.name not in STILL_LONG:
                    long.append(f"{p.relative_to(ROOT.parent)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def test_only_the_commands_speak_argparse():
    """Command-line parsing lives in symblock/commands/ and cli.py; the layers below take values."""
    below = {n for n in modules() if layer(n) < layer("symblock.commands")}
    bad = [f"{modules()[n].relative_to(ROOT.parent)}:{node.lineno}" for n in sorted(below)
           for node in ast.walk(ast.parse(modules()[n].read_text(encoding="utf-8")))
           if isinstance(node, (ast.Import, ast.ImportFrom))
           and "argparse" in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module])]
    assert not bad, "argparse below the commands: " + ", ".join(bad)


@pytest.mark.parametrize("planted,what", [
    ("from symblock.sheets.sheet import Safe\n", "up"),
    ("from symblock.engine.spec import _kind\n", "private"),
    ("import argparse\n", "argparse"),
])
def test_the_checks_catch_a_planted_violation(tmp_path, monkeypatch, planted, what):
    """The walk is only worth something if it sees a planted upward or private import."""
    import shutil
    copy = tmp_path / "symblock"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "engine" / "matrix.py"
    target.write_text(target.read_text() + "\n\ndef _planted():\n    " + planted)
    monkeypatch.setattr(__import__(__name__), "ROOT", copy)
    check = {"up": test_imports_only_go_down_the_layers, "private": test_no_private_names_cross_modules,
             "argparse": test_only_the_commands_speak_argparse}[what]
    with pytest.raises(AssertionError):
        check()
