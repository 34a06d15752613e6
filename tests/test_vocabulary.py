"""One step vocabulary: outside symblock/engine no code cuts step or parameter names apart. A name is
read with `names.parse` / `parameters.parse` (or a worksheet ID with `variants.split_id`), so a new
prefix, head or kind is taught to one parser, not found by grep in twenty consumers.

Read with `ast` from the sources, nothing imported. Flagged, outside the engine:
- `x.split(".")`, `rsplit(".")`, `partition(".")`, `rpartition(".")`: a dotted name cut at its dots;
- `startswith` / `endswith` / `removeprefix` / `removesuffix` with a literal that is a fragment of
  the vocabulary ("attn.h", ".mean", ".gamma", "grad.", "layer", "norm", "ln", "W_", "b_", ...);
- a regular expression (`re.compile`, `re.match`, ...) whose pattern spells such a fragment;
- a slice `name[len(s.prefix):]` (a prefix cut off by hand), or `".mean" in name`.
"""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "symblock"
ENGINE = "engine"

# the parts of step and parameter names (the step names; digits of b1, layer0, h0 stripped)
WORDS = {"grad", "gen", "b", "layer", "attn", "h", "q", "k", "v", "scores", "scaled", "masked", "weights",
         "out", "concat", "resid", "ffn", "hidden", "gate", "act", "output", "norm", "norm_final",
         "mean", "var", "std", "ms", "rms", "dropped", "cache", "reused", "embed", "pos", "logits",
         "probs", "next_token", "x", "X", "ln", "ln_final", "ln_embed", "gamma", "beta"}
BARE = re.compile(r"^(grad|gen|layer|attn|norm|ln|cache|resid|W_|b_)")   # a fragment without a dot
IN_PATTERN = re.compile(r"grad|gen\W|layer|attn|ffn|norm|cache|resid|dropped|gamma|beta|\bW_|\bb_|\\\.h")
CUTS = {"split", "rsplit", "partition", "rpartition"}
TESTS = {"startswith", "endswith", "removeprefix", "removesuffix"}
REGEX = {"compile", "match", "fullmatch", "search", "sub", "subn", "findall", "finditer", "split"}

# (module path, function): why it may cut a name by hand. Keep it short and every reason true.
ALLOWED = {
    ("symblock/exercises/variants.py", "split_id"):
        "the worksheet ID's one parser: token.seed, no step name",
    ("symblock/exercises/generate.py", "plan"):
        "the drawn γ, β chosen by their norm (ln1 of ln1.gamma) and biases by b_: to read parameters.parse",
    ("symblock/exercises/generate.py", "space_bound"):
        "a weight's sparsity read from W_: to read parameters.parse(name).kind",
}


def looks_like_a_name(text: str) -> bool:
    """A literal that is part of a step or parameter name: a dotted word of the vocabulary
    ("attn.h", ".mean", "layer0.") or a prefix of one ("grad", "norm", "ln", "W_")."""
    if "." in text:
        return any(re.sub(r"\d+$", "", w) in WORDS for w in text.split(".") if w)
    return bool(BARE.match(text))


def literals(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def flagged(call: ast.AST) -> str | None:
    """What the node does to a name by hand, or None."""
    if isinstance(call, ast.Subscript) and isinstance(call.slice, ast.Slice):
        lo = call.slice.lower
        if isinstance(lo, ast.Call) and getattr(lo.func, "id", None) == "len" and lo.args \
                and isinstance(lo.args[0], ast.Attribute) and lo.args[0].attr == "prefix":
            return "cuts a prefix off with a slice"
        return None
    if isinstance(call, ast.Compare) and isinstance(call.ops[0], (ast.In, ast.NotIn)) \
            and isinstance(call.left, ast.Constant) and isinstance(call.left.value, str) \
            and "." in call.left.value and looks_like_a_name(call.left.value):
        return f"looks for {call.left.value!r} inside a name"
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args):
        return None
    attr, arg = call.func.attr, call.args[0]
    is_re = isinstance(call.func.value, ast.Name) and call.func.value.id == "re"
    if is_re and attr in REGEX:
        if any(IN_PATTERN.search(t) for t in literals(arg)):
            return f"re.{attr} on a name's pattern"
        return None
    if attr in CUTS and isinstance(arg, ast.Constant) and arg.value == ".":
        return f'{attr}(".")'
    if attr in TESTS and any(looks_like_a_name(t) for t in literals(arg)):
        return f"{attr}({', '.join(map(repr, literals(arg)))})"
    return None


def scopes(tree: ast.AST):
    """(innermost function name or "<module>", node) for every node of the module."""
    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            yield name, child
            yield from walk(child, name)
    yield from walk(tree, "<module>")


def hand_parsing(root: Path) -> list[tuple[str, str, int, str]]:
    """(path, function, line, what) of every name cut by hand outside the engine."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == ENGINE:
            continue
        for where, node in scopes(ast.parse(path.read_text(encoding="utf-8"))):
            if (what := flagged(node)):
                out.append((f"symblock/{rel.as_posix()}", where, node.lineno, what))
    return out


def test_no_code_outside_the_engine_parses_names():
    bad = [f"{p}:{line} in {fn}: {what}" for p, fn, line, what in hand_parsing(ROOT) if (p, fn) not in ALLOWED]
    assert not bad, ("names cut apart by hand (read them with engine/names.parse or "
                     "engine/parameters.parse):\n" + "\n".join(bad))


def test_the_allow_list_is_still_needed():
    """An allowed function that no longer cuts names leaves the list, so the list only shrinks."""
    used = {(p, fn) for p, fn, _, _ in hand_parsing(ROOT)}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"allowed but no longer parsing names by hand (remove them from ALLOWED): {stale}"


@pytest.mark.parametrize("planted", [
    'name.rsplit(".", 1)[0]',
    'name.startswith("attn.h")',
    'name.endswith((".gamma", ".beta"))',
    'name.startswith(prefix + "layer")',
    're.match(r"^gen(\\d+)\\.", name)',
    'name[len(step.prefix):]',
    '".h" in name',
])
def test_a_planted_hand_parse_is_caught(tmp_path, planted):
    copy = tmp_path / "symblock"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "sheets" / "builder.py"
    target.write_text(target.read_text(encoding="utf-8") + f"\n\ndef _planted(name, prefix, step):\n    return {planted}\n",
                      encoding="utf-8")
    found = [(p, fn) for p, fn, _, _ in hand_parsing(copy)]
    assert ("symblock/sheets/builder.py", "_planted") in found


@pytest.mark.parametrize("innocent", [
    'name.endswith(".tex")', 'text.split(",")', 'flag.startswith("-")', 'part.startswith("key.")',
    're.fullmatch(r"h[a-z2-7]{8}", name)', 'name.startswith("h")', '"." in text', '"x" in given',
])
def test_file_names_and_flags_are_not_names(innocent):
    """The rule reads the vocabulary, not every dot: file names, flags and IDs pass."""
    tree = ast.parse(innocent)
    assert not [n for n in ast.walk(tree) if flagged(n)]
