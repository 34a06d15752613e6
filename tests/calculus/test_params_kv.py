"""Grouped K/V heads in the parameter counts, and the KV cache's size per token, checked against
Llama-3-8B's published shape (d 4096, 32 heads of 128, 8 K/V heads, f 14336, 32 layers, vocab
128256, untied: 8.03 B parameters; 131,072 bytes of bf16 cache per token)."""
import json

from symblock.calculus.model_params import count_model
from symblock.calculus.params import count
from symblock.cli import main

LLAMA3_8B = dict(d_model=4096, heads=32, d_ff=14336, bias=False, norm="rmsnorm", activation="swiglu", kv_heads=8)


def test_llama3_8b_counts_and_cache_size():
    m = count_model(128256, layers=32, tied=False, **LLAMA3_8B)
    assert m.total == 8_030_261_248
    b = m.block
    assert dict((p.name, p.shape) for p in b.params)["W_K"] == (4096, 8 * 128)
    assert b.attention == 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert b.kv_cache.entries == 2 * 8 * 128                        # one layer: K and V rows
    assert m.kv_cache.entries == 32 * 2048 and m.kv_cache.bytes("bf16") == 131_072
    assert m.kv_cache.bytes("fp32") == 262_144 and m.kv_cache.bytes("fp8") == 65_536


def test_kv_heads_equal_to_heads_is_plain_multi_head_attention():
    assert count(64, 4, kv_heads=4).to_dict()["formulas"] == count(64, 4).to_dict()["formulas"]
    mqa = count(64, 4, kv_heads=1)
    assert mqa.attention == 64 * 64 * 2 + 2 * 64 * 16 + 64 + 64 + 16 + 16   # W_Q, W_O; W_K, W_V 64×16; biases
    assert mqa.kv_cache.entries == 32 and count(64, 4).kv_cache.entries == 128


def test_params_command_kv_heads(capsys):
    assert main(["params", "--d-model", "4096", "--heads", "32", "--d-ff", "14336", "--no-bias", "--norm",
                 "rmsnorm", "--activation", "swiglu", "--kv-heads", "8", "--layers", "32", "--vocab",
                 "128256", "--untied", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["total"] == 8_030_261_248 and d["kv_cache"]["bytes_per_token"]["bf16"] == 131_072
    assert main(["params", "--d-model", "8", "--heads", "4", "--kv-heads", "2"]) == 0
    out = capsys.readouterr().out
    assert "W_K        d·g·k" in out and "KV cache per token per layer: g·(k + v) = 2·(2 + 2) = 8 entries" in out
    assert main(["params", "--d-model", "8", "--heads", "4", "--kv-heads", "3"]) == 2
    assert "kv_heads = 3 does not divide heads = 4" in capsys.readouterr().err
