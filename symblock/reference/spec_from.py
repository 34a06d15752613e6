"""Specs from real models: `spec_from(obj, *inputs)` reads a torch, Hugging Face or nanoGPT object's
configuration and weights and returns the spec mapping whose exact forward is the object's forward
on those inputs, so an author turns a tiny trained model into an exact worked example.

Every weight is written as the exact decimal of its float64 value (a float32 weight widens without
loss), so nothing is rounded on the way in: the exact forward and the object's float64 forward
differ only by the object's own rounding. An option the block cannot express (dropout in training
mode, another attention scale, ALiBi, a parallel block, ...) is refused by name (`Unsupported`).
The readers work on plain mappings (a config and a state dict of arrays), so a saved checkpoint
(`symblock import`, checkpoint.py) and a live object take the same path.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from symblock.reference.exact_weights import (  # noqa: F401  (spec_from.exact, .Unsupported, ... too)
    Unsupported, arrays, as_array, block_weights, exact, host, inputs_of, matrix, refuse, vector)


# ---------------------------------------------------------------- torch.nn.TransformerEncoderLayer

def encoder_layer(layer, src, causal: bool = False, src_key_padding_mask=None) -> dict:
    """`nn.TransformerEncoderLayer` (eval mode) on `src`: Post-LN or Pre-LN (`norm_first`), relu or
    erf gelu, biases or none, ε as set; `causal=True` for a causal `src_mask`."""
    import torch.nn.functional as F
    sa, name = layer.self_attn, "nn.TransformerEncoderLayer"
    act = {F.relu: "relu", F.gelu: "gelu"}.get(layer.activation)
    refuse(name, [(layer.training and layer.dropout.p > 0, "dropout > 0 in training mode: call .eval() first"),
                  (act is None, f"activation {layer.activation!r}: only relu and gelu map onto the block"),
                  (not sa._qkv_same_embed_dim, "separate key/value widths (kdim, vdim)"),
                  (sa.bias_k is not None, "add_bias_kv"), (sa.add_zero_attn, "add_zero_attn"),
                  (layer.norm1.eps != layer.norm2.eps, "the two norms have different eps")])
    s = arrays(layer.state_dict())
    d, heads, d_ff = sa.embed_dim, sa.num_heads, layer.linear1.out_features
    q, k, v = np.split(s["self_attn.in_proj_weight"], 3)
    b = s.get("self_attn.in_proj_bias")
    bq, bk, bv = np.split(b, 3) if b is not None else (None, None, None)
    x = host(src)
    if x.ndim == 3 and not layer.self_attn.batch_first:
        x = x.transpose(1, 0, 2)
    bias = b is not None
    weights = block_weights(q.T, k.T, v.T, s["self_attn.out_proj.weight"].T, s["linear1.weight"].T,
                            s["linear2.weight"].T,
                            {"b_Q": bq, "b_K": bk, "b_V": bv, "b_O": s.get("self_attn.out_proj.bias"),
                             "b_1": s.get("linear1.bias"), "b_2": s.get("linear2.bias")},
                            {"ln1": (s["norm1.weight"], s.get("norm1.bias")),
                             "ln2": (s["norm2.weight"], s.get("norm2.bias"))})
    return {"title": f"{name}(d_model={d}, nhead={heads}, dim_feedforward={d_ff})",
            "dims": {"seq_len": int(x.shape[-2]), "d_model": d, "d_ff": d_ff, "heads": heads},
            "block": {"norm_position": "pre" if layer.norm_first else "post", "norm": "layernorm",
                      "eps": exact(layer.norm1.eps), "activation": act, "attention_scale": "sqrt_dk",
                      "causal": bool(causal), "bias": bias, "out_proj": True},
            "weights": weights, "inputs": inputs_of(x, as_array(src_key_padding_mask))}


# ---------------------------------------------------------------- Hugging Face BertLayer

def bert_layer(layer, hidden_states, attention_mask=None) -> dict:
    """A Hugging Face `BertLayer` (eval mode) on `hidden_states` (batch, seq, d); `attention_mask`
    (batch, seq) of 1 = token, 0 = padding, as the tokenizer gives it."""
    cfg = layer.attention.self
    name = type(layer).__name__
    refuse(name, [(layer.training, "training mode: call .eval() first"),
                  (getattr(cfg, "position_embedding_type", "absolute") != "absolute",
                   "relative position embeddings in attention")])
    s = arrays(layer.state_dict())
    d = s["attention.self.query.weight"].shape[1]
    heads = cfg.num_attention_heads
    act = _hf_activation(layer.intermediate.intermediate_act_fn, name)
    p = "attention.self."
    weights = block_weights(
        s[p + "query.weight"].T, s[p + "key.weight"].T, s[p + "value.weight"].T,
        s["attention.output.dense.weight"].T, s["intermediate.dense.weight"].T, s["output.dense.weight"].T,
        {"b_Q": s[p + "query.bias"], "b_K": s[p + "key.bias"], "b_V": s[p + "value.bias"],
         "b_O": s["attention.output.dense.bias"], "b_1": s["intermediate.dense.bias"],
         "b_2": s["output.dense.bias"]},
        {"ln1": (s["attention.output.LayerNorm.weight"], s["attention.output.LayerNorm.bias"]),
         "ln2": (s["output.LayerNorm.weight"], s["output.LayerNorm.bias"])})
    x = host(hidden_states)
    pad = None if attention_mask is None else (np.asarray(as_array(attention_mask)) == 0)
    return {"title": f"{name}(hidden={d}, heads={heads})",
            "dims": {"seq_len": int(x.shape[-2]), "d_model": d, "d_ff": int(s["intermediate.dense.weight"].shape[0]),
                     "heads": heads},
            "block": {"norm_position": "post", "norm": "layernorm",
                      "eps": exact(layer.attention.output.LayerNorm.eps), "activation": act,
                      "attention_scale": "sqrt_dk", "causal": False, "bias": True, "out_proj": True},
            "weights": weights, "inputs": inputs_of(x, pad)}


def _hf_activation(fn, name: str) -> str:
    """The block's activation for a Hugging Face activation module (GELUActivation: erf,
    NewGELUActivation / gelu_new / gelu_pytorch_tanh: tanh, ReLU, SiLU)."""
    kind = type(fn).__name__
    table = {"GELUActivation": "gelu", "NewGELUActivation": "gelu_tanh", "PytorchGELUTanh": "gelu_tanh",
             "GELUTanh": "gelu_tanh", "ReLU": "relu", "SiLU": "silu", "SiLUActivation": "silu"}
    if kind == "GELUActivation" and getattr(fn, "act", None) is not None and "tanh" in repr(fn.act):
        return "gelu_tanh"
    if kind not in table:
        raise Unsupported(name, f"activation {kind}: the block has relu, gelu (erf), gelu_tanh and silu")
    return table[kind]


# ---------------------------------------------------------------- GPTs (nanoGPT, Hugging Face GPT-2)

GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu",
                    "relu": "relu", "silu": "silu"}


def gpt(config: Mapping[str, Any], state: Mapping[str, np.ndarray], tokens, generate: int = 0,
        flavour: str = "gpt2", kv_cache: bool = True) -> dict:
    """A Pre-LN GPT as a `model:` spec, from its config and state dict. `flavour` names the weight
    names and layouts: "gpt2" (Hugging Face: Conv1D weights stored in × out, `transformer.` prefix)
    or "nanogpt" (nn.Linear weights out × in)."""
    names = _GPT_NAMES[flavour]
    c = {k: config[v] for k, v in names["config"].items() if v in config}
    s = {k.removeprefix("_orig_mod."): v for k, v in state.items()}
    d, heads, n_layers = int(c["d"]), int(c["heads"]), int(c["layers"])
    tokens = [int(t) for t in np.asarray(as_array(tokens)).reshape(-1)]
    act = GPT2_ACTIVATIONS.get(c.get("activation", "gelu"))
    refuse(flavour, [(act is None, f"activation {c.get('activation')!r}"),
                     (bool(config.get("scale_attn_by_inverse_layer_idx")), "scale_attn_by_inverse_layer_idx"),
                     (config.get("scale_attn_weights") is False, "unscaled attention weights"),
                     (len(tokens) + generate > int(c["positions"]),
                      f"{len(tokens)} prompt tokens + {generate} generated exceed the {c['positions']} positions")])
    vocab = int(s[names["prefix"] + "wte.weight"].shape[0])
    bad = [t for t in tokens if not 0 <= t < vocab]
    refuse(flavour, [(bool(bad), f"token ids {bad} are outside the vocabulary 0..{vocab - 1}"),
                     (not tokens, "the prompt has no tokens")])
    lin = names["linear"]
    layers = [_gpt_layer(s, names["layer"].format(i=i), d, lin) for i in range(n_layers)]
    p = names["prefix"]
    weights = {"W_E": matrix(s[p + "wte.weight"]), "W_P": matrix(s[p + "wpe.weight"][:len(tokens) + generate]),
               "ln_final": _norm(s, p + "ln_f"), "layers": layers}
    tied = "lm_head.weight" not in s or np.array_equal(s["lm_head.weight"], s[p + "wte.weight"])
    if not tied:
        weights["W_U"] = matrix(s["lm_head.weight"].T)
    first = names["layer"].format(i=0)
    bias, d_ff = first + "attn.c_attn.bias" in s, int(lin(s[first + "mlp.c_fc.weight"]).shape[1])
    return {"title": f"{flavour} GPT ({n_layers} layers, d_model {d}, {heads} heads, vocab {vocab})",
            "model": {"vocab": [f"t{i}" for i in range(vocab)], "positions": "learned", "layers": n_layers,
                      "head": "tied" if tied else "untied", "final_norm": True, "prompt": tokens,
                      "generate": int(generate), "kv_cache": bool(kv_cache and generate)},
            "dims": {"d_model": d, "d_ff": d_ff, "heads": heads},
            "block": {"norm_position": "pre", "norm": "layernorm", "eps": exact(c.get("eps", 1e-5)),
                      "activation": act, "attention_scale": "sqrt_dk", "bias": bias},
            "weights": weights}


def _gpt_layer(s: Mapping[str, np.ndarray], p: str, d: int, lin: Callable) -> dict:
    qkv = lin(s[p + "attn.c_attn.weight"])            # d × 3d, math layout
    q, k, v = np.split(qkv, 3, axis=1)
    b = s.get(p + "attn.c_attn.bias")
    bq, bk, bv = np.split(b, 3) if b is not None else (None, None, None)
    return block_weights(q, k, v, lin(s[p + "attn.c_proj.weight"]), lin(s[p + "mlp.c_fc.weight"]),
                         lin(s[p + "mlp.c_proj.weight"]),
                         {"b_Q": bq, "b_K": bk, "b_V": bv, "b_O": s.get(p + "attn.c_proj.bias"),
                          "b_1": s.get(p + "mlp.c_fc.bias"), "b_2": s.get(p + "mlp.c_proj.bias")},
                         {"ln1": _norm_pair(s, p + "ln_1"), "ln2": _norm_pair(s, p + "ln_2")})


def _norm_pair(s, p: str) -> tuple:
    return s[p + ".weight"], s.get(p + ".bias")


def _norm(s, p: str) -> dict:
    gamma, beta = _norm_pair(s, p)
    return {"gamma": vector(gamma), **({"beta": vector(beta)} if beta is not None else {})}


_GPT_NAMES = {
    "gpt2": {"prefix": "transformer.", "layer": "transformer.h.{i}.", "linear": lambda w: w,
             "config": {"d": "n_embd", "heads": "n_head", "layers": "n_layer", "positions": "n_positions",
                        "eps": "layer_norm_epsilon", "activation": "activation_function"}},
    "nanogpt": {"prefix": "transformer.", "layer": "transformer.h.{i}.", "linear": lambda w: w.T,
                "config": {"d": "n_embd", "heads": "n_head", "layers": "n_layer", "positions": "block_size"}},
}


# ---------------------------------------------------------------- the front door

def spec_from(obj, *inputs, **options) -> dict:
    """The spec mapping that reproduces `obj`'s forward on `inputs`:

    * `nn.TransformerEncoderLayer` — `spec_from(layer, src, causal=False, src_key_padding_mask=None)`;
    * `nn.TransformerDecoderLayer` — `spec_from(layer, tgt, memory, causal=True,
      tgt_key_padding_mask=None, memory_key_padding_mask=None)`;
    * `nn.Transformer` — `spec_from(model, src, tgt)`, its forward with the causal `tgt_mask`;
    * `nn.MultiheadAttention` — `spec_from(mha, x, key_padding_mask=None, causal=False)`, self-attention
      as a block's `attn.out` (spec_from_torch.py says why);
    * Hugging Face `BertModel` — `spec_from(model, input_ids, attention_mask=None, token_type_ids=None)`;
    * Hugging Face `BertLayer` — `spec_from(layer, hidden_states, attention_mask=None)`;
    * Hugging Face `GPT2LMHeadModel` / `GPT2Model` and a nanoGPT `GPT` (read by its attributes,
      nanoGPT need not be installed) — `spec_from(model, tokens, generate=0, kv_cache=True)`;
    * Hugging Face `LlamaForCausalLM` (RMSNorm, SwiGLU, RoPE, grouped K/V heads) — the same.
    """
    kind = type(obj).__name__
    if kind == "TransformerEncoderLayer":
        return encoder_layer(obj, *inputs, **options)
    if kind in _TORCH and type(obj).__module__.startswith("torch.nn"):
        from symblock.reference import spec_from_torch
        return getattr(spec_from_torch, _TORCH[kind])(obj, *inputs, **options)
    if kind == "BertModel":
        from symblock.reference.spec_from_bert import bert
        _eval(obj, kind)
        return bert(obj.config.to_dict(), arrays(obj.state_dict()), *inputs, **options)
    if kind == "BertLayer":
        return bert_layer(obj, *inputs, **options)
    if kind in ("GPT2LMHeadModel", "GPT2Model"):
        _eval(obj, kind)
        state = arrays(obj.state_dict())
        if kind == "GPT2Model":
            state = {"transformer." + k: v for k, v in state.items()}
        return gpt(obj.config.to_dict(), state, *inputs, flavour="gpt2", **options)
    if kind == "LlamaForCausalLM":   # RoPE, grouped K/V heads: spec_from_llama.py
        from symblock.reference.spec_from_llama import llama
        _eval(obj, kind)
        return llama(obj.config.to_dict(), arrays(obj.state_dict()), *inputs, **options)
    if hasattr(obj, "transformer") and hasattr(obj, "lm_head") and hasattr(getattr(obj, "config", None), "n_embd"):
        _eval(obj, kind)
        cfg = {k: getattr(obj.config, k) for k in ("n_embd", "n_head", "n_layer", "block_size", "bias")}
        return gpt(cfg, arrays(obj.state_dict()), *inputs, flavour="nanogpt", **options)
    raise Unsupported(kind, "symblock reads nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, "
                            "nn.Transformer, nn.MultiheadAttention, Hugging Face BertLayer, BertModel, "
                            "GPT2LMHeadModel / GPT2Model, LlamaForCausalLM and nanoGPT's GPT")


_TORCH = {"TransformerDecoderLayer": "decoder_layer", "Transformer": "transformer",
          "MultiheadAttention": "multihead_attention"}


def _eval(model, kind: str) -> None:
    if model.training and any(getattr(m, "p", 0) > 0 for m in model.modules() if type(m).__name__ == "Dropout"):
        raise Unsupported(kind, "dropout > 0 in training mode: call .eval() first")
