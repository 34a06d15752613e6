"""What the checker walks: the block's steps in forward order and, for a backprop exercise, the
gradient steps in backward order, each with its true value, the items it reads and how to
recompute it from a person's own earlier answers (their *chain*).

Forward steps recompute with `recompute.compute`. A gradient dL/d(name) is the sum, over the live
steps c that read `name`, of c's local backward rule (`calculus.grad.RULES`) applied to dL/dc from
the chain; the forward values those rules read are the exact trace (a backprop sheet prints them
as data). So a wrong dL/d(ffn.out) carries into dL/d(ffn.act) exactly as a wrong forward step does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from symblock.engine import names
from symblock.engine.matrix import Mat
from symblock.grading import recompute
from symblock.grading.mistakes import MODEL_CATALOGUE, diagnose

if TYPE_CHECKING:
    from symblock.engine.block import Trace
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


def forward_items(trace: Trace, spec: BlockSpec) -> list[Item]:
    from symblock.grading.recompute import compute
    return [Item(s.name, s.value, tuple(s.inputs), s.given,
                 lambda chain, n=s.name: compute(n, chain, spec), True) for s in trace]


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


def shapes(trace: Trace, items: list[Item]) -> dict[str, tuple[int, int]]:
    """Every name an answers file may use, with its shape (steps.step_shapes plus the items)."""
    from symblock.engine.steps import step_shapes
    spec = trace.spec
    out = step_shapes(spec.dims, spec.options)
    out.update({i.name: i.value.shape for i in items})
    return out


# What the checker walks for a model spec (a decoder sheet): every step of the model's trace in
# forward order, each recomputed from a person's chain by recompute's model steps, plus the decoder's conceptual
# task (`gen1.layer0.cache.reused`, whose answer does not depend on numbers). A layer's step is
# diagnosed with the block's catalogue on the layer's block (its names mapped as recompute maps
# them) and with the model's own slips (mistakes.MODEL_CATALOGUE); the model's steps with the
# latter. Answers may name the next token by its string; `normalise` turns it into its index.


def items(trace, exercise) -> list[Item]:
    spec = trace.spec
    out = []
    for s in trace:
        out.append(Item(s.name, s.value, recompute.inputs(s.name, s.inputs, spec), s.given,
                        lambda chain, n=s.name: recompute.recompute(n, chain, spec), True,
                        diagnoser(s.name, spec)))
        for name, value in exercise.extra.items():   # the conceptual task, after the cache it asks about
            if s.name == name.replace("cache.reused", "cache.v"):
                out.append(Item(name, value, (), False, lambda chain, v=value: v, False))
    return out


def diagnoser(name: str, spec):
    """(answer, envs, matches) -> the codes of the slips that reproduce the answer for `name`."""
    prefix, t, layer, rest = recompute.parse(name)

    def run(answer, envs, matches) -> list[str]:
        found = diagnose(name, spec, answer, envs, matches, catalogue=MODEL_CATALOGUE)
        if layer is not None and names.parse(rest).section != "cache":
            local = [recompute.local_env(e, prefix, layer, t, spec) for e in envs]
            found += diagnose(rest, recompute.layer_spec(spec, layer, t), answer, local, matches)
        elif names.parse(rest).norm == "norm_final":
            local = [recompute.final_env(e, prefix, spec) for e in envs]
            found += diagnose(rest, recompute.final_spec(spec, t), answer, local, matches)
        return list(dict.fromkeys(found))
    return run


def model_shapes(items_: list[Item]) -> dict[str, tuple[int, int]]:
    return {i.name: i.value.shape for i in items_}


def normalise(data: dict, spec) -> dict:
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
    t = recompute.parse(name)[1]
    n = len(spec.prompt) + t
    if not isinstance(rows, list) or not all(isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= n
                                             for r in rows):
        raise SpecError("answers", f"steps.{name}.rows", f"expected a list of row numbers 1..{n} (the rows "
                        "of the cache that were reused)")
    return [[1 if r + 1 in rows else 0 for r in range(n)]]
