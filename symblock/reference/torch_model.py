"""A tiny GPT through real torch.nn modules: `nn.Embedding` for tokens and learned positions,
each layer through the block's torch path (reference/torch_ref.py: `nn.MultiheadAttention`,
`nn.LayerNorm`/`nn.RMSNorm`, `nn.Linear`), the final norm as an `nn.LayerNorm`/`nn.RMSNorm`, and
the head as an `nn.Linear` whose weight *is* the embedding's parameter when tied. Also a stack of
real `nn.TransformerEncoderLayer`s with a causal mask (`norm_first` for Pre-LN), where torch's
layer can express the block. Step names and shapes as reference/numeric_model.py.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from symblock.engine.model_spec import ModelSpec, with_length
from symblock.reference import torch_ref
from symblock.reference.model_common import floats, run, sinusoidal


def forward(spec: ModelSpec) -> dict[str, np.ndarray]:
    """Every step of the exact model trace, by name, in float64, through torch.nn modules."""
    return run(spec, embed, layer_forward, head)


def layer_forward(spec) -> dict[str, np.ndarray]:
    return torch_ref.forward(spec)


def _np(t) -> np.ndarray:
    return t.detach().numpy().astype(np.float64, copy=True)


def _embedding(m):
    import torch
    return torch.nn.Embedding.from_pretrained(torch.from_numpy(floats(m)), freeze=True)


def embed(spec: ModelSpec, tokens: list[int]) -> dict[str, np.ndarray]:
    import torch
    with torch.no_grad():
        e = _embedding(spec.W_E)(torch.tensor(tokens))
        steps = {"embed": _np(e)}
        if spec.positions == "learned":
            steps["pos"] = _np(_embedding(spec.W_P)(torch.arange(len(tokens))))
        elif spec.positions == "sinusoidal":
            steps["pos"] = sinusoidal(len(tokens), spec.dims.d_model, spec.pe_base)
        steps["x"] = steps["embed"] + steps.get("pos", 0.0)
        if spec.embed_norm:  # BERT's LayerNorm of the embeddings, as an nn.LayerNorm
            x = torch.from_numpy(steps["x"])
            norm = torch.nn.LayerNorm(spec.dims.d_model, eps=float(spec.options.eps), dtype=torch.float64)
            norm.weight.copy_(torch.from_numpy(floats(spec.embed_norm["gamma"])[0]))
            norm.bias.copy_(torch.from_numpy(floats(spec.embed_norm["beta"])[0]))
            steps.update({"norm_embed.mean": _np(x.mean(dim=-1, keepdim=True)),
                          "norm_embed.var": _np(x.var(dim=-1, unbiased=False, keepdim=True)),
                          "norm_embed.std": _np(torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True)
                                                           + float(spec.options.eps))),
                          "norm_embed": _np(norm(x))})
    return steps


def head(spec: ModelSpec, h: np.ndarray) -> dict[str, np.ndarray]:
    import torch
    nn, steps = torch.nn, {}
    d, vocab = spec.dims.d_model, len(spec.vocab)
    with torch.no_grad():
        x = torch.from_numpy(h)
        if spec.final_norm:
            eps = float(spec.options.eps)
            if spec.options.norm == "layernorm":  # the statistics as torch computes them
                steps["norm_final.mean"] = _np(x.mean(dim=-1, keepdim=True))
                steps["norm_final.var"] = _np(x.var(dim=-1, unbiased=False, keepdim=True))
                steps["norm_final.std"] = _np(torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True) + eps))
                norm = nn.LayerNorm(d, eps=eps, dtype=torch.float64)
                norm.bias.copy_(torch.from_numpy(floats(spec.final_norm["beta"])[0]))
            else:
                steps["norm_final.ms"] = _np((x * x).mean(dim=-1, keepdim=True))
                steps["norm_final.rms"] = _np(torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps))
                norm = nn.RMSNorm(d, eps=eps, dtype=torch.float64)
            norm.weight.copy_(torch.from_numpy(floats(spec.final_norm["gamma"])[0]))
            x = norm(x)
            steps["norm_final"] = _np(x)
        if spec.head == "none":
            return steps
        lm_head = nn.Linear(d, vocab, bias=False, dtype=torch.float64)
        if spec.head == "tied":
            table = _embedding(spec.W_E)
            lm_head.weight = table.weight  # one parameter, as GPT-2 ties wte and lm_head
        else:
            lm_head.weight.copy_(torch.from_numpy(floats(spec.W_U)).T)
        logits = lm_head(x)
        steps["logits"] = _np(logits)
        steps["probs"] = _np(torch.softmax(logits, dim=-1))
        steps["next_token"] = np.array([[float(torch.argmax(logits[-1]))]])
    return steps


def encoder_stack_output(spec: ModelSpec) -> np.ndarray | None:
    """The prompt pass's last hidden state through real `nn.TransformerEncoderLayer`s (a GPT's
    causal `src_mask`, an encoder's padding mask; `norm_first` per layer), or None when a layer
    does not map onto one."""
    tokens = list(spec.prompt)
    first = embed(spec, tokens)
    h = first.get("norm_embed", first["x"])
    for layer in spec.layers:
        ls = replace(with_length(layer, len(tokens)), X=h)
        if torch_ref.encoder_layer_unsupported(ls) is not None:
            return None
        h = torch_ref.encoder_layer_output(ls)
    return h
