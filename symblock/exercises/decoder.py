"""The `decoder` preset: one generation step of a tiny GPT with the KV cache, as an exercise.

The prompt has been run and its keys and values are cached; the first generated token is fed
back in. The student works that one new row: its embedding and position rows (`gen1.embed`,
`gen1.pos`, `gen1.x`), then per layer its q/k/v row, the cache after appending (`cache.k`,
`cache.v`), which cache rows were reused (`cache.reused`, the conceptual task: 1 for a row read
from the cache, 0 for the one row computed now), its one row of scores and weights, the rest of
the block, and finally `gen1.logits`, `gen1.probs` and `gen1.next_token`. The data are what those
steps read: W_E, W_P, the layers' weights and the prompt pass's cached K and V.

`cache.reused` is not a step of the engine (the engine only records the cache); its value is
derived from the trace here, so the sheet, the key and the checker share one definition.

A model's variants are usable only when their new row is hand-workable (`problem`): softmax
inputs within ±3, live weights in [0.02, 0.9] with no ties, no all-zero q/k/v row, a ReLU input
with an entry of each sign, no norm row whose mean is 0, and no logit tie (the engine refuses one already). The next token
is one of a handful (the vocabulary) and the reused rows are the same for all: both stay outside
the set's variety guarantee.
"""
from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from symblock.engine import names
from symblock.errors import SpecError

if TYPE_CHECKING:
    from symblock.engine.block import Trace, TracedSpec
    from symblock.engine.matrix import Mat
    from symblock.engine.model_spec import ModelSpec, Spec

PRESET = "decoder"
POSITIONS = "positions"            # a model's sinusoidal position table alone (positions_exercise)
ASKED_GEN = 1                      # the generation step a decoder sheet asks
GEN = names.name_of("", gen=ASKED_GEN)
REUSED = "cache.reused"            # per layer: gen1.layer{i}.cache.reused
MEMORY_KV = ("cross_k", "cross_v")  # an encoder-decoder's cross K/V: worked once from the memory, given
SCALED_RANGE = (-3, 3)
WEIGHT_RANGE = (Fraction(1, 50), Fraction(9, 10))


def reused_name(layer: int) -> str:
    return f"{GEN}layer{layer}.{REUSED}"


def reused_value(trace: Trace, layer: int) -> Mat:
    """1 for each cache row taken over from the prompt pass, 0 for the row appended now (1 × m+1)."""
    from symblock.engine import exact
    from symblock.engine.matrix import Mat
    rows = trace[f"{GEN}layer{layer}.cache.k"].value.shape[0]
    return Mat([[exact.real(1)] * (rows - 1) + [exact.real(0)]])


def _one_block(spec: TracedSpec, where: str) -> None:
    raise SpecError(spec.source, where, "the decoder preset needs a model spec (a `model:` "
                    "section, e.g. the example tiny-decoder); this spec is one block")


def require(spec: TracedSpec, where: str = "exercise.preset") -> None:
    """The decoder preset needs a model with the KV cache and one generated token at least; `where`
    names what asked for it (the spec's exercise.preset, or --preset)."""
    {"block": _one_block, "model": _cached_model}[spec.form](spec, where)


def _cached_model(spec: ModelSpec, where: str) -> None:
    if spec.kind == "encoder":   # no generation: its answers are checked step by step (encoder_exercise)
        return
    # both settings named at once, and a sinusoidal table's own preset (it may be all that is meant)
    needs = [f for f, bad in (("model.kv_cache: true", not spec.kv_cache),
                              ("model.generate to 1 or more", spec.generate < 1)) if bad]
    if needs:
        table = (f", or give --preset {POSITIONS} for the position table alone"
                 if spec.positions == "sinusoidal" else "")
        raise SpecError(spec.source, needs[0].split(" ")[0].rstrip(":"), "the decoder preset (a model spec's "
                        f"default) asks the first generated token from the KV cache: set {' and '.join(needs)}{table}")


def choose(trace: Trace, preset: str | None = None) -> dict:
    """The decoder exercise for a model's trace: the fields of presets.Exercise."""
    spec = trace.spec
    if preset == POSITIONS:
        return positions_exercise(trace)
    if preset not in (None, PRESET):
        raise SpecError(spec.source, "--preset", f"a model spec's worksheet is the {PRESET} preset "
                        f"(got {preset!r}) or the {POSITIONS} preset; leave --preset out or give "
                        f"--preset {PRESET}")
    require(spec)
    if spec.kind == "encoder":
        return encoder_exercise(trace)
    ask, extra = [], {}
    for step in trace:
        parsed = names.parse(step.name)
        if parsed.gen != ASKED_GEN or parsed.kind in ("output", *MEMORY_KV):
            continue
        ask.append(step.name)
        if parsed.kind == "cache_v":
            extra[reused_name(parsed.layer)] = reused_value(trace, parsed.layer)
            ask.append(reused_name(parsed.layer))
    reads = set()
    for name in ask:
        if name in trace:
            reads.update(trace[name].inputs)
    # a step of the new row that is not asked is a copy (the layer's output): never printed as data
    data_steps = tuple(n for n in trace.names() if n in reads and n not in ask
                       and (names.parse(n).gen != ASKED_GEN or names.parse(n).kind in MEMORY_KV))
    data_params = tuple(p for p in trace.params if p in reads)
    return {"ask": tuple(ask), "data_steps": data_steps, "data_params": data_params,
            "points": {n: 1 for n in ask}, "extra": extra,
            "categorical": tuple(n for n in ask if names.parse(n).kind == "next_token")}


