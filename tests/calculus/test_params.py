"""`symblock params`: exact parameter counts and FLOPs per token of one block.

Checked against independent counts: torch modules' parameters counted by brute force, torch's
FlopCounterMode, published model sizes, and the hand counts of seeds 001 and 002."""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from symblock.calculus import params
from symblock.calculus.params import count


@pytest.fixture(scope="module")
def torch():
    import torch  # CI installs torch: a missing torch fails here, it never skips
    return torch


def numel(module) -> int:
    return sum(p.numel() for p in module.parameters())


def torch_block(torch, d, h, f, bias, norm, activation, final_norm):
    """The block's parameterised modules, built from torch.nn (independent of symblock)."""
    nn = torch.nn
    attn = nn.MultiheadAttention(d, h, bias=bias, batch_first=True)
    linears = [nn.Linear(d, f, bias=bias)]                       # W_1
    if activation in ("swiglu", "geglu"):
        linears.append(nn.Linear(d, f, bias=bias))               # W_3, the gate
    linears.append(nn.Linear(f, d, bias=bias))                   # W_2
    make = (lambda: nn.LayerNorm(d, bias=bias)) if norm == "layernorm" else (lambda: nn.RMSNorm(d))
    norms = [make() for _ in range(3 if final_norm else 2)]
    return attn, linears, norms


CONFIGS = st.fixed_dictionaries({
    "heads": st.integers(1, 6), "d_head": st.integers(1, 12), "d_ff": st.integers(1, 96),
    "bias": st.booleans(), "norm": st.sampled_from(params.NORMS),
    "activation": st.sampled_from(params.ACTIVATIONS), "final_norm": st.booleans(),
})


@settings(max_examples=60, deadline=None)
@given(cfg=CONFIGS)
def test_counts_match_torch_modules(torch, cfg):
    d, h, f = cfg["heads"] * cfg["d_head"], cfg["heads"], cfg["d_ff"]
    c = count(d, h, f, bias=cfg["bias"], norm=cfg["norm"], activation=cfg["activation"],
              final_norm=cfg["final_norm"])
    attn, linears, norms = torch_block(torch, d, h, f, cfg["bias"], cfg["norm"],
                                       cfg["activation"], cfg["final_norm"])
    assert c.attention == numel(attn)
    assert c.ffn == sum(numel(m) for m in linears)
    assert c.norm == sum(numel(m) for m in norms)
    assert c.total == numel(attn) + sum(numel(m) for m in linears + norms)
    # parameter by parameter: torch packs W_Q W_K W_V in one (3d, d) in_proj_weight
    n = {p.name: p.count for p in c.params}
    assert n["W_Q"] + n["W_K"] + n["W_V"] == attn.in_proj_weight.numel()
    assert n["W_O"] == attn.out_proj.weight.numel()
    if cfg["bias"]:
        assert n["b_Q"] + n["b_K"] + n["b_V"] == attn.in_proj_bias.numel()
        assert n["b_O"] == attn.out_proj.bias.numel()
    else:
        assert not any(name.startswith("b_") or name.endswith(".beta") for name in n)
    # math layout (in, out) is nn.Linear's (out, in) transposed
    ffn_weights = [p for p in c.of("ffn") if p.name.startswith("W_")]
    assert [p.shape[::-1] for p in ffn_weights] == [tuple(m.weight.shape) for m in linears]
    for p in c.params:
        assert type(p.count) is int and p.count == p.formula.value(c.env)


