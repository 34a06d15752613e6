"""What the checker walks for a model spec (a decoder sheet): every step of the model's trace in
forward order, each recomputed from a person's chain by model_step, plus the decoder's conceptual
task (`gen1.layer0.cache.reused`, whose answer does not depend on numbers). A layer's step is
diagnosed with the block's catalogue on the layer's block (its names mapped as model_step maps
them) and with the model's own slips (mistakes.MODEL_CATALOGUE); the model's steps with the
latter. Answers may name the next token by its string; `normalise` turns it into its index.
"""
from __future__ import annotations

from symblock.engine import names
from symblock.grading import model_step
from symblock.grading.mistakes import MODEL_CATALOGUE, diagnose
from symblock.grading.plan import Item


def items(trace, exercise) -> list[Item]:
    spec = trace.spec
    out = []
    for s in trace:
        out.append(Item(s.name, s.value, model_step.inputs(s.name, s.inputs, spec), s.given,
                        lambda chain, n=s.name: model_step.recompute(n, chain, spec), True,
                        diagnoser(s.name, spec)))
        for name, value in exercise.extra.items():   # the conceptual task, after the cache it asks about
            if s.name == name.replace("cache.reused", "cache.v"):
                out.append(Item(name, value, (), False, lambda chain, v=value: v, False))
    return out


def diagnoser(name: str, spec):
    """(answer, envs, matches) -> the codes of the slips that reproduce the answer for `name`."""
    prefix, t, layer, rest = model_step.parse(name)

    def run(answer, envs, matches) -> list[str]:
        found = diagnose(name, spec, answer, envs, matches, catalogue=MODEL_CATALOGUE)
        if layer is not None and names.parse(rest).section != "cache":
            local = [model_step.local_env(e, prefix, layer, t, spec) for e in envs]
            found += diagnose(rest, model_step.layer_spec(spec, layer, t), answer, local, matches)
        elif names.parse(rest).norm == "norm_final":
            local = [model_step.final_env(e, prefix, spec) for e in envs]
            found += diagnose(rest, model_step.final_spec(spec, t), answer, local, matches)
        return list(dict.fromkeys(found))
    return run


def shapes(items_: list[Item]) -> dict[str, tuple[int, int]]:
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
    t = model_step.parse(name)[1]
    n = len(spec.prompt) + t
    if not isinstance(rows, list) or not all(isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= n
                                             for r in rows):
        raise SpecError("answers", f"steps.{name}.rows", f"expected a list of row numbers 1..{n} (the rows "
                        "of the cache that were reused)")
    return [[1 if r + 1 in rows else 0 for r in range(n)]]
