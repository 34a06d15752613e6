"""`symblock params SPEC` counts what the spec's forward computes, against torch modules built to
compute the same (their parameters counted by torch, not by us): biases a `block.bias: false` spec
gives anyway, an encoder-decoder's separate source embedding, `block.out_proj: false` (no W_O, b_O),
an encoder-decoder's `model.final_norm: false` (no decoder final norm), and a spec too large for the
exact engine (counting does no exact arithmetic)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

import symblock.examples
from symblock.engine import cost


def numel(*modules) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


def total(cli, path) -> dict:
    ran = cli("params", path, "--json")
    assert ran.code == 0, ran.err
    return json.loads(ran.out)


def block_modules(d: int, f: int, given: set[str], projections: str = "QKVO") -> nn.ModuleDict:
    """A Pre-LN block of separate torch modules, bias=False except where the spec gives one
    (`projections="QKV"`: no output projection W_O)."""
    return nn.ModuleDict({
        **{p: nn.Linear(d, d, bias=f"b_{p}" in given) for p in projections},
        "1": nn.Linear(d, f, bias="b_1" in given), "2": nn.Linear(f, d, bias="b_2" in given),
        **{ln: nn.LayerNorm(d, bias=f"{ln}.beta" in given) for ln in ("ln1", "ln2")}})


BLOCK = """\
dims: {seq_len: 2, d_model: 4, d_ff: 8, heads: 2}
block: {norm_position: pre, norm: layernorm, eps: 0, activation: relu, bias: false}
inputs:
  X: [[1, 0, -1, 0], [0, 1, 0, -1]]
random: {seed: 5, low: -1, high: 1}
"""
GIVEN = """\
weights:
  b_Q: [1, 1, 1, 1]
  b_1: [1, 2, 3, 4, 5, 6, 7, 8]
  ln2: {beta: [1, 0, 0, 0]}
