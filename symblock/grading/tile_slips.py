"""The slips of the online softmax over key tiles (engine/online_softmax.py), for the mistake
catalogue (mistakes.py): a later tile whose earlier sum or accumulator was carried over without
the rescaling e^(m_old − m_new), as if the running maximum had not moved."""
from __future__ import annotations

from symblock.engine import names
from symblock.engine.online_softmax import running_acc, running_sum
from symblock.engine.steps import value_columns
from symblock.engine.tiles import key_blocks
from symblock.grading.recompute import inputs_of


def later_tile(*kinds: str):
    """Applies to these tile kinds from the second tile on (the first has nothing to rescale)."""
    def applies(name: str, spec) -> bool:
        p = names.parse(name)
        return p.kind in kinds and bool(p.tile)
    return applies


def _keys(name: str, spec) -> range:
    return key_blocks(spec.dims.seq_len, spec.options.attention_tiles)[names.parse(name).tile]


def sum_not_rescaled(name: str, env: dict, spec):
    """ℓ_j = ℓ_{j−1} + Σ e^(s − m_j): the earlier sum kept against the old maximum."""
    ps, _, m, s = inputs_of(name, spec)
    return [env[ps] + running_sum(env[s], _keys(name, spec), None, env[m], None)]


def acc_not_rescaled(name: str, env: dict, spec):
    """a_j = a_{j−1} + Σ e^(s − m_j) v: the earlier accumulator kept against the old maximum."""
    pa, _, m, s, v = inputs_of(name, spec)
    vals = env[v].cols(*value_columns(name, spec.dims))
    return [env[pa] + running_acc(env[s], vals, _keys(name, spec), None, env[m], None)]
