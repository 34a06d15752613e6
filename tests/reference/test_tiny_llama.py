"""A tiny Llama (RMSNorm, SwiGLU, RoPE half, 2 query heads over 1 K/V head, untied head) against
a Llama decoder written here in plain torch as Hugging Face's LlamaForCausalLM computes it
(rotate_half, repeat_kv, causal SDPA), from the spec's own weights: logits and greedy tokens."""
import json

import numpy as np
import pytest
import torch
import yaml

from symblock.cli import main
from symblock.engine import model, model_spec
from symblock.reference import verify

SPEC = """\
dims: {d_model: 4, d_ff: 6, heads: 2, kv_heads: 1}
block: {norm: rmsnorm, norm_position: pre, activation: swiglu, eps: "1/100", rope: {theta: 10000, style: half}}
model: {vocab: [a, b, c, d, e], positions: rope, layers: 2, head: untied, final_norm: true,
        prompt: [a, c, b], generate: 2, kv_cache: true}
random: {seed: 11}
"""


def _t(m):
    return torch.tensor([[float(v) for v in r] for r in m.tolist()], dtype=torch.float64)


def _rms(x, g, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def _rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


def llama_logits(spec, tokens):
    """LlamaModel's forward: embed, per layer x + attn(rms(x)), x + mlp(rms(x)), norm, lm_head."""
    n, eps = len(tokens), float(spec.options.eps)
    x = _t(spec.W_E)[tokens]
    d_k, H, K = spec.dims.d_k, spec.dims.heads, spec.dims.kv_heads
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    f = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)
    cos, sin = torch.cat((f, f), -1).cos(), torch.cat((f, f), -1).sin()
    for layer in spec.layers:
        p = {k: _t(v) for k, v in layer.params.items()}
        h = _rms(x, p["ln1.gamma"], eps)
        q = (h @ p["W_Q"]).view(n, H, d_k).transpose(0, 1)
        k = (h @ p["W_K"]).view(n, K, d_k).transpose(0, 1)
        v = (h @ p["W_V"]).view(n, K, d_k).transpose(0, 1)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        k, v = k.repeat_interleave(H // K, 0), v.repeat_interleave(H // K, 0)   # repeat_kv
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + o.transpose(0, 1).reshape(n, H * d_k) @ p["W_O"]
        h = _rms(x, p["ln2.gamma"], eps)
        x = x + (torch.nn.functional.silu(h @ p["W_1"]) * (h @ p["W_3"])) @ p["W_2"]
    return _rms(x, _t(spec.final_norm["gamma"]), eps) @ _t(spec.W_U)


def test_tiny_llama_logits_and_greedy_tokens_agree_with_forward_json(tmp_path, capsys):
    path = tmp_path / "llama.yaml"
    path.write_text(SPEC)
    assert main(["forward", str(path), "--json"]) == 0
    steps = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    spec = model_spec.from_mapping(yaml.safe_load(SPEC), str(path))
    tokens = list(spec.prompt)
    for t, prefix in enumerate(["", "gen1.", "gen2."]):
        want = llama_logits(spec, tokens).numpy()
        got = np.array(steps[f"{prefix}logits"]["float"], dtype=float)
        assert np.allclose(got, want if not prefix else want[-1:], atol=1e-9), prefix
        nxt = int(np.argmax(want[-1]))
        assert steps[f"{prefix}next_token"]["float"] == [[nxt]]
        tokens.append(nxt)
    # the cache holds one K/V head: (tokens so far) × kv_heads·d_k = m × 2
    assert steps["gen2.layer0.cache.k"]["shape"] == [5, 2]
    assert steps["gen1.layer1.cache.v"]["shape"] == [4, 2]
    assert steps["gen1.layer0.attn.k_rot"]["shape"] == [1, 2]


def test_the_cache_is_proved_equal_to_the_full_recompute_with_rope_and_groups():
    spec = model_spec.from_mapping(yaml.safe_load(SPEC), "llama.yaml")
    proofs = model.prove_cache(spec)
    assert proofs and all(v == "exact" for _, v in proofs)
    assert any(n == "gen2.layer1.attn.q_rot" for n, _ in proofs)
    res = verify.run(spec, tol=1e-9, require_torch=True)
    assert res.ok, res.problems


def test_rope_in_a_model_is_placed_by_model_positions():
    data = yaml.safe_load(SPEC)
    data["model"]["positions"] = "learned"
    with pytest.raises(model_spec.SpecError) as e:
        model_spec.from_mapping(data, "m.yaml")
    assert e.value.where == "block.rope" and "model.positions: rope" in e.value.message
    data = yaml.safe_load(SPEC)
    del data["block"]["rope"]
    spec = model_spec.from_mapping(data, "m.yaml")          # positions: rope alone: θ 10000, half
    assert spec.layers[0].options.rope.style == "half" and spec.W_P is None
