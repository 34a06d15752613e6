"""An encoder–decoder through a real `torch.nn.Transformer`: the semantic cross-check of
engine/translate.py. The model is `nn.Transformer(d_model, heads, L_e, L_d, d_ff, dropout=0,
activation, layer_norm_eps=ε, batch_first=True, norm_first=pre)` in float64 with the spec's
weights (its encoder and decoder norms are the final norms), the embeddings an `nn.Embedding`
(positions learned or sinusoidal added), the head the embedding's own weight when tied. A greedy
loop around it gives the tokens: each step runs the whole target prefix with the causal
`tgt_mask` and takes the argmax of the last row's logits; a padded source
(`model.source_padding_mask`) is passed as both `src_key_padding_mask` and
`memory_key_padding_mask`. Steps compared, by the exact trace's
names: `enc.norm_final` (the memory), and per pass `norm_final`, `logits`, `next_token`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from symblock.reference import torch_cross, torch_ref
from symblock.reference.model_common import floats, sinusoidal

if TYPE_CHECKING:
    from symblock.engine.model_spec import ModelSpec


def unsupported(spec: ModelSpec) -> str | None:
    """Why nn.Transformer cannot run this encoder-decoder, or None when it can."""
    places = {layer.options.norm_position for layer in (*spec.encoder, *spec.layers)}
    if len(places) > 1:
        return "nn.Transformer has one norm placement for every layer"
    for layer in spec.encoder:
        why = torch_ref.encoder_layer_unsupported(layer)
        if why:
            return why
    return next((why for layer in spec.layers if (why := torch_cross.unsupported(layer))), None)


def transformer(spec: ModelSpec):
    """nn.Transformer holding the spec's encoder and decoder weights."""
    import warnings

    import torch
    d, o = spec.dims, spec.options
    with warnings.catch_warnings():  # its note that nested tensors are off (they are a speed-up only)
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        model = torch.nn.Transformer(d.d_model, d.heads, len(spec.encoder), len(spec.layers), d.d_ff,
                                     dropout=0.0, activation=o.activation, layer_norm_eps=float(o.eps),
                                     batch_first=True, norm_first=o.norm_position == "pre",
                                     dtype=torch.float64).eval()

    def t(m, transpose=False):
        a = torch.from_numpy(floats(m))
        return a.T.contiguous() if transpose else a[0]

    def zeros(n):
        return torch.zeros(n, dtype=torch.float64)
    for i, layer in enumerate(spec.encoder):
        p, state = layer.params, {}
        state["self_attn.in_proj_weight"] = torch.cat([t(p[f"W_{x}"], True) for x in "QKV"])
        state["self_attn.in_proj_bias"] = torch.cat([t(p[f"b_{x}"]) if f"b_{x}" in p else zeros(d.d_model)
                                                     for x in "QKV"])
        state["self_attn.out_proj.weight"] = t(p["W_O"], True)
        state["self_attn.out_proj.bias"] = t(p["b_O"]) if "b_O" in p else zeros(d.d_model)
        for k, n in ((1, d.d_ff), (2, d.d_model)):
            state[f"linear{k}.weight"] = t(p[f"W_{k}"], True)
            state[f"linear{k}.bias"] = t(p[f"b_{k}"]) if f"b_{k}" in p else zeros(n)
            state[f"norm{k}.weight"], state[f"norm{k}.bias"] = t(p[f"ln{k}.gamma"]), t(p[f"ln{k}.beta"])
        model.encoder.layers[i].load_state_dict(state)
    for i, layer in enumerate(spec.layers):
        model.decoder.layers[i].load_state_dict(torch_cross.decoder_layer(layer).state_dict())
    with torch.no_grad():
        for norm, table in ((model.encoder.norm, spec.encoder_norm), (model.decoder.norm, spec.final_norm)):
            norm.weight.copy_(t(table["gamma"]))
            norm.bias.copy_(t(table["beta"]))
    return model


def outputs(spec: ModelSpec) -> dict[str, np.ndarray]:
    """The memory, and each pass's decoder output, logits and greedy token, from nn.Transformer."""
    import torch
    model = transformer(spec)
    W_E = torch.from_numpy(floats(spec.W_E))
    W_U = W_E.T if spec.head == "tied" else torch.from_numpy(floats(spec.W_U))

    W_src = W_E if spec.W_E_src is None else torch.from_numpy(floats(spec.W_E_src))

    def embed(tokens, table=W_E):
        e = table[torch.tensor(tokens)]
        if spec.positions == "learned":
            e = e + torch.from_numpy(floats(spec.W_P))[:len(tokens)]
        elif spec.positions == "sinusoidal":
            e = e + torch.from_numpy(sinusoidal(len(tokens), spec.dims.d_model, spec.pe_base))
        return e[None]
    src, tokens, out = embed(list(spec.source_tokens), W_src), list(spec.prompt), {}
    pad = torch.tensor([spec.source_padding_mask]) if spec.source_padding_mask else None
    with torch.enable_grad():  # the module-by-module path (no fast path zeroing padded rows)
        out["enc.norm_final"] = model.encoder(src, src_key_padding_mask=pad).detach()[0].numpy()
        for t in range(spec.generate + 1):
            n, prefix = len(tokens), f"gen{t}." if t else ""
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
            h = model(src, embed(tokens), tgt_mask=mask, src_key_padding_mask=pad,
                      memory_key_padding_mask=pad).detach()[0]
            logits = h @ W_U
            nxt = int(torch.argmax(logits[-1]))
            rows = slice(-1, None) if t and spec.kv_cache else slice(None)  # a cached pass: the new row
            out.update({f"{prefix}norm_final": h[rows].numpy(), f"{prefix}logits": logits[rows].numpy(),
                        f"{prefix}next_token": np.array([[float(nxt)]])})
            tokens.append(nxt)
    return out
