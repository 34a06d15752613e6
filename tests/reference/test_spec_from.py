"""Specs from real models: each model is built from a config with seeded weights (no download), run
in float64, and its output compared with symblock's exact forward of `spec_from(model, inputs)`;
a GPT's greedy tokens must agree too. The nanoGPT model is a faithful copy of its `model.py`
written here (nanoGPT is not a package), read by `spec_from` through its attributes alone."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml

import symblock
from symblock.cli import main
from symblock.reference.spec_from import Unsupported, exact, spec_from

TOL = 1e-9


def run(spec: dict):
    return symblock.forward(symblock.from_mapping(spec))


def weights_normal(model: nn.Module, seed: int, std: float = 0.5) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * std)
    return model


def test_weights_are_the_exact_decimals_of_their_floats():
    from fractions import Fraction
    for x in (0.1, -1e-12, 0.123456789, 3.0, 2.0 ** -60, float(np.float32(0.3))):
        assert Fraction(exact(x)) == Fraction(x)       # exact, not the shortest repr
    assert exact(0.1) != repr(0.1) and exact(0.0) == "0"


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_a_transformer_encoder_layer_on_a_padded_batch(norm_first, activation, batch_first):
    layer = weights_normal(nn.TransformerEncoderLayer(
        4, 2, 8, dropout=0.1, activation=activation, batch_first=batch_first, norm_first=norm_first,
        dtype=torch.float64), seed=1).eval()
    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    pad = torch.tensor([[False, False, False], [False, True, True]])
    src = x if batch_first else x.transpose(0, 1)
    with torch.no_grad():
        want = layer(src, src_key_padding_mask=pad)
    want = (want if batch_first else want.transpose(0, 1)).numpy()
    spec = spec_from(layer, src, src_key_padding_mask=pad)
    assert spec["block"]["norm_position"] == ("pre" if norm_first else "post")
    trace = run(spec)
    got = np.stack([trace[f"b{i}.output"].value.floats() for i in range(2)])
    keep = ~pad.numpy()
    assert np.abs(got - want)[keep].max() < TOL   # torch's fast path leaves padded rows as it likes


def test_a_causal_encoder_layer_without_biases():
    layer = weights_normal(nn.TransformerEncoderLayer(4, 1, 6, dropout=0.0, batch_first=True, bias=False,
                                                      dtype=torch.float64), seed=3).eval()
    x = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    with torch.no_grad():
        want = layer(x, src_mask=mask, is_causal=True)[0].numpy()
    spec = spec_from(layer, x[0], causal=True)
    assert spec["block"]["bias"] is False and "b_Q" not in spec["weights"]
    assert np.abs(run(spec)["output"].value.floats() - want).max() < TOL


def test_a_hugging_face_bert_layer_with_padding():
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer
    cfg = BertConfig(hidden_size=4, num_attention_heads=2, intermediate_size=8, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, attn_implementation="eager")
    layer = weights_normal(BertLayer(cfg).double(), seed=5).eval()
    h = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    tokens = torch.tensor([[1, 1, 0]])                         # the third position is padding
    additive = (1.0 - tokens[:, None, None, :].double()) * torch.finfo(torch.float64).min
    with torch.no_grad():
        out = layer(h, attention_mask=additive)
    want = (out[0] if isinstance(out, tuple) else out)[0].numpy()
    spec = spec_from(layer, h, attention_mask=tokens)
    assert spec["block"]["activation"] == "gelu" and spec["block"]["norm_position"] == "post"
    assert np.abs(run(spec)["output"].value.floats() - want).max() < TOL


def greedy(model, tokens: list[int], k: int, logits_of) -> list[int]:
    out = list(tokens)
    with torch.no_grad():
        for _ in range(k + 1):
            out.append(int(logits_of(model, torch.tensor([out]))[0, -1].argmax()))
    return out[len(tokens):]


def symblock_tokens(trace, k: int) -> list[int]:
    names = ["next_token"] + [f"gen{t}.next_token" for t in range(1, k + 1)]
    return [int(trace[n].value.rows[0][0].to_sympy()) for n in names]


def gpt2(seed: int, tied: bool = True, **config):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=8, n_positions=8, n_embd=4, n_layer=2, n_head=2, n_inner=8,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=tied,
                     bos_token_id=0, eos_token_id=0, **config)
    return weights_normal(GPT2LMHeadModel(cfg).double(), seed=seed, std=0.8).eval()


def gpt2_logits(model, ids):
    return model(ids).logits


@pytest.mark.parametrize("tied", [True, False])
def test_hugging_face_gpt2_logits_and_greedy_tokens(tied):
    model, prompt = gpt2(seed=11, tied=tied), [1, 5, 2]
    spec = spec_from(model, prompt, generate=2)
    assert spec["model"]["head"] == ("tied" if tied else "untied")
    assert spec["title"].startswith("GPT-2 (2 layers, ")     # the model's own name, not "gpt2 GPT"
    trace = run(spec)
    with torch.no_grad():
        want = model(torch.tensor([prompt])).logits[0].numpy()
    assert np.abs(trace["logits"].value.floats() - want).max() < TOL
    tokens = greedy(model, prompt, 2, gpt2_logits)
    assert symblock_tokens(trace, 2) == tokens


def test_a_gpt2_with_unscaled_attention_scores():
    """scale_attn_weights: false (GPT-2 without 1/sqrt(d_k)) is the block's attention_scale: none,
    and the model's logits and greedy tokens, not refused."""
    model, prompt = gpt2(seed=13, scale_attn_weights=False), [1, 5, 2]
    spec = spec_from(model, prompt, generate=2)
    assert spec["block"]["attention_scale"] == "none"
    trace = run(spec)
    with torch.no_grad():
        want = model(torch.tensor([prompt])).logits[0].numpy()
    assert np.abs(trace["logits"].value.floats() - want).max() < TOL
    assert symblock_tokens(trace, 2) == greedy(model, prompt, 2, gpt2_logits)


