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


def greedy(s, steps: int):
    """The translation loop: embed, run nn.Transformer on the whole target prefix, tied head,
    argmax of the last row; returns (memory, the last pass's output, the tokens)."""
    tr, W_E, W_P = nn_transformer(s), torch.tensor(np.array(s.W_E.tolist(), dtype=float)), \
        torch.tensor(np.array(s.W_P.tolist(), dtype=float))
    src = (W_E[list(s.source_tokens)] + W_P[:len(s.source_tokens)])[None]
    tokens = list(s.prompt)
    with torch.enable_grad():
        memory = tr.encoder(src).detach()[0]
        for _ in range(steps + 1):
            tgt = (W_E[tokens] + W_P[:len(tokens)])[None]
            mask = torch.nn.Transformer.generate_square_subsequent_mask(len(tokens), dtype=torch.float64)
            out = tr(src, tgt, tgt_mask=mask).detach()[0]
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
    ({"key_padding_mask": [False] * 4}, "model.key_padding_mask", "not built for an encoder-decoder yet"),
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
