"""The online softmax over key tiles in torch float64, as a FlashAttention kernel's inner loop
runs it (torch.maximum, torch.exp, one key block at a time), for the torch cross-check."""
from __future__ import annotations

from symblock.engine.tiles import key_blocks, tile_name


def tiles(run, h: int, scores: str, vcols: slice) -> None:
    """Record head h's tile steps through `run` (torch_ref._Run) from its score step `scores`."""
    torch = run.torch
    n, dv = run.dims.seq_len, run.dims.d_v
    state = {}

    def start():
        f64 = torch.float64
        return (torch.full((n, 1), -torch.inf, dtype=f64), torch.zeros((n, 1), dtype=f64),
                torch.zeros((n, dv), dtype=f64))

    for j, keys in enumerate(key_blocks(n, run.opts.attention_tiles)):
        def block(keys=keys, j=j):
            m_old, l_old, a_old = state.get(j - 1) or start()
            s, v = run[scores][:, keys.start:keys.stop], run["attn.v"][keys.start:keys.stop, vcols]
            m = torch.maximum(m_old, s.amax(dim=1, keepdim=True))
            safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
            scale = torch.where(torch.isfinite(m_old), torch.exp(m_old - safe), torch.zeros_like(m))
            p = torch.exp(s - safe)
            state[j] = (m, l_old * scale + p.sum(dim=1, keepdim=True), a_old * scale + p @ v)
            return state[j]
        run.put(tile_name(h, j, "max"), lambda block=block: block()[0])
        run.put(tile_name(h, j, "sum"), lambda j=j: state[j][1])
        run.put(tile_name(h, j, "acc"), lambda j=j: state[j][2])
    last = len(key_blocks(n, run.opts.attention_tiles)) - 1
    run.put(f"attn.h{h}.tiled", lambda: state[last][2] / state[last][1])
