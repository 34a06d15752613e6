"""Specs from real models: `spec_from(obj, *inputs)` reads a torch, Hugging Face or nanoGPT object's
configuration and weights and returns the spec mapping whose exact forward is the object's forward
on those inputs, so an author turns a tiny trained model into an exact worked example.

Every weight is written as the exact decimal of its float64 value (a float32 weight widens without
loss), and ε and RoPE's θ as the config writes them (1e-05, read as 1/100000), so nothing is
rounded on the way in: the exact forward and the object's float64 forward differ only by the
object's own rounding. An option the block cannot express (dropout in training
mode, another attention scale, ALiBi, a parallel block, ...) is refused by name (`Unsupported`).
The readers work on plain mappings (a config and a state dict of arrays), so a saved checkpoint
(`symblock import`, checkpoint.py) and a live object take the same path.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from symblock.errors import excerpt
from symblock.reference.checked import Checked, check_layer_count, check_tokens, declared, dims, number, whole
from symblock.reference.checked import layers as layers_text
from symblock.reference.exact_weights import (  # noqa: F401  (spec_from.exact, .Unsupported, ... too)
    Source, Unsupported, arrays, as_array, block_weights, exact, host, inputs_of, matrix, refuse, vector, written)


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
                      "eps": written(layer.norm1.eps), "activation": act, "attention_scale": "sqrt_dk",
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
                      "eps": written(layer.attention.output.LayerNorm.eps), "activation": act,
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
        flavour: str = "gpt2", kv_cache: bool = True, source: Source | None = None) -> dict:
    """A Pre-LN GPT as a `model:` spec, from its config and state dict. `flavour` names the weight
    names and layouts: "gpt2" (Hugging Face: Conv1D weights stored in × out, `transformer.` prefix)
    or "nanogpt" (nn.Linear weights out × in). `source` is where the config and weights came from,
    as a refusal names them (a saved model's files; by default the flavour).

    A config or a state dict that disagrees with itself (a missing or misshapen weight, n_layer or
    n_embd other than the weights hold) is refused as a SpecError naming the file and the field."""
    names = _GPT_NAMES[flavour]
    src = source or Source(flavour, flavour)
    keys = names["config"]
    tokens = [int(t) for t in np.asarray(as_array(tokens)).reshape(-1)]
    c, act, eps = _gpt_config(config, keys, src, len(tokens), generate)
    s = {k.removeprefix("_orig_mod."): v for k, v in state.items()}
    d, heads, n_layers = c["d"], c["heads"], c["layers"]
    p = names["prefix"]
    w = Checked(s, src, names["out_in"], f" (n_embd {d})")
    wte = w.rows(p + "wte.weight", d, keys["d"])
    vocab = len(wte)
    declared(config, "vocab_size", vocab, src, f"{src.weights_field}{p}wte.weight is {dims(wte.shape)}, "
                                               f"so {vocab} tokens")
    if d % heads:
        raise src.bad_config(keys["heads"], f"{heads} heads do not divide n_embd {d} evenly")
    check_layer_count(s, names["layer"].split("{i}")[0], keys["layers"], n_layers, src)
    check_tokens(tokens, vocab, src)
    first = names["layer"].format(i=0)
    d_ff = w.width(first + "mlp.c_fc.weight", d)
    bias = first + "attn.c_attn.bias" in s
    layers = [_gpt_layer(w, names["layer"].format(i=i), d, d_ff, bias, first, names["linear"])
              for i in range(n_layers)]
    weights = {"W_E": matrix(wte),
               "W_P": matrix(w.need(p + "wpe.weight", (c["positions"], d))[:len(tokens) + generate]),
               "ln_final": _norm(w, p + "ln_f", d), "layers": layers}
    head = w.maybe("lm_head.weight", (vocab, d))
    tied = head is None or np.array_equal(head, wte)
    if not tied:
        weights["W_U"] = matrix(head.T)
    return {"title": f"{_GPT_TITLES[flavour]} ({layers_text(n_layers)}, d_model {d}, {heads} heads, vocab {vocab})",
            "model": {"vocab": [f"t{i}" for i in range(vocab)], "positions": "learned", "layers": n_layers,
                      "head": "tied" if tied else "untied", "final_norm": True, "prompt": tokens,
                      "generate": int(generate), "kv_cache": bool(kv_cache and generate)},
            "dims": {"d_model": d, "d_ff": d_ff, "heads": heads},
            "block": {"norm_position": "pre", "norm": "layernorm", "eps": written(eps),
                      "activation": act, "bias": bias,   # GPT-2's scale_attn_weights: false leaves the scores unscaled
                      "attention_scale": "none" if config.get("scale_attn_weights") is False else "sqrt_dk"},
            "weights": weights}


def _gpt_config(config: Mapping[str, Any], keys: Mapping[str, str], src: Source, n_tokens: int,
                generate: int) -> tuple:
    """The GPT config's sizes (whole numbers >= 1), the block's activation and ε; an option the block
    cannot express is refused by its field."""
    c = {k: whole(config, keys[k], src) for k in ("d", "heads", "layers", "positions")}
    act_name = config.get(keys["activation"], "gelu") if "activation" in keys else "gelu"
    act = GPT2_ACTIVATIONS.get(act_name) if isinstance(act_name, str) else None
    if act is None:
        raise Unsupported(src.config, f"{excerpt(act_name)} is not an activation the block has; expected one of "
                                      f"{', '.join(GPT2_ACTIVATIONS)}", src.config_field + keys["activation"])
    for key, bad, why in (
            ("scale_attn_by_inverse_layer_idx", bool(config.get("scale_attn_by_inverse_layer_idx")),
             "true is not supported: it also divides layer i's attention scores by i + 1, and the block "
             "scales them by 1/sqrt(d_k) alone"),
            ("add_cross_attention", bool(config.get("add_cross_attention")),
             "true is not supported: a GPT read here has self-attention only")):
        if bad:
            raise Unsupported(src.config, why, src.config_field + key)
    if n_tokens + generate > c["positions"]:
        raise Unsupported(src.config, f"{n_tokens} prompt tokens + {generate} generated exceed the "
                                      f"{c['positions']} positions", src.config_field + keys["positions"])
    return c, act, number(config, keys["eps"], src, 1e-5) if "eps" in keys else 1e-5


def _gpt_layer(w: Checked, p: str, d: int, d_ff: int, bias: bool, first: str, lin: Callable) -> dict:
    shapes = {"attn.c_attn": (d, 3 * d), "attn.c_proj": (d, d), "mlp.c_fc": (d, d_ff), "mlp.c_proj": (d_ff, d)}
    mats = {name: lin(w.need(p + name + ".weight", shape, linear=True)) for name, shape in shapes.items()}
    if bias:
        b = {name: w.need(p + name + ".bias", (shape[1],)) for name, shape in shapes.items()}
    else:
        for name in shapes:
            w.none(p + name + ".bias", f"{first}attn.c_attn has none")
        b = dict.fromkeys(shapes)
    q, k, v = np.split(mats["attn.c_attn"], 3, axis=1)
    bq, bk, bv = np.split(b["attn.c_attn"], 3) if bias else (None, None, None)
    return block_weights(q, k, v, mats["attn.c_proj"], mats["mlp.c_fc"], mats["mlp.c_proj"],
                         {"b_Q": bq, "b_K": bk, "b_V": bv, "b_O": b["attn.c_proj"],
                          "b_1": b["mlp.c_fc"], "b_2": b["mlp.c_proj"]},
                         {"ln1": _norm_pair(w, p + "ln_1", d), "ln2": _norm_pair(w, p + "ln_2", d)})


def _norm_pair(w: Checked, p: str, d: int) -> tuple:
    return w.need(p + ".weight", (d,)), w.maybe(p + ".bias", (d,))


def _norm(w: Checked, p: str, d: int) -> dict:
    gamma, beta = _norm_pair(w, p, d)
    return {"gamma": vector(gamma), **({"beta": vector(beta)} if beta is not None else {})}


_GPT_TITLES = {"gpt2": "GPT-2", "nanogpt": "nanoGPT"}   # a spec's title names the model as its authors do
_GPT_NAMES = {
    "gpt2": {"prefix": "transformer.", "layer": "transformer.h.{i}.", "linear": lambda w: w, "out_in": False,
             "config": {"d": "n_embd", "heads": "n_head", "layers": "n_layer", "positions": "n_positions",
                        "eps": "layer_norm_epsilon", "activation": "activation_function"}},
    "nanogpt": {"prefix": "transformer.", "layer": "transformer.h.{i}.", "linear": lambda w: w.T, "out_in": True,
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
