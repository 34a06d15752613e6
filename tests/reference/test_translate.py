"""An encoder-decoder (model.kind: encoder-decoder, engine/translate.py) against torch's own
`nn.Transformer`, built here from a state dict, in a greedy translation loop written here: its
memory, every pass's output and logits, and the greedy tokens, to 1e-9, both norm orders; the
built-in tiny-translate; the spec's refusals."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from symblock.engine import model
from symblock.engine.model_spec import from_mapping
from symblock.engine.spec import read_spec
from symblock.errors import SpecError
from symblock.reference import verify

VOCAB = ["<s>", "</s>", "a", "b", "c", "x", "y", "z"]


def translation(norm_position="post", seed=5, **model_keys):
    return from_mapping({
        "model": {"kind": "encoder-decoder", "vocab": VOCAB, "positions": "learned", "source": ["a", "b", "c", "a"],
                  "encoder_layers": 2, "decoder_layers": 2, "prompt": ["<s>"], "generate": 2, **model_keys},
        "dims": {"d_model": 4, "d_ff": 6, "heads": 2},
        "block": {"norm_position": norm_position, "eps": "1e-5", "bias": True, "activation": "gelu"},
        "random": {"seed": seed}}, "tr.yaml")


def t(m, transpose=False):
    a = torch.tensor(np.array(m.tolist(), dtype=float))
    return a.T.contiguous() if transpose else a[0]


def attention_state(p, pre, mod):
    return {f"{mod}.in_proj_weight": torch.cat([t(p[f"{pre}W_{x}"], True) for x in "QKV"]),
            f"{mod}.in_proj_bias": torch.cat([t(p[f"{pre}b_{x}"]) for x in "QKV"]),
            f"{mod}.out_proj.weight": t(p[f"{pre}W_O"], True), f"{mod}.out_proj.bias": t(p[f"{pre}b_O"])}


def nn_transformer(s) -> torch.nn.Transformer:
    d = s.dims
    with warnings.catch_warnings():  # torch notes that nested tensors are off for norm_first
        warnings.simplefilter("ignore")
        tr = torch.nn.Transformer(d.d_model, d.heads, len(s.encoder), len(s.layers), d.d_ff, dropout=0.0,
                                  activation="gelu", layer_norm_eps=1e-5, batch_first=True,
                                  norm_first=s.options.norm_position == "pre", dtype=torch.float64).eval()
    state = {}
    for stack, layers, norms in (("encoder", s.encoder, (1, 2)), ("decoder", s.layers, (1, 2, 3))):
        for i, layer in enumerate(layers):
            p, pre = layer.params, f"{stack}.layers.{i}."
            state.update({pre + k: v for k, v in attention_state(p, "", "self_attn").items()})
            if stack == "decoder":
                state.update({pre + k: v for k, v in attention_state(p, "cross.", "multihead_attn").items()})
            for k in (1, 2):
                state[f"{pre}linear{k}.weight"], state[f"{pre}linear{k}.bias"] = t(p[f"W_{k}"], True), t(p[f"b_{k}"])
            for k in norms:
                state[f"{pre}norm{k}.weight"], state[f"{pre}norm{k}.bias"] = t(p[f"ln{k}.gamma"]), t(p[f"ln{k}.beta"])
    for stack, table in (("encoder", s.encoder_norm), ("decoder", s.final_norm)):
        state[f"{stack}.norm.weight"], state[f"{stack}.norm.bias"] = t(table["gamma"]), t(table["beta"])
    tr.load_state_dict(state)
    return tr


def greedy(s, steps: int, pad=None):
    """The translation loop: embed, run nn.Transformer on the whole target prefix, tied head,
    argmax of the last row; returns (memory, the last pass's output, the tokens). `pad`: the
    source's padding (True = padded), as both src_key_padding_mask and memory_key_padding_mask."""
    pad = None if pad is None else torch.tensor([pad])
    tr, W_E, W_P = nn_transformer(s), torch.tensor(np.array(s.W_E.tolist(), dtype=float)), \
        torch.tensor(np.array(s.W_P.tolist(), dtype=float))
    src = (W_E[list(s.source_tokens)] + W_P[:len(s.source_tokens)])[None]
    tokens = list(s.prompt)
    with torch.enable_grad():
        memory = tr.encoder(src, src_key_padding_mask=pad).detach()[0]
        for _ in range(steps + 1):
            tgt = (W_E[tokens] + W_P[:len(tokens)])[None]
            mask = torch.nn.Transformer.generate_square_subsequent_mask(len(tokens), dtype=torch.float64)
            out = tr(src, tgt, tgt_mask=mask, src_key_padding_mask=pad, memory_key_padding_mask=pad).detach()[0]
            tokens.append(int(torch.argmax(out[-1] @ W_E.T)))
    return memory.numpy(), out.numpy(), tokens


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_matches_nn_transformer_in_a_greedy_loop(norm_position):
    s = translation(norm_position)
    trace = model.forward(s)
    memory, last, tokens = greedy(s, 2)
    assert np.abs(np.array(trace["enc.norm_final"].value.floats()) - memory).max() < 1e-9
    assert np.abs(np.array(trace["gen2.norm_final"].value.floats()) - last).max() < 1e-9
    ours = [int(float(trace[k].value.rows[0][0])) for k in ("next_token", "gen1.next_token", "gen2.next_token")]
    assert list(s.prompt) + ours == tokens
    r = verify.run(s, require_torch=True)
    assert r.ok and r.backends["torch"].available, r.problems


def test_the_memory_is_worked_once_and_every_pass_cross_attends_to_it():
    trace = model.forward(translation())
    names = trace.names()
    assert sum(n.endswith("norm_final.std") and n.startswith("enc.") for n in names) == 1
    for prefix in ("", "gen1.", "gen2."):
        for i in range(2):
            assert trace[f"{prefix}layer{i}.cross.k"].inputs[0] == "enc.norm_final"
            assert trace[f"{prefix}layer{i}.cross.q"].inputs[0] == f"{prefix}layer{i}.norm1"  # Post-LN: H1
    assert "enc.layer1.attn.h0.masked" not in trace  # the encoder is not causal
    assert "layer0.attn.h0.masked" in trace and "layer0.cross.h0.masked" not in trace


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_the_cache_is_proved_equal_to_the_full_recompute(norm_position):
    """Self-attention rows from the cache, the cross-attention's K and V worked once in the
    prompt pass and reused as they are: every cached step is the full recompute's expression."""
    s = translation(norm_position, kv_cache=True)
    verdicts = model.prove_cache(s)
    assert verdicts and {v for _, v in verdicts} == {"exact"}
    trace = model.forward(s)
    for t in (1, 2):
        assert trace[f"gen{t}.layer1.cross.k"].inputs == ("layer1.cross.k",)
        assert trace[f"gen{t}.layer1.cross.k"].value is trace["layer1.cross.k"].value  # the same object
        assert trace[f"gen{t}.x"].value.shape == (1, 4) and f"gen{t}.layer0.cache.v" in trace
    full = model.forward(translation(norm_position))
    assert [trace[k].value.floats() for k in ("next_token", "gen1.next_token", "gen2.next_token")] == \
        [full[k].value.floats() for k in ("next_token", "gen1.next_token", "gen2.next_token")]
    assert verify.run(s, require_torch=True).ok


def test_tiny_translate_reads_its_greedy_tokens_and_verifies():
    data, source = read_spec("tiny-translate")
    s = from_mapping(data, source)
    trace = model.forward(s)
    words = [s.vocab[int(float(trace[k].value.rows[0][0]))] for k in ("next_token", "gen1.next_token",
                                                                       "gen2.next_token")]
    assert words == ["I", "am", "</s>"] and len(s.vocab) <= 8 and len(s.source_tokens) == 3
    assert verify.run(s, require_torch=True).ok


@pytest.mark.parametrize("keys, where, what", [
    ({"layers": 2}, "model.layers", "model.encoder_layers and model.decoder_layers"),
    ({"key_padding_mask": [False] * 4}, "model.key_padding_mask", "is model.source_padding_mask"),
    ({"source_padding_mask": [False, True]}, "model.source_padding_mask",
     "expected 4 entries, one per model.source token, got 2 entries"),
    ({"source_padding_mask": [False, False, 1, 1]}, "model.source_padding_mask[2]",
     "expected true or false (true = a padded position), got 1"),
    ({"source_padding_mask": [True] * 4}, "model.source_padding_mask", "every source position is padding"),
    ({"head": "none"}, "model.head", "needs its head"),
    ({"source": ["a", "q"]}, "model.source[1]", "expected a token of model.vocab"),
])
def test_bad_translation_specs_name_the_field(keys, where, what):
    with pytest.raises(SpecError) as e:
        translation(**keys)
    assert e.value.where == where and what in e.value.message, e.value


def test_a_source_without_an_encoder_decoder_is_refused():
    data, source = read_spec("tiny-gpt")
    with pytest.raises(SpecError) as e:
        from_mapping({**data, "model": {**data["model"], "source": ["the"]}}, source)
    assert e.value.where == "model.source" and "encoder-decoder" in e.value.message


PAD = [False, False, True, True]   # the source a b | c a: its last two positions are padding


@pytest.mark.parametrize("norm_position, kv_cache", [("post", True), ("pre", False)])
def test_a_padded_source_matches_nn_transformer_with_both_padding_masks(norm_position, kv_cache):
    """model.source_padding_mask: torch's src_key_padding_mask in the encoder and
    memory_key_padding_mask in the decoder's cross-attention; memory, output and greedy tokens."""
    s = translation(norm_position, source_padding_mask=PAD, kv_cache=kv_cache)
    assert s.source_padding_mask == tuple(PAD)
    trace = model.forward(s)
    memory, last, tokens = greedy(s, 2, PAD)
    unpadded_memory, _, _ = greedy(s, 2)
    assert np.abs(memory - unpadded_memory).max() > 1e-3   # the mask matters for this seed
    assert np.abs(np.array(trace["enc.norm_final"].value.floats()) - memory).max() < 1e-9
    got = np.array(trace["gen2.norm_final"].value.floats())
    assert np.abs(got - (last[-1:] if kv_cache else last)).max() < 1e-9
    ours = [int(float(trace[k].value.rows[0][0])) for k in ("next_token", "gen1.next_token", "gen2.next_token")]
    assert list(s.prompt) + ours == tokens
    assert "enc.layer1.attn.h0.masked" in trace and "layer0.cross.h1.masked" in trace
    w = np.array(trace["layer0.cross.h0.weights"].value.floats())   # no weight on a padded memory row
    assert np.all(w[:, 2:] == 0) and np.allclose(w.sum(axis=1), 1)
    r = verify.run(s, require_torch=True)
    assert r.ok and r.backends["torch"].available and r.backends["numpy"].available, r.problems
    if kv_cache:
        assert {v for _, v in model.prove_cache(s)} == {"exact"}


def test_a_padded_source_token_cannot_change_the_translation():
    """A padded source position is never a key, in the encoder or in the cross-attention, so
    the token written there changes its own encoder row only: every decoder step is equal."""
    a = model.forward(translation(source_padding_mask=PAD))
    b = model.forward(translation(source_padding_mask=PAD, source=["a", "b", "x", "z"]))

    def diff(name, rows=slice(None)):
        return np.abs(np.array(a[name].value.floats())[rows] - np.array(b[name].value.floats())[rows]).max()
    assert diff("enc.norm_final", slice(0, 2)) < 1e-12 and diff("enc.norm_final", slice(2, 4)) > 1e-3
    for name in ("layer1.output", "logits", "gen2.logits", "gen2.next_token"):
        assert diff(name) < 1e-12, name


def test_the_numpy_path_is_told_the_source_padding():
    """verify's NumPy path reads the padding: the same spec's trace with the mask compared with
    the NumPy numbers of the unpadded spec disagrees (so the check is not vacuous)."""
    from symblock.reference import numeric_model
    padded, plain = translation(source_padding_mask=PAD), translation()
    want = numeric_model.forward(padded)
    trace = model.forward(padded)
    assert np.abs(np.array(trace["gen2.logits"].value.floats()) - want["gen2.logits"]).max() < 1e-9
    assert np.abs(numeric_model.forward(plain)["gen2.logits"] - want["gen2.logits"]).max() > 1e-3


def test_a_bad_source_padding_mask_exits_2_naming_the_field(tmp_path, capsys):
    import json
    from symblock import cli
    data, _ = read_spec("tiny-translate")
    data["model"]["source_padding_mask"] = [False, True]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert cli.main(["forward", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "model.source_padding_mask" in err and "expected 3 entries, one per model.source token, got 2 entries" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
