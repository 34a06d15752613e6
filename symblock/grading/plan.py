"""What the checker walks: the block's steps in forward order and, for a backprop exercise, the
gradient steps in backward order, each with its true value, the items it reads and how to
recompute it from a person's own earlier answers (their *chain*).

Forward steps recompute with `recompute.recompute` (a block's or a model's). A gradient dL/d(name)
is the sum, over the live steps c that read `name`, of c's local backward rule (`calculus.grad.RULES`)
applied to dL/dc from the chain; the forward values those rules read are the exact trace (a backprop sheet prints them
as data). So a wrong dL/d(ffn.out) carries into dL/d(ffn.act) exactly as a wrong forward step does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from symblock.engine import exact, names, printed
from symblock.engine.matrix import Mat
from symblock.engine.steps import step_shapes
from symblock.grading import recompute
from symblock.grading.mistakes import MODEL_CATALOGUE, diagnose

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec


@dataclass(frozen=True)
class Item:
    name: str
    value: Mat                        # the truth
    inputs: tuple[str, ...]           # items (and parameters) it is computed from
    given: bool
    recompute: Callable[[dict], Mat]  # the item from a chain {name: Mat}
    diagnosable: bool                 # the mistake catalogue knows this item's slips
    diagnoser: Callable | None = None # (answer, envs, matches) -> codes; None: mistakes.diagnose

    def from_chain(self, chain: dict, deps: list[str], truth: dict) -> Mat | None:
        """The item recomputed from a person's `chain`, or None when the chain is the truth on
        `deps` (the item's own inputs) or cannot give it (their σ is 0; a matrix of another shape)."""
        if self.given or all(chain[i] is truth[i] for i in deps):
            return None
        try:
            return self.recompute(chain)
        except (ArithmeticError, ValueError, KeyError, IndexError):
            return None


@dataclass(frozen=True)
class Form:
    """What the checker does its own way for one form of spec (engine: `spec.form`)."""
    diagnoser: Callable   # (step name, spec) -> an Item's diagnoser (None: mistakes.diagnose)
    names: Callable       # (spec) -> {name: shape} an answers file may use besides the items
    normalise: Callable   # (answers mapping, spec) -> the mapping as answers.py reads it


def items(trace, exercise) -> list[Item]:
    """Every item of either form: the trace's steps in forward order (each followed by the asked
    tasks that are no engine step, e.g. a decoder's `cache.reused` after the cache it asks about),
    then a backprop exercise's gradients."""
    out = forward_items(trace, trace.spec)
    for name, value in exercise.extra.items():
        after = next(i for i, it in enumerate(out) if it.name == names.parse(name).sibling("cache.v"))
        out.insert(after + 1, Item(name, value, (), False, lambda chain, v=value: v, False))
    if exercise.backward is not None:
        out += backward_items(exercise.backward, trace.spec)
    return out


def forward_items(trace, spec) -> list[Item]:
    """The trace's steps, each recomputed from a chain (recompute.recompute, either form)."""
    diagnoser = FORMS[spec.form].diagnoser
    return [Item(s.name, s.value, recompute.inputs(s.name, s.inputs, spec), s.given,
                 lambda chain, n=s.name: recompute.recompute(n, chain, spec), True, diagnoser(s.name, spec))
            for s in trace]


def backward_items(back, spec: BlockSpec) -> list[Item]:
    """dL/d every live step (backward order), then dL/d each `wrt` parameter."""
    trace = back.trace
    live = {g.of for g in back.steps}
    out = []
    for g in back.steps:
        readers = [s for s in trace if s.name in live and g.of in s.inputs]
        out.append(_grad_item(g, readers, back, spec))
    for name, g in back.wrt.items():
        if name not in trace:
            out.append(_grad_item(g, [s for s in trace if s.name in live and name in s.inputs], back, spec))
    return out


def _grad_item(g, readers: list, back, spec: BlockSpec) -> Item:
    from symblock.calculus.grad import GRAD_PREFIX, RULES, step_kind, zeros
    trace = back.trace

    def value_of(name):
        return trace[name].value if name in trace else trace.params.get(name)

    def recompute(chain: dict) -> Mat:
        total = zeros(*g.value.shape)
        for s in readers:
            rule = RULES[step_kind(s.name, spec)][0]
            part = rule(s, chain[GRAD_PREFIX + s.name], value_of, spec, lambda i: i == g.of).get(g.of)
            if part is not None:
                total = total + part
        return total

    return Item(g.name, g.value, tuple(GRAD_PREFIX + s.name for s in readers), False, recompute, False)


def shapes(trace, items: list[Item]) -> dict[str, tuple[int, int]]:
    """Every name an answers file may use, with its shape (a block's steps.step_shapes plus the items)."""
    out = FORMS[trace.form].names(trace.spec)
    out.update({i.name: i.value.shape for i in items})
    return out


# Given data is read off the sheet: a step it prints (H_1 ≈ 0.507 …) enters the person's chain as
# printed, at the sheet's places, so the next step worked from those numbers is their honest rounding,
# as the key's own worked lines are ("from exact values: ≈ …" where they differ); the truth stays exact.

def as_printed(value: Mat, places: int | None) -> Mat:
    """`value` with each entry as a sheet prints given data: rounded half away from zero to `places`;
    −∞, an exact entry of at most `places` decimals and a magnitude the sheet prints in scientific
    notation (outside [10⁻⁴, 10⁶), with its significant digits) unchanged. The same object when no
    entry changes, `places` is None (the places are not known), or every entry is plain: such a
    matrix is printed exactly, with no rounded copy beside it (sheets.numbers.matrix_value)."""
    if places is None or all(printed.is_plain(e) for row in value.rows for e in row):
        return value
    rows = [[_printed(e, places) for e in row] for row in value.rows]
    same = all(p is e for row, vrow in zip(rows, value.rows) for p, e in zip(row, vrow))
    return value if same else Mat(rows)


def _printed(e, places: int):
    if e is exact.NEG_INF:
        return e
    r = exact.real(e)
    q = printed.fraction(r)
    if q is not None and (q * 10 ** places).denominator == 1:
        return e   # an exact decimal of at most `places` places: printed as it is
    if r.sign() == 0 or printed.is_scientific(r):
        return e
    return printed.rounded(r, places)


def normalise(data: dict, spec) -> dict:
    """An answers mapping as answers.py reads it (a model's tokens given as strings made indices)."""
    return FORMS[spec.form].normalise(data, spec)


# A model spec (a decoder sheet): every step of the model's trace, plus the decoder's conceptual
# task (`gen1.layer0.cache.reused`, whose answer does not depend on numbers). A layer's step is
# diagnosed with the block's catalogue on the layer's block (in its frame, recompute.frame) and with
# the model's own slips (mistakes.MODEL_CATALOGUE); the model's steps with the latter. Answers may
# name the next token by its string; `model_normalise` turns it into its index.

def model_diagnoser(name: str, spec):
    """(answer, envs, matches) -> the codes of the slips that reproduce the answer for `name`."""
    def run(answer, envs, matches) -> list[str]:
        found = diagnose(name, spec, answer, envs, matches, catalogue=MODEL_CATALOGUE)
        frames = [recompute.frame(name, e, spec) for e in envs]
        if frames and frames[0] is not None:   # a layer's or the final norm's step: the block's slips too
            local, _, block = frames[0]
            found += diagnose(local, block, answer, [f[1] for f in frames], matches)
        return list(dict.fromkeys(found))
    return run


def model_normalise(data: dict, spec) -> dict:
    """The answers mapping with each next_token given as a token string (or [["sat"]]) replaced by
    its index in the vocabulary, and a `cache.reused` given as {rows: [1, 2]} (rows from 1) as its
    row of flags; anything else is left for answers.py to judge."""
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, dict):
        return data
    out = dict(steps)
    for name, value in steps.items():
        name = str(name)
        if names.parse(name).kind == "next_token":
            out[name] = _token(value, spec.vocab)
        elif names.parse(name).kind == "cache_reused" and isinstance(value, dict) and set(value) == {"rows"}:
            out[name] = _flags(value["rows"], name, spec)
    return {**data, "steps": out}


def _token(value, vocab):
    inner = value
    while isinstance(inner, list) and len(inner) == 1:
        inner = inner[0]
    if isinstance(inner, str) and inner.strip() in vocab:
        return [[vocab.index(inner.strip())]]
    return [[inner]] if not isinstance(inner, (list, dict)) else value   # a bare index: one entry


def _flags(rows, name: str, spec):
    from symblock.errors import SpecError
    t = names.parse(name).gen
    n = len(spec.prompt) + t
    if not isinstance(rows, list) or not all(isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= n
                                             for r in rows):
        raise SpecError("answers", f"steps.{name}.rows", f"expected a list of row numbers 1..{n} (the rows "
                        "of the cache that were reused)")
    return [[1 if r + 1 in rows else 0 for r in range(n)]]


# What the checker does differently for each form of spec (engine: `spec.form`)
FORMS = {"block": Form(lambda name, spec: None, lambda spec: step_shapes(spec.dims, spec.options),
                       lambda data, spec: data),
         "model": Form(model_diagnoser, lambda spec: {}, model_normalise)}
