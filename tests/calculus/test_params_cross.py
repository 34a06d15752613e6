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


def test_the_params_command_counts_an_encoder_decoder_as_torch(capsys):
    import json
    assert cli.main(["params", "--d-model", "512", "--heads", "8", "--encoder-layers", "6",
                     "--decoder-layers", "6"]) == 0
    out = capsys.readouterr().out
    assert "44,140,544" in out and "6 decoder layers" in out
    # a translation model around nn.Transformer: one shared embedding, learned positions, an untied head
    d, v, n = 16, 11, 7
    net = torch.nn.Transformer(d, 4, 2, 1, 24, batch_first=True)
    emb, pos, head = torch.nn.Embedding(v, d), torch.nn.Embedding(n, d), torch.nn.Linear(d, v, bias=False)
    want = numel(net) + numel(emb) + numel(pos) + numel(head)
    assert cli.main(["params", "--d-model", str(d), "--heads", "4", "--d-ff", "24", "--encoder-layers", "2",
                     "--decoder-layers", "1", "--vocab", str(v), "--context", str(n), "--untied", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["total"] == want and got["head"] == numel(head)
    assert cli.main(["params", "--d-model", "8", "--heads", "2", "--encoder-layers", "1"]) == 2
    assert "--decoder-layers" in capsys.readouterr().err
    assert cli.main(["params", "--d-model", "8", "--heads", "2", "--encoder-layers", "1", "--decoder-layers", "1",
                     "--layers", "2"]) == 2
    err = capsys.readouterr().err
    assert "--layers does not go with" in err and "Traceback" not in err


def test_the_params_command_counts_an_encoder_as_hugging_face_bert():
    """BERT's embeddings (word, position, LayerNorm) and encoder, built by transformers with no
    download; its token-type table and pooler are BERT's own extras, left out of the comparison."""
    import json
    from contextlib import redirect_stdout
    from io import StringIO
    from transformers import BertConfig, BertModel
    d, heads, f, layers, v, n = 16, 4, 40, 3, 50, 12
    bert = BertModel(BertConfig(vocab_size=v, hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                                intermediate_size=f, max_position_embeddings=n, hidden_act="gelu"))
    e = bert.embeddings
    want = numel(e.word_embeddings) + numel(e.position_embeddings) + numel(e.LayerNorm) + numel(bert.encoder)
    buf = StringIO()
    with redirect_stdout(buf):
        assert cli.main(["params", "--d-model", str(d), "--heads", str(heads), "--d-ff", str(f), "--layers",
                         str(layers), "--vocab", str(v), "--context", str(n), "--encoder", "--activation",
                         "gelu", "--json"]) == 0
    got = json.loads(buf.getvalue())
    assert got["total"] == want and got["embed_norm"] == 2 * d and got["final_norm"] == 0 and got["head"] == 0
    assert cli.main(["params", "--d-model", "8", "--heads", "2", "--encoder"]) == 2


# nn.Transformer(bias=False) builds its encoder with enable_nested_tensor=True and warns that
# bias=False rules it out; the count does not depend on it
@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True, but self.use_nested_tensor is False")
def test_params_of_a_spec_counts_the_spec_as_torch_builds_it(capsys):
    """`symblock params SPEC` reads the dimensions and options from the spec itself: the built-in
    decoder layer (d 4, one head, d_ff 4, no biases) as nn.TransformerDecoderLayer, and
    tiny-translate (d 4, 2 heads, d_ff 8, no biases, one layer each side) as nn.Transformer plus its
    shared 8 × 4 embedding (sinusoidal positions and the tied head have none)."""
    import json
    assert cli.main(["params", "decoder-layer", "--json"]) == 0
    layer = torch.nn.TransformerDecoderLayer(4, 1, 4, bias=False)
    assert json.loads(capsys.readouterr().out)["total"] == numel(layer)
    assert cli.main(["params", "tiny-translate", "--json"]) == 0
    model = torch.nn.Transformer(4, 2, 1, 1, 8, batch_first=True, bias=False)
    assert json.loads(capsys.readouterr().out)["total"] == numel(model) + 8 * 4
    assert cli.main(["params", "tiny-translate", "--d-model", "8"]) == 2
    assert "--d-model: SPEC gives the dimensions" in capsys.readouterr().err
    assert cli.main(["params"]) == 2
    assert "give a SPEC, or the dimensions" in capsys.readouterr().err


@pytest.mark.parametrize("embed_norm, total", [(True, 184), (False, 176)])
def test_params_of_an_encoder_spec_counts_its_embedding_norm_only_when_it_has_one(tmp_path, capsys, embed_norm, total):
    """tiny-bert by hand: W_E 6·4 + W_P 4·4 + a layer of d 4, d_ff 4 with biases (attention 4·16 + 4·4,
    FFN 2·16 + 4 + 4, two norms 2·8: 136) + the embedding norm's γ, β (8) when the spec has it."""
    import json
    import yaml
    from symblock.engine.spec import example_text
    data = yaml.safe_load(example_text("tiny-bert"))
    data["model"]["embed_norm"] = embed_norm
    spec = tmp_path / "bert.yaml"
    spec.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert cli.main(["params", str(spec), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == total == 24 + 16 + 136 + 8 * embed_norm


def test_the_cross_attentions_flops_attend_the_memorys_rows(capsys):
    """The decoder-layer example: 2 decoder rows, 3 memory rows, one head of d_k 4. Each token's
    cross scores are 3 dot products of 4 (2·3·4 = 24 FLOPs), its values 3 rows of 4 mixed (24);
    its self-attention attends the 2 decoder rows (2·2·4 = 16 each)."""
    assert cli.main(["params", "example:decoder-layer", "--json"]) == 0
    import json
    flops = json.loads(capsys.readouterr().out)["flops_per_token"]
    assert (flops["cross_scores"], flops["cross_values"], flops["attention_scores"]) == (24, 24, 16)
    assert flops["mem_len"] == 3 and flops["seq_len"] == 2
    c = count(4, 1, 4, cross_attention=True, seq_len=2, mem_len=5)
    assert [f.count for f in c.flops if f.name.startswith("cross_") and f.name != "cross_proj"] == [40, 40]
    assert str(next(f.formula for f in c.flops if f.name == "cross_scores")) == "2·m·d"
