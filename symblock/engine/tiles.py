"""Attention as inference engines work it: an online softmax over key tiles (FlashAttention).

With `block.attention_tiles: B` each head also works softmax(S)·V one block of B keys at a time
(the last block may be shorter), keeping per query row only a running maximum m, a rescaled sum
l and a rescaled accumulator a. For key block j, with s the row's (masked) scores in the block:

    m_j = max(m_{j−1}, max s)
    l_j = l_{j−1} · e^(m_{j−1} − m_j) + Σ e^(s − m_j)
    a_j = a_{j−1} · e^(m_{j−1} − m_j) + Σ e^(s − m_j) · V_j

and at the end the tiled result a / l. A masked (−∞) score adds nothing; a block whose scores
are all masked leaves m, l and a as they were (while m is still −∞, l and a are 0).

The steps, per head h and tile j: `attn.hH.tileJ.max` (seq_len × 1), `.sum` (seq_len × 1),
`.acc` (seq_len × d_v), and `attn.hH.tiled`. They are side steps: the block's output reads
`attn.hH.out`, and `prove` (engine/proof.py) shows the tiled result equal to it exactly.
The step names and graph here are pure data (read by steps.py); `work` is the exact op.
"""
from __future__ import annotations

from symblock.engine import names
from symblock.errors import SpecError

SIDE_KINDS = ("tile_max", "tile_sum", "tile_acc", "tiled")


def key_blocks(n: int, size: int) -> list[range]:
    """The key positions of each tile: [0, B), [B, 2B), …; the last one may be shorter."""
    return [range(lo, min(lo + size, n)) for lo in range(0, n, size)]


def tile_name(h: int, j: int, part: str) -> str:
    return f"attn.h{h}.tile{j}.{part}"


def tile_steps(h: int, dims, opts) -> list[str]:
    """Head h's tile steps in forward order (none without `attention_tiles`)."""
    if not opts.attention_tiles:
        return []
    n = len(key_blocks(dims.seq_len, opts.attention_tiles))
    return [tile_name(h, j, p) for j in range(n) for p in names.TILE_PARTS] + [f"attn.h{h}.tiled"]


def tile_graph(h: int, scores: str, dims, opts) -> dict[str, tuple[str, ...]]:
    """The tile steps' inputs: `scores` is the head's last score step (masked, scaled or raw)."""
    g: dict[str, tuple[str, ...]] = {}
    if not opts.attention_tiles:
        return g
    n = len(key_blocks(dims.seq_len, opts.attention_tiles))
    for j in range(n):
        mx, sm, acc = (tile_name(h, j, p) for p in names.TILE_PARTS)
        if j == 0:
            g[mx], g[sm], g[acc] = (scores,), (scores, mx), (scores, mx, "attn.v")
        else:
            pm, ps, pa = (tile_name(h, j - 1, p) for p in names.TILE_PARTS)
            g[mx] = (pm, scores)
            g[sm] = (ps, pm, mx, scores)
            g[acc] = (pa, pm, mx, scores, "attn.v")
    g[f"attn.h{h}.tiled"] = (tile_name(h, n - 1, "acc"), tile_name(h, n - 1, "sum"))
    return g


def with_side_steps(graph: dict, computed: list[str], given) -> list[str]:
    """`computed` (what the output needs) plus the tile steps of every head whose `out` is
    computed, in forward order: they read only steps the head works anyway."""
    if not any(names.parse(n).kind in SIDE_KINDS for n in graph):
        return list(computed)
    done, have = set(computed), set(computed) | set(given)   # a given tile is read as given
    out = []
    for n in graph:
        p = names.parse(n)
        if (n not in have and p.kind in SIDE_KINDS and p.head_step("out") in done
                and all(i in have for i in graph[n] if i in graph)):
            done.add(n)
            have.add(n)
        if n in done:
            out.append(n)
    return out


def check(value, source: str) -> int:
    """`block.attention_tiles`: a whole number of keys per tile, at least 1 (0 = no tiles)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        from symblock.engine.fields import kind_of
        raise SpecError(source, "block.attention_tiles", "expected a whole number of keys per tile, "
                        f"at least 1 (e.g. 2), got {kind_of(value)}")
    return value


def check_dropout(opts, source: str) -> None:
    """The tiles work softmax·V itself: a dropout mask on the weights would make them differ."""
    dropped = sorted(n for n in opts.dropout if names.parse(n).kind == "weights")
    if opts.attention_tiles and dropped:
        raise SpecError(source, "block.attention_tiles", "the online-softmax tiles work softmax·V "
                        f"without dropout, but {dropped[0]} has a dropout mask; drop the mask "
                        "or the tiles")
