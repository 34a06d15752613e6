"""Specs from torch's own Transformer modules beyond the encoder layer (spec_from.py's front door
calls these): `nn.TransformerDecoderLayer` (a block with cross-attention to a memory),
`nn.Transformer` (an encoder-decoder model) and `nn.MultiheadAttention` (attention alone).

`nn.Transformer` and `nn.MultiheadAttention` read vectors, not tokens, and the spec has no
"attention only" block, so both are expressed exactly another way: `nn.Transformer`'s inputs
become a vocabulary of one token per input row (its embedding is that row, no positions), and a
MultiheadAttention is the attention of a Post-LN block, whose step `attn.out` is the module's
output (the norm and FFN after it are worked too but are not the module's).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from symblock.reference.exact_weights import (
    Unsupported, arrays, as_array, host, inputs_of, matrix, refuse, vector, written)


def _activation(layer, name: str) -> str:
    import torch.nn.functional as F
    act = {F.relu: "relu", F.gelu: "gelu"}.get(layer.activation)
    if act is None:
        raise Unsupported(name, f"activation {layer.activation!r}: only relu and gelu map onto the block")
    return act


def _attention_checks(mha, name: str) -> list[tuple[bool, str]]:
    return [(not mha._qkv_same_embed_dim, "separate key/value widths (kdim, vdim)"),
            (mha.bias_k is not None, "add_bias_kv"), (mha.add_zero_attn, "add_zero_attn"),
            (mha.training and mha.dropout > 0, "dropout > 0 in training mode: call .eval() first")]


def attention_weights(s: Mapping[str, np.ndarray], p: str, prefix: str = "") -> dict:
    """W_Q, W_K, W_V, W_O (math layout) and their biases of the MultiheadAttention `p` in the state
    dict `s`, named with `prefix` ("" or, in weights.cross, none: the caller nests them)."""
    q, k, v = np.split(s[p + "in_proj_weight"], 3)
    out = {f"{prefix}W_Q": matrix(q.T), f"{prefix}W_K": matrix(k.T), f"{prefix}W_V": matrix(v.T),
           f"{prefix}W_O": matrix(s[p + "out_proj.weight"].T)}
    b = s.get(p + "in_proj_bias")
    if b is not None:
        for x, part in zip("QKV", np.split(b, 3)):
            out[f"{prefix}b_{x}"] = vector(part)
    if s.get(p + "out_proj.bias") is not None:
        out[f"{prefix}b_O"] = vector(s[p + "out_proj.bias"])
    return out


def layer_weights(s: Mapping[str, np.ndarray], p: str, decoder: bool) -> dict:
    """One torch encoder or decoder layer's `weights:` (self-attention, cross-attention of a decoder
    layer under `cross`, the FFN, norm1..norm3 as ln1..ln3)."""
    w = attention_weights(s, p + "self_attn.")
    if decoder:
        w["cross"] = attention_weights(s, p + "multihead_attn.")
    for i in (1, 2):
        w[f"W_{i}"] = matrix(s[f"{p}linear{i}.weight"].T)
        if s.get(f"{p}linear{i}.bias") is not None:
            w[f"b_{i}"] = vector(s[f"{p}linear{i}.bias"])
    for i in (1, 2, 3) if decoder else (1, 2):
        w[f"ln{i}"] = _norm(s, f"{p}norm{i}")
    return w


def _norm(s: Mapping[str, np.ndarray], p: str) -> dict:
    beta = s.get(p + ".bias")
    return {"gamma": vector(s[p + ".weight"]), **({"beta": vector(beta)} if beta is not None else {})}


def _block(layer, name: str, decoder: bool) -> dict:
    """The `block:` of a torch encoder or decoder layer, after refusing what it cannot express."""
    norms = [layer.norm1, layer.norm2] + ([layer.norm3] if decoder else [])
    checks = [(layer.training and layer.dropout.p > 0, "dropout > 0 in training mode: call .eval() first"),
              (len({n.eps for n in norms}) > 1, "the norms have different eps")]
    checks += _attention_checks(layer.self_attn, name)
    if decoder:
        checks += _attention_checks(layer.multihead_attn, name)
    refuse(name, checks)
    return {"norm_position": "pre" if layer.norm_first else "post", "norm": "layernorm",
            "eps": written(layer.norm1.eps), "activation": _activation(layer, name), "attention_scale": "sqrt_dk",
            "bias": layer.linear1.bias is not None, "out_proj": True}


def _one(x, batch_first: bool, name: str, what: str) -> np.ndarray:
    """One sequence (seq × d) of a (seq, d) input or a batch of one, in either batch layout."""
    a = host(x)
    if a.ndim == 3:
        a = a if batch_first else a.transpose(1, 0, 2)
        refuse(name, [(a.shape[0] != 1, f"{what}: a batch of {a.shape[0]}; give one sequence (a batch of one)")])
        a = a[0]
    refuse(name, [(a.ndim != 2, f"{what}: expected (seq, d) or a batch of one, got shape {a.shape}")])
    return a


def _pad(mask) -> list[bool] | None:
    return None if mask is None else [bool(b) for b in np.asarray(as_array(mask), dtype=bool).reshape(-1)]


def decoder_layer(layer, tgt, memory, causal: bool = True, tgt_key_padding_mask=None,
                  memory_key_padding_mask=None) -> dict:
    """`nn.TransformerDecoderLayer` (eval mode) on `tgt` with `memory`: causal self-attention
    (`causal=True`: tgt_mask = the square subsequent mask, as a decoder uses it; False: no
    mask), cross-attention to the memory, with torch's padding masks (True = padding)."""
    name = "nn.TransformerDecoderLayer"
    block = {**_block(layer, name, decoder=True), "cross_attention": True, "causal": bool(causal)}
    bf = layer.self_attn.batch_first
    x, m = _one(tgt, bf, name, "tgt"), _one(memory, bf, name, "memory")
    d, heads = layer.self_attn.embed_dim, layer.self_attn.num_heads
    inputs = inputs_of(x, _pad(tgt_key_padding_mask))
    inputs["memory"] = matrix(m)
    if memory_key_padding_mask is not None:
        inputs["memory_padding_mask"] = _pad(memory_key_padding_mask)
    return {"title": f"{name}(d_model={d}, nhead={heads}, dim_feedforward={layer.linear1.out_features})",
            "dims": {"seq_len": int(x.shape[0]), "d_model": d, "d_ff": layer.linear1.out_features,
                     "heads": heads, "mem_len": int(m.shape[0])},
            "block": block, "weights": layer_weights(arrays(layer.state_dict()), "", decoder=True),
            "inputs": inputs}