# ---------------------------------------------------------------- nanoGPT (its model.py, abridged)

@dataclass
class GPTConfig:
    block_size: int = 8
    vocab_size: int = 7
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 4
    dropout: float = 0.0
    bias: bool = True


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.n_embd = config.n_head, config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1, self.attn = LayerNorm(config.n_embd, config.bias), CausalSelfAttention(config)
        self.ln_2, self.mlp = LayerNorm(config.n_embd, config.bias), MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd), wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout), h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx):
        t = idx.size(1)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t)))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x)), None   # nanoGPT's (logits, loss), all positions


def nanogpt_logits(model, ids):
    return model(ids)[0]


def nanogpt(seed: int, bias: bool) -> GPT:
    return weights_normal(GPT(GPTConfig(bias=bias)).double(), seed=seed, std=0.8).eval()


@pytest.mark.parametrize("bias", [True, False])
def test_a_nanogpt_model_by_its_attributes(bias):
    model, prompt = nanogpt(seed=21, bias=bias), [3, 0, 6]
    spec = spec_from(model, prompt, generate=2)
    assert spec["block"]["bias"] is bias and spec["model"]["head"] == "tied"
    assert spec["title"].startswith("nanoGPT (")
    trace = run(spec)
    with torch.no_grad():
        want = model(torch.tensor([prompt]))[0][0].numpy()
    assert np.abs(trace["logits"].value.floats() - want).max() < TOL
    assert symblock_tokens(trace, 2) == greedy(model, prompt, 2, nanogpt_logits)


# ---------------------------------------------------------------- refusals

def test_what_the_block_cannot_express_is_refused_by_name():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.1, batch_first=True)   # training mode
    with pytest.raises(Unsupported, match="dropout > 0 in training mode"):
        spec_from(layer, torch.zeros(3, 4))
    with pytest.raises(Unsupported, match="reads nn.TransformerEncoderLayer"):
        spec_from(nn.Linear(4, 2), torch.zeros(3, 4))
    with pytest.raises(Unsupported, match="outside the vocabulary"):
        spec_from(gpt2(seed=1), [1, 9])


# ---------------------------------------------------------------- symblock import

def logits_of_spec_file(path, capsys) -> np.ndarray:
    capsys.readouterr()
    assert main(["forward", str(path), "--json"]) == 0
    import json
    steps = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    return np.array(steps["logits"]["float"], dtype=float), steps