@pytest.mark.parametrize("d,h,f", [(2, 1, 3), (4, 2, 8), (8, 4, 32), (12, 3, 5), (32, 4, 128)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_counts_match_transformer_encoder_layer(torch, d, h, f, bias, activation):
    # torch's bias=False drops the Linear biases *and* LayerNorm's β, as --no-bias does
    layer = torch.nn.TransformerEncoderLayer(d, h, f, activation=activation, bias=bias)
    c = count(d, h, f, bias=bias, activation=activation)
    assert c.total == numel(layer)
    assert c.attention == numel(layer.self_attn)
    assert c.ffn == numel(layer.linear1) + numel(layer.linear2)
    assert c.norm == numel(layer.norm1) + numel(layer.norm2)


@pytest.mark.parametrize("d,h,f,n", [(8, 2, 32, 5), (32, 4, 128, 7), (12, 3, 20, 1)])
@pytest.mark.parametrize("activation", ["relu", "swiglu"])
@pytest.mark.parametrize("bias", [True, False])
def test_flops_match_torch_flop_counter(torch, d, h, f, n, activation, bias):
    from torch.utils.flop_counter import FlopCounterMode
    attn, linears, _ = torch_block(torch, d, h, f, bias, "layernorm", activation, False)
    x = torch.randn(1, n, d)
    with FlopCounterMode(display=False) as fc_attn, torch.no_grad():
        # need_weights=True takes the explicit bmm path, whose score/value matmuls are counted
        attn(x, x, x, need_weights=True)
    with FlopCounterMode(display=False) as fc_ffn, torch.no_grad():
        if activation == "swiglu":
            linears[2](torch.nn.functional.silu(linears[0](x)) * linears[1](x))
        else:
            linears[1](torch.relu(linears[0](x)))
    c = count(d, h, f, bias=bias, activation=activation, seq_len=n)
    fl = {x.name: x.count for x in c.flops}
    assert n * (fl["attention_proj"] + fl["attention_scores"] + fl["attention_values"]) \
        == fc_attn.get_total_flops()
    assert n * fl["ffn"] == fc_ffn.get_total_flops()
    assert c.flops_per_token == sum(fl.values())
    # the rule of thumb the docstring states: 2·(matrix parameters) + 4·n·d
    matrices = sum(p.count for p in c.params if p.name.startswith("W_"))
    assert c.flops_per_token == 2 * matrices + 4 * n * d


# ------------------------------------------------------------------------- seeds 001 and 002

def test_seed_001_hand_counts(torch):
    """Seed 001 (吴佳浩, "07｜Encoder 块"), §六: d_model=32, n_heads=4, d_ff=128, Pre-LN block
    with nn.MultiheadAttention, two nn.LayerNorm and a Linear-GELU-Linear FFN."""
    c = count(32, 4, 128, activation="gelu")
    # "Attention (qkv+proj): 32*96+96 + 32*32+32 = 4224": right
    assert 32 * 96 + 96 + 32 * 32 + 32 == 4224 == c.attention
    # "FFN: 32*128+128 + 128*32+32 = 8352": right
    assert 32 * 128 + 128 + 128 * 32 + 32 == 8352 == c.ffn
    # "LayerNorm: 2 * (32+32) * 2 = 256": WRONG. Each LayerNorm(32) has γ (32) and β (32), i.e.
    # 32+32 = 64, and the block has two of them (ln1, ln2): 2 × 64 = 128. The article multiplies
    # by 2 twice (γ and β are already the 32+32), counting the norms' parameters double.
    article_claim = 2 * (32 + 32) * 2
    assert article_claim == 256
    assert c.norm == 128 != article_claim
    assert c.total == 4224 + 8352 + 128 == 12704  # with the article's 256 it would be 12832
    # "FFN 参数量是 Attention 的近两倍" (FFN ≈ 2 × attention; exercise 2: FFN:Attention ≈ 2:1):
    # right
    assert round(c.ffn / c.attention, 2) == 1.98
    # the article's EncoderBlock, rebuilt and counted by brute force, agrees with us, not with 256
    nn = torch.nn
    ln1, ln2 = nn.LayerNorm(32), nn.LayerNorm(32)
    attn = nn.MultiheadAttention(32, 4, batch_first=True)
    ff = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32))
    assert (numel(attn), numel(ff), numel(ln1) + numel(ln2)) == (c.attention, c.ffn, c.norm)


