"""Weights for a part the spec's block or model does not have are refused naming the field and what
has that part (a cross-attention's weights and third norm without cross-attention, a block's or a
model's final norms without their option, another kind's stacks), as a memory without cross-attention is; the
built-in examples, which give every part they have, still load."""
from __future__ import annotations

import pytest

from symblock.engine import model_spec, spec
from symblock.engine.spec import read_spec
from symblock.errors import SpecError

I2 = [[1, 0], [0, 1]]
PLAIN = {"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
         "block": {"norm_position": "post", "norm": "layernorm", "eps": 0, "activation": "relu"},
         "weights": {k: I2 for k in ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")},
         "inputs": {"X": [[1, 0], [0, 1]]}}
LN3 = {"gamma": [2, 1], "beta": [0, "1/2"]}
CROSS = {k: I2 for k in ("W_Q", "W_K", "W_V", "W_O")}


@pytest.mark.parametrize("extra, field", [({"ln3": LN3}, "weights.ln3"), ({"cross": CROSS}, "weights.cross"),
                                          ({"cross": {"b_Q": [1, 0]}}, "weights.cross")])
def test_a_block_without_cross_attention_refuses_its_weights(extra, field):
    data = {**PLAIN, "weights": {**PLAIN["weights"], **extra}}
    with pytest.raises(SpecError) as e:
        spec.from_mapping(data, "dec.yaml")
    assert e.value.where == field and e.value.source == "dec.yaml"
    assert "only a decoder layer with block.cross_attention: true has" in e.value.message
    assert f"or leave {field} out" in e.value.message
    on = {**data, "block": {**data["block"], "cross_attention": True},   # the same weights, with the flag: read
          "inputs": {**data["inputs"], "memory": [[1, 1], [2, 0], [0, 3]]}, "random": {"seed": 1}}
    assert spec.from_mapping(on).options.cross_attention


@pytest.mark.parametrize("block", [{"norm_position": "pre", "final_norm": False}, {"norm_position": "pre"},
                                   {"norm_position": "post"}])
def test_a_block_without_a_final_norm_refuses_its_weights_as_a_model_does(block):
    data = {**PLAIN, "block": {**PLAIN["block"], **block},
            "weights": {**PLAIN["weights"], "ln_final": {"gamma": [2, 1], "beta": [0, 1]}}}
    with pytest.raises(SpecError) as e:
        spec.from_mapping(data, "pre.yaml")
    assert e.value.where == "weights.ln_final" and e.value.message == (
        "not used: only a Pre-LN block with block.final_norm: true has a final norm; set it, or leave "
        "weights.ln_final out")
    on = {**data, "block": {**data["block"], "norm_position": "pre", "final_norm": True}}   # with it: read
    assert spec.from_mapping(on).params["ln_final.gamma"][0, 0] == 2
    data["weights"]["ln_final"] = None       # null, as a model takes it: no weights given
    assert not spec.from_mapping(data).options.final_norm


def test_the_cli_says_so_with_exit_2_and_no_traceback(cli, spec_file):
    path = spec_file("dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}\nrandom: {seed: 1}\n"
                     "weights:\n  ln3: {gamma: [2, 1], beta: [0, \"1/2\"]}\n", "ln3.yaml")
    code, out, err = cli("forward", path)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip() == (f"symblock: error: {path}: weights.ln3: only a decoder layer with "
                           "block.cross_attention: true has a third norm (its ln2 is the cross-attention's, "
                           "ln3 the FFN's); set block.cross_attention: true, or leave weights.ln3 out")


def model(name: str, weights: dict, **m) -> model_spec.ModelSpec:
    data, _ = read_spec(name)
    data = {**data, "model": {**data["model"], **m}, "weights": {**(data.get("weights") or {}), **weights}}
    return model_spec.from_mapping(data, f"{name}.yaml")


@pytest.mark.parametrize("name, weights, m, field, says", [
    ("tiny-gpt", {"layers": [{}, {"ln3": LN3}]}, {}, "weights.layers[1].ln3",
     "a GPT's layers have no cross-attention, so no third norm (ln3); leave it out"),
    ("tiny-gpt", {"layers": [{"cross": CROSS}]}, {}, "weights.layers[0].cross",
     "a GPT's layers have no cross-attention, so no cross-attention weights"),
    ("tiny-bert", {"layers": [{"cross": CROSS}]}, {}, "weights.layers[0].cross", "an encoder's layers have no"),
    ("tiny-translate", {"encoder_layers": [{"ln3": LN3}]}, {}, "weights.encoder_layers[0].ln3",
     "the encoder's layers have no cross-attention, so no third norm (ln3); give it in weights.decoder_layers"),
    ("tiny-gpt", {"layers": [{"ln_final": {"gamma": [1] * 4}}]}, {}, "weights.layers[0].ln_final",
     "a model's final norm is weights.ln_final"),
    ("tiny-gpt", {"ln_final": {"gamma": [1] * 4}}, {"final_norm": False}, "weights.ln_final",
     "not used: set model.final_norm: true"),
    ("tiny-bert", {"ln_final": {"gamma": [1] * 4}}, {}, "weights.ln_final", "not used: set model.final_norm: true"),
    ("tiny-gpt", {"ln_encoder": {"gamma": [1] * 4}}, {}, "weights.ln_encoder",
     "only an encoder-decoder's encoder has a final norm of its own"),
    ("tiny-gpt", {"decoder_layers": [{}]}, {}, "weights.decoder_layers", "use weights.layers"),
    ("tiny-translate", {"layers": [{}]}, {}, "weights.layers",
     "an encoder-decoder's per-layer weights are weights.encoder_layers and weights.decoder_layers"),
])
def test_a_model_refuses_weights_of_a_part_it_does_not_have(name, weights, m, field, says):
    with pytest.raises(SpecError) as e:
        model(name, weights, **m)
    assert e.value.where == field and says in e.value.message, e.value


def test_where_the_part_exists_the_same_weights_are_read():
    s = model("tiny-translate", {"decoder_layers": [{"ln3": {"gamma": [2, 1, 1, 1]}, "cross": {"W_Q": [[1] * 4] * 4}}],
                                 "ln_encoder": {"gamma": [3, 1, 1, 1]}})
    assert s.layers[0].params["ln3.gamma"][0, 0] == 2 and s.layers[0].params["cross.W_Q"][1, 2] == 1
    assert s.encoder_norm["gamma"][0, 0] == 3


@pytest.mark.parametrize("name", spec.example_names())
def test_every_built_in_example_still_loads(name):
    import symblock
    assert symblock.load(name).blocks


@pytest.mark.parametrize("example", ["tiny-gpt", "tiny-bert", "tiny-translate"])
def test_a_models_block_refuses_the_cross_attention_the_model_kind_sets(example):
    """Not a missing memory: cross-attention belongs to an encoder-decoder's decoder layers."""
    data, source = read_spec(example)
    data = {**data, "block": {**data["block"], "cross_attention": True}}
    with pytest.raises(SpecError) as e:
        model_spec.from_mapping(data, source)
    assert e.value.where == "block.cross_attention" and "model.kind is encoder-decoder" in e.value.message
