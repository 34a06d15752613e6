"""Blocks and models go down one path: the engine says what a spec is (`spec.form`, `trace.form`:
"block" or "model") and consumers key their tables on it. Testing a spec's type instead — calling
an `is_model`, `isinstance(..., ModelSpec)`, `hasattr(spec, "vocab")`, `getattr(spec, "layers",
None)` and the like, comparing a form with a literal, or looking for a `"model"` key in a mapping —
is allowed only in the one engine function that decides it (`engine.model_spec.form_of`). Read with `ast` from the sources, as test_layers.py does."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "symblock"
ALLOWED = {"engine/model_spec.py": 1}   # form_of decides
MODEL_ATTRS = {"vocab", "describe", "layers", "prompt", "generate", "kv_cache", "W_E", "positions"}
TYPES = {"ModelSpec", "BlockSpec"}


def _name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def branches(tree: ast.AST) -> list[int]:
    """Lines that test whether a spec is a model by something other than its form."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f, args = _name(node.func), node.args
            if f == "is_model":
                lines.append(node.lineno)
            elif f == "isinstance" and len(args) == 2 and (
                    {_name(a) for a in (args[1].elts if isinstance(args[1], ast.Tuple) else [args[1]])} & TYPES):
                lines.append(node.lineno)
            elif f in ("hasattr", "getattr") and len(args) >= 2 and isinstance(args[1], ast.Constant) \
                    and args[1].value in MODEL_ATTRS and (f == "hasattr" or len(args) == 3):
                lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "is_model":
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            literal = {s.value for s in sides if isinstance(s, ast.Constant)}
            if literal & {"model", "block"} and (
                    any(_name(s) == "form" for s in sides)
                    or (literal == {"model"} and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops))):
                lines.append(node.lineno)
    return sorted(set(lines))


def sites(root: Path = ROOT) -> dict[str, list[int]]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        found = branches(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            out[rel] = found
    return out


def test_only_the_engine_tells_a_model_from_a_block():
    found = sites()   # exercises/ too: a variant's rules and the decoder preset key on the form
    extra = {rel: lines for rel, lines in found.items() if len(lines) > ALLOWED.get(rel, 0)}
    assert not extra, ("a model told from a block outside the engine's form_of (key a table on "
                       f"spec.form instead): {extra}")


def test_the_counter_sees_each_spelling_of_the_branch(tmp_path):
    """A planted branch of each spelling is found; a table keyed on the form is not a branch."""
    planted = {
        "a.py": "def f(spec):\n    from symblock.exercises.decoder import is_model\n    return is_model(spec)\n",
        "b.py": "def f(s):\n    return isinstance(s, ModelSpec)\n",
        "c.py": "def f(t):\n    if hasattr(t.spec, 'vocab'):\n        return 1\n",
        "d.py": "def f(t):\n    return t.spec.form == 'model'\n",
        "e.py": "def f(data):\n    return 'model' in data\n",
        "f.py": "def f(self):\n    return self.is_model\n",
        "g.py": "def f(spec):\n    return getattr(spec, 'layers', None) or [spec]\n",
        "ok.py": "RUNS = {'block': 1, 'model': 2}\ndef f(t):\n    return RUNS[t.form]\n",
    }
    for name, text in planted.items():
        (tmp_path / name).write_text(text)
    found = sites(tmp_path)
    assert set(found) == set(planted) - {"ok.py"}
    assert found["a.py"] == [3] and found["c.py"] == [2]


def test_the_engine_decides_the_form_from_the_spec_alone():
    from symblock.engine import model_spec, spec as specmod
    from symblock.exercises.generate import load
    assert model_spec.form_of({"model": {}}) == "model" and model_spec.form_of({"dims": {}}) == "block"
    assert model_spec.form_of(["model"]) == "block"
    assert load("tiny-gpt", allow_model=True).form == "model"
    assert specmod.load("seed-post-ln").form == "block"


def test_the_checker_reads_answers_by_the_spec_form():
    """A model's token written as a string becomes its index; a block's answers are left as they are
    (a block has no vocabulary), even under a model-like name."""
    from symblock.engine import spec as specmod
    from symblock.exercises.generate import load
    from symblock.grading import plan
    model = load("tiny-decoder", allow_model=True)
    data = {"steps": {"gen1.next_token": "mat"}}
    assert plan.normalise(data, model)["steps"]["gen1.next_token"] == [[model.vocab.index("mat")]]
    assert plan.normalise(data, specmod.load("seed-post-ln")) is data
