"""A decoder layer with cross-attention and an encoder-decoder's translation step, end to end:
`worksheet` writes their tasks (cross.* with their prose, the memory given), and `check` grades
answers computed independently (the decoder layer in NumPy written here; the translation by the
NumPy model path of reference/) full marks, and names a planted cross-attention slip."""
from __future__ import annotations

import json

import numpy as np
import pytest

from symblock import api
from symblock.reference import numeric_model


def fmt(v: float) -> str:
    return "-inf" if np.isneginf(v) else f"{v:.9f}"


def answers(steps: dict) -> str:
    lines = ["decimals: 9", "steps:"]
    for name, m in steps.items():
        rows = ", ".join("[" + ", ".join(fmt(v) for v in r) + "]" for r in np.atleast_2d(m))
        lines.append(f"  {name}: [{rows}]")
    return "\n".join(lines) + "\n"


def softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, g, b):   # the example's ε is 0
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True)) * g + b


def decoder_layer(P, X, M, pad):
    """torch's nn.TransformerDecoderLayer, Post-LN, one head of d_k 4, ReLU, as a person works it."""
    out = {}
    q, k, v = (X @ P[f"W_{c}"] for c in "QKV")
    s = q @ k.T / 2
    s[np.triu_indices(len(X), 1)] = -np.inf
    out.update({"attn.q": q, "attn.k": k, "attn.v": v, "attn.h0.scores": q @ k.T, "attn.h0.scaled": q @ k.T / 2,
                "attn.h0.masked": s, "attn.h0.weights": softmax(s)})
    out["attn.h0.out"] = out["attn.h0.weights"] @ v
    out["attn.out"] = out["attn.h0.out"] @ P["W_O"]
    out["resid1"] = X + out["attn.out"]
    h1 = out["norm1"] = layernorm(out["resid1"], P["ln1.gamma"], P["ln1.beta"])
    cq, ck, cv = h1 @ P["cross.W_Q"], M @ P["cross.W_K"], M @ P["cross.W_V"]
    c = cq @ ck.T / 2
    c[:, np.array(pad)] = -np.inf
    out.update({"cross.q": cq, "cross.k": ck, "cross.v": cv, "cross.h0.scores": cq @ ck.T,
                "cross.h0.scaled": cq @ ck.T / 2, "cross.h0.masked": c, "cross.h0.weights": softmax(c)})
    out["cross.h0.out"] = out["cross.h0.weights"] @ cv
    out["cross.out"] = out["cross.h0.out"] @ P["cross.W_O"]
    out["resid2"] = h1 + out["cross.out"]
    h2 = out["norm2"] = layernorm(out["resid2"], P["ln2.gamma"], P["ln2.beta"])
    out["ffn.hidden"] = h2 @ P["W_1"]
    out["ffn.act"] = np.maximum(out["ffn.hidden"], 0)
    out["ffn.out"] = out["ffn.act"] @ P["W_2"]
    out["resid3"] = h2 + out["ffn.out"]
    out["norm3"] = layernorm(out["resid3"], P["ln3.gamma"], P["ln3.beta"])
    return out


@pytest.fixture(scope="module")
def layer():
    s = api.load("decoder-layer")
    P = {k: np.array(v.tolist(), dtype=float) for k, v in s.params.items()}
    X, M = (np.array(m.tolist(), dtype=float) for m in (s.X, s.memory))
    return decoder_layer(P, X, M, list(s.memory_padding_mask))


def test_decoder_layer_sheet_asks_the_cross_attention(cli, tmp_path):
    code, out, err = cli("worksheet", "decoder-layer", "--out", tmp_path / "en", "--format", "markdown")
    assert code == 0, err
    key = (tmp_path / "en" / "key.md").read_text(encoding="utf-8")
    for name in ("cross.q", "cross.k", "cross.v", "cross.h0.scores", "cross.h0.masked", "cross.h0.weights",
                 "cross.out", "resid3", "norm3"):
        assert f"`{name}`" in key
    assert r"keys: project the memory $H^{\mathrm{enc}}$" in key and "no causal mask applies" in key
    assert "memory row 3 is padding: its column" in key     # the padded third memory row, said once
    assert "$H_3 = \\mathrm{N}_3(H_2 + \\mathrm{FFN}(H_2))$" in key
    code, out, err = cli("worksheet", "decoder-layer", "--out", tmp_path / "zh", "--format", "markdown",
                         "--lang", "zh")
    assert code == 0, err
    zh = (tmp_path / "zh" / "key.md").read_text(encoding="utf-8")
    assert r"交叉注意力的键：用 $W^{K}_{c}$ 投影记忆 $H^{\mathrm{enc}}$" in zh and "记忆的第 } j" in zh


