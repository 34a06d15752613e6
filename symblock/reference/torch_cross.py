"""A decoder layer with cross-attention through a real `torch.nn.TransformerDecoderLayer`: the
semantic cross-check that the layer the exact engine works is the one PyTorch users run.

The layer is `TransformerDecoderLayer(d_model, heads, d_ff, dropout=0, activation=relu | gelu,
layer_norm_eps=ε, batch_first=True, norm_first=pre, bias=True)` in float64, loaded with the
spec's weights (absent biases as zeros): `self_attn` holds W_Q, W_K, W_V, W_O, `multihead_attn`
the cross-attention's, norm1/2/3 are ln1/2/3. The causal mask is a boolean `tgt_mask` (True =
masked), the paddings `tgt_key_padding_mask` and `memory_key_padding_mask`. Forward hooks read
what the modules expose, under the exact trace's names: `attn.out`, `cross.out`, `norm1..3`,
`ffn.hidden`, `ffn.out`, `output`, and each cross head's weights (`multihead_attn` run again on
its captured input with `need_weights=True`). torch is imported inside the functions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from symblock.reference.model_common import floats

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec


def unsupported(spec: BlockSpec) -> str | None:
    """Why the torch layer cannot run this decoder layer, or None when it can."""
    o, d = spec.options, spec.dims
    reasons = [
        (bool(spec.given), "some steps are given"),
        (o.norm != "layernorm", "the layer only has LayerNorm"),
        (o.activation not in ("relu", "gelu"), "the layer only has relu or (erf) gelu"),
        (o.attention_scale != "sqrt_dk", "the layer always scales scores by 1/sqrt(d_head)"),
        (not o.out_proj, "the layer always has output projections"),
        (o.final_norm, "the layer has no final norm"),
        (d.d_model % d.heads or d.d_k != d.d_model // d.heads or d.d_v != d.d_k,
         "the layer projects to d_model/heads per head"),
        (bool(spec.dropout_masks), "the layer draws its own dropout masks"),
    ]
    return next((why for bad, why in reasons if bad), None)


def decoder_layer(spec: BlockSpec):
    """The torch layer holding the spec's weights (float64, eval mode)."""
    import torch
    o, dims = spec.options, spec.dims
    d, f64 = dims.d_model, torch.float64
    layer = torch.nn.TransformerDecoderLayer(
        d, dims.heads, dims.d_ff, dropout=0.0, activation=o.activation, layer_norm_eps=float(o.eps),
        batch_first=True, norm_first=o.norm_position == "pre", bias=True, dtype=f64).eval()

    def weight(name: str):   # nn.Linear's (out, in)
        return torch.from_numpy(floats(spec.params[name])).T.contiguous()

    def vector(name: str, n: int):   # a bias, γ or β; an absent one is zeros
        m = spec.params.get(name)
        return torch.zeros(n, dtype=f64) if m is None else torch.from_numpy(floats(m))[0]

    with torch.no_grad():
        for mha, pre in ((layer.self_attn, ""), (layer.multihead_attn, "cross.")):
            mha.in_proj_weight.copy_(torch.cat([weight(f"{pre}W_{p}") for p in "QKV"]))
            mha.in_proj_bias.copy_(torch.cat([vector(f"{pre}b_{p}", d) for p in "QKV"]))
            mha.out_proj.weight.copy_(weight(f"{pre}W_O"))
            mha.out_proj.bias.copy_(vector(f"{pre}b_O", d))
        layer.linear1.weight.copy_(weight("W_1"))
        layer.linear1.bias.copy_(vector("b_1", dims.d_ff))
        layer.linear2.weight.copy_(weight("W_2"))
        layer.linear2.bias.copy_(vector("b_2", d))
        for i in (1, 2, 3):
            getattr(layer, f"norm{i}").weight.copy_(vector(f"ln{i}.gamma", d))
            getattr(layer, f"norm{i}").bias.copy_(vector(f"ln{i}.beta", d))
    return layer


def forward(spec: BlockSpec) -> dict[str, np.ndarray]:
    """The steps the torch modules expose, by the exact trace's names (float64 arrays)."""
    import torch
    layer, seen = decoder_layer(spec), {}
    names = {layer.self_attn: "attn.out", layer.multihead_attn: "cross.out", layer.norm1: "norm1",
             layer.norm2: "norm2", layer.norm3: "norm3", layer.linear1: "ffn.hidden", layer.linear2: "ffn.out"}

    def hook(module, args, out):
        seen[names[module]] = out[0] if isinstance(out, tuple) else out
        if module is layer.multihead_attn:
            seen["cross.query"] = args[0]
    handles = [m.register_forward_hook(hook) for m in names]
    x = torch.from_numpy(floats(spec.X))[None]
    mem = torch.from_numpy(floats(spec.memory))[None]
    n = spec.dims.seq_len
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if spec.options.causal else None
    pad = torch.tensor([list(spec.key_padding_mask[0])]) if spec.key_padding_mask else None
    mem_pad = torch.tensor([list(spec.memory_padding_mask)]) if spec.memory_padding_mask else None
    with torch.enable_grad():  # the module-by-module path, as the conventions read
        out = layer(x, mem, tgt_mask=causal, tgt_key_padding_mask=pad, memory_key_padding_mask=mem_pad)
        for h in handles:
            h.remove()
        _, w = layer.multihead_attn(seen.pop("cross.query"), mem, mem, key_padding_mask=mem_pad,
                                    need_weights=True, average_attn_weights=False)
    steps = {name: v.detach()[0].numpy().astype(np.float64) for name, v in seen.items()}
    steps.update({f"cross.h{h}.weights": w.detach()[0, h].numpy().astype(np.float64)
                  for h in range(spec.dims.heads)})
    steps["output"] = out.detach()[0].numpy().astype(np.float64)
    return steps
