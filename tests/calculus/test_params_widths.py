"""Parameter counts with per-head widths d_k, d_v (issue 15), against torch modules' numel and
the exact engine's parameter shapes for the same spec."""
import json

import pytest
import torch

from symblock.calculus.params import count
from symblock.cli import main
from symblock.engine import spec


@pytest.mark.parametrize("d, h, k, v, bias", [(3, 1, 2, 2, True), (4, 2, 3, 1, False), (3, 2, 2, 3, True)])
def test_attention_counts_are_the_projections_numel(d, h, k, v, bias):
    c = count(d, h, 5, bias=bias, d_k=k, d_v=v, seq_len=7)
    lins = [torch.nn.Linear(d, h * k, bias=bias), torch.nn.Linear(d, h * k, bias=bias),
            torch.nn.Linear(d, h * v, bias=bias), torch.nn.Linear(h * v, d, bias=bias)]
    assert c.attention == sum(p.numel() for m in lins for p in m.parameters())
    assert c.formula("attention").value(c.env) == c.attention
    assert str(c.formula("W_O")) == "h·v·d" and c.to_dict()["config"]["d_k"] == k
    # FLOPs: 2 per multiply-add of x W_Q, x W_K, x W_V, O W_O, Q Kᵀ and P V, per token
    flops = {f.name: f.count for f in c.flops}
    assert flops["attention_proj"] == 2 * (2 * d * h * k + 2 * d * h * v)
    assert flops["attention_scores"] == 2 * 7 * h * k and flops["attention_values"] == 2 * 7 * h * v
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": d, "d_ff": 5, "heads": h, "d_k": k, "d_v": v},
                           "block": {"bias": bias}, "random": {"seed": 1}})
    shapes = {p.name: p.shape for p in c.params}
    assert all(shapes[n] == s.params[n].shape for n in s.params if not n.startswith("ln"))


def test_default_widths_print_as_before():
    assert str(count(32, 4, 128).formula("attention")) == "4·d² + 4·d"
    assert count(32, 4, 128, d_k=8, d_v=8).attention == count(32, 4, 128).attention


def test_cli_takes_d_k_and_d_v(capsys):
    assert main(["params", "--d-model", "3", "--heads", "1", "--d-k", "2", "--d-v", "2", "--d-ff", "4"]) == 0
    out = capsys.readouterr().out
    assert "k = d_k = 2" in out and "d·h·k" in out
    assert main(["params", "--d-model", "3", "--heads", "2", "--d-k", "2"]) == 2
    assert "give both d_k and d_v" in capsys.readouterr().err


def _spec_file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_spec_with_the_default_widths_prints_the_flags_formulas(capsys):
    """seed-post-ln (d 2, 1 head, so d_k = d_v = 2 by default) reads as --d-model 2 --heads 1 does."""
    assert main(["params", "seed-post-ln"]) == 0
    out = capsys.readouterr().out
    assert "4·d²" in out and "d·h·k" not in out and "d_head = 2" in out


def test_a_model_specs_own_per_head_widths_are_counted(tmp_path, capsys):
    """dims.d_k = d_v = 3 with d_model 4 and 2 heads: W_Q, W_K, W_V are 4×6 and W_O 6×4, by hand.
    GPT, 2 layers, no biases: per layer 4·24 + W_1 32 + W_2 32 + 2 γ of 4 = 168; W_E 5·4 = 20,
    W_P 4·4 = 16, the final γ 4: 2·168 + 40 = 376 (the default widths give 312)."""
    gpt = _spec_file(tmp_path, "gpt.yaml", """
model: {vocab: [a, b, c, d, e], positions: learned, layers: 2, head: tied, final_norm: true,
        prompt: [a, b], generate: 2, kv_cache: true}
dims: {d_model: 4, d_ff: 8, heads: 2, d_k: 3, d_v: 3}
block: {norm_position: pre}
random: {seed: 1}
""")
    assert main(["params", gpt, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 376
    # nn.Transformer-like, 1 + 1 layers: encoder 96 + 64 + 2·4 = 168, decoder 2·96 + 64 + 3·4 = 268,
    # the shared W_E 8·4 = 32 and two final γ of 4: 476 (the default widths give 380)
    enc_dec = _spec_file(tmp_path, "tr.yaml", """
model: {kind: encoder-decoder, vocab: [a, b, c, d, e, f, g, h], positions: sinusoidal, source: [c, d],
        encoder_layers: 1, decoder_layers: 1, head: tied, prompt: [a], generate: 1, kv_cache: true}
dims: {d_model: 4, d_ff: 8, heads: 2, d_k: 3, d_v: 3}
random: {seed: 1}
""")
    assert main(["params", enc_dec, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 476
