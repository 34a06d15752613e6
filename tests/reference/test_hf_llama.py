"""A tiny Hugging Face LlamaForCausalLM (hidden 4, 2 query heads over 1 K/V head, RMSNorm, SwiGLU,
RoPE half, untied head), built from a config with the spec's own weights (no download): logits
and greedy tokens (HF's generate, with its own KV cache) agree with `symblock forward --json`.

Hugging Face computes RMSNorm and the rotary cos/sin in float32 whatever the model's dtype; the
float64 run therefore replaces those two forwards by the same formulas in float64 (everything
else — rotate_half, repeat_kv, attention, SwiGLU, the head, generate — is Hugging Face's own),
and agrees to 1e-9; unpatched, it agrees to float32's 1e-6."""
import json

import numpy as np
import pytest
import torch
import yaml
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama import modeling_llama

from symblock.cli import main
from symblock.engine import model_spec

from test_tiny_llama import SPEC


def _t(m):
    return torch.tensor([[float(v) for v in r] for r in m.tolist()], dtype=torch.float64)


def hf_llama(spec) -> LlamaForCausalLM:
    d = spec.dims
    cfg = LlamaConfig(vocab_size=len(spec.vocab), hidden_size=d.d_model, intermediate_size=d.d_ff,
                      num_hidden_layers=len(spec.layers), num_attention_heads=d.heads,
                      num_key_value_heads=d.kv_heads, rms_norm_eps=float(spec.options.eps),
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                      max_position_embeddings=16, tie_word_embeddings=False, attention_bias=False,
                      mlp_bias=False, hidden_act="silu", attn_implementation="eager")
    m = LlamaForCausalLM(cfg).to(torch.float64).eval()
    with torch.no_grad():
        m.model.embed_tokens.weight.copy_(_t(spec.W_E))
        for layer, s in zip(m.model.layers, spec.layers):
            p = {k: _t(v) for k, v in s.params.items()}
            a, f = layer.self_attn, layer.mlp
            for lin, w in ((a.q_proj, "W_Q"), (a.k_proj, "W_K"), (a.v_proj, "W_V"), (a.o_proj, "W_O"),
                           (f.gate_proj, "W_1"), (f.up_proj, "W_3"), (f.down_proj, "W_2")):
                lin.weight.copy_(p[w].T)                      # nn.Linear holds (out, in)
            layer.input_layernorm.weight.copy_(p["ln1.gamma"][0])
            layer.post_attention_layernorm.weight.copy_(p["ln2.gamma"][0])
        m.model.norm.weight.copy_(_t(spec.final_norm["gamma"])[0])
        m.lm_head.weight.copy_(_t(spec.W_U).T)
    return m


def _rms64(self, x):
    return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def _rotary64(self, x, position_ids):
    freqs = position_ids[..., None].to(torch.float64) * self.inv_freq.to(torch.float64)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


@pytest.fixture
def ours(tmp_path, capsys):
    path = tmp_path / "llama.yaml"
    path.write_text(SPEC)
    assert main(["forward", str(path), "--json"]) == 0
    steps = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    return model_spec.from_mapping(yaml.safe_load(SPEC), str(path)), steps


@pytest.mark.parametrize("float64, tol", [(True, 1e-9), (False, 1e-6)])
def test_hf_llama_logits_and_greedy_tokens_agree(ours, monkeypatch, float64, tol):
    spec, steps = ours
    if float64:
        monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", _rms64)
        monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", _rotary64)
    m = hf_llama(spec)
    prompt = torch.tensor([list(spec.prompt)])
    with torch.no_grad():
        out = m.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=spec.generate,
                         do_sample=False, pad_token_id=0)
        tokens = out[0].tolist()
        logits = m(out).logits[0].numpy()
    n = len(spec.prompt)
    assert np.allclose(np.array(steps["logits"]["float"]), logits[:n], atol=tol)
    for t in range(1, spec.generate + 1):
        assert np.allclose(np.array(steps[f"gen{t}.logits"]["float"]), logits[n + t - 1:n + t], atol=tol), t
    ours_tokens = [steps["next_token"]["float"][0][0]] + [steps[f"gen{t}.next_token"]["float"][0][0]
                                                          for t in range(1, spec.generate)]
    assert tokens[n:] == ours_tokens
    assert tuple(m.model.layers[0].self_attn.k_proj.weight.shape) == (2, 4)   # 1 K/V head of d_k 2


def test_spec_from_reads_a_random_hf_llama_and_agrees(monkeypatch):
    """spec_from(LlamaForCausalLM): 4 query heads over 2 K/V heads of width 4, θ 500000, seeded
    random weights; the exact forward of the spec it writes is the model's forward."""
    from symblock import spec_from
    from symblock.engine import model
    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", _rms64)
    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", _rotary64)
    torch.manual_seed(3)
    cfg = LlamaConfig(vocab_size=7, hidden_size=8, intermediate_size=5, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=4, rms_norm_eps=1e-5,
                      rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
                      max_position_embeddings=16, tie_word_embeddings=False)
    m = LlamaForCausalLM(cfg).to(torch.float64).eval()
    data = spec_from(m, [3, 1, 4, 1], generate=2)
    assert data["dims"]["kv_heads"] == 2 and data["block"]["rope"] == {"theta": "500000", "style": "half"}
    s = model_spec.from_mapping(data, "llama")
    trace = model.forward(s)
    with torch.no_grad():
        out = m.generate(torch.tensor([[3, 1, 4, 1]]), attention_mask=torch.ones(1, 4, dtype=torch.long),
                         max_new_tokens=2, do_sample=False, pad_token_id=0)
        logits = m(out).logits[0].numpy()
    assert np.allclose(trace["logits"].value.floats(), logits[:4], atol=1e-9)
    assert np.allclose(trace["gen2.logits"].value.floats(), logits[5:6], atol=1e-9)
    assert out[0, 4:].tolist() == [int(trace["next_token"].value.floats()[0][0]),
                                   int(trace["gen1.next_token"].value.floats()[0][0])]


@pytest.mark.parametrize("attention_bias, mlp_bias", [(True, False), (False, True), (True, True)])
def test_spec_from_reads_a_llama_with_biases_on_one_part_only(monkeypatch, attention_bias, mlp_bias):
    """attention_bias (q/k/v/o_proj biases) without mlp_bias was a spec asking for FFN biases it
    did not give; either kind alone, or both, now works out the model's forward, the random
    biases (HF initialises them to 0) included."""
    from symblock import spec_from
    from symblock.engine import model
    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", _rms64)
    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", _rotary64)
    torch.manual_seed(5)
    cfg = LlamaConfig(vocab_size=7, hidden_size=4, intermediate_size=6, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16,
                      attention_bias=attention_bias, mlp_bias=mlp_bias)
    m = LlamaForCausalLM(cfg).to(torch.float64).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(".bias"):
                p.uniform_(-1, 1)
    data = spec_from(m, [3, 1, 4])
    trace = model.forward(model_spec.from_mapping(data, "llama"))
    with torch.no_grad():
        logits = m(torch.tensor([[3, 1, 4]])).logits[0].numpy()
    assert np.abs(np.array(trace["logits"].value.floats()) - logits).max() < 1e-9
