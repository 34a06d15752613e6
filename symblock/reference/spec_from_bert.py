"""A Hugging Face BertModel as an encoder spec (model.kind: encoder): word + position + token-type
embeddings, BERT's embedding LayerNorm (`embed_norm`), the Post-LN stack, the padded prompt's mask;
its hidden states are `last_hidden_state` (the pooler after them is not worked). Read from the
config and the state dict, so a live model and a saved folder take the same path; a config or state
dict that disagrees with itself is refused by file and field (checked.py).

The spec's embeddings have no token types: BERT adds the type row of each position to it, so the
position rows written are the exact sums W_P[i] + T[type of i], worked in decimals without rounding.
"""
from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any, Mapping

import numpy as np

from symblock.errors import excerpt
from symblock.reference.checked import Checked, check_layer_count, check_tokens, declared, dims, layers, number, whole
from symblock.reference.exact_weights import (Source, Unsupported, as_array, block_weights, matrix, refuse,
                                              vector, written)

ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "silu": "silu"}


def exact_sum(a: float, b: float) -> str:
    """The exact decimal of a + b (two float64 values: at most ~1100 digits, so 2000 lose none)."""
    with localcontext() as c:
        c.prec = 2000
        d = Decimal(float(a)) + Decimal(float(b))
    return "0" if d == 0 else format(d, "f")


def bert(config: Mapping[str, Any], state: Mapping[str, np.ndarray], input_ids, attention_mask=None,
         token_type_ids=None, source: Source | None = None) -> dict:
    """The spec of a BertModel on `input_ids` (one sequence; `attention_mask` 1 = token, 0 = padding,
    `token_type_ids` default 0), whose last step is the model's last_hidden_state. `source` names the
    config and weights in a refusal (a saved folder's files; by default "BertModel")."""
    src = source or Source("BertModel", "BertModel")
    d, heads, n_layers = (whole(config, k, src) for k in ("hidden_size", "num_attention_heads", "num_hidden_layers"))
    if d % heads:
        raise src.bad_config("num_attention_heads", f"{heads} heads do not divide hidden_size {d} evenly")
    act = ACTIVATIONS.get(config.get("hidden_act", "gelu")) if isinstance(config.get("hidden_act", "gelu"), str) else None
    for key, bad, why in (
            ("hidden_act", act is None, f"activation {excerpt(config.get('hidden_act'))} is not supported; expected "
                                        f"one of {', '.join(ACTIVATIONS)}"),
            ("position_embedding_type", (config.get("position_embedding_type") or "absolute") != "absolute",
             f"{excerpt(config.get('position_embedding_type'))} is not supported (only absolute positions)"),
            ("is_decoder", bool(config.get("is_decoder")) or bool(config.get("add_cross_attention")),
             "a BERT decoder is not supported")):
        if bad:
            raise Unsupported(src.config, why, src.config_field + key)
    eps = number(config, "layer_norm_eps", src, 1e-12)
    s = {k.removeprefix("bert."): v for k, v in state.items()}
    w = Checked(s, src, out_in=True, why=f" (hidden_size {d})")
    e = "embeddings."
    words, pos, tt = (w.rows(e + k + ".weight", d, "hidden_size") for k in
                      ("word_embeddings", "position_embeddings", "token_type_embeddings"))
    declared(config, "vocab_size", len(words), src, f"{e}word_embeddings.weight is {dims(words.shape)}, "
                                                    f"so {len(words)} tokens")
    declared(config, "max_position_embeddings", len(pos), src, f"{e}position_embeddings.weight is "
                                                               f"{dims(pos.shape)}, so {len(pos)} positions")
    ids, types, pad = _inputs(input_ids, attention_mask, token_type_ids, len(words), len(pos), len(tt), src)
    check_layer_count(s, "encoder.layer.", "num_hidden_layers", n_layers, src)
    d_ff = w.width("encoder.layer.0.intermediate.dense.weight", d, "intermediate_size")
    declared(config, "intermediate_size", d_ff, src, f"encoder.layer.0.intermediate.dense.weight is {d_ff} wide")
    weights = {"W_E": matrix(words),
               "W_P": [[exact_sum(p, t) for p, t in zip(pos[i], tt[types[i]])] for i in range(len(ids))],
               "ln_embed": _norm(w, e + "LayerNorm", d),
               "layers": [_layer(w, f"encoder.layer.{i}.", d, d_ff) for i in range(n_layers)]}
    model: dict[str, Any] = {"kind": "encoder", "vocab": [f"t{i}" for i in range(len(words))], "positions": "learned",
                             "layers": n_layers, "prompt": [f"t{i}" for i in ids], "embed_norm": True}
    if pad is not None and any(pad):
        model["key_padding_mask"] = pad
    return {"title": f"BertModel ({layers(n_layers)}, hidden {d}, {heads} heads, vocab {len(words)})", "model": model,
            "dims": {"d_model": d, "d_ff": d_ff, "heads": heads},
            "block": {"norm_position": "post", "norm": "layernorm", "eps": written(eps),
                      "activation": act, "attention_scale": "sqrt_dk", "bias": True},
            "weights": weights}


def _inputs(input_ids, attention_mask, token_type_ids, vocab: int, positions: int, n_types: int, src: Source):
    """The ids, token types and padding flags of one sequence, each checked against the tables it indexes."""
    ids = [int(t) for t in np.asarray(as_array(input_ids)).reshape(-1)]
    check_tokens(ids, vocab, src)
    n = len(ids)
    types = [0] * n if token_type_ids is None else [int(t) for t in np.asarray(as_array(token_type_ids)).reshape(-1)]
    pad = None if attention_mask is None else [bool(v == 0) for v in np.asarray(as_array(attention_mask)).reshape(-1)]
    refuse(src.weights, [
        (len(types) != n or (pad is not None and len(pad) != n), "masks of another length than input_ids"),
        (any(not 0 <= t < n_types for t in types), f"token types outside 0..{n_types - 1}"),
        (n > positions, f"{n} tokens exceed the {positions} positions of embeddings.position_embeddings.weight")])
    return ids, types, pad


def _norm(w: Checked, p: str, d: int) -> dict:
    return {"gamma": vector(w.need(p + ".weight", (d,))), "beta": vector(w.need(p + ".bias", (d,)))}


def _layer(w: Checked, p: str, d: int, d_ff: int) -> dict:
    a, o = p + "attention.self.", p + "attention.output."
    shapes = {a + "query": (d, d), a + "key": (d, d), a + "value": (d, d), o + "dense": (d, d),
              p + "intermediate.dense": (d, d_ff), p + "output.dense": (d_ff, d)}
    m = {k: w.linear(k + ".weight", shape) for k, shape in shapes.items()}
    b = {k: w.need(k + ".bias", (shape[1],)) for k, shape in shapes.items()}
    ln = {k: (w.need(k + ".weight", (d,)), w.need(k + ".bias", (d,))) for k in (o + "LayerNorm", p + "output.LayerNorm")}
    return block_weights(
        m[a + "query"], m[a + "key"], m[a + "value"], m[o + "dense"], m[p + "intermediate.dense"], m[p + "output.dense"],
        {"b_Q": b[a + "query"], "b_K": b[a + "key"], "b_V": b[a + "value"], "b_O": b[o + "dense"],
         "b_1": b[p + "intermediate.dense"], "b_2": b[p + "output.dense"]},
        {"ln1": ln[o + "LayerNorm"], "ln2": ln[p + "output.LayerNorm"]})
