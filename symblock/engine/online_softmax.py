"""The online softmax over key tiles, exactly: the tile steps of one head (engine/tiles.py says
which exist and what they read). Every value is an exact node; the maxima are decided by
certified signs, so m_j is one of the row's own scores and e^(s − m_j) is exactly 1 at it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from symblock.engine import exact, names, proof
from symblock.engine.matrix import Entry, Mat
from symblock.engine.steps import value_columns
from symblock.engine.tiles import key_blocks, tile_name
from symblock.errors import UndecidableError

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec

Env = Mapping[str, Mat]  # step and parameter values by name, as the checker's recomputes get them

NEG_INF = exact.NEG_INF


def work(t: Any, h: int, s: Mat, v: Mat, s_tex: str) -> None:
    """Record head h's tile steps from its last score step `s` (masked −∞ where a mask is) and
    its values `v` (the head's d_v columns). A tracer records a step only when it is computed
    (`t`: a Tracer of engine/block.py, which imports this module)."""
    n, s_tex = t.dims.seq_len, f"({s_tex})"
    sup = f"^{{({h})}}" if t.dims.heads > 1 else ""   # m^{(1)}_{0}: each head's own running values
    blocks = key_blocks(n, t.o.attention_tiles)
    m: Mat | None = None
    l: Mat | None = None
    a: Mat | None = None
    last = len(blocks) - 1
    for j, keys in enumerate(blocks):
        lo, hi = keys.start + 1, keys.stop   # key columns counted from 1, as the sheets count entries
        rng = f"j = {lo}" if lo == hi else f"j = {lo}, \\dots, {hi}"
        prev = (m, l, a)
        m = t.step(tile_name(h, j, "max"), _sup(_max_tex(j, s_tex, rng), sup),
                   lambda keys=keys, pm=prev[0]: running_max(s, keys, pm))
        l = t.step(tile_name(h, j, "sum"), _sup(_sum_tex(j, s_tex, rng), sup),
                   lambda keys=keys, p=prev, m=m: running_sum(s, keys, p[0], m, p[1]))
        a = t.step(tile_name(h, j, "acc"), _sup(_acc_tex(j, s_tex, rng, h // t.dims.group), sup),
                   lambda keys=keys, p=prev, m=m: running_acc(s, v, keys, p[0], m, p[2]))
    assert a is not None and l is not None  # one tile at least
    t.step(f"attn.h{h}.tiled", _sup(f"\\tilde O_{{{h}}} = a_{{{last}}} / \\ell_{{{last}}}\\ \\text{{(each row)}}", sup),
           lambda: divide_rows(a, l))


def _sup(tex: str, sup: str) -> str:
    """The head's superscript on the running values m, ℓ, a of a formula (several heads)."""
    if not sup:
        return tex
    import re
    return re.sub(r"(m|\\ell|a)_\{(\d+)\}", lambda g: f"{g.group(1)}{sup}_{{{g.group(2)}}}", tex)


def divide_rows(a: Mat, l: Mat) -> Mat:
    """a / l, row i of a divided by the single entry of row i of l."""
    return Mat([[x / r[0] for x in ra] for ra, r in zip(a.rows, l.rows)])


def _max_tex(j: int, s: str, rng: str) -> str:
    block = f"\\max_{{{rng}}} {s}_{{ij}}"
    return f"m_{{{j}}} = \\max(m_{{{j - 1}}},\\ {block})" if j else f"m_{{{j}}} = {block}"


def _rescale(j: int) -> str:
    return f" \\cdot e^{{m_{{{j - 1}}} - m_{{{j}}}}} + " if j else " = "


def _sum_tex(j: int, s: str, rng: str) -> str:
    head = f"\\ell_{{{j}}} = \\ell_{{{j - 1}}}" if j else f"\\ell_{{{j}}}"
    return f"{head}{_rescale(j)}\\textstyle\\sum_{{{rng}}} e^{{{s}_{{ij}} - m_{{{j}}}}}"


def _acc_tex(j: int, s: str, rng: str, g: int) -> str:
    """g: the K/V head whose values the query head reads (grouped heads)."""
    head = f"a_{{{j}}} = a_{{{j - 1}}}" if j else f"a_{{{j}}}"
    return f"{head}{_rescale(j)}\\textstyle\\sum_{{{rng}}} e^{{{s}_{{ij}} - m_{{{j}}}}} (V_{{{g}}})_{{j}}"


def _bigger(x: Entry, y: Entry) -> bool:
    """x > y for exact values, −∞ below everything (certified)."""
    if x is NEG_INF:
        return False
    return y is NEG_INF or exact.sign(x - y) > 0


def running_max(s: Mat, keys: range, prev: Mat | None) -> Mat:
    """m_j per row: the larger of m_{j−1} and the block's largest live score (−∞ when none)."""
    rows = []
    for i, row in enumerate(s.rows):
        best = NEG_INF if prev is None else prev.rows[i][0]
        for k in keys:
            if _bigger(row[k], best):
                best = row[k]
        rows.append([best])
    return Mat(rows)


def _factor(old: Entry, new: Entry) -> Entry:
    """e^(m_{j−1} − m_j): what the earlier sum and accumulator are rescaled by (0 while the
    earlier maximum is −∞: nothing has been summed yet)."""
    if old is NEG_INF:
        return exact.ZERO
    return exact.exp(old - new)


def _weights(row: Sequence[Entry], keys: range, m: Entry) -> list[tuple[int, Entry]]:
    """(k, e^(s_k − m)) for the block's live keys."""
    return [(k, exact.exp(row[k] - m)) for k in keys if row[k] is not NEG_INF]


def running_sum(s: Mat, keys: range, prev_m: Mat | None, m: Mat, prev: Mat | None) -> Mat:
    rows = []
    for i, row in enumerate(s.rows):
        new = m.rows[i][0]
        terms = [e for _, e in _weights(row, keys, new)] if new is not NEG_INF else []
        if prev is not None:
            assert prev_m is not None  # an earlier tile has its maximum too
            terms.insert(0, prev.rows[i][0] * _factor(prev_m.rows[i][0], new))
        rows.append([exact.total(terms) if terms else exact.ZERO])
    return Mat(rows)


def running_acc(s: Mat, v: Mat, keys: range, prev_m: Mat | None, m: Mat, prev: Mat | None) -> Mat:
    rows = []
    for i, row in enumerate(s.rows):
        new = m.rows[i][0]
        ws = _weights(row, keys, new) if new is not NEG_INF else []
        r = exact.ONE
        if prev is not None:
            assert prev_m is not None  # an earlier tile has its maximum too
            r = _factor(prev_m.rows[i][0], new)
        out = []
        for c in range(v.shape[1]):
            terms = [e * v.rows[k][c] for k, e in ws]
            if prev is not None:
                terms.insert(0, prev.rows[i][c] * r)
            out.append(exact.total(terms) if terms else exact.ZERO)
        rows.append(out)
    return Mat(rows)


# ---------------------------------------------------------------- the tiles, proved

def prove(trace: Any) -> list[tuple[str, str]]:  # a block.Trace (block imports this module)
    """(tiled step, verdict) for every head's `attn.hH.tiled`, against its `attn.hH.out`:
    "exact" when every entry is proved equal by algebra (engine/proof.py), else "numeric" (equal
    to 16384 bits) or "differs". Empty without tiles."""
    normal, out = proof.Normal(), []
    for st in trace:
        p = names.parse(st.name)
        if p.kind != "tiled" or p.head_step("out") not in trace:
            continue
        want = trace[p.head_step("out")].value.rows
        pairs = [(a, b) for ra, rb in zip(st.value.rows, want) for a, b in zip(ra, rb)]
        if all(proof.equal(a, b, normal) for a, b in pairs):
            verdict = "exact"
        elif all(_sign(a - b) == 0 for a, b in pairs):
            verdict = "numeric"
        else:
            verdict = "differs"
        out.append((st.name, verdict))
    return out


def _sign(v: Entry) -> int:
    try:
        return exact.sign(v)
    except UndecidableError:
        return 0  # equal to thousands of digits, and no closed form tells them apart


# ---------------------------------------------------------------- a tile from given inputs

def _keys(name: str, spec: BlockSpec) -> range:
    tile = names.parse(name).tile
    assert tile is not None, name
    return key_blocks(spec.dims.seq_len, spec.options.attention_tiles)[tile]


def _v(name: str, env: Env, ins: tuple[str, ...], spec: BlockSpec) -> Mat:
    return env[ins[-1]].cols(*value_columns(name, spec.dims))


def _recompute_max(name: str, ins: tuple[str, ...], env: Env, spec: BlockSpec) -> Mat:
    prev, s = (None, ins[0]) if len(ins) == 1 else (env[ins[0]], ins[1])
    return running_max(env[s], _keys(name, spec), prev)


def _recompute_sum(name: str, ins: tuple[str, ...], env: Env, spec: BlockSpec) -> Mat:
    if len(ins) == 2:   # (scores, max)
        return running_sum(env[ins[0]], _keys(name, spec), None, env[ins[1]], None)
    ps, pm, m, s = ins
    return running_sum(env[s], _keys(name, spec), env[pm], env[m], env[ps])


def _recompute_acc(name: str, ins: tuple[str, ...], env: Env, spec: BlockSpec) -> Mat:
    if len(ins) == 3:   # (scores, max, v)
        return running_acc(env[ins[0]], _v(name, env, ins, spec), _keys(name, spec), None, env[ins[1]], None)
    pa, pm, m, s, _ = ins
    return running_acc(env[s], _v(name, env, ins, spec), _keys(name, spec), env[pm], env[m], env[pa])


def _recompute_tiled(name: str, ins: tuple[str, ...], env: Env, spec: BlockSpec) -> Mat:
    return divide_rows(env[ins[0]], env[ins[1]])


# Each tile kind worked from the step's own inputs (a step's `inputs`, read from `env`), with the
# signature of the checker's recomputes: what grading a person's tiles would call.
RECOMPUTE = {"tile_max": _recompute_max, "tile_sum": _recompute_sum, "tile_acc": _recompute_acc,
             "tiled": _recompute_tiled}
