"""Specs from a Hugging Face BertModel and from saved BERT and Llama folders (`symblock import`):
each model built from a config with seeded weights (no download), run by Hugging Face in float64;
symblock's exact forward of the spec equals the model's hidden states (BERT) or logits and greedy
tokens (Llama) to 1e-9."""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

import symblock
from symblock.cli import main
from symblock.reference.spec_from import Unsupported, spec_from
from symblock.reference.spec_from_bert import exact_sum

TOL = 1e-9


def bert_model(seed: int, layers: int = 2, act: str = "gelu") -> BertModel:
    cfg = BertConfig(vocab_size=9, hidden_size=4, num_hidden_layers=layers, num_attention_heads=2,
                     intermediate_size=8, max_position_embeddings=8, type_vocab_size=2, hidden_act=act,
                     hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, attn_implementation="eager")
    m = BertModel(cfg).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.5)
    return m.eval()


def test_position_rows_are_exact_sums():
    a, b = 0.1, 0.2
    assert Fraction(exact_sum(a, b)) == Fraction(a) + Fraction(b) != Fraction(a + b)


@pytest.mark.parametrize("act", ["gelu", "relu"])
def test_a_bert_model_with_padding_and_token_types(act):
    m = bert_model(seed=3, act=act)
    ids, mask, types = torch.tensor([[2, 7, 1, 0]]), torch.tensor([[1, 1, 1, 0]]), torch.tensor([[0, 0, 1, 1]])
    with torch.no_grad():
        out = m(input_ids=ids, attention_mask=mask, token_type_ids=types, output_hidden_states=True)
    spec = spec_from(m, ids, attention_mask=mask, token_type_ids=types)
    assert spec["model"]["kind"] == "encoder" and spec["model"]["key_padding_mask"] == [False] * 3 + [True]
    assert spec["block"]["eps"] == "1e-12"      # BERT's layer_norm_eps as its config writes it
    trace = symblock.forward(symblock.from_mapping(spec))
    keep = slice(0, 3)                 # a padded row's own output is anyone's: only the real tokens
    assert np.abs(np.array(trace["norm_embed"].value.floats()) - out.hidden_states[0][0].numpy()).max() < TOL
    got = np.array(trace["layer1.output"].value.floats())
    assert np.abs(got[keep] - out.last_hidden_state[0].numpy()[keep]).max() < TOL


def test_a_bert_model_in_training_mode_or_with_relative_positions_is_refused():
    with pytest.raises(Unsupported, match="dropout > 0 in training mode"):
        spec_from(bert_model(seed=1).train(), [1, 2])
    m = bert_model(seed=1)
    m.config.position_embedding_type = "relative_key"
    with pytest.raises(Unsupported, match="relative_key"):
        spec_from(m, [1, 2])


def forward_json(path, capsys) -> dict:
    capsys.readouterr()
    assert main(["forward", str(path), "--json"]) == 0
    return {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}


def test_import_a_bert_save_pretrained_folder(tmp_path, capsys):
    m = bert_model(seed=5, layers=1)
    m.save_pretrained(tmp_path / "bert")
    out = tmp_path / "bert.yaml"
    assert main(["import", str(tmp_path / "bert"), "--tokens", "4,1,8", "--out", str(out)]) == 0
    steps = forward_json(out, capsys)
    with torch.no_grad():
        want = m(input_ids=torch.tensor([[4, 1, 8]])).last_hidden_state[0].numpy()
    assert np.abs(np.array(steps["layer0.output"]["float"], dtype=float) - want).max() < TOL
    assert main(["import", str(tmp_path / "bert"), "--tokens", "1", "--generate", "1",
                 "--out", str(tmp_path / "g.yaml")]) == 2
    assert "does not generate" in capsys.readouterr().err


def test_import_a_llama_save_pretrained_folder(tmp_path, capsys, monkeypatch):
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama import modeling_llama
    from test_hf_llama import _rms64, _rotary64     # Hugging Face's float32 norm and rotation, in float64
    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", _rms64)
    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", _rotary64)
    torch.manual_seed(4)
    cfg = LlamaConfig(vocab_size=7, hidden_size=8, intermediate_size=5, num_hidden_layers=1, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=4, rms_norm_eps=1e-5, max_position_embeddings=16,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)
    m = LlamaForCausalLM(cfg).to(torch.float64).eval()
    m.save_pretrained(tmp_path / "llama")
    out = tmp_path / "llama.yaml"
    assert main(["import", str(tmp_path / "llama"), "--tokens", "3,1,4", "--generate", "1", "--out", str(out)]) == 0
    steps = forward_json(out, capsys)
    with torch.no_grad():
        gen = m.generate(torch.tensor([[3, 1, 4]]), attention_mask=torch.ones(1, 3, dtype=torch.long),
                         max_new_tokens=2, do_sample=False, pad_token_id=0)
        logits = m(torch.tensor([[3, 1, 4]])).logits[0].numpy()
    assert np.abs(np.array(steps["logits"]["float"], dtype=float) - logits).max() < TOL
    assert [int(steps[n]["float"][0][0]) for n in ("next_token", "gen1.next_token")] == gen[0, 3:].tolist()
