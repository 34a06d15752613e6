"""`symblock derive` on a model (an encoder–decoder, an encoder, a GPT): the derived closed forms,
with the spec's weights and made-up inputs substituted for their symbols, against NumPy float64
written here (never the engine's own numbers)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy

from symblock.calculus.derive_model import derive_model
from symblock.cli import main
from symblock.engine import model_spec

RNG = np.random.default_rng(7)


def translation(pad=None, **model):
    m = {"kind": "encoder-decoder", "vocab": ["<s>", "a", "b", "c"], "positions": "sinusoidal", "pe_base": 100,
         "source": ["a", "b", "c"] if pad else ["b", "c"], "encoder_layers": 1, "decoder_layers": 1,
         "prompt": ["<s>", "a"], "head": "tied", **({"source_padding_mask": pad} if pad else {}), **model}
    return model_spec.from_mapping({"model": m, "dims": {"d_model": 2, "d_ff": 2, "heads": 1},
                                    "block": {"norm_position": "post", "eps": "1/10", "bias": True},
                                    "weights": {"ln_encoder": {"gamma": [2, "1/2"], "beta": [1, -1]}},
                                    "random": {"seed": 5}}, "translate.yaml")


def floats(m) -> np.ndarray:
    return np.array([[float(e) for e in r] for r in sympy.Matrix(m).tolist()])


def named(base: str, a: np.ndarray) -> dict[str, float]:
    """Symbol names of a matrix's entries (`w^{K,c}_{12}`) or, for one row, a bias's (`b^{K,c}_{2}`)."""
    if base.startswith("b^"):
        return {f"{base}_{{{j + 1}}}": float(v) for j, v in enumerate(a.ravel())}
    return {f"{base}_{{{i + 1}{j + 1}}}": float(a[i, j]) for i in range(a.shape[0]) for j in range(a.shape[1])}


def value(entries, values: dict[str, float]) -> np.ndarray:
    """The derived entries with every symbol replaced by its number (each one must be known)."""
    out = np.empty((len(entries), len(entries[0])))
    for i, row in enumerate(entries):
        for j, e in enumerate(row):
            e = sympy.sympify(e)
            out[i, j] = float(e.subs({s: values[s.name] for s in e.free_symbols}))
    return out


def layernorm(x, gamma, beta, eps):
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps) * gamma + beta


def softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def derived():
    spec = translation()
    return spec, derive_model(spec)


def test_the_prompt_pass_in_forward_order_with_both_stacks(derived):
    _, d = derived
    names = list(d)
    for want in ("enc.embed", "enc.pos", "enc.x", "enc.layer0.attn.q", "enc.layer0.output", "enc.norm_final",
                 "embed", "pos", "x", "layer0.attn.q", "layer0.cross.q", "layer0.cross.k", "layer0.norm3",
                 "layer0.output", "norm_final", "logits", "probs"):
        assert want in names, want
    assert names.index("enc.norm_final") < names.index("embed") < names.index("layer0.cross.k") < names.index("logits")
    assert not any(n.startswith("gen") or n.endswith("next_token") or n in ("x.x", "layer0.x") for n in names)
    assert d["layer0.cross.k"].over == r"H^{\mathrm{enc}}" and d["layer0.cross.q"].over == "H_1"


def test_embeddings_and_sinusoidal_positions_against_numpy(derived):
    spec, d = derived
    w_e = floats(spec.W_E)
    vals = named("w^{E}", w_e)
    assert np.allclose(value(d["enc.embed"].entries, vals), w_e[list(spec.source_tokens)], atol=1e-12)
    assert np.allclose(value(d["embed"].entries, vals), w_e[list(spec.prompt)], atol=1e-12)
    p, i = np.arange(2)[:, None], np.arange(2)[None, :] // 2
    angle = p / 100.0 ** (2 * i / 2)
    want = np.where(np.arange(2) % 2 == 0, np.sin(angle), np.cos(angle))
    assert np.allclose(value(d["enc.pos"].entries, {}), want, atol=1e-12)
    e, pe = RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2))
    assert np.allclose(value(d["x"].entries, {**named("e", e), **named("p", pe)}), e + pe, atol=1e-12)


def test_the_cross_attention_reads_the_memory_with_its_own_weights(derived):
    spec, d = derived
    params = {k: floats(v) for k, v in spec.layers[0].params.items()}
    m = RNG.normal(size=(2, 2))   # any memory: the formula is general
    vals = {**named(r"h^{\mathrm{enc}}", m), **named("w^{K,c}", params["cross.W_K"]), **named("b^{K,c}", params["cross.b_K"])}
    assert np.allclose(value(d["layer0.cross.k"].entries, vals), m @ params["cross.W_K"] + params["cross.b_K"],
                       atol=1e-12)
    s = RNG.normal(size=(2, 2))   # scaled scores: softmax over every memory row, no causal mask
    assert np.allclose(value(d["layer0.cross.h0.weights"].entries, named("s'^{c}", s)), softmax(s), atol=1e-12)
    self_w = d["layer0.attn.h0.weights"].entries   # the decoder's self-attention is causal
    assert self_w[0][1] == 0 and self_w[0][0] == 1
    assert d["enc.layer0.attn.h0.weights"].entries[0][1] != 0   # the encoder's is not


def test_the_encoder_norm_is_the_memory_and_the_head_is_tied(derived):
    spec, d = derived
    h = RNG.normal(size=(2, 2))
    g, b = floats(spec.encoder_norm["gamma"]), floats(spec.encoder_norm["beta"])
    assert np.allclose(value(d["enc.norm_final"].entries, named("y", h)), layernorm(h, g, b, 0.1), atol=1e-12)
    n = RNG.normal(size=(2, 2))
    w_e = floats(spec.W_E)
    got = value(d["logits"].entries, {**named("n^{(f)}", n), **named("w^{E}", w_e)})
    assert got.shape == (2, 4) and np.allclose(got, n @ w_e.T, atol=1e-12)
    ell = RNG.normal(size=(2, 4))
    assert np.allclose(value(d["probs"].entries, named(r"\ell", ell)), softmax(ell), atol=1e-12)


def test_a_padded_memory_row_gets_no_weight():
    d = derive_model(translation(pad=[False, False, True]), only="layer0.cross.h0.weights")
    s = RNG.normal(size=(2, 3))
    got = value(d["layer0.cross.h0.weights"].entries, named("m^{c}", s))
    assert np.allclose(got, np.hstack([softmax(s[:, :2]), np.zeros((2, 1))]), atol=1e-12)


def test_an_encoder_with_the_embeddings_norm_and_a_gpt():
    bert = model_spec.from_mapping({
        "model": {"kind": "encoder", "vocab": ["p", "a", "b"], "positions": "learned", "layers": 1,
                  "embed_norm": True, "prompt": ["a", "b"], "key_padding_mask": [False, True]},
        "dims": {"d_model": 2, "d_ff": 2, "heads": 1}, "block": {"eps": "1/10"}, "random": {"seed": 2}}, "bert.yaml")
    d = derive_model(bert)
    assert "norm_embed" in d and "logits" not in d and list(d)[-1] == "layer0.output"
    x = RNG.normal(size=(2, 2))
    g, b = floats(bert.embed_norm["gamma"]), floats(bert.embed_norm["beta"])
    assert np.allclose(value(d["norm_embed"].entries, named("x", x)), layernorm(x, g, b, 0.1), atol=1e-12)
    w_p = floats(bert.W_P)
    assert np.allclose(value(d["pos"].entries, named("w^{P}", w_p)), w_p[:2], atol=1e-12)
    assert d["layer0.attn.h0.weights"].entries[0][1] == 0   # key 1 is padding (not a causal mask: row 1 too)
    assert d["layer0.attn.h0.weights"].entries[1][1] == 0


def test_derive_command_on_models(tmp_path, capsys):
    assert main(["derive", "tiny-gpt", "--step", "layer0.attn.q"]) == 0
    out = capsys.readouterr().out
    assert "layer0.attn.q" in out and "w^{Q}_{11}" in out
    assert main(["derive", "tiny-translate", "--step", "layer0.cross.v", "--format", "latex"]) == 0
    out = capsys.readouterr().out   # the 3-token memory's rows, the cross-attention's own weights
    assert r"% layer0.cross.v (in the entries of H^{\mathrm{enc}})" in out and r"h^{\mathrm{enc}}_{31} w^{V,c}_{14}" in out
    path = tmp_path / "t.yaml"
    path.write_text(json.dumps({"model": {"kind": "encoder-decoder", "vocab": ["<s>", "a", "b"],
                                          "source": ["a", "b"], "prompt": ["<s>"], "generate": 1},
                                "dims": {"d_model": 2, "d_ff": 2, "heads": 1}, "block": {"eps": "1/10"},
                                "random": {"seed": 4}}))
    assert main(["derive", str(path)]) == 0
    out = capsys.readouterr().out
    for step in ("■ enc.layer0.attn.h0.weights", "■ enc.norm_final", "■ layer0.cross.k", "■ layer0.cross.h0.out",
                 "■ probs"):
        assert step in out, step
    assert "gen1" not in out and "a generation step works the same formulas" in out


def test_a_model_too_wide_for_symbols_names_its_tokens(tmp_path, capsys):
    path = tmp_path / "wide.yaml"
    path.write_text(json.dumps({"model": {"kind": "encoder-decoder", "vocab": ["<s>", "a", "b"],
                                          "source": ["a", "b"] * 4 + ["a"], "prompt": ["<s>"]},
                                "dims": {"d_model": 2, "d_ff": 2, "heads": 1}, "random": {"seed": 4}}))
    assert main(["derive", str(path)]) == 2
    err = capsys.readouterr().err
    assert "model.source" in err and "9 rows of d_model 2" in err
