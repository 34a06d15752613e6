"""`symblock import` of a malformed model file: one line naming the file and the field or what was
expected, exit 2, no traceback, and nothing written (no half-written or unloadable spec). Each model
is built from a config (nothing downloaded), saved, then damaged in one way."""
from __future__ import annotations

import json

import pytest
import safetensors.torch as safetensors_torch
import torch
import transformers

CONFIG = dict(n_layer=1, n_embd=8, n_head=2, vocab_size=11, n_positions=16)


@pytest.fixture
def gpt2_folder(tmp_path, capsys):
    """`gpt2_folder(**config)`: a GPT-2 save_pretrained folder of the tiny CONFIG (overridden)."""
    def save(name: str = "gpt2", **overrides):
        cfg = transformers.GPT2Config(**{**CONFIG, **overrides})
        torch.manual_seed(0)
        folder = tmp_path / name
        transformers.GPT2LMHeadModel(cfg).save_pretrained(folder)
        capsys.readouterr()   # the save's progress bar is not the command's output
        return folder
    return save


def edit_config(folder, **changes):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def edit_weights(folder, **changes):
    file = folder / "model.safetensors"
    state = safetensors_torch.load_file(str(file))
    state.update({k.replace("__", "."): v for k, v in changes.items()})
    safetensors_torch.save_file(state, str(file), metadata={"format": "pt"})


def nanogpt_checkpoint(path, model_args: dict, **state_changes):
    """A nanoGPT ckpt.pt: the tiny GPT-2's weights in nanoGPT's layout (nn.Linear, out × in)."""
    torch.manual_seed(0)
    state = transformers.GPT2LMHeadModel(transformers.GPT2Config(**CONFIG)).state_dict()
    conv1d = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
    state = {k: (v.T.contiguous() if k.endswith(conv1d) else v) for k, v in state.items()
             if not k.endswith((".attn.bias", ".attn.masked_bias"))}
    state.update({k.replace("__", "."): v for k, v in state_changes.items()})
    torch.save({"model": state, "model_args": model_args, "iter_num": 0}, path)
    return path


NANO_ARGS = {"n_layer": 1, "n_head": 2, "n_embd": 8, "block_size": 16, "bias": True, "vocab_size": 11}


def refused(ran, tmp_path, *words):
    """Exit 2 with one line naming each of `words`, no traceback, and no spec (or temporary) written."""
    err = ran.err.strip()
    assert ran.code == 2, ran.err
    assert "Traceback" not in err and "internal error" not in err
    assert err.count("\n") == 0, err
    for w in words:
        assert w in err, (w, err)
    assert not list(tmp_path.glob("*.yaml")) and not list(tmp_path.glob(".symblock-*"))
    return err


def test_a_good_folder_and_checkpoint_still_import(gpt2_folder, tmp_path, cli):
    assert cli("import", gpt2_folder(), "--tokens", "1,5", "--out", tmp_path / "a.yaml").code == 0
    nanogpt_checkpoint(tmp_path / "ckpt.pt", NANO_ARGS)
    assert cli("import", tmp_path / "ckpt.pt", "--tokens", "1,5", "--out", tmp_path / "b.yaml").code == 0
    assert cli("forward", tmp_path / "b.yaml").code == 0


@pytest.mark.parametrize("name, said", [("my-gpt2", "my-gpt2': no such file or folder; expected a Hugging Face"),
                                        ("spec.yaml", "spec.yaml': a file, not a .pt checkpoint; expected a Hugging Face")])
def test_a_model_path_that_is_none_says_which(tmp_path, cli, name, said):
    """The path is quoted whole (its name was cut off past 40 characters), and said to be missing or a
    file of another kind (a typo of the folder's name read as if it were a folder of the wrong kind)."""
    if name.endswith(".yaml"):
        (tmp_path / name).write_text("dims: {}\n")
    err = refused(cli("import", tmp_path / name, "--tokens", "1", "--out", tmp_path / "o.yml"), tmp_path / "o", said)
    assert err.startswith(f"symblock: error: '{tmp_path / name}")


def test_a_truncated_safetensors_file(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:len(data) // 2])
    err = refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
                  str(weights), "safetensors")
    assert "SafetensorError" not in err


def test_a_safetensors_file_that_is_not_one(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    (folder / "model.safetensors").write_bytes(b"not a safetensors file at all")
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "model.safetensors"))


def test_a_config_json_that_is_not_a_mapping(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    (folder / "config.json").write_text("[1, 2]")
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "config.json"), "expected a JSON object")