def test_seed_002_ffn_share(torch):
    """Seed 002 (云帆数科, "手撕 Transformer Block"): TransformerBlock(d_model=64, n_heads=4,
    d_ff=256) prints `FFN 参数占比: {n_ffn / n_all:.0%}` -> "约 66%", the "2/3 of the
    parameters are in the FFN" rule. Right: 33088 / 49984 = 66.2%."""
    c = count(64, 4, 256, activation="gelu")
    assert (c.attention, c.ffn, c.norm, c.total) == (16640, 33088, 256, 49984)
    assert f"{c.ffn / c.total:.0%}" == "66%"
    assert f"{c.share('ffn'):.0%}" == "66%"
    # the article's module, counted as its self-check does (Dropout has no parameters)
    nn = torch.nn
    ffn = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64), nn.Dropout(0.1))
    attn = nn.MultiheadAttention(64, 4, dropout=0.1, batch_first=True)
    blk = nn.ModuleList([nn.LayerNorm(64), attn, nn.LayerNorm(64), ffn])
    assert (numel(ffn), numel(blk)) == (c.ffn, c.total)
    # its default TransformerBlock(512, 8, 2048): also ≈ 2/3
    big = count(512, 8, 2048)
    assert (big.ffn, big.total) == (2099712, 3152384)
    assert f"{big.share('ffn'):.0%}" == "67%"
    # "…约 2/3 的参数和计算量": for the compute, true of the weight matmuls when f = 4·d
    # (4·d·f against 8·d² + 4·d·f); the attention score/value FLOPs, 4·n·d, come on top
    fl = {x.name: x.count for x in c.flops}
    assert Fraction(fl["ffn"], fl["ffn"] + fl["attention_proj"]) == Fraction(2, 3)


def test_published_model_sizes():
    """Whole models = blocks + embeddings; the block counts must give the published totals."""
    gpt2 = count(768, 12, 3072)  # GPT-2 small: 12 layers, wte 50257×768, wpe 1024×768, ln_f γ β
    assert 12 * gpt2.total + 50257 * 768 + 1024 * 768 + 2 * 768 == 124_439_808
    llama = count(4096, 32, 11008, bias=False, norm="rmsnorm", activation="swiglu")
    # LLaMA-7B: 32 layers, untied embedding and output 32000×4096, final RMSNorm γ
    assert 32 * llama.total + 2 * 32000 * 4096 + 4096 == 6_738_415_616


# --------------------------------------------------------------------------- formulas

@pytest.mark.parametrize("kw,expected", [
    ({}, {"attention": "4·d² + 4·d", "ffn": "2·d·f + f + d", "norm": "4·d",
          "total": "4·d² + 2·d·f + 9·d + f"}),
    ({"bias": False}, {"attention": "4·d²", "ffn": "2·d·f", "norm": "2·d"}),
    ({"norm": "rmsnorm", "final_norm": True}, {"norm": "3·d"}),
    ({"final_norm": True}, {"norm": "6·d"}),
    ({"activation": "swiglu"}, {"ffn": "3·d·f + 2·f + d"}),
    ({"activation": "geglu", "bias": False}, {"ffn": "3·d·f"}),
])
def test_formula_strings(kw, expected):
    c = count(32, 4, 128, **kw)
    for component, text in expected.items():
        assert str(c.formula(component)) == text


def test_substituted_and_per_parameter_formulas():
    c = count(32, 4, 128)
    assert c.formula("attention").substituted(c.env) == "4·32² + 4·32"
    assert c.formula("ffn").substituted(c.env) == "2·32·128 + 128 + 32"
    assert [(p.name, str(p.formula), p.shape) for p in c.params if p.component == "ffn"] == [
        ("W_1", "d·f", (32, 128)), ("b_1", "f", (1, 128)),
        ("W_2", "f·d", (128, 32)), ("b_2", "d", (1, 32))]
    assert str(c.flops_formula) == "8·d² + 4·n·d + 4·d·f"


