"""A tiny encoder (model.kind: encoder, BERT-like) against BERT as torch modules build it, written
here: word + position embeddings, BERT's embedding LayerNorm (`embed_norm`, weights.ln_embed),
then a stack of Post-LN GELU `nn.TransformerEncoderLayer`s (what a Hugging Face `BertLayer`
computes) with the padded prompt's key padding mask; and the spec's refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from symblock.engine import model
from symblock.engine.model_spec import from_mapping
from symblock.errors import SpecError
from symblock.reference import verify

DATA = {"model": {"kind": "encoder", "vocab": ["[PAD]", "the", "cat", "sat", "on"], "positions": "learned",
                  "layers": 2, "prompt": ["the", "cat", "sat", "[PAD]"],
                  "key_padding_mask": [False, False, False, True], "embed_norm": True},
        "dims": {"d_model": 4, "d_ff": 8, "heads": 2},
        "block": {"norm_position": "post", "eps": "1e-12", "activation": "gelu", "bias": True},
        "random": {"seed": 11}}


def encoder(**model_keys):
    return from_mapping({**DATA, "model": {**DATA["model"], **model_keys}}, "enc.yaml")


def t(m, transpose=False):
    a = torch.tensor(np.array(m.tolist(), dtype=float))
    return a.T.contiguous() if transpose else a


class Bert(torch.nn.Module):
    """Embeddings, their LayerNorm, the encoder stack: BERT's forward without the pooler."""

    def __init__(self, s):
        super().__init__()
        d = s.dims
        self.words = torch.nn.Embedding(len(s.vocab), d.d_model, dtype=torch.float64)
        self.positions = torch.nn.Embedding(len(s.prompt), d.d_model, dtype=torch.float64)
        self.norm = torch.nn.LayerNorm(d.d_model, eps=1e-12, dtype=torch.float64)
        layer = torch.nn.TransformerEncoderLayer(d.d_model, d.heads, d.d_ff, dropout=0.0, activation="gelu",
                                                 layer_norm_eps=1e-12, batch_first=True, dtype=torch.float64)
        self.encoder = torch.nn.TransformerEncoder(layer, len(s.layers), enable_nested_tensor=False)

    def forward(self, ids, pad):
        e = self.norm(self.words(ids) + self.positions(torch.arange(ids.shape[1])))
        return e, self.encoder(e, src_key_padding_mask=pad)


def bert(s) -> Bert:
    m = Bert(s).eval()
    state = {"words.weight": t(s.W_E), "positions.weight": t(s.W_P), "norm.weight": t(s.embed_norm["gamma"])[0],
             "norm.bias": t(s.embed_norm["beta"])[0]}
    for i, layer in enumerate(s.layers):
        p, pre = layer.params, f"encoder.layers.{i}."
        state[pre + "self_attn.in_proj_weight"] = torch.cat([t(p[f"W_{x}"], True) for x in "QKV"])
        state[pre + "self_attn.in_proj_bias"] = torch.cat([t(p[f"b_{x}"])[0] for x in "QKV"])
        state[pre + "self_attn.out_proj.weight"], state[pre + "self_attn.out_proj.bias"] = t(p["W_O"], True), t(p["b_O"])[0]
        for i2 in (1, 2):
            state[f"{pre}linear{i2}.weight"], state[f"{pre}linear{i2}.bias"] = t(p[f"W_{i2}"], True), t(p[f"b_{i2}"])[0]
            state[f"{pre}norm{i2}.weight"], state[f"{pre}norm{i2}.bias"] = t(p[f"ln{i2}.gamma"])[0], t(p[f"ln{i2}.beta"])[0]
    m.load_state_dict(state)
    return m


def test_a_padded_encoder_matches_bert_built_from_torch_modules():
    s = encoder()
    tr = model.forward(s)
    ours = np.array(tr["layer1.output"].value.floats())
    ids, pad = torch.tensor([list(s.prompt)]), torch.tensor([list(s.key_padding_mask)])
    with torch.enable_grad():  # the module-by-module path
        emb, out = bert(s)(ids, pad)
    assert np.abs(emb.detach()[0].numpy() - np.array(tr["norm_embed"].value.floats())).max() < 1e-9
    assert np.abs(out.detach()[0].numpy() - ours).max() < 1e-9
    w = np.array(tr["layer0.attn.h1.weights"].value.floats())
    assert (w[:, 3] == 0).all() and (w[:, 2] > 0).all()  # non-causal: row 0 sees key 2; the padding none
    r = verify.run(s, require_torch=True)
    assert r.ok, r.problems


def test_an_encoder_ends_in_hidden_states_and_never_generates():
    names = model.forward(encoder()).names()
    assert names[-1] == "layer1.output" and "logits" not in names and "norm_embed.std" in names
    assert "layer0.attn.h0.masked" in names  # the padding mask, not a causal one
    tied = model.forward(encoder(head="tied", key_padding_mask=[False] * 4)).names()
    assert "logits" in tied and "probs" in tied


@pytest.mark.parametrize("keys, where, what", [
    ({"generate": 1}, "model.generate", "an encoder does not generate"),
    ({"kind": "encoder-decoder"}, "model.layers", "an encoder-decoder's stacks are model.encoder_layers"),
    ({"kind": "decoder"}, "model.key_padding_mask", "a GPT's prompt has no padding"),
    ({"key_padding_mask": [True] * 4}, "model.key_padding_mask", "every key is padding"),
    ({"embed_norm": False}, "weights.ln_embed", "set model.embed_norm: true"),
])
def test_bad_encoder_specs_name_the_field(keys, where, what):
    data = {**DATA, "model": {**DATA["model"], **keys}}
    if keys.get("embed_norm") is False:
        data["weights"] = {"ln_embed": {"gamma": [1, 1, 1, 1]}}
    with pytest.raises(SpecError) as e:
        from_mapping(data, "enc.yaml")
    assert e.value.where == where and what in e.value.message, e.value
