"""A Hugging Face BertModel as an encoder spec (model.kind: encoder): word + position + token-type
embeddings, BERT's embedding LayerNorm (`embed_norm`), the Post-LN stack, the padded prompt's mask;
its hidden states are `last_hidden_state` (the pooler after them is not worked). Read from the
config and the state dict, so a live model and a saved folder take the same path.

The spec's embeddings have no token types: BERT adds the type row of each position to it, so the
position rows written are the exact sums W_P[i] + T[type of i], worked in decimals without rounding.
"""
from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any, Mapping

import numpy as np

from symblock.reference.exact_weights import as_array, block_weights, exact, matrix, refuse, vector

ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "silu": "silu"}


def exact_sum(a: float, b: float) -> str:
    """The exact decimal of a + b (two float64 values: at most ~1100 digits, so 2000 lose none)."""
    with localcontext() as c:
        c.prec = 2000
        d = Decimal(float(a)) + Decimal(float(b))
    return "0" if d == 0 else format(d, "f")


def bert(config: Mapping[str, Any], state: Mapping[str, np.ndarray], input_ids, attention_mask=None,
         token_type_ids=None) -> dict:
    """The spec of a BertModel on `input_ids` (one sequence; `attention_mask` 1 = token, 0 = padding,
    `token_type_ids` default 0), whose last step is the model's last_hidden_state."""
    s = {k.removeprefix("bert."): v for k, v in state.items()}
    ids = [int(t) for t in np.asarray(as_array(input_ids)).reshape(-1)]
    n, vocab = len(ids), int(s["embeddings.word_embeddings.weight"].shape[0])
    types = [0] * n if token_type_ids is None else [int(t) for t in np.asarray(as_array(token_type_ids)).reshape(-1)]
    pad = None if attention_mask is None else [bool(v == 0) for v in np.asarray(as_array(attention_mask)).reshape(-1)]
    act = ACTIVATIONS.get(str(config.get("hidden_act", "gelu")))
    refuse("BertModel", [
        (act is None, f"activation {config.get('hidden_act')!r}"),
        ((config.get("position_embedding_type") or "absolute") != "absolute",
         f"position_embedding_type {config.get('position_embedding_type')!r} (only absolute positions)"),
        (bool(config.get("is_decoder")) or bool(config.get("add_cross_attention")), "a BERT decoder"),
        (not ids, "no input ids"), (any(not 0 <= t < vocab for t in ids), f"token ids outside 0..{vocab - 1}"),
        (len(types) != n or (pad is not None and len(pad) != n), "masks of another length than input_ids"),
        (n > int(s["embeddings.position_embeddings.weight"].shape[0]), f"{n} tokens exceed the positions")])
    pos, tt = s["embeddings.position_embeddings.weight"], s["embeddings.token_type_embeddings.weight"]
    n_layers = int(config["num_hidden_layers"])
    weights = {"W_E": matrix(s["embeddings.word_embeddings.weight"]),
               "W_P": [[exact_sum(p, t) for p, t in zip(pos[i], tt[types[i]])] for i in range(n)],
               "ln_embed": {"gamma": vector(s["embeddings.LayerNorm.weight"]),
                            "beta": vector(s["embeddings.LayerNorm.bias"])},
               "layers": [_layer(s, f"encoder.layer.{i}.") for i in range(n_layers)]}
    d, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    model: dict[str, Any] = {"kind": "encoder", "vocab": [f"t{i}" for i in range(vocab)], "positions": "learned",
                             "layers": n_layers, "prompt": [f"t{i}" for i in ids], "embed_norm": True}
    if pad is not None and any(pad):
        model["key_padding_mask"] = pad
    return {"title": f"BertModel ({n_layers} layers, hidden {d}, {heads} heads, vocab {vocab})", "model": model,
            "dims": {"d_model": d, "d_ff": int(config["intermediate_size"]), "heads": heads},
            "block": {"norm_position": "post", "norm": "layernorm", "eps": exact(config.get("layer_norm_eps", 1e-12)),
                      "activation": act, "attention_scale": "sqrt_dk", "bias": True},
            "weights": weights}


def _layer(s: Mapping[str, np.ndarray], p: str) -> dict:
    a = p + "attention.self."
    return block_weights(
        s[a + "query.weight"].T, s[a + "key.weight"].T, s[a + "value.weight"].T,
        s[p + "attention.output.dense.weight"].T, s[p + "intermediate.dense.weight"].T, s[p + "output.dense.weight"].T,
        {"b_Q": s[a + "query.bias"], "b_K": s[a + "key.bias"], "b_V": s[a + "value.bias"],
         "b_O": s[p + "attention.output.dense.bias"], "b_1": s[p + "intermediate.dense.bias"],
         "b_2": s[p + "output.dense.bias"]},
        {"ln1": (s[p + "attention.output.LayerNorm.weight"], s[p + "attention.output.LayerNorm.bias"]),
         "ln2": (s[p + "output.LayerNorm.weight"], s[p + "output.LayerNorm.bias"])})