@settings(max_examples=40, deadline=None)
@given(cfg=CONFIGS, seq_len=st.integers(1, 4096))
def test_formulas_evaluate_to_the_counts(cfg, seq_len):
    import sympy
    d = cfg["heads"] * cfg["d_head"]
    c = count(d, cfg["heads"], cfg["d_ff"], bias=cfg["bias"], norm=cfg["norm"],
              activation=cfg["activation"], final_norm=cfg["final_norm"], seq_len=seq_len)
    values = {"attention": c.attention, "ffn": c.ffn, "norm": c.norm, "total": c.total}
    assert c.attention + c.ffn + c.norm == c.total
    forms = [(c.formula(k), v) for k, v in values.items()] + [(c.flops_formula, c.flops_per_token)]
    for form, value in forms:
        # the printed string, with numbers put in, is arithmetic that gives the count
        arithmetic = form.substituted(c.env).replace("·", "*").replace("²", "**2")
        assert eval(arithmetic, {}) == value
        expr = form.sympy()
        assert expr.subs({sympy.Symbol(s, positive=True, integer=True): v
                          for s, v in c.env.items()}) == value
    assert sum(c.share(k) for k in params.COMPONENTS) == pytest.approx(1.0)


def test_heads_and_default_d_ff():
    # heads split the same d×d matrices: they do not change any count
    assert count(48, 1).to_dict()["params"] == count(48, 6).to_dict()["params"]
    assert count(48, 4).d_ff == 4 * 48 and count(48, 4).ffn == count(48, 4, 192).ffn


@pytest.mark.parametrize("args,message", [
    ((30, 4, 120), "not divisible"),
    ((0, 1, 4), "d_model must be a positive integer"),
    ((8, -2, 4), "heads must be a positive integer"),
    ((8, 2, 0), "d_ff must be a positive integer"),
    ((8.0, 2, 4), "d_model must be a positive integer"),
    ((True, 1, 4), "d_model must be a positive integer"),
])
def test_count_rejects_bad_values(args, message):
    with pytest.raises(ValueError, match=message):
        count(*args)


def test_count_rejects_unknown_choices():
    with pytest.raises(ValueError, match="norm must be one of"):
        count(8, 2, norm="batchnorm")
    with pytest.raises(ValueError, match="activation must be one of"):
        count(8, 2, activation="tanh")
    with pytest.raises(ValueError, match="seq_len"):
        count(8, 2, seq_len=0)


# -------------------------------------------------------------------------------- CLI

def test_cli_json_shape(cli):
    rc, out, err = cli("params", "--d-model", "64", "--heads", "4", "--d-ff", "256", "--activation",
                       "swiglu", "--final-norm", "--seq-len", "10", "--json")
    assert rc == 0 and err == ""
    doc = json.loads(out)
    c = count(64, 4, 256, activation="swiglu", final_norm=True, seq_len=10)
    for key in ("attention", "ffn", "norm", "total"):
        assert type(doc[key]) is int
    assert (doc["attention"], doc["ffn"], doc["norm"], doc["total"]) == \
        (c.attention, c.ffn, c.norm, c.total)
    assert doc["attention"] + doc["ffn"] + doc["norm"] == doc["total"]
    assert sum(doc["params"].values()) == doc["total"]
    assert {"W_3", "b_3", "ln_final.gamma", "ln_final.beta"} <= set(doc["params"])
    assert doc["formulas"]["attention"] == "4·d² + 4·d"
    assert doc["substituted"]["ffn"] == "3·64·256 + 2·256 + 64"
    assert set(doc["shares"]) == {"attention", "ffn", "norm"}
    fl = doc["flops_per_token"]
    assert fl["seq_len"] == 10
    assert fl["total"] == fl["attention_proj"] + fl["attention_scores"] + \
        fl["attention_values"] + fl["ffn"] == c.flops_per_token
    assert doc["config"]["d_head"] == 16 and doc["config"]["norm"] == "layernorm"


