"""A Hugging Face LlamaForCausalLM as a `model:` spec: RMSNorm, SwiGLU, RoPE in every layer and grouped K/V heads, read from
the config and the state dict (spec_from.py's front door calls `llama`). A config or state dict that disagrees with itself
is refused by file and field (checked.py), as the GPT reader refuses one."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from symblock.errors import excerpt
from symblock.reference.checked import Checked, check_layer_count, check_tokens, declared, dims, layers, number, whole
from symblock.reference.exact_weights import Source, Unsupported, as_array, block_weights, matrix, vector, written


def _rope_theta(config: Mapping[str, Any], src: Source) -> float:
    params = config.get("rope_parameters") or config.get("rope_scaling") or {}
    if not isinstance(params, Mapping):
        raise src.bad_config("rope_parameters", f"expected a mapping, got {excerpt(params)}")
    if params.get("rope_type", "default") != "default":
        raise Unsupported(src.config, f"RoPE scaling {excerpt(params.get('rope_type'))} is not supported (only the "
                                      "default rotation)", src.config_field + "rope_parameters.rope_type")
    if "rope_theta" in params:
        return number(params, "rope_theta", src, 10000.0, positive=True, within="rope_parameters.")
    return number(config, "rope_theta", src, 10000.0, positive=True)


def _sizes(config: Mapping[str, Any], src: Source) -> tuple[int, int, int, int, int]:
    """d_model, heads, K/V heads, head width and layers, each checked against the others."""
    d, heads = whole(config, "hidden_size", src), whole(config, "num_attention_heads", src)
    n_layers = whole(config, "num_hidden_layers", src)
    kv = whole(config, "num_key_value_heads", src, default=heads)
    if heads % kv:
        raise src.bad_config("num_key_value_heads", f"{kv} K/V heads do not divide the {heads} query heads evenly")
    if config.get("head_dim") is None and d % heads:
        raise src.bad_config("num_attention_heads", f"{heads} heads do not divide hidden_size {d} evenly")
    return d, heads, kv, whole(config, "head_dim", src, default=d // heads), n_layers


def llama(config: Mapping[str, Any], state: Mapping[str, np.ndarray], tokens, generate: int = 0,
          kv_cache: bool = True, source: Source | None = None) -> dict:
    """The spec of a Llama-layout causal LM on `tokens` (greedy `generate` steps). `source` names the
    config and weights in a refusal (a saved folder's files; by default "Llama")."""
    src = source or Source("Llama", "Llama")
    d, heads, kv, d_k, n_layers = _sizes(config, src)
    if config.get("hidden_act", "silu") != "silu":
        raise Unsupported(src.config, f"activation {excerpt(config.get('hidden_act'))} is not supported: a Llama "
                                      "MLP maps onto SwiGLU (silu)", src.config_field + "hidden_act")
    if config.get("attention_dropout"):
        raise Unsupported(src.config, "attention dropout is not supported", src.config_field + "attention_dropout")
    eps, theta = number(config, "rms_norm_eps", src, 1e-6), _rope_theta(config, src)
    tokens = [int(t) for t in np.asarray(as_array(tokens)).reshape(-1)]
    w = Checked(dict(state), src, out_in=True, why=f" (hidden_size {d}, {heads} heads over {kv_heads(kv)} of {d_k})")
    embed = w.rows("model.embed_tokens.weight", d, "hidden_size")
    vocab = len(embed)
    declared(config, "vocab_size", vocab, src, f"model.embed_tokens.weight is {dims(embed.shape)}, so {vocab} tokens")
    check_layer_count(w.s, "model.layers.", "num_hidden_layers", n_layers, src)
    check_tokens(tokens, vocab, src)
    d_ff = w.width("model.layers.0.mlp.gate_proj.weight", d, "intermediate_size")
    declared(config, "intermediate_size", d_ff, src, f"model.layers.0.mlp.gate_proj.weight is {d_ff} wide")
    bias = "model.layers.0.self_attn.q_proj.bias" in w.s
    shapes = _shapes(d, heads * d_k, kv * d_k, d_ff)
    weights = {"W_E": matrix(embed), "ln_final": {"gamma": vector(w.need("model.norm.weight", (d,)))},
               "layers": [_layer(w, f"model.layers.{i}.", shapes, bias) for i in range(n_layers)]}
    head = w.maybe("lm_head.weight", (d, vocab), linear=True)
    tied = head is None or np.array_equal(head, embed)
    if not tied:
        weights["W_U"] = matrix(head.T)
    dims_ = {"d_model": d, "d_ff": d_ff, "heads": heads, "kv_heads": kv}
    if d_k * heads != d:
        dims_.update(d_k=d_k, d_v=d_k)
    return {"title": f"Llama ({layers(n_layers)}, d_model {d}, {heads} heads over {kv_heads(kv)}, vocab {vocab})",
            "model": {"vocab": [f"t{i}" for i in range(vocab)], "positions": "rope", "layers": n_layers,
                      "head": "tied" if tied else "untied", "final_norm": True, "prompt": tokens,
                      "generate": int(generate), "kv_cache": bool(kv_cache and generate)},
            "dims": dims_,
            "block": {"norm_position": "pre", "norm": "rmsnorm", "eps": written(eps),
                      "activation": "swiglu", "attention_scale": "sqrt_dk", "bias": False,   # the biases it has are given
                      "rope": {"theta": written(theta), "style": "half"}},
            "weights": weights}


def _shapes(d: int, q: int, kv: int, d_ff: int) -> dict[str, tuple[int, int]]:
    """Each linear map's shape in math layout (in × out)."""
    return {"self_attn.q_proj": (d, q), "self_attn.k_proj": (d, kv), "self_attn.v_proj": (d, kv),
            "self_attn.o_proj": (q, d), "mlp.gate_proj": (d, d_ff), "mlp.up_proj": (d, d_ff),
            "mlp.down_proj": (d_ff, d)}


def _layer(w: Checked, p: str, shapes: Mapping[str, tuple[int, int]], bias: bool) -> dict:
    m = {name: w.linear(p + name + ".weight", shape) for name, shape in shapes.items()}
    b = {name: w.maybe(p + name + ".bias", (shape[1],)) for name, shape in shapes.items()}
    for name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"):
        if (b[name] is not None) != bias:
            raise w.src.bad_weight(p + name + ".bias", "missing; expected it as model.layers.0.self_attn.q_proj has"
                                   if bias else "a bias, but model.layers.0.self_attn.q_proj has none")
    d = shapes["self_attn.q_proj"][0]
    out = block_weights(m["self_attn.q_proj"], m["self_attn.k_proj"], m["self_attn.v_proj"], m["self_attn.o_proj"],
                        m["mlp.gate_proj"], m["mlp.down_proj"],
                        {"b_Q": b["self_attn.q_proj"], "b_K": b["self_attn.k_proj"], "b_V": b["self_attn.v_proj"],
                         "b_O": b["self_attn.o_proj"], "b_1": b["mlp.gate_proj"], "b_2": b["mlp.down_proj"]},
                        {"ln1": (w.need(p + "input_layernorm.weight", (d,)), None),
                         "ln2": (w.need(p + "post_attention_layernorm.weight", (d,)), None)})
    out["W_3"] = matrix(m["mlp.up_proj"])      # the gate's partner: SiLU(x W_1) ⊙ (x W_3)
    if b["mlp.up_proj"] is not None:
        out["b_3"] = vector(b["mlp.up_proj"])
    return out


def kv_heads(n: int) -> str:
    return f"{n} K/V head" + ("s" if n != 1 else "")
