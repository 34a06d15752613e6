"""An encoder model's worksheet (the example tiny-bert, a BERT-like encoder with a padded token):
the key works the embeddings, their LayerNorm and the layer to the hidden states, and its numbers
are those of a NumPy BERT forward written here; that forward's answers to the sheet `check` full
marks; and a planted mistake in the embeddings' LayerNorm is named, the steps after it carried."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from symblock import api

ID = "tiny-bert.3"


def arr(m) -> np.ndarray:
    return np.array([[float(e) for e in row] for row in m.tolist()])


def layernorm(x, g, b, eps=1e-12, ddof=0):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).sum(axis=1, keepdims=True) / (x.shape[1] - ddof)
    return mu, var, np.sqrt(var + eps), (x - mu) / np.sqrt(var + eps) * g + b


def bert(spec, ln_embed) -> dict:
    """Hugging Face BertModel (no pooler) as a person works it: word + position embeddings, their
    LayerNorm, one Post-LN layer of one head (d_k 4), the padded key masked, erf GELU."""
    P = {k: arr(v) for k, v in spec.layers[0].params.items()}
    out = {"embed": arr(spec.W_E)[list(spec.prompt)], "pos": arr(spec.W_P)[:len(spec.prompt)]}
    out["x"] = out["embed"] + out["pos"]
    for stat, v in zip(("mean", "var", "std", ""), layernorm(out["x"], *ln_embed)):
        out["norm_embed" + (f".{stat}" if stat else "")] = v
    x = out["norm_embed"]
    q, k, v = (x @ P[f"W_{c}"] + P[f"b_{c}"] for c in "QKV")
    s = q @ k.T
    m = s / 2
    m[:, np.array(spec.key_padding_mask)] = -np.inf
    w = np.exp(m - m.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    L = {"attn.q": q, "attn.k": k, "attn.v": v, "attn.h0.scores": s, "attn.h0.scaled": s / 2,
         "attn.h0.masked": m, "attn.h0.weights": w, "attn.h0.out": w @ v}
    L["attn.out"] = L["attn.h0.out"] @ P["W_O"] + P["b_O"]
    L["resid1"] = x + L["attn.out"]
    for stat, val in zip(("mean", "var", "std", ""), layernorm(L["resid1"], P["ln1.gamma"], P["ln1.beta"])):
        L["norm1" + (f".{stat}" if stat else "")] = val
    L["ffn.hidden"] = L["norm1"] @ P["W_1"] + P["b_1"]
    L["ffn.act"] = np.vectorize(lambda z: z * (1 + math.erf(z / math.sqrt(2))) / 2)(L["ffn.hidden"])
    L["ffn.out"] = L["ffn.act"] @ P["W_2"] + P["b_2"]
    L["resid2"] = L["norm1"] + L["ffn.out"]
    for stat, val in zip(("mean", "var", "std", ""), layernorm(L["resid2"], P["ln2.gamma"], P["ln2.beta"])):
        L["norm2" + (f".{stat}" if stat else "")] = val
    return {**out, **{f"layer0.{n}": val for n, val in L.items()}}


@pytest.fixture(scope="module")
def numpy_steps() -> dict:
    spec = api.load("tiny-bert")
    params = api.forward(spec).params     # the given γ, β of the embeddings' norm (data, not results)
    return bert(spec, (arr(params["ln_embed.gamma"]), arr(params["ln_embed.beta"])))


def key_answers(key: str) -> dict:
    """Each task's printed answer of a Markdown key, as floats (−∞, a × 10^{e} read back)."""
    def entry(e: str) -> float:
        e = e.strip()
        if e == r"-\infty":
            return -np.inf
        sci = re.fullmatch(r"(-?[\d.]+) \\times 10\^\{(-?\d+)\}", e)
        return float(sci[1]) * 10 ** int(sci[2]) if sci else float(e)
    got = {}
    for m in re.finditer(r"### Task \d+ · `([^`]+)`.*?\*\*Answer:\*\*\s*\$\$(.*?)\$\$", key, re.S):
        body = re.search(r"\\begin\{bmatrix\}(.*?)\\end\{bmatrix\}", m[2], re.S)[1]
        got[m[1]] = np.array([[entry(e) for e in r.split("&")] for r in body.split(r"\\")])
    return got


def answers(steps: dict, ident: str = ID) -> str:
    fmt = lambda v: "-inf" if np.isneginf(v) else f"{v:.9f}"   # noqa: E731
    lines = [f"id: {ident}", "decimals: 9", "steps:"]
    for name, m in steps.items():
        lines.append(f"  {name}: [" + ", ".join("[" + ", ".join(fmt(v) for v in r) + "]"
                                                for r in np.atleast_2d(m)) + "]")
    return "\n".join(lines) + "\n"


