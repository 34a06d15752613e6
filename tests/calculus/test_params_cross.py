"""Parameter counts of a decoder layer with cross-attention and of the encoder–decoder, against
torch's own modules (their parameters counted by torch, not by us)."""
from __future__ import annotations

import pytest
import torch

from symblock import cli
from symblock.calculus.params import count
from symblock.calculus.transformer_params import count_transformer


def numel(module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("d, heads, f, bias", [(512, 8, 2048, True), (12, 3, 20, True), (8, 2, 6, False)])
def test_a_decoder_layer_counts_as_nn_transformer_decoder_layer(d, heads, f, bias):
    c = count(d, heads, f, bias=bias, cross_attention=True)
    assert c.total == numel(torch.nn.TransformerDecoderLayer(d, heads, f, bias=bias))
    assert c.total - count(d, heads, f, bias=bias).total == 4 * d * d + (4 * d + 2 * d) * bias + d * (not bias)
    assert {p.name for p in c.params} >= {"cross.W_Q", "cross.W_O", "ln3.gamma"}


def test_nn_transformer_defaults_have_44_140_544_parameters():
    c = count_transformer()
    assert c.total == 44_140_544 == numel(torch.nn.Transformer(batch_first=True))
    assert c.formula() == "6·(4·d² + 2·d·f + 9·d + f) + 6·(8·d² + 2·d·f + 15·d + f) + 4·d"


def test_other_stacks_count_as_torch_builds_them():
    c = count_transformer(d_model=16, heads=4, d_ff=24, encoder_layers=2, decoder_layers=3)
    assert c.total == numel(torch.nn.Transformer(16, 4, 2, 3, 24, batch_first=True))
    with pytest.raises(ValueError, match="encoder_layers must be a whole number"):
        count_transformer(encoder_layers=-1)


def test_the_params_command_counts_a_decoder_layer(capsys):
    assert cli.main(["params", "--d-model", "512", "--heads", "8", "--cross-attention"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Decoder layer with cross-attention") and "4,204,032" in out and "cross.W_K" in out
    assert cli.main(["params", "--d-model", "8", "--heads", "2", "--cross-attention", "--layers", "2",
                     "--vocab", "5"]) == 2