def test_the_cross_head_output_says_whose_entries_it_writes_out(cli, tmp_path, spec_file):
    """Two decoder rows: the entries written out are the last row's, (O^c_0)_21 …, and the text says
    so (it said "The row"); one new row (a translation step) is "the row"; version 1 keeps its words."""
    code, out, err = cli("worksheet", "decoder-layer", "--preset", "cross", "--out", tmp_path / "a", "--format", "markdown")
    assert code == 0, err
    key = (tmp_path / "a" / "key.md").read_text(encoding="utf-8")
    said = ("The last row's first entries, written out (row times column); the row mixes the 3 value rows of "
            "the memory, 1 of them padding (weighed 0):\n\n$$\n\\begin{aligned} (O^{c}_0)_{21} &= ")
    assert said in key and "The row mixes" not in key
    code, out, err = cli("worksheet", "tiny-translate", "--out", tmp_path / "t", "--format", "markdown")
    assert code == 0, err
    assert "The row mixes all 3 value rows of the memory:" in (tmp_path / "t" / "key.md").read_text(encoding="utf-8")
    from symblock.engine import spec
    v1 = spec_file(spec.example_text("decoder-layer").replace("random: {seed: 5, low: -1, high: 1}",
                                                              "random: {seed: 5, low: -1, high: 1, generator: 1}"))
    code, out, err = cli("worksheet", v1, "--preset", "cross", "--out", tmp_path / "v1", "--format", "markdown")
    assert code == 0, err
    old = (tmp_path / "v1" / "key.md").read_text(encoding="utf-8")
    assert "The row mixes the 3 value rows of the memory (1 of them padding, weighed 0):" in old and "last row" not in old


def test_the_description_says_whose_the_causal_mask_is(cli, tmp_path, spec_file):
    """"…, causal mask. A decoder layer: …" read as if the cross-attention were masked too."""
    for lang, said in (("en", "causal mask. A decoder layer: the causal mask is its self-attention's; then a "
                              "cross-attention reads the memory $H^{\\mathrm{enc}}$ (3 rows, no causal mask), then the FFN."),
                       ("zh", "因果掩码属于它的自注意力；之后交叉注意力读取记忆 $H^{\\mathrm{enc}}$（3 行，没有因果掩码）")):
        code, out, err = cli("worksheet", "decoder-layer", "--lang", lang, "--out", tmp_path / lang, "--format", "markdown")
        assert code == 0, err
        assert said in (tmp_path / lang / "sheet.md").read_text(encoding="utf-8")
    from symblock.engine import spec
    v1 = spec_file(spec.example_text("decoder-layer").replace("random: {seed: 5, low: -1, high: 1}",
                                                              "random: {seed: 5, low: -1, high: 1, generator: 1}"))
    code, out, err = cli("worksheet", v1, "--out", tmp_path / "v1", "--format", "markdown")
    assert code == 0, err
    assert "causal mask. A decoder layer: after its self-attention, a cross-attention reads" in \
        (tmp_path / "v1" / "sheet.md").read_text(encoding="utf-8")