"""


def test_biases_given_with_bias_false_are_added_by_the_forward_and_counted(cli, spec_file, tmp_path):
    bare, biased = spec_file(BLOCK, "bare.yaml"), spec_file(BLOCK + GIVEN, "biased.yaml")

    def q_row(path) -> list[float]:
        ran = cli("forward", path, "--json")
        assert ran.code == 0, ran.err
        return next(s for s in json.loads(ran.out)["steps"] if s["name"] == "attn.q")["float"][0]
    # the forward adds the given b_Q although block.bias is false (the other weights are the same draws)
    assert [b - a for a, b in zip(q_row(bare), q_row(biased))] == pytest.approx([1, 1, 1, 1])
    got = total(cli, biased)
    want = numel(block_modules(4, 8, {"b_Q", "b_1", "ln2.beta"}))
    assert got["total"] == want == 152
    assert got["params"]["b_Q"] == 4 and got["params"]["b_1"] == 8 and got["params"]["ln2.beta"] == 4
    assert total(cli, bare)["total"] == numel(block_modules(4, 8, set())) == 136
    assert "no biases but the given b_Q, b_1, ln2.beta" in cli("params", biased).out


def test_a_decoder_layer_counts_its_given_cross_attention_bias(cli, spec_file):
    text = (Path(symblock.examples.__file__).parent / "decoder-layer.yaml").read_text(encoding="utf-8")
    path = spec_file(text + "weights: {cross: {b_O: [1, 0, 0, 1]}}\n")
    layer = nn.TransformerDecoderLayer(4, 1, 4, bias=False)
    layer.multihead_attn.out_proj = nn.Linear(4, 4, bias=True)   # cross.b_O, the one bias given
    assert total(cli, path)["total"] == numel(layer) == 172 + 4


def gpt_spec(weights: dict, **block) -> str:
    return yaml.safe_dump({
        "model": {"vocab": ["a", "b", "c", "d", "e"], "positions": "learned", "layers": 2, "head": "tied",
                  "prompt": ["a", "b"]},
        "dims": {"d_model": 4, "d_ff": 8, "heads": 2},
        "block": {"norm_position": "pre", "norm": "layernorm", "activation": "relu", "bias": False, **block},
        "random": {"seed": 3, "low": -1, "high": 1}, "weights": weights})


def test_a_model_counts_the_biases_its_layers_are_given(cli, spec_file):
    """Both layers are given b_1 (counted in the block), layer 1 alone b_Q, and the final norm its β."""
    b1 = list(range(8))
    path = spec_file(gpt_spec({"layers": [{"b_1": b1}, {"b_1": b1, "b_Q": [1, 1, 1, 1]}],
                               "ln_final": {"beta": [1, 0, 0, 0]}}))
    wte, wpe = nn.Embedding(5, 4), nn.Embedding(2, 4)   # positions: the prompt's 2 rows; the head is tied
    layers = [block_modules(4, 8, {"b_1"}), block_modules(4, 8, {"b_1", "b_Q"})]
    got = total(cli, path)
    assert got["total"] == numel(wte, wpe, *layers, nn.LayerNorm(4)) == 20 + 8 + 2 * 144 + 4 + 8
    assert got["per_block"] == numel(layers[0]) and got["extra"] == 4 and got["final_norm"] == 8
    bare = total(cli, spec_file(gpt_spec({}), "bare.yaml"))
    assert bare["total"] == numel(wte, wpe, *[block_modules(4, 8, set())] * 2, nn.LayerNorm(4, bias=False))


def translate_spec(**model) -> str:
    data = yaml.safe_load((Path(symblock.examples.__file__).parent / "tiny-translate.yaml").read_text(encoding="utf-8"))
    data["model"].update(model)
    return yaml.safe_dump(data, allow_unicode=True)


def transformer(decoder_norm: bool = True) -> nn.Transformer:
    """tiny-translate's nn.Transformer(4, 2, 1, 1, 8, bias=False), its encoder built with
    enable_nested_tensor=False (nn.Transformer's own warns that bias=False rules nested tensors
    out); `decoder_norm=False`: the decoder stack has no final norm."""
    def layer_norm():
        return nn.LayerNorm(4, bias=False)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, batch_first=True, bias=False), 1,
                                    layer_norm(), enable_nested_tensor=False)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, batch_first=True, bias=False), 1,
                                    layer_norm() if decoder_norm else None)
    return nn.Transformer(4, 2, 1, 1, 8, batch_first=True, bias=False, custom_encoder=encoder, custom_decoder=decoder)


def test_separate_embeddings_count_the_source_table_too(cli, spec_file):
    """tiny-translate (nn.Transformer(4, 2, 1, 1, 8), no biases, vocab 8, sinusoidal positions) with
    `model.embeddings: separate`: the source reads its own 8 × 4 W_E_src, the target and a tied head W_E."""
    net = transformer()
    src, tgt, head = nn.Embedding(8, 4), nn.Embedding(8, 4), nn.Linear(4, 8, bias=False)
    assert total(cli, spec_file(translate_spec(), "shared.yaml"))["total"] == numel(net, tgt) == 380
    got = total(cli, spec_file(translate_spec(embeddings="separate"), "separate.yaml"))
    assert got["total"] == numel(net, src, tgt) == 412 and got["embedding"] == 2 * 8 * 4 and got["separate"]
    untied = total(cli, spec_file(translate_spec(embeddings="separate", head="untied"), "untied.yaml"))
    assert untied["total"] == numel(net, src, tgt, head) == 444
    out = cli("params", spec_file(translate_spec(embeddings="separate"), "separate.yaml")).out
    assert "source embedding W_E_src" in out and "target embedding W_E" in out


BIG = """\
dims: {seq_len: 64, d_model: 128, d_ff: 512, heads: 4}
block: {norm_position: pre, norm: layernorm, eps: 0, activation: relu, bias: true}
random: {seed: 5, low: -1, high: 1}
"""


def test_a_spec_over_the_exact_engines_limit_is_counted(cli, spec_file):
    path = spec_file(BIG)
    forward = cli("forward", path)
    assert forward.code == 2 and "over the exact engine's limit" in forward.err   # the forward is still refused
    assert total(cli, path)["total"] == numel(nn.TransformerEncoderLayer(128, 4, 512)) == 198_272
    assert cost.current_limit() == cost.MAX_COST   # lifted for the count only
    assert cli("forward", path).code == 2


def steps(cli, path) -> dict[str, list]:
    ran = cli("forward", path, "--json")
    assert ran.code == 0, ran.err
    return {s["name"]: s["float"] for s in json.loads(ran.out)["steps"]}


def test_a_block_without_output_projection_counts_no_w_o(cli, spec_file):
    """`block.out_proj: false`: attn.out is the heads' concatenation (no W_O, no b_O), so the count is
    that of the torch pieces without the output projection: 136 - 16 = 120 (without biases), 152 with."""
    bare = spec_file(BLOCK.replace("bias: false}", "bias: false, out_proj: false}"), "bare.yaml")
    ran = steps(cli, bare)
    assert ran["attn.out"] == ran["attn.concat"]   # the forward adds no projection
    got = total(cli, bare)
    assert got["total"] == numel(block_modules(4, 8, set(), "QKV")) == 120
    assert "W_O" not in got["params"] and got["config"]["out_proj"] is False
    assert got["flops_per_token"]["attention_proj"] == 2 * 3 * 4 * 4   # x W_Q, x W_K, x W_V only
    out = cli("params", bare).out
    assert "no output projection W_O" in out and "  W_O" not in out
    biased = spec_file(BLOCK.replace("bias: false}", "bias: true, out_proj: false}"), "biased.yaml")
    given = {"b_Q", "b_K", "b_V", "b_1", "b_2", "ln1.beta", "ln2.beta"}
    got = total(cli, biased)
    assert got["total"] == numel(block_modules(4, 8, given, "QKV")) == 152 and "b_O" not in got["params"]


def test_a_decoder_layer_without_output_projections_counts_neither_w_o(cli, spec_file):
    """decoder-layer.yaml (nn.TransformerDecoderLayer(4, 1, 4, bias=False)) with `block.out_proj: false`:
    neither the self-attention's W_O nor the cross-attention's cross.W_O, as torch pieces without them."""
    data = yaml.safe_load((Path(symblock.examples.__file__).parent / "decoder-layer.yaml").read_text(encoding="utf-8"))
    data["block"]["out_proj"] = False
    path = spec_file(yaml.safe_dump(data, allow_unicode=True))
    ran = steps(cli, path)
    assert ran["attn.out"] == ran["attn.h0.out"] and ran["cross.out"] == ran["cross.h0.out"]   # one head
    pieces = nn.ModuleList([nn.Linear(4, 4, bias=False) for _ in range(6)]        # W_Q, W_K, W_V, cross.W_Q/K/V
                           + [nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False)]   # W_1 (d_ff 4), W_2
                           + [nn.LayerNorm(4, bias=False) for _ in range(3)])
    layer = nn.TransformerDecoderLayer(4, 1, 4, bias=False)
    got = total(cli, path)
    assert got["total"] == numel(pieces) == numel(layer) - 2 * 16 == 140
    assert not {"W_O", "cross.W_O"} & set(got["params"])


def test_a_model_without_output_projection_counts_no_w_o(cli, spec_file):
    path = spec_file(gpt_spec({}, out_proj=False))
    ran = steps(cli, path)
    assert ran["layer0.attn.out"] == ran["layer0.attn.concat"]
    wte, wpe = nn.Embedding(5, 4), nn.Embedding(2, 4)
    got = total(cli, path)
    assert got["total"] == numel(wte, wpe, *[block_modules(4, 8, set(), "QKV")] * 2, nn.LayerNorm(4, bias=False)) \
        == 20 + 8 + 2 * 120 + 4
    assert got["per_block"] == 120 and got["out_proj"] is False
    assert "2 blocks, no W_O" in cli("params", path).out


def test_an_encoder_decoder_without_output_projections_counts_no_w_o(cli, spec_file):
    """tiny-translate with `block.out_proj: false`: its encoder and decoder layers as torch pieces
    (nn.MultiheadAttention always has its out_proj): 32 + 120 + 172 + 8 = 332, not 380."""
    data = yaml.safe_load(translate_spec())
    data["block"]["out_proj"] = False
    path = spec_file(yaml.safe_dump(data, allow_unicode=True))
    ran = steps(cli, path)
    assert ran["layer0.attn.out"] == ran["layer0.attn.concat"]
    assert ran["layer0.cross.out"] == ran["layer0.cross.concat"]

    def layer(attentions: int, norms: int) -> nn.ModuleList:
        return nn.ModuleList([nn.Linear(4, 4, bias=False) for _ in range(3 * attentions)]
                             + [nn.Linear(4, 8, bias=False), nn.Linear(8, 4, bias=False)]
                             + [nn.LayerNorm(4, bias=False) for _ in range(norms)])
    encoder, decoder = layer(1, 2), layer(2, 3)
    assert numel(encoder) == numel(transformer().encoder.layers) - 16    # the self-attention's W_O
    final_norms, tgt = [nn.LayerNorm(4, bias=False) for _ in range(2)], nn.Embedding(8, 4)
    got = total(cli, path)
    assert got["total"] == numel(encoder, decoder, *final_norms, tgt) == 332
    assert got["per_encoder_layer"] == numel(encoder) and got["per_decoder_layer"] == numel(decoder)
    out = cli("params", path).out
    assert "1 encoder layer, no W_O" in out and "1 decoder layer, no W_O" in out


def test_an_encoder_decoder_without_final_norm_names_the_encoders_alone(cli, spec_file):
    """tiny-translate with `model.final_norm: false`: the decoder stack has no final norm (the
    forward's norm_final is the encoder's alone), so the row counts and names the encoder's."""
    path = spec_file(translate_spec(final_norm=False))
    names = steps(cli, path)
    assert "enc.norm_final" in names and not [n for n in names if "norm_final" in n and not n.startswith("enc.")]
    got = total(cli, path)
    assert got["total"] == numel(transformer(decoder_norm=False), nn.Embedding(8, 4)) == 376
    assert got["final_norms"] == 4 and got["decoder_norm"] is False
    out = cli("params", path).out
    assert "encoder final norm" in out and "2 final norms" not in out and "decoder)" not in out
    assert "2 final norms" in cli("params", spec_file(translate_spec(), "both.yaml")).out


@pytest.mark.parametrize("example", ["tiny-bert", "tiny-gpt", "tiny-llama"])
def test_a_models_block_row_names_the_command_that_counts_that_block(example, capsys):
    """`1 · 136 (symblock params …)`: the command in the row, run, counts the same block (it said only
    --d-model 4, which counts 244 for tiny-bert's 136)."""
    import re
    from symblock.cli import main
    assert main(["params", example]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if re.match(r"\d+ blocks? ", line))
    per_block, command = re.search(r"· ([\d,]+) \(symblock params ([^)]*)\)", row).groups()
    assert main(["params", *command.split(), "--json"]) == 0
    import json
    assert json.loads(capsys.readouterr().out)["total"] == int(per_block.replace(",", ""))
    assert not row.startswith("1 blocks")
