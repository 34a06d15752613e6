"""An exercise of the article “Encoder 块：残差、归一化与前馈网络”: Pre-LN against Post-LN as the
stack grows, in float64 (torch), at initialisation. Not an exact job: it measures what training
would meet first.

For each depth L and placement, a stack of L real `nn.TransformerEncoderLayer`s (causal mask,
`norm_first` for Pre-LN, a final LayerNorm after a Pre-LN stack as GPT-2 has) with torch's default
initialisation runs on random inputs. Recorded: the
gradient norm of each layer's parameters (how much signal reaches it), and the scale (standard
deviation) of the residual stream leaving the last layer. Averaged over `seeds` draws.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

PLACEMENTS = ("pre", "post")


@dataclass(frozen=True)
class Row:
    placement: str   # pre | post
    layers: int      # depth of the stack
    layer: int       # which layer (0 = first)
    grad_norm: float  # ‖∂loss/∂θ_layer‖, averaged over seeds
    output_std: float  # std of the last layer's output (the same for every `layer` of a stack)


def measure(depths: list[int], d_model: int = 16, heads: int = 2, seq_len: int = 8, seeds: int = 3) -> list[Row]:
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only contend
    try:
        return _measure(torch, depths, d_model, heads, seq_len, seeds)
    finally:
        torch.set_num_threads(threads)


def _measure(torch, depths, d_model, heads, seq_len, seeds) -> list[Row]:
    rows = []
    for placement in PLACEMENTS:
        for L in depths:
            grads = [0.0] * L
            std = 0.0
            for s in range(seeds):
                g, out_std = _one(torch, placement, L, d_model, heads, seq_len, seed=1000 * L + s)
                grads = [a + b / seeds for a, b in zip(grads, g)]
                std += out_std / seeds
            rows += [Row(placement, L, i, grads[i], std) for i in range(L)]
    return rows


def _one(torch, placement: str, L: int, d: int, heads: int, n: int, seed: int):
    torch.manual_seed(seed)
    f64 = torch.float64
    layers = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(
        d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=placement == "pre", dtype=f64)
        for _ in range(L))
    final = torch.nn.LayerNorm(d, dtype=f64) if placement == "pre" else None
    x = torch.randn(1, n, d, dtype=f64)
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    h = x
    for layer in layers:
        h = layer(h, src_mask=mask)
    out_std = float(h.detach().std())
    y = final(h) if final is not None else h
    readout = torch.randn(d, dtype=f64)  # a fixed random head: LN outputs have a fixed norm,
    loss = (y @ readout).sum()           # so their mean square would carry no gradient
    loss.backward()
    grads = [float(torch.sqrt(sum((p.grad ** 2).sum() for p in layer.parameters()))) for layer in layers]
    return grads, out_std


def to_csv(rows: list[Row]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["placement", "layers", "layer", "grad_norm", "output_std"])
    for r in rows:
        w.writerow([r.placement, r.layers, r.layer, f"{r.grad_norm:.6g}", f"{r.output_std:.6g}"])
    return buf.getvalue()


def plot(rows: list[Row], path) -> None:
    """Two panels: the gradient norm of each layer of the deepest stacks, and, against depth, the
    first layer's gradient norm and the output scale. A PNG without timestamps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    deepest = max(r.layers for r in rows)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), dpi=100)
    for placement, style, color in (("pre", "-o", "tab:blue"), ("post", "-s", "tab:orange")):
        mine = [r for r in rows if r.placement == placement]
        last = [r for r in mine if r.layers == deepest]
        a.semilogy([r.layer for r in last], [r.grad_norm for r in last], style, color=color,
                   label=f"{placement}-LN")
        depths = sorted({r.layers for r in mine})
        first = [next(r.grad_norm for r in mine if r.layers == L and r.layer == 0) for L in depths]
        std = [next(r.output_std for r in mine if r.layers == L) for L in depths]
        b.semilogy(depths, first, style, color=color, label=f"{placement}-LN: ‖∂loss/∂θ‖ of layer 0")
        b.semilogy(depths, std, style.replace("-", "--"), color=color, mfc="white",
                   label=f"{placement}-LN: output std")
    a.set(title=f"gradient reaching each layer ({deepest} layers)", xlabel="layer", ylabel="‖∂loss/∂θ‖")
    b.set(title="against depth", xlabel="layers")
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