def test_a_translation_sheet_says_target_prefix_where_a_gpt_sheet_says_prompt(cli, tmp_path):
    """Its description calls the decoded tokens the target prefix; the KV-cache line, the reused-rows task
    and the positions preset said "the prompt" (a word the sheet never defined)."""
    for lang, prompt, prefix in (("en", "prompt", "the target prefix's rows of the self-attention's $K$"),
                                 ("zh", "提示", "目标前缀的自注意力 $K$")):
        code, out, err = cli("worksheet", "tiny-translate", "--lang", lang, "--out", tmp_path / lang, "--format", "markdown")
        assert code == 0, err
        key = (tmp_path / lang / "key.md").read_text(encoding="utf-8")
        assert prompt not in key and prefix in key
        assert "复用" in key if lang == "zh" else "reused from the target prefix's pass?" in key
    code, out, err = cli("worksheet", "tiny-translate", "--preset", "positions", "--out", tmp_path / "p", "--format", "markdown")
    assert "The position vectors of the target prefix's positions" in (tmp_path / "p" / "key.md").read_text(encoding="utf-8")
    code, out, err = cli("worksheet", "tiny-gpt", "--out", tmp_path / "gpt", "--format", "markdown")
    assert "KV cache: the prompt's rows of $K$ and $V$" in (tmp_path / "gpt" / "key.md").read_text(encoding="utf-8")


def test_decoder_layer_numpy_answers_get_full_marks(cli, spec_file, layer):
    code, out, err = cli("check", "decoder-layer", spec_file(answers(layer), "answers.yaml"), "--json")
    data = json.loads(out)
    assert code == 0, [(s["name"], s["status"]) for s in data["steps"] if s["status"] != "correct"]
    got = {s["name"]: s["status"] for s in data["steps"]}
    assert all(got[n] == "correct" for n in layer)
    assert layer["cross.h0.weights"][:, 2].max() == 0   # the padded memory row weighs nothing


def test_decoder_layer_causal_mask_on_the_cross_attention_is_named(cli, spec_file, layer):
    """Decoder row 1 with the causal mask reads memory row 1 only (and the padded third row stays
    masked): the slip is named where it was made."""
    c = layer["cross.h0.scaled"].copy()
    c[np.triu_indices(2, 1, m=3)] = -np.inf
    c[:, 2] = -np.inf
    code, out, err = cli("check", "decoder-layer", spec_file(answers({"cross.h0.masked": c}), "a.yaml"), "--json")
    data = json.loads(out)
    step = {x["name"]: x for x in data["steps"]}["cross.h0.masked"]
    assert code == 1 and step["status"] == "wrong" and step["diagnosis"] == ["cross_causal_mask"]


@pytest.mark.parametrize("step", ["cross.h0.masked", "cross.h0.weights", "cross.h0.out"])
def test_decoder_layer_memory_padding_forgotten_is_named(cli, spec_file, layer, step):
    """The padded third memory row left unmasked: its scaled score kept (0 here, as its K row is 0)
    and weighed by the softmax, so the head output mixes less of the real rows. Written at the step
    where it was made (the head's earlier steps blank: they come from the chain), it is named there."""
    s = layer["cross.h0.scaled"]
    w = softmax(s)
    unpadded = {"cross.h0.masked": s, "cross.h0.weights": w, "cross.h0.out": w @ layer["cross.v"]}
    assert w[:, 2].min() > 0.05                        # the padded row really takes weight
    code, out, err = cli("check", "decoder-layer", spec_file(answers({step: unpadded[step]}), "a.yaml"), "--json")
    got = {x["name"]: x for x in json.loads(out)["steps"]}[step]
    assert code == 1 and got["status"] == "wrong" and got["diagnosis"] == ["cross_padding_mask_missing"]


def test_decoder_layer_memory_padding_slip_is_not_named_on_right_answers(cli, spec_file, layer):
    """The right masked scores, weights and head output, each written alone, are right: no diagnosis;
    a wrong head output that is not the unmasked one is not named as the padding slip."""
    for step in ("cross.h0.masked", "cross.h0.weights", "cross.h0.out"):
        code, out, err = cli("check", "decoder-layer", spec_file(answers({step: layer[step]}), "a.yaml"), "--json")
        got = {x["name"]: x for x in json.loads(out)["steps"]}[step]
        assert code == 0 and got["status"] == "correct" and not got.get("diagnosis"), step
    other = layer["cross.h0.out"] + 0.5
    code, out, err = cli("check", "decoder-layer", spec_file(answers({"cross.h0.out": other}), "a.yaml"), "--json")
    got = {x["name"]: x for x in json.loads(out)["steps"]}["cross.h0.out"]
    assert code == 1 and "cross_padding_mask_missing" not in got["diagnosis"]


