"""The catalogued slips of a sinusoidal position table (its rows are in mistakes.MODEL_CATALOGUE)."""
from __future__ import annotations

from symblock.engine import names
from symblock.engine.matrix import Mat
from symblock.grading import recompute


# ---------------------------------------------------------------- sinusoidal positions
#
# * pe_sin_cos_swapped: cos in the even columns and sin in the odd ones (the pair written the
#   other way round, as some tables print it), in the whole table or in one row of it.
# * pe_base_10000: the original paper's base 10000 used where the spec gives another (a table
#   worked with n = 100, as a tutorial prints it, is its own exercise).
# Each candidate is the true table with the slip made in every row, or in one row only, so a
# table with one slipped row is named; the checker marks the other rows correct anyway.

def sinusoid_applies(name: str, spec) -> bool:
    step = names.parse(name)
    return step.layer is None and step.kind == "pos" and spec.positions == "sinusoidal"   # a model spec


def base_applies(name: str, spec) -> bool:
    return sinusoid_applies(name, spec) and spec.pe_base != 10000


def _pe_positions(name: str, spec) -> list[int]:
    """The positions (from 0) of the rows a pos step holds."""
    step = names.parse(name)
    if step.encoder:
        return list(range(len(spec.source_tokens)))
    if recompute.cached(spec, step.gen):
        return [recompute.position(spec, step.gen)]
    return list(range(recompute.rows_of(spec, step.gen)))


def _pe_table(name: str, spec, slipped_row) -> list[Mat]:
    """The true table with `slipped_row(p)` in every row, then in each single row."""
    from symblock.engine.model import sinusoidal_row
    ps = _pe_positions(name, spec)
    true = [sinusoidal_row(p, spec.dims.d_model, spec.pe_base) for p in ps]
    slipped = [slipped_row(p) for p in ps]
    out = [Mat(slipped)]
    if len(ps) > 1:
        out += [Mat([slipped[i] if i == r else true[i] for i in range(len(ps))]) for r in range(len(ps))]
    return out


def sin_cos_swapped(name: str, env: dict, spec) -> list[Mat]:
    """Swapped in every pair of the table, of one row, or one pair of one row only."""
    from symblock.engine.model import sinusoidal_row

    def swapped(p: int, pair: int | None = None) -> list:
        row = sinusoidal_row(p, spec.dims.d_model, spec.pe_base)
        return [row[j ^ 1] if pair in (None, j // 2) else row[j] for j in range(len(row))]
    out = _pe_table(name, spec, swapped)
    ps, d = _pe_positions(name, spec), spec.dims.d_model
    if d > 2:
        true = [sinusoidal_row(p, d, spec.pe_base) for p in ps]
        out += [Mat([swapped(p, pair) if i == r else true[i] for i, p in enumerate(ps)])
                for r in range(len(ps)) for pair in range(d // 2)]
    return out


def base_10000(name: str, env: dict, spec) -> list[Mat]:
    from symblock.engine.model import sinusoidal_row
    return _pe_table(name, spec, lambda p: sinusoidal_row(p, spec.dims.d_model, 10000))


POSITIONS = (
    ("pe_sin_cos_swapped", "sinusoidal positions with sine and cosine swapped: cos in the even columns "
     "(2i) and sin in the odd ones (2i + 1), instead of sin(p / n^(2i/d)) then cos", "pos, enc.pos, gen*.pos",
     sinusoid_applies, sin_cos_swapped),
    ("pe_base_10000", "sinusoidal positions worked with the base n = 10000 of the original paper instead "
     "of the base the table gives (model.pe_base)", "pos, enc.pos, gen*.pos", base_applies, base_10000),
)