def test_cli_defaults(cli):
    rc, out, _ = cli("params", "--d-model", "16", "--heads", "2", "--json")
    doc = json.loads(out)
    assert rc == 0
    assert doc["config"]["d_ff"] == 64 and doc["config"]["bias"] is True
    assert doc["config"]["seq_len"] == params.DEFAULT_SEQ_LEN
    rc, out, _ = cli("params", "--d-model", "16", "--heads", "2", "--no-bias", "--norm", "rmsnorm",
                     "--json")
    doc = json.loads(out)
    assert (doc["attention"], doc["ffn"], doc["norm"]) == (4 * 256, 2 * 16 * 64, 2 * 16)


def test_cli_table(cli):
    rc, out, err = cli("params", "--d-model", "32", "--heads", "4", "--d-ff", "128")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    table = lines[lines.index(next(l for l in lines if l.startswith("parameters"))):]
    table = table[:table.index("")]
    assert len({len(l) for l in table}) == 1  # aligned: the share column ends in one place
    rows = {l.split()[0]: l.split() for l in table[2:]}
    assert rows["attention"][-2:] == ["4,224", "33.25%"]
    assert rows["ffn"][-2:] == ["8,352", "65.74%"]
    assert rows["norm"][-2:] == ["128", "1.01%"]
    assert rows["total"][-2:] == ["12,704", "100.00%"]
    assert "4·d² + 4·d" in " ".join(rows["attention"])
    assert "ln2.beta" in rows and "W_3" not in rows
    assert "n = seq_len = 512" in out
    assert any(l.startswith("total") and "90,112" in l for l in lines)  # FLOPs per token


@pytest.mark.parametrize("argv,message", [
    (["--d-model", "30", "--heads", "4"], "d_model = 30 is not divisible by heads = 4"),
    (["--d-model", "0", "--heads", "1"], "--d-model must be a positive integer, got 0"),
    (["--d-model", "8", "--heads", "-2"], "heads must be a positive integer, got -2"),
    (["--d-model", "8", "--heads", "2", "--d-ff", "0"], "--d-ff must be a positive integer"),
    (["--d-model", "8", "--heads", "2", "--seq-len", "0"], "--seq-len must be a positive integer"),
    # model-only flags on a block count were ignored without a word (the block's table printed)
    (["--d-model", "8", "--heads", "2", "--untied"], "--context and --untied count a model's positions and head: "
                                                      "give --layers and --vocab too"),
    (["--d-model", "8", "--heads", "2", "--context", "16"], "--context and --untied count a model's"),
])
def test_cli_bad_values_exit_2(cli, argv, message):
    rc, out, err = cli("params", *argv + ["--json"])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("symblock params: error: ")
    assert message in err


def test_module_entry_point_exit_code():
    run = lambda *a: subprocess.run([sys.executable, "-m", "symblock.commands.params", *a],
                                    capture_output=True, text=True)
    bad = run("--d-model", "10", "--heads", "3")
    assert bad.returncode == 2 and "not divisible" in bad.stderr and bad.stdout == ""
    ok = run("--d-model", "10", "--heads", "5", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["total"] == count(10, 5).total


def test_a_bad_dimension_on_the_command_line_is_named_by_its_flag(cli):
    """`params --d-ff 0` says `--d-ff must be …`: the flag the user typed, not the Python argument d_ff
    (the API's own error keeps its argument's name)."""
    for flags, said in ((["--d-ff", "0"], "--d-ff must be a positive integer, got 0"),
                        (["--d-k", "0"], "--d-k must be a positive integer, got 0"),
                        (["--layers", "0", "--vocab", "5"], "--layers must be a positive integer, got 0")):
        rc, _, err = cli("params", "--d-model", "4", "--heads", "2", *flags)
        assert rc == 2 and said in err and "d_" not in err.replace("d_model", ""), err
    with pytest.raises(ValueError, match="^d_ff must be a positive integer"):
        count(4, 2, 0)