def translation():
    T = numeric_model.forward(api.load("tiny-translate"))
    return {k: v for k, v in T.items()}


def test_translation_step_on_the_sheet(cli, tmp_path):
    code, out, err = cli("worksheet", "tiny-translate", "--out", tmp_path, "--format", "markdown")
    assert code == 0, err
    key = (tmp_path / "key.md").read_text(encoding="utf-8")
    assert "An encoder-decoder (a translation model)" in key
    for name in ("gen1.layer0.cross.q", "gen1.layer0.cross.h0.weights", "gen1.layer0.resid3", "gen1.next_token"):
        assert f"`{name}`" in key
    assert "### Task" in key and "· `gen1.layer0.cross.k`" not in key   # the memory's K, V: given
    assert "(`gen1.layer0.cross.k`, $3 \\times 4$)" in key


def test_translation_numpy_answers_get_full_marks(cli, spec_file):
    T = translation()
    code, out, err = cli("check", "tiny-translate", spec_file(answers(T), "answers.yaml"), "--json")
    data = json.loads(out)
    assert code == 0, [(s["name"], s["status"]) for s in data["steps"] if s["status"] != "correct"]
    got = {s["name"]: s["status"] for s in data["steps"]}
    assert {got[n] for n in T} == {"correct"}
    assert any(n.startswith("enc.layer0.") for n in T) and got["enc.norm_final"] == "correct"


def test_translation_causal_cross_mask_is_named_and_carried(cli, spec_file):
    """The prompt's one decoder row with the causal mask on its cross-attention reads memory row 1
    only: weights (1, 0, 0); its head output is then V_c's first row, carried, not wrong."""
    T = translation()
    vc = T["layer0.cross.v"][:, :2]
    plant = {"layer0.cross.h0.weights": [[1, 0, 0]], "layer0.cross.h0.out": vc[:1]}
    code, out, err = cli("check", "tiny-translate", spec_file(answers(plant), "a.yaml"), "--json")
    data = json.loads(out)
    steps = {x["name"]: x for x in data["steps"]}
    assert code == 1 and data["first_break"] == "layer0.cross.h0.weights"
    assert steps["layer0.cross.h0.weights"]["diagnosis"] == ["cross_causal_mask"]
    assert steps["layer0.cross.h0.out"]["status"] == "carried"


def test_translation_wrong_encoder_step_is_carried_into_the_memory(cli, spec_file):
    """A wrong encoder residual: the encoder's norm after it, worked from it, is carried."""
    T = translation()
    r = T["enc.layer0.resid1"].copy()
    r[0, 0] += 1
    mu = r.mean(axis=1, keepdims=True)
    code, out, err = cli("check", "tiny-translate", spec_file(answers(
        {"enc.layer0.resid1": r, "enc.layer0.norm1.mean": mu}), "a.yaml"), "--json")
    steps = {x["name"]: x for x in json.loads(out)["steps"]}
    assert steps["enc.layer0.resid1"]["status"] == "wrong"
    assert steps["enc.layer0.norm1.mean"]["status"] == "carried"


def test_tiny_bert_numpy_answers_get_full_marks_and_errors_carry(cli, spec_file):
    """An encoder model's every step checked against the NumPy model path; a wrong embedding norm
    (BERT's LayerNorm after the embeddings) is wrong, and the first layer's q worked from it is
    carried: the layer reads norm_embed, not x."""
    s = api.load("tiny-bert")
    T = numeric_model.forward(s)
    code, out, err = cli("check", "tiny-bert", spec_file(answers(T), "answers.yaml"), "--json")
    data = json.loads(out)
    assert code == 0 and {x["status"] for x in data["steps"]} == {"correct"} and len(data["steps"]) == len(T)
    P = {k: np.array(v.tolist(), dtype=float) for k, v in s.layers[0].params.items()}
    ne = T["norm_embed"].copy()
    ne[0, 0] += 1
    plant = {"norm_embed": ne, "layer0.attn.q": ne @ P["W_Q"] + P["b_Q"]}
    code, out, err = cli("check", "tiny-bert", spec_file(answers(plant), "a.yaml"), "--json")
    steps = {x["name"]: x for x in json.loads(out)["steps"]}
    assert code == 1 and steps["norm_embed"]["status"] == "wrong"
    assert steps["layer0.attn.q"]["status"] == "carried"



