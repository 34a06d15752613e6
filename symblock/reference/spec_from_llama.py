"""A Hugging Face LlamaForCausalLM as a `model:` spec: RMSNorm, SwiGLU, RoPE in every layer and grouped K/V heads, read from
the config and the state dict (spec_from.py's front door calls `llama`)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from symblock.reference.spec_from import as_array, block_weights, exact, matrix, refuse, vector


def _rope_theta(config: Mapping[str, Any]) -> float:
    params = config.get("rope_parameters") or config.get("rope_scaling") or {}
    refuse("Llama", [(params.get("rope_type", "default") != "default",
                      f"RoPE scaling {params.get('rope_type')!r} (only the default rotation)")])
    return float(params.get("rope_theta", config.get("rope_theta", 10000.0)))


def llama(config: Mapping[str, Any], state: Mapping[str, np.ndarray], tokens, generate: int = 0,
          kv_cache: bool = True) -> dict:
    """The spec of a Llama-layout causal LM on `tokens` (greedy `generate` steps)."""
    s = dict(state)
    d, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    kv, n_layers = int(config.get("num_key_value_heads") or heads), int(config["num_hidden_layers"])
    d_k = int(config.get("head_dim") or d // heads)
    tokens = [int(t) for t in np.asarray(as_array(tokens)).reshape(-1)]
    vocab = int(s["model.embed_tokens.weight"].shape[0])
    refuse("Llama", [(config.get("hidden_act", "silu") != "silu", f"activation {config.get('hidden_act')!r}"),
                     (not tokens, "the prompt has no tokens"),
                     (any(not 0 <= t < vocab for t in tokens), f"token ids outside the vocabulary 0..{vocab - 1}"),
                     (bool(config.get("attention_dropout")), "attention dropout")])
    theta = _rope_theta(config)
    layers = [_layer(s, f"model.layers.{i}.") for i in range(n_layers)]
    tied = "lm_head.weight" not in s or np.array_equal(s["lm_head.weight"], s["model.embed_tokens.weight"])
    weights = {"W_E": matrix(s["model.embed_tokens.weight"]), "ln_final": {"gamma": vector(s["model.norm.weight"])},
               "layers": layers, **({} if tied else {"W_U": matrix(s["lm_head.weight"].T)})}
    d_ff = int(s["model.layers.0.mlp.gate_proj.weight"].shape[0])
    dims = {"d_model": d, "d_ff": d_ff, "heads": heads, "kv_heads": kv}
    if d_k * heads != d:
        dims.update(d_k=d_k, d_v=d_k)
    return {"title": f"Llama ({n_layers} layers, d_model {d}, {heads} heads over {kv} K/V heads, vocab {vocab})",
            "model": {"vocab": [f"t{i}" for i in range(vocab)], "positions": "rope", "layers": n_layers,
                      "head": "tied" if tied else "untied", "final_norm": True, "prompt": tokens,
                      "generate": int(generate), "kv_cache": bool(kv_cache and generate)},
            "dims": dims,
            "block": {"norm_position": "pre", "norm": "rmsnorm", "eps": exact(config.get("rms_norm_eps", 1e-6)),
                      "activation": "swiglu", "attention_scale": "sqrt_dk",
                      "bias": "model.layers.0.self_attn.q_proj.bias" in s,
                      "rope": {"theta": exact(theta), "style": "half"}},
            "weights": weights}


def _layer(s: Mapping[str, np.ndarray], p: str) -> dict:
    a, m = p + "self_attn.", p + "mlp."
    w = block_weights(s[a + "q_proj.weight"].T, s[a + "k_proj.weight"].T, s[a + "v_proj.weight"].T,
                      s[a + "o_proj.weight"].T, s[m + "gate_proj.weight"].T, s[m + "down_proj.weight"].T,
                      {"b_Q": s.get(a + "q_proj.bias"), "b_K": s.get(a + "k_proj.bias"),
                       "b_V": s.get(a + "v_proj.bias"), "b_O": s.get(a + "o_proj.bias"),
                       "b_1": s.get(m + "gate_proj.bias"), "b_2": s.get(m + "down_proj.bias")},
                      {"ln1": (s[p + "input_layernorm.weight"], None),
                       "ln2": (s[p + "post_attention_layernorm.weight"], None)})
    w["W_3"] = matrix(s[m + "up_proj.weight"].T)      # the gate's partner: SiLU(x W_1) ⊙ (x W_3)
    if s.get(m + "up_proj.bias") is not None:
        w["b_3"] = vector(s[m + "up_proj.bias"])
    return w