def test_import_a_save_pretrained_folder(tmp_path, capsys):
    model, prompt = gpt2(seed=11), [1, 5, 2]
    model.save_pretrained(tmp_path / "gpt2")
    out = tmp_path / "tiny.yaml"
    assert main(["import", str(tmp_path / "gpt2"), "--tokens", "1,5,2", "--generate", "2", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    got, steps = logits_of_spec_file(out, capsys)
    with torch.no_grad():
        want = model(torch.tensor([prompt])).logits[0].numpy()
    assert np.abs(got - want).max() < TOL
    assert [int(steps[n]["float"][0][0]) for n in ("next_token", "gen1.next_token", "gen2.next_token")] \
        == greedy(model, prompt, 2, gpt2_logits)
    # an existing file is never overwritten silently
    before = out.read_bytes()
    assert main(["import", str(tmp_path / "gpt2"), "--tokens", "1", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == before


def test_import_a_nanogpt_checkpoint(tmp_path, capsys):
    model, prompt = nanogpt(seed=21, bias=True), [3, 0, 6]
    args = {k: getattr(model.config, k) for k in ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size")}
    torch.save({"model": model.state_dict(), "model_args": args, "iter_num": 5}, tmp_path / "ckpt.pt")
    out = tmp_path / "nano.yaml"
    assert main(["import", str(tmp_path / "ckpt.pt"), "--tokens", "3,0,6", "--out", str(out)]) == 0
    got, _ = logits_of_spec_file(out, capsys)
    with torch.no_grad():
        want = model(torch.tensor([prompt]))[0][0].numpy()
    assert np.abs(got - want).max() < TOL
    assert yaml.safe_load(out.read_text())["model"]["prompt"] == prompt
    assert "\n  eps: 1e-05\n" in out.read_text()     # nanoGPT's F.layer_norm(..., 1e-5), as it writes it


def test_an_imported_config_number_is_written_as_its_config_writes_it(tmp_path, capsys):
    """ε is 1e-05 in config.json: the spec says 1e-05 (read exactly as 1/100000), not the
    71-digit decimal of the float nearest to it; the weights stay their floats' exact decimals."""
    from fractions import Fraction
    from symblock.engine import spec as specmod
    model = gpt2(seed=11, layer_norm_epsilon=1e-5)
    model.save_pretrained(tmp_path / "gpt2")
    out = tmp_path / "tiny.yaml"
    assert main(["import", str(tmp_path / "gpt2"), "--tokens", "1,5", "--out", str(out)]) == 0
    text = out.read_text()
    assert "\n  eps: 1e-05\n" in text and "0.0000100000000000000008" not in text
    assert symblock.load(str(out)).options.eps == Fraction(1, 100000)
    w = specmod.read_mapping(str(out), text)[0]["weights"]["W_E"][0][0]
    assert Fraction(w) == Fraction(model.transformer.wte.weight[0, 0].item())


def test_a_config_number_is_its_shortest_decimal():
    from fractions import Fraction
    from symblock.reference.exact_weights import written
    assert [written(x) for x in (1e-5, 1e-12, 1e-6, 0.0, 10000.0, 500000.0, 0.1)] == \
        ["1e-05", "1e-12", "1e-06", "0", "10000", "500000", "0.1"]
    assert all(float(Fraction(written(x))) == x for x in (1e-5, 2.5e-7, 1 / 3))


class Payload:
    def __reduce__(self):
        return (print, ("code ran while loading",))


def test_a_checkpoint_is_data_never_code(tmp_path, capsys):
    bad = tmp_path / "ckpt.pt"
    torch.save({"model": {}, "model_args": {}, "evil": Payload()}, bad)
    out = tmp_path / "x.yaml"
    assert main(["import", str(bad), "--tokens", "1", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "code ran" not in captured.out + captured.err and "plain data" in captured.err
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]   # nothing half-written


def test_import_refuses_a_folder_of_another_kind(tmp_path, capsys):
    from safetensors.numpy import save_file
    folder = tmp_path / "t5"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "t5", "d_model": 4}')
    save_file({"shared.weight": np.zeros((8, 4))}, str(folder / "model.safetensors"))
    assert main(["import", str(folder), "--tokens", "1", "--out", str(tmp_path / "b.yaml")]) == 2
    err = capsys.readouterr().err
    assert "model_type 't5'" in err and "gpt2, bert, llama" in err and "Traceback" not in err
