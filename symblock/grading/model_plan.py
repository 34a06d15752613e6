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


def diagnoser(name: str, spec):
    """(answer, envs, matches) -> the codes of the slips that reproduce the answer for `name`."""
    def run(answer, envs, matches) -> list[str]:
        found = diagnose(name, spec, answer, envs, matches, catalogue=MODEL_CATALOGUE)
        frames = [model_step.frame(name, e, spec) for e in envs]
        if frames and frames[0] is not None:   # a layer's or the final norm's step: the block's slips too
            local, _, block = frames[0]
            found += diagnose(local, block, answer, [f[1] for f in frames], matches)
        return list(dict.fromkeys(found))
    return run


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
    t = names.parse(name).gen
    n = len(spec.prompt) + t
    if not isinstance(rows, list) or not all(isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= n
                                             for r in rows):
        raise SpecError("answers", f"steps.{name}.rows", f"expected a list of row numbers 1..{n} (the rows "
                        "of the cache that were reused)")
    return [[1 if r + 1 in rows else 0 for r in range(n)]]