def positions_exercise(trace: Trace) -> dict:
    """The `positions` preset: the sinusoidal table P of the prompt's positions (and the source's,
    for an encoder-decoder) from the formula and its base, nothing else; no weights are read. The
    table is the same in every variant (it depends on no draw): outside the variety guarantee."""
    spec = trace.spec
    if spec.positions != "sinusoidal":
        raise SpecError(spec.source, "model.positions", f"the {POSITIONS} preset asks the sinusoidal "
                        f"position table; set model.positions: sinusoidal (got {spec.positions})")
    ask = tuple(s.name for s in trace if names.parse(s.name).kind == "pos" and names.parse(s.name).gen == 0)
    return {"ask": ask, "data_steps": (), "data_params": (), "points": {n: 1 for n in ask},
            "extra": {}, "categorical": ask}


def encoder_exercise(trace: Trace) -> dict:
    """An encoder model (BERT-like, no generation): every computed step is asked, as a block's full
    preset does, the input rows and the layers' copies given."""
    ask = tuple(s.name for s in trace if not s.given and names.parse(s.name).kind not in ("output",))
    reads = {i for n in ask for i in trace[n].inputs}
    return {"ask": ask, "data_steps": tuple(n for n in trace.names() if n in reads and n not in ask),
            "data_params": tuple(p for p in trace.params if p in reads), "points": {n: 1 for n in ask},
            "extra": {}, "categorical": ()}


def problem(trace: Trace) -> str | None:
    """Why this model's variant is no good hand exercise (None: it is)."""
    from symblock.engine import exact
    for step in trace:
        name, parsed = step.name, names.parse(step.name)
        if parsed.gen != ASKED_GEN:
            continue
        if parsed.kind in ("q", "k", "v") and all(e.sign() == 0 for e in step.value.rows[0]):
            return f"{name}: an all-zero row"
        if _softmax_input(parsed, trace):
            row = step.value.rows[0]
            if any((e - exact.real(SCALED_RANGE[1])).sign() > 0 or (e - exact.real(SCALED_RANGE[0])).sign() < 0
                   for e in row):
                return f"{name}: a softmax input outside {SCALED_RANGE}"
            if len({(int(e.q.p), int(e.q.q)) if e.is_rational else e.digits(30) for e in row}) < len(row):
                return f"{name}: two equal softmax inputs"
        if parsed.kind == "hidden" and trace.spec.options.activation == "relu" and \
                not ({e.sign() for e in step.value.rows[0]} >= {-1, 1}):
            return f"{name}: ReLU's input needs an entry of each sign"
        if parsed.kind == "mean" and step.value.rows[0][0].sign() == 0:
            return f"{name}: a row mean of 0 (the same answer in many variants)"
        if parsed.kind == "weights":
            lo, hi = (exact.real(w) for w in WEIGHT_RANGE)
            if any((e - lo).sign() < 0 or (e - hi).sign() > 0 for e in step.value.rows[0]):
                return f"{name}: a weight outside [{WEIGHT_RANGE[0]}, {WEIGHT_RANGE[1]}]"
    return None


def _softmax_input(step: names.StepName, steps) -> bool:
    """Whether a head's step is what its softmax reads: `.scaled`, or `.scores` when unscaled."""
    return step.kind == "scaled" or (step.kind == "scores" and step.head_step("scaled") not in steps)


def variant_key(spec: ModelSpec) -> tuple:
    """The drawn numbers of a model's variant: equal keys, equal exercises."""
    def rows(m):
        return () if m is None else tuple(tuple(str(e) for e in m.row(i)) for i in range(m.rows))
    layers = tuple(tuple(sorted((k, rows(v)) for k, v in layer.params.items())) for layer in spec.layers)
    return rows(spec.W_E), rows(spec.W_P), rows(spec.W_U), layers


def token_index(value) -> int:
    """The token a next_token step holds (an exact integer entry, the vocabulary index from 0)."""
    return int(float(value.rows[0][0] if hasattr(value, "rows") else value))


MARGIN = 1e-6   # a float is trusted to reject only this far beyond a bound


def prefilter(spec: ModelSpec) -> str | None:
    """`problem` judged first in float64 (reference/numeric_model.py), to turn down most seeds
    without their exact forward; it rejects only what is beyond a bound by MARGIN, and decides
    nothing when two logits are that close (the floats' next token could then be another), so
    every seed it keeps is judged again exactly and what it rejects would be rejected exactly."""
    import numpy as np
    from symblock.reference import numeric_model
    try:
        steps = numeric_model.forward(spec)
    except (ValueError, ArithmeticError):   # e.g. a zero-variance row: the exact forward says so
        return None
    for name, v in steps.items():
        if names.parse(name).kind == "logits":
            top = np.sort(v[-1])[-2:]
            if top[1] - top[0] < MARGIN:
                return None
    lo, hi = (float(w) for w in WEIGHT_RANGE)
    for name, v in steps.items():
        parsed = names.parse(name)
        if parsed.gen != ASKED_GEN:
            continue
        if _softmax_input(parsed, steps) \
                and (v.max() > SCALED_RANGE[1] + MARGIN or v.min() < SCALED_RANGE[0] - MARGIN):
            return f"{name}: a softmax input outside {SCALED_RANGE}"
        if parsed.kind == "weights" and (v.min() < lo - MARGIN or v.max() > hi + MARGIN):
            return f"{name}: a weight outside [{WEIGHT_RANGE[0]}, {WEIGHT_RANGE[1]}]"
        if parsed.kind == "hidden" and spec.options.activation == "relu" and \
                (v.max() < -MARGIN or v.min() > MARGIN):
            return f"{name}: ReLU's input needs an entry of each sign"
    return None