def test_tiny_bert_with_a_causal_mask_is_named(cli, spec_file):
    """An encoder attends both ways: its scores masked causally (beside the padded token 4), and the
    softmax of that, are named causal_mask_added (they were none of the catalogued mistakes)."""
    T = numeric_model.forward(api.load("tiny-bert"))
    m = T["layer0.attn.h0.scaled"].copy()
    m[np.triu_indices(4, 1)] = -np.inf
    m[:, 3] = -np.inf
    for name, value in (("layer0.attn.h0.masked", m), ("layer0.attn.h0.weights", softmax(m))):
        code, out, err = cli("check", "tiny-bert", spec_file(answers({name: value}), "a.yaml"), "--json")
        step = {x["name"]: x for x in json.loads(out)["steps"]}[name]
        assert code == 1 and step["status"] == "wrong" and step["diagnosis"] == ["causal_mask_added"], step


def test_translation_formulas_are_clean_latex():
    """The reused cross K/V of a generation step say so in LaTeX (a stray tab once ate `\\t` of \\text)."""
    t = api.forward(api.load("tiny-translate"))
    assert all("\t" not in s.latex for s in t)
    assert t["gen1.layer0.cross.k"].latex.endswith(r"\ \text{(worked once, reused)}")


def padded_translate(spec_file):
    """tiny-translate with its last source position padded (model.source_padding_mask)."""
    from symblock.engine.spec import read_spec
    data, _ = read_spec("tiny-translate")
    data["model"]["source_padding_mask"] = [False, False, True]
    return spec_file(json.dumps(data), "padded.json")


def test_a_padded_source_is_stated_on_the_sheet_and_numpy_answers_get_full_marks(cli, spec_file, tmp_path):
    path = padded_translate(spec_file)
    code, out, err = cli("worksheet", path, "--out", tmp_path / "ws", "--format", "markdown")
    assert code == 0, err
    sheet = (tmp_path / "ws" / "sheet.md").read_text(encoding="utf-8")
    assert "memory row 3 is padding" in sheet and "`gen1.layer0.cross.h0.masked`" in sheet
    T = numeric_model.forward(api.load(str(path)))
    w = T["gen1.layer0.cross.h0.weights"]
    assert w[0, 2] == 0 and abs(w.sum() - 1) < 1e-12   # the padded memory row gets no weight
    code, out, err = cli("check", path, spec_file(answers(T), "answers.yaml"), "--json")
    data = json.loads(out)
    assert code == 0, [(s["name"], s["status"]) for s in data["steps"] if s["status"] != "correct"]
    plain = translation()   # the unpadded run's weights spread over all three memory rows
    code, out, err = cli("check", path, spec_file(answers({"gen1.layer0.cross.h0.weights":
                                                          plain["gen1.layer0.cross.h0.weights"]}), "b.yaml"), "--json")
    got = {s["name"]: s["status"] for s in json.loads(out)["steps"]}
    assert code == 1 and got["gen1.layer0.cross.h0.weights"] == "wrong"


def test_a_generated_rows_causal_cross_mask_is_named_at_its_own_position(cli, spec_file):
    """The first generated token is decoder row 1 (row 0 is in the cache): the causal mask on its
    cross-attention keeps memory rows 0 and 1 — weights softmax of its first two scaled scores, then 0.
    Named cross_causal_mask (never cache_not_appended: the memory is no cache that grows); the
    mask at 0, as if it were the first row, (1, 0, 0), is named so too."""
    T = translation()
    s = T["gen1.layer0.cross.h0.scaled"][0]
    e = np.exp(s[:2] - s[:2].max())
    for weights in ([*(e / e.sum()), 0.0], [1.0, 0.0, 0.0]):
        code, out, err = cli("check", "tiny-translate", spec_file(answers(
            {"gen1.layer0.cross.h0.weights": [weights]}), "a.yaml"), "--json")
        steps = {x["name"]: x for x in json.loads(out)["steps"]}
        assert code == 1 and steps["gen1.layer0.cross.h0.weights"]["diagnosis"] == ["cross_causal_mask"], weights
