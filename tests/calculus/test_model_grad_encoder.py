"""Exact gradients through an encoder model (model.kind: encoder, BERT-like): the embeddings'
LayerNorm, a padded prompt, Post-LN layers with their final norm left out, ending in hidden states
or a tied MLM head, against torch autograd on a forward written here in torch ops from the
conventions (not the engine's code)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from symblock.calculus import model_grad
from symblock.cli import main
from symblock.engine.model_spec import from_mapping

F = torch.nn.functional
DATA = {"model": {"kind": "encoder", "vocab": ["[PAD]", "the", "cat", "sat", "on"], "positions": "learned",
                  "layers": 2, "prompt": ["the", "cat", "sat", "[PAD]"],
                  "key_padding_mask": [False, False, False, True], "embed_norm": True},
        "dims": {"d_model": 4, "d_ff": 6, "heads": 2},
        "block": {"norm_position": "post", "eps": "1e-5", "activation": "gelu", "bias": True},
        "weights": {"ln_embed": {"gamma": [1, 2, "1/2", -1], "beta": [0, 1, -1, "1/4"]}},
        "random": {"seed": 12, "low": -2, "high": 2}}


def encoder(**model_keys):
    return from_mapping({**DATA, "model": {**DATA["model"], **model_keys}}, "enc.yaml")


def leaf(m):
    return torch.tensor(np.array(m.tolist(), dtype=float), requires_grad=True)


def torch_forward(s):
    """(output, {our parameter name: leaf}): the encoder in torch ops."""
    leaves = {"W_E": leaf(s.W_E), "W_P": leaf(s.W_P),
              **{f"ln_embed.{k}": leaf(v) for k, v in s.embed_norm.items()}}
    n, d, heads = len(s.prompt), s.dims.d_model, s.dims.heads
    dk = d // heads
    pad = torch.tensor(s.key_padding_mask)

    def ln(x, pre):
        return F.layer_norm(x, (d,), leaves[f"{pre}.gamma"][0], leaves[f"{pre}.beta"][0], 1e-5)

    x = ln(leaves["W_E"][list(s.prompt)] + leaves["W_P"][:n], "ln_embed")
    for i, layer in enumerate(s.layers):
        P = {k: leaves.setdefault(f"layer{i}.{k}", leaf(v)) for k, v in layer.params.items()}
        q, k, v = (x @ P[f"W_{c}"] + P[f"b_{c}"] for c in "QKV")
        heads_out = []
        for h in range(heads):
            cols = slice(h * dk, (h + 1) * dk)
            scores = (q[:, cols] @ k[:, cols].T / dk ** 0.5).masked_fill(pad[None, :], float("-inf"))
            heads_out.append(torch.softmax(scores, dim=1) @ v[:, cols])
        a = torch.cat(heads_out, dim=1) @ P["W_O"] + P["b_O"]
        h1 = ln(x + a, f"layer{i}.ln1")
        f = F.gelu(h1 @ P["W_1"] + P["b_1"]) @ P["W_2"] + P["b_2"]
        x = ln(h1 + f, f"layer{i}.ln2")
    if s.head == "tied":   # the MLM head tied to the word embeddings: logits = H W_Eᵀ
        x = x @ leaves["W_E"].T
    return x, leaves


@pytest.mark.parametrize("head, loss", [("none", "mse"), ("tied", "sum"), ("tied", "mse")])
def test_encoder_gradients_match_autograd(head, loss):
    s = encoder(head=head)
    out, leaves = torch_forward(s)
    g = model_grad.backward(s, loss)
    assert np.abs(np.array(g.logits.floats()) - out.detach().numpy()).max() < 1e-9   # hidden states or logits
    with torch.enable_grad():
        (out.sum() if loss == "sum" else (out ** 2).mean()).backward()
    assert set(g.grads) == set(leaves)
    scale = max(1.0, max(float(t.grad.abs().max()) for t in leaves.values()))
    for name, t in leaves.items():
        got = np.array(g.grads[name].floats())
        assert got.shape == tuple(t.shape), name
        assert np.abs(got - t.grad.numpy()).max() <= 1e-9 * scale, name
    # the padded position's embedding row reaches the loss only through its own (query) row
    assert list(g.grads)[:4] == ["W_E", "W_P", "ln_embed.gamma", "ln_embed.beta"]


def test_grad_command_on_an_encoder(tmp_path, capsys):
    import json
    path = tmp_path / "enc.json"
    path.write_text(json.dumps(DATA))
    assert main(["grad", str(path), "--wrt", "ln_embed.gamma,layer1.W_V"]) == 0
    out = capsys.readouterr().out
    assert "hidden states" in out and "■ grad.ln_embed.gamma" in out and "■ grad.layer1.W_V" in out
