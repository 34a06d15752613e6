"""What a tiny GPT's run costs, from its layers' BlockSpecs and the run's sizes alone, so that the
model's loader (model_spec.py) can refuse a model too large before it draws the embedding and the
other layers, and the model's forward (model.py) before it runs."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from symblock.engine import block, cost as costmod
from symblock.engine.spec import BlockSpec, SpecError


def with_length(layer: BlockSpec, n: int) -> BlockSpec:
    """A layer's BlockSpec for a sequence of n rows (the weights do not depend on the length)."""
    return replace(layer, dims=replace(layer.dims, seq_len=n))


def run_cost(layers: Sequence[BlockSpec], vocab: int, n0: int, generate: int, kv_cache: bool) -> int:
    """`cost` from the layers' BlockSpecs and the run's sizes alone, so that the model's loader
    can refuse a model too large before it draws the embedding and the other layers."""
    NODE = costmod.NODE
    d, dims = layers[0].dims.d_model, layers[0].dims

    def full(m: int) -> int:
        return sum(block.cost(with_length(layer, m)) for layer in layers) + m * vocab * (d + NODE)

    def cached(m: int) -> int:  # one row through each layer, its scores and weights over m keys
        rows = sum(block.cost(with_length(layer, 1)) for layer in layers)
        k, v, h = dims.d_k, dims.d_v, dims.heads
        attention = len(layers) * h * (m * (k + 2 * NODE) + v * (m + NODE))
        return rows + attention + vocab * (d + NODE)
    steps = range(n0 + 1, n0 + generate + 1)
    return full(n0) + sum(cached(m) if kv_cache else full(m) for m in steps)


def refuse_cost(c: int, source: str) -> None:
    """Refuse a model run of `c` exact operations over the limit in force."""
    limit = costmod.current_limit()
    if c > limit:
        raise SpecError(source, "model", f"this model needs about {c:,} exact operations, over "
                        f"the exact engine's limit of {costmod.limit_text(limit)}; use fewer layers, tokens or dims, or raise "
                        "the limit with --max-cost N (or SYMBLOCK_MAX_COST=N)")
