"""Specs from torch's decoder layer, nn.Transformer and nn.MultiheadAttention: each module built
with seeded float64 weights and run by torch itself; symblock's exact forward of
`spec_from(module, inputs)` equals the module's output to 1e-9; what the spec cannot express is
refused by name."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import symblock
from symblock.reference.spec_from import Unsupported, spec_from

TOL = 1e-9


def seeded(module: nn.Module, seed: int, std: float = 0.5) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * std)
    return module.eval()


def randn(*shape, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def run(spec: dict):
    return symblock.forward(symblock.from_mapping(spec))


def causal(n: int) -> torch.Tensor:
    return nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_a_decoder_layer_with_memory_and_padding(norm_first, activation):
    layer = seeded(nn.TransformerDecoderLayer(4, 2, 8, dropout=0.1, activation=activation, batch_first=True,
                                              norm_first=norm_first, dtype=torch.float64), seed=1)
    tgt, memory = randn(1, 3, 4, seed=2), randn(1, 5, 4, seed=3)
    mem_pad = torch.tensor([[False, True, False, False, True]])
    with torch.no_grad():
        want = layer(tgt, memory, tgt_mask=causal(3), tgt_is_causal=True, memory_key_padding_mask=mem_pad)[0]
    spec = spec_from(layer, tgt, memory, memory_key_padding_mask=mem_pad)
    assert spec["block"]["cross_attention"] and spec["dims"]["mem_len"] == 5
    got = np.array(run(spec)["output"].value.floats())
    assert np.abs(got - want.numpy()).max() < TOL


def test_a_decoder_layer_without_a_causal_mask_and_without_biases():
    layer = seeded(nn.TransformerDecoderLayer(4, 1, 6, dropout=0.0, bias=False, dtype=torch.float64), seed=4)
    tgt, memory = randn(3, 1, 4, seed=5), randn(2, 1, 4, seed=6)        # (seq, batch, d): batch_first False
    tgt_pad = torch.tensor([[False, False, True]])
    with torch.no_grad():
        want = layer(tgt, memory, tgt_key_padding_mask=tgt_pad)[:, 0]
    spec = spec_from(layer, tgt, memory, causal=False, tgt_key_padding_mask=tgt_pad)
    assert spec["block"]["bias"] is False and "b_Q" not in spec["weights"]["cross"]
    got = np.array(run(spec)["output"].value.floats())
    assert np.abs(got - want.numpy()).max() < TOL


@pytest.mark.parametrize("norm_first", [False, True])
def test_nn_transformer_memory_and_output(norm_first):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # torch's note on nested tensors
        model = seeded(nn.Transformer(4, 2, 2, 1, 6, dropout=0.0, activation="gelu", batch_first=True,
                                      norm_first=norm_first, dtype=torch.float64), seed=7)
    src, tgt = randn(1, 4, 4, seed=8), randn(1, 3, 4, seed=9)
    with torch.no_grad():
        memory = model.encoder(src)[0]
        want = model(src, tgt, tgt_mask=causal(3), tgt_is_causal=True)[0]
    spec = spec_from(model, src, tgt)
    assert spec["title"].endswith("2 encoder layers and 1 decoder layer)")   # its own counts, in English
    trace = run(spec)
    assert np.abs(np.array(trace["enc.norm_final"].value.floats()) - memory.numpy()).max() < TOL
    assert np.abs(np.array(trace["norm_final"].value.floats()) - want.numpy()).max() < TOL


@pytest.mark.parametrize("bias", [True, False])
def test_multihead_self_attention_is_the_blocks_attention(bias):
    mha = seeded(nn.MultiheadAttention(4, 2, bias=bias, batch_first=True, dtype=torch.float64), seed=10)
    x = randn(1, 3, 4, seed=11)
    pad = torch.tensor([[False, False, True]])
    with torch.no_grad():
        want, _ = mha(x, x, x, key_padding_mask=pad)
    spec = spec_from(mha, x, key_padding_mask=pad)
    assert "attn.out" in spec["title"]
    got = np.array(run(spec)["attn.out"].value.floats())
    assert np.abs(got - want[0].numpy()).max() < TOL
    with torch.no_grad():                             # causal, by hand: −∞ above the diagonal
        want_c, _ = mha(x, x, x, attn_mask=torch.ones(3, 3, dtype=torch.bool).triu(1))
    got_c = np.array(run(spec_from(mha, x, causal=True))["attn.out"].value.floats())
    assert np.abs(got_c - want_c[0].numpy()).max() < TOL


def test_what_the_spec_cannot_express_is_refused_by_name():
    mha = nn.MultiheadAttention(4, 2, batch_first=True, dtype=torch.float64).eval()
    x, y = torch.zeros(1, 3, 4, dtype=torch.float64), torch.ones(1, 2, 4, dtype=torch.float64)
    with pytest.raises(Unsupported, match="cross-attention"):
        spec_from(mha, x, y, y)
    with pytest.raises(Unsupported, match="kdim, vdim"):
        spec_from(nn.MultiheadAttention(4, 2, kdim=3, vdim=3).eval(), x)
    with pytest.raises(Unsupported, match="add_bias_kv"):
        spec_from(nn.MultiheadAttention(4, 2, add_bias_kv=True).eval(), x)
    with pytest.raises(Unsupported, match="dropout > 0 in training mode"):
        spec_from(nn.MultiheadAttention(4, 2, dropout=0.1), x)
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.1, batch_first=True)        # training mode
    with pytest.raises(Unsupported, match="dropout > 0 in training mode"):
        spec_from(layer, x, y)
    with pytest.raises(Unsupported, match="a batch of 2"):
        spec_from(layer.eval(), torch.zeros(2, 3, 4), torch.zeros(2, 2, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True).eval()
    with pytest.raises(Unsupported, match="causal tgt_mask"):
        spec_from(model, x, x, causal=False)