def test_encoder_key_numbers_are_numpys(cli, tmp_path, numpy_steps):
    code, out, err = cli("worksheet", "tiny-bert", "--out", tmp_path, "--format", "markdown")
    assert code == 0, err
    key = (tmp_path / "key.md").read_text(encoding="utf-8")
    assert f"Worksheet ID: `{ID}`" in key and "A tiny BERT-like encoder" in key and "next token)" in key
    got = key_answers(key)
    asked = [n for n in numpy_steps]           # every step but the layer's output copy is asked
    assert list(got) == asked
    for name in asked:   # printed to 3 places: within half a unit of the third place (tiny ones as 1.1e-7)
        np.testing.assert_allclose(got[name], numpy_steps[name], rtol=1e-3, atol=5e-4, err_msg=name)
    assert r"(W_E)_{[2, 3, 4, 1]\cdot}" in key                    # tokens looked up as rows of W_E
    assert r"\text{“[PAD]”}" in key and "GELU}(x W_1 + b_1) W_2 + b_2" in key


def test_encoder_first_layer_formulas_read_the_embeddings_norm(cli, tmp_path):
    """The sheet defines X = E + PE, then N_e = LN(X): the layer's formulas must say they read N_e
    (a student following "Q = X W^Q" would multiply the unnormalised sum)."""
    code, out, err = cli("worksheet", "tiny-bert", "--out", tmp_path, "--format", "markdown")
    assert code == 0, err
    sheet = (tmp_path / "sheet.md").read_text(encoding="utf-8")
    for formula in ("Q = N_e W^{Q} + b^{Q}", "K = N_e W^{K} + b^{K}", "V = N_e W^{V} + b^{V}", "R_1 = N_e + A"):
        assert formula in sheet, formula
    assert "Q = X W" not in sheet and "R_1 = X +" not in sheet
    trace = {s.name: s.latex for s in api.forward(api.load("tiny-bert"))}
    assert trace["layer0.attn.q"] == "Q = N_e W^{Q} + b^{Q}" and trace["layer0.resid1"] == "R_1 = N_e + A"
    gpt = {s.name: s.latex for s in api.forward(api.load("tiny-gpt"))}   # no embedding norm: X = E + PE
    assert gpt["layer0.resid1"] == "R_1 = X + A"


def test_encoder_sheet_in_chinese(cli, tmp_path):
    code, out, err = cli("worksheet", "tiny-bert", "--out", tmp_path, "--format", "markdown", "--lang", "zh")
    assert code == 0, err
    sheet = (tmp_path / "sheet.md").read_text(encoding="utf-8")
    assert "微型 BERT 式编码器" in sheet and "嵌入的 LayerNorm" in sheet and "`norm_embed.std`" in sheet
    assert "A tiny" not in sheet and "The token embeddings" not in sheet


def test_encoder_worksheet_then_check_of_numpy_answers_is_full_marks(cli, tmp_path, spec_file, numpy_steps):
    code, out, err = cli("worksheet", "tiny-bert", "--out", tmp_path / "ws", "--format", "markdown")
    assert code == 0, err
    code, out, err = cli("check", spec_file(answers(numpy_steps), "answers.yaml"), "--json")
    data = json.loads(out)
    assert code == 0, [(s["name"], s["status"]) for s in data["steps"] if s["status"] != "correct"]
    asked = {s["name"]: s["status"] for s in data["steps"] if s["asked"]}
    assert data["ok"] and asked == dict.fromkeys(numpy_steps, "correct")   # the output, a copy: not asked


def test_encoder_embedding_norm_mistake_is_named_and_carried(cli, spec_file, numpy_steps):
    """The embeddings' variance divided by d − 1 (sample variance): named on `norm_embed.var`; σ and
    the norm worked from it, and the queries from that norm, are carried, not wrong."""
    spec = api.load("tiny-bert")
    P = {k: arr(v) for k, v in spec.layers[0].params.items()}
    x = numpy_steps["x"]
    mu, var, std, _ = layernorm(x, 1, 0, ddof=1)
    std = np.round(std, 9)                       # each step worked from the previous one as written
    norm = np.round((x - mu) / std, 9)
    plant = {**{n: numpy_steps[n] for n in ("embed", "pos", "x", "norm_embed.mean")},
             "norm_embed.var": var, "norm_embed.std": std, "norm_embed": norm,
             "layer0.attn.q": norm @ P["W_Q"] + P["b_Q"]}
    code, out, err = cli("check", spec_file(answers(plant), "a.yaml"), "--json")
    data = json.loads(out)
    steps = {x["name"]: x for x in data["steps"]}
    assert code == 1 and data["first_break"] == "norm_embed.var"
    assert steps["norm_embed.var"]["status"] == "wrong" and steps["norm_embed.var"]["diagnosis"] == ["ln_sample_variance"]
    assert {n: steps[n]["status"] for n in ("norm_embed.std", "norm_embed", "layer0.attn.q")} == dict.fromkeys(
        ("norm_embed.std", "norm_embed", "layer0.attn.q"), "carried")
    assert steps["x"]["status"] == "correct" and steps["layer0.attn.k"]["status"] == "missing"