def test_a_nanogpt_checkpoint_with_empty_model_args(tmp_path, cli):
    ckpt = nanogpt_checkpoint(tmp_path / "ckpt.pt", {})
    refused(cli("import", ckpt, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(ckpt), "model_args.n_embd", "missing")


@pytest.mark.parametrize("value", ["8", 8.5, True, 0, -8, None])
def test_a_nanogpt_checkpoint_with_a_bad_n_embd(tmp_path, cli, value):
    ckpt = nanogpt_checkpoint(tmp_path / "ckpt.pt", {**NANO_ARGS, "n_embd": value})
    refused(cli("import", ckpt, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(ckpt), "model_args.n_embd", "whole number")


def test_a_nanogpt_checkpoint_whose_weights_are_not_tensors(tmp_path, cli):
    ckpt = nanogpt_checkpoint(tmp_path / "ckpt.pt", NANO_ARGS, transformer__ln_f__weight="ones")
    refused(cli("import", ckpt, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(ckpt), "model.transformer.ln_f.weight", "expected a tensor")


def test_a_c_attn_weight_of_the_wrong_shape(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    edit_weights(folder, transformer__h__0__attn__c_attn__weight=torch.zeros(8, 20))
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "model.safetensors"), "transformer.h.0.attn.c_attn.weight", "8×20", "8×24")


def test_a_nanogpt_c_attn_weight_of_the_wrong_shape(tmp_path, cli):
    ckpt = nanogpt_checkpoint(tmp_path / "ckpt.pt", NANO_ARGS,
                              transformer__h__0__attn__c_attn__weight=torch.zeros(8, 8))
    refused(cli("import", ckpt, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(ckpt), "model.transformer.h.0.attn.c_attn.weight", "24×8")


def test_a_missing_weight(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    file = folder / "model.safetensors"
    state = safetensors_torch.load_file(str(file))
    del state["transformer.h.0.mlp.c_fc.weight"]
    safetensors_torch.save_file(state, str(file), metadata={"format": "pt"})
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(file), "transformer.h.0.mlp.c_fc.weight", "missing")


def test_a_weight_that_is_not_finite(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    edit_weights(folder, transformer__ln_f__bias=torch.full((8,), float("nan")))
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "model.safetensors"), "transformer.ln_f.bias", "finite")


def test_n_layer_beyond_the_layers_in_the_weights(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    edit_config(folder, n_layer=3)
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "config.json"), "n_layer", "3", "1 layer")


def test_n_embd_that_does_not_match_the_weights(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    edit_config(folder, n_embd=4)
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "config.json"), "n_embd", "4", "11×8")


def test_n_head_that_does_not_divide_n_embd(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder()
    edit_config(folder, n_head=3)
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "config.json"), "n_head", "divide")


def test_scale_attn_by_inverse_layer_idx_is_refused_naming_the_file(gpt2_folder, tmp_path, cli):
    folder = gpt2_folder(scale_attn_by_inverse_layer_idx=True)
    refused(cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "config.json"), "scale_attn_by_inverse_layer_idx", "layer")


@pytest.mark.parametrize("kind", ["folder", "ckpt"])
def test_a_token_outside_the_vocabulary(gpt2_folder, tmp_path, cli, kind):
    if kind == "folder":
        model, file = gpt2_folder(), "model.safetensors"
    else:
        model = file = nanogpt_checkpoint(tmp_path / "ckpt.pt", NANO_ARGS)
    err = refused(cli("import", model, "--tokens", "1,12", "--out", tmp_path / "x.yaml"), tmp_path,
                  str(file), "--tokens", "12", "11 tokens")
    assert "gpt2:" not in err and "nanogpt:" not in err


def test_a_spec_that_would_not_load_is_never_written(gpt2_folder, tmp_path, cli, monkeypatch):
    """A reader that lets a malformed model through is symblock's bug (exit 3), and writes nothing."""
    from symblock.reference import checkpoint
    folder = gpt2_folder()
    real = checkpoint.read

    def unloadable(*a, **k):
        spec = real(*a, **k)
        spec["weights"]["layers"][0]["W_Q"] = [["1"]]
        return spec
    monkeypatch.setattr(checkpoint, "read", unloadable)
    ran = cli("import", folder, "--tokens", "1", "--out", tmp_path / "x.yaml")
    assert ran.code == 3 and "does not load" in ran.err and "W_Q" in ran.err
    assert not list(tmp_path.glob("*.yaml")) and not list(tmp_path.glob(".symblock-*"))


# ---------------------------------------------------------------- Llama and BERT folders

@pytest.fixture
def hf_folder(tmp_path, capsys):
    """`hf_folder("llama" | "bert")`: a tiny save_pretrained folder of that kind (d 4, 2 heads, vocab 8)."""
    def save(kind: str):
        torch.manual_seed(0)
        sizes = dict(vocab_size=8, hidden_size=4, intermediate_size=6, num_hidden_layers=1, num_attention_heads=2,
                     max_position_embeddings=16)
        if kind == "llama":
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(num_key_value_heads=1, **sizes))
        else:
            model = transformers.BertModel(transformers.BertConfig(**sizes))
        folder = tmp_path / kind
        model.eval().save_pretrained(folder)
        capsys.readouterr()
        return folder
    return save