def transformer(model, src, tgt, causal: bool = True) -> dict:
    """`nn.Transformer` (eval mode) as `model(src, tgt, tgt_mask=<the square subsequent mask>)`:
    an encoder-decoder spec whose vocabulary has one token per row of `src` and `tgt` (embedding:
    that row; positions: none), so `enc.norm_final` is the memory and `norm_final` the output."""
    name = "nn.Transformer"
    enc, dec = list(model.encoder.layers), list(model.decoder.layers)
    refuse(name, [(not causal, "a decoder without the causal tgt_mask: the spec's decoder layers are causal"),
                  (model.encoder.norm is None or model.decoder.norm is None, "a stack without its final norm"),
                  (len({lay.norm_first for lay in enc + dec}) > 1, "layers that mix Pre-LN and Post-LN")])
    blocks = [_block(lay, name, decoder=False) for lay in enc] + [_block(lay, name, decoder=True) for lay in dec]
    if any(b != blocks[0] for b in blocks):
        raise Unsupported(name, "layers with different activations, eps or biases")
    refuse(name, [(model.encoder.norm.eps != enc[0].norm1.eps or model.decoder.norm.eps != enc[0].norm1.eps,
                   "final norms with another eps than the layers'")])
    bf = enc[0].self_attn.batch_first
    a, b = _one(src, bf, name, "src"), _one(tgt, bf, name, "tgt")
    s = arrays(model.state_dict())
    vocab = [f"s{i}" for i in range(len(a))] + [f"t{j}" for j in range(len(b))]
    weights: dict[str, Any] = {
        "W_E": matrix(np.concatenate([a, b])),
        "encoder_layers": [layer_weights(s, f"encoder.layers.{i}.", False) for i in range(len(enc))],
        "decoder_layers": [layer_weights(s, f"decoder.layers.{i}.", True) for i in range(len(dec))],
        "ln_encoder": _norm(s, "encoder.norm"), "ln_final": _norm(s, "decoder.norm")}
    d, heads = model.d_model, model.nhead
    return {"title": f"{name}(d_model={d}, nhead={heads}, {_count(len(enc), 'encoder')} and {_count(len(dec), 'decoder')})",
            "model": {"kind": "encoder-decoder", "vocab": vocab, "positions": "none", "source": vocab[:len(a)],
                      "prompt": vocab[len(a):], "encoder_layers": len(enc), "decoder_layers": len(dec),
                      "head": "tied"},
            "dims": {"d_model": d, "d_ff": enc[0].linear1.out_features, "heads": heads},
            "block": blocks[0], "weights": weights}


def multihead_attention(mha, query, key=None, value=None, key_padding_mask=None, causal: bool = False) -> dict:
    """`nn.MultiheadAttention` (self-attention: `key` and `value` are `query` or left out) as the
    attention of a Post-LN block: the spec's step `attn.out` is `mha(x, x, x)[0]`."""
    name = "nn.MultiheadAttention"
    same = all(t is None or t is query for t in (key, value))
    refuse(name, _attention_checks(mha, name) + [
        (not same, "key or value other than the query (cross-attention): use nn.TransformerDecoderLayer")])
    x = _one(query, mha.batch_first, name, "query")
    d, heads = mha.embed_dim, mha.num_heads
    s = arrays(mha.state_dict())
    bias = s.get("in_proj_bias") is not None
    weights = attention_weights(s, "")
    weights.update({"W_1": matrix(np.zeros((d, 1))), "W_2": matrix(np.zeros((1, d)))})  # an FFN of zeros
    if bias != (s.get("out_proj.bias") is not None):
        raise Unsupported(name, "a bias on the input projections but not on the output one (or the reverse)")
    if bias:
        weights.update({"b_1": ["0"], "b_2": ["0"] * d})
    return {"title": f"{name}(embed_dim={d}, num_heads={heads}): its output is the step attn.out",
            "dims": {"seq_len": int(x.shape[0]), "d_model": d, "d_ff": 1, "heads": heads},
            "block": {"norm_position": "post", "norm": "layernorm", "eps": "1/100000", "activation": "relu",
                      "attention_scale": "sqrt_dk", "causal": bool(causal), "bias": bias, "out_proj": True},
            "weights": weights, "inputs": inputs_of(x, _pad(key_padding_mask))}


def _count(n: int, kind: str) -> str:
    """`1 encoder layer`, `2 decoder layers`."""
    return f"{n} {kind} layer{'' if n == 1 else 's'}"