@pytest.mark.parametrize("kind, change, words", [
    ("llama", {"num_hidden_layers": 2}, ["num_hidden_layers", "2", "1 layer, model.layers.0"]),
    ("llama", {"hidden_size": 6}, ["hidden_size", "6 does not match", "8×4"]),
    ("llama", {"hidden_size": "x"}, ["hidden_size", "whole number", "'x'"]),
    ("llama", {"num_key_value_heads": 3}, ["num_key_value_heads", "do not divide the 2 query heads"]),
    ("llama", {"rms_norm_eps": "a"}, ["rms_norm_eps", "a number >= 0"]),
    ("llama", {"rope_parameters": {"rope_theta": 0, "rope_type": "default"}}, ["rope_parameters.rope_theta", "> 0"]),
    ("llama", {"intermediate_size": 5}, ["intermediate_size", "5 does not match", "6 wide"]),
    ("llama", {"vocab_size": 9}, ["vocab_size", "8 tokens"]),
    ("bert", {"num_hidden_layers": 2}, ["num_hidden_layers", "2", "1 layer, encoder.layer.0"]),
    ("bert", {"hidden_size": 6}, ["hidden_size", "6 does not match", "8×4"]),
    ("bert", {"num_attention_heads": 3}, ["num_attention_heads", "divide hidden_size 4"]),
    ("bert", {"layer_norm_eps": None, "hidden_act": "tanh"}, ["hidden_act", "'tanh'"]),
    ("bert", {"intermediate_size": 5}, ["intermediate_size", "6 wide"]),
    ("bert", {"max_position_embeddings": 1}, ["max_position_embeddings", "16 positions"]),
])
def test_a_llama_or_bert_config_that_disagrees_with_its_weights(hf_folder, tmp_path, cli, kind, change, words):
    """Each is refused by config.json and the field (it was an internal error, exit 3, before)."""
    folder = hf_folder(kind)
    edit_config(folder, **change)
    refused(cli("import", folder, "--tokens", "1,2", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "config.json"), *words)


def test_llama_heads_that_the_weights_do_not_have_name_the_weight(hf_folder, tmp_path, cli):
    """3 heads of head_dim 2 need a 4 × 6 W_Q (stored 6×4); the weights hold 4×4."""
    folder = hf_folder("llama")
    edit_config(folder, num_attention_heads=3, head_dim=2, num_key_value_heads=1)
    refused(cli("import", folder, "--tokens", "1,2", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "model.safetensors"), "model.layers.0.self_attn.q_proj.weight", "shape 4×4", "6×4",
            "3 heads over 1 K/V head of 2")


@pytest.mark.parametrize("kind, key, value, words", [
    ("llama", "model.layers.0.mlp.up_proj.weight", None, ["missing", "6×4"]),
    ("llama", "model.layers.0.self_attn.k_proj.weight", torch.zeros(4, 4), ["shape 4×4", "2×4"]),
    ("llama", "model.norm.weight", torch.full((4,), float("inf")), ["finite"]),
    ("bert", "encoder.layer.0.output.LayerNorm.bias", None, ["missing", "a 4 array"]),
    ("bert", "encoder.layer.0.attention.self.value.weight", torch.zeros(4, 3), ["shape 4×3", "4×4"]),
])
def test_a_llama_or_bert_weight_missing_misshapen_or_not_finite(hf_folder, tmp_path, cli, kind, key, value, words):
    folder = hf_folder(kind)
    file = folder / "model.safetensors"
    state = safetensors_torch.load_file(str(file))
    if value is None:
        del state[key]
    else:
        state[key] = value
    safetensors_torch.save_file(state, str(file), metadata={"format": "pt"})
    refused(cli("import", folder, "--tokens", "1,2", "--out", tmp_path / "x.yaml"), tmp_path, str(file), key, *words)


@pytest.mark.parametrize("kind", ["llama", "bert"])
def test_a_llama_or_bert_token_outside_the_vocabulary_names_the_weights(hf_folder, tmp_path, cli, kind):
    folder = hf_folder(kind)
    refused(cli("import", folder, "--tokens", "1,9", "--out", tmp_path / "x.yaml"), tmp_path,
            str(folder / "model.safetensors"), "--tokens", "9", "8 tokens")
    ran = cli("import", folder, "--tokens", "1,2", "--out", tmp_path / "ok.yaml")
    assert ran.code == 0 and "(1 layer," in ran.out
