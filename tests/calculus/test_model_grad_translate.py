"""Exact gradients through an encoder-decoder's prompt pass against torch autograd on
`nn.Transformer` (built here from a state dict): d/d the decoder's and the encoder's weights,
the cross-attention's, both final norms, the shared embedding and the learned positions, both
norm orders; and the `symblock grad` command on tiny-translate."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import symblock
from symblock.calculus import model_grad
from symblock.engine.model_spec import from_mapping

VOCAB = ["<s>", "</s>", "a", "b", "c", "x", "y", "z"]


def translation(norm_position="post", seed=5, positions="learned", head="tied", **more):
    return from_mapping({
        "model": {"kind": "encoder-decoder", "vocab": VOCAB, "positions": positions, "source": ["a", "b", "c", "a"],
                  "encoder_layers": 2, "decoder_layers": 2, "prompt": ["<s>", "x", "y"], "head": head, **more},
        "dims": {"d_model": 4, "d_ff": 6, "heads": 2},
        "block": {"norm_position": norm_position, "eps": "1e-5", "bias": True, "activation": "gelu"},
        "random": {"seed": seed, "low": -2, "high": 2}}, "tr.yaml")


def leaf(m):
    return torch.tensor(np.array(m.tolist(), dtype=float), requires_grad=True)


def build(s):
    """nn.Transformer holding the spec's weights, and {our name: (torch parameter, how our
    math-layout gradient reads its grad)}."""
    d = s.dims
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = torch.nn.Transformer(d.d_model, d.heads, len(s.encoder), len(s.layers), d.d_ff, dropout=0.0,
                                   activation=s.options.activation, layer_norm_eps=float(s.options.eps), batch_first=True,
                                   norm_first=s.options.norm_position == "pre", dtype=torch.float64).eval()
    named = dict(net.named_parameters())
    mapping = {}   # our name -> (torch name, a function of its grad)
    n = d.d_model

    def attention(ours, mod):
        for i, p in enumerate("QKV"):
            mapping[f"{ours}W_{p}"] = (f"{mod}.in_proj_weight", lambda g, i=i: g[i * n:(i + 1) * n].T)
            mapping[f"{ours}b_{p}"] = (f"{mod}.in_proj_bias", lambda g, i=i: g[i * n:(i + 1) * n][None])
        mapping[f"{ours}W_O"] = (f"{mod}.out_proj.weight", lambda g: g.T)
        mapping[f"{ours}b_O"] = (f"{mod}.out_proj.bias", lambda g: g[None])

    for stack, ours, layers, norms in (("encoder", "enc.", s.encoder, (1, 2)), ("decoder", "", s.layers, (1, 2, 3))):
        for i in range(len(layers)):
            pre, mine = f"{stack}.layers.{i}.", f"{ours}layer{i}."
            attention(mine, pre + "self_attn")
            if stack == "decoder":
                attention(mine + "cross.", pre + "multihead_attn")
            for k in (1, 2):
                mapping[f"{mine}W_{k}"] = (f"{pre}linear{k}.weight", lambda g: g.T)
                mapping[f"{mine}b_{k}"] = (f"{pre}linear{k}.bias", lambda g: g[None])
            for k in norms:
                mapping[f"{mine}ln{k}.gamma"] = (f"{pre}norm{k}.weight", lambda g: g[None])
                mapping[f"{mine}ln{k}.beta"] = (f"{pre}norm{k}.bias", lambda g: g[None])
    for stack, ours in (("encoder", "enc.ln_final"), ("decoder", "ln_final")):
        mapping[f"{ours}.gamma"] = (f"{stack}.norm.weight", lambda g: g[None])
        mapping[f"{ours}.beta"] = (f"{stack}.norm.bias", lambda g: g[None])
    params = {**{f"enc.layer{i}.{k}": v for i, ly in enumerate(s.encoder) for k, v in ly.params.items()},
              **{f"layer{i}.{k}": v for i, ly in enumerate(s.layers) for k, v in ly.params.items()},
              **{f"enc.ln_final.{k}": v for k, v in s.encoder_norm.items()},
              **{f"ln_final.{k}": v for k, v in s.final_norm.items()}}
    with torch.no_grad():   # write our weights into torch's layout (the inverse of `mapping`)
        for ours, (name, read) in mapping.items():
            view = read(named[name])
            if ours not in params:   # a bias the spec leaves out: zero, and no parameter of ours
                view.zero_()
                continue
            view.copy_(torch.tensor(np.array(params[ours].tolist(), dtype=float)).reshape(view.shape))
    return net, {k: (named[name], read) for k, (name, read) in mapping.items() if k in params}


def torch_grads(s, loss, pad=None):
    """Autograd on nn.Transformer; `pad`: the source's padding, as src_key_padding_mask and
    memory_key_padding_mask."""
    net, mapping = build(s)
    pad = None if pad is None else torch.tensor([pad])
    W_E = leaf(s.W_E)
    leaves = {"W_E": W_E}
    if s.W_E_src is not None:   # the source's own table; the target and a tied head read W_E
        leaves["W_E_src"] = leaf(s.W_E_src)
    src, tgt = leaves.get("W_E_src", W_E)[list(s.source_tokens)], W_E[list(s.prompt)]
    if s.positions == "learned":
        leaves["W_P"] = W_P = leaf(s.W_P)
        src, tgt = src + W_P[:len(s.source_tokens)], tgt + W_P[:len(s.prompt)]
    else:   # sinusoidal: P[p, 2i] = sin(p / 10000^(2i/d)), P[p, 2i+1] = cos(the same)
        d = s.dims.d_model
        pe = torch.tensor([[(math.sin if j % 2 == 0 else math.cos)(p / 10000 ** ((j - j % 2) / d))
                            for j in range(d)] for p in range(8)], dtype=torch.float64)
        src, tgt = src + pe[:len(s.source_tokens)], tgt + pe[:len(s.prompt)]
    mask = torch.nn.Transformer.generate_square_subsequent_mask(len(s.prompt), dtype=torch.float64)
    with torch.enable_grad():
        out = net(src[None], tgt[None], tgt_mask=mask, src_key_padding_mask=pad, memory_key_padding_mask=pad)[0]
        if s.head == "tied":
            logits = out @ W_E.T
        else:
            leaves["W_U"] = leaf(s.W_U)
            logits = out @ leaves["W_U"]
        L = logits.sum() if loss == "sum" else (logits ** 2).mean()
        L.backward()
    grads = {k: v.grad.numpy() for k, v in leaves.items()}
    grads.update({k: read(p.grad).detach().numpy() for k, (p, read) in mapping.items()})
    return float(L.detach()), logits.detach().numpy(), grads


@pytest.mark.parametrize("norm_position, loss, positions, head, embeddings", [
    ("post", "mse", "learned", "tied", "shared"), ("pre", "sum", "learned", "tied", "separate"),
    ("post", "sum", "sinusoidal", "untied", "separate")])
def test_every_gradient_matches_autograd_on_nn_transformer(norm_position, loss, positions, head, embeddings):
    s = translation(norm_position, positions=positions, head=head, embeddings=embeddings)
    assert (s.W_E_src is not None) == (embeddings == "separate")
    L, logits, want = torch_grads(s, loss)
    g = model_grad.backward(s, loss)
    assert abs(float(g.loss_value) - L) < 1e-9 * max(1, abs(L))
    assert np.abs(np.array(g.logits.floats()) - logits).max() < 1e-9
    assert set(g.grads) == set(want)
    assert any(k.startswith("enc.layer1.") for k in g.grads) and "layer0.cross.W_K" in g.grads
    scale = max(1.0, max(np.abs(v).max() for v in want.values()))
    for name, w in want.items():
        got = np.array(g.grads[name].floats())
        assert got.shape == w.shape, name
        assert np.abs(got - w).max() <= 1e-9 * scale, name
    # the encoder's weights only reach the loss through the memory: their gradients are not all 0
    assert np.abs(np.array(g.grads["enc.layer0.W_Q"].floats())).max() > 1e-6
    names = list(g.grads)   # listed as the model runs: embeddings, encoder, decoder, final norm, head
    assert names.index("W_E") < names.index("enc.layer0.W_Q") < names.index("enc.ln_final.gamma") \
        < names.index("layer0.W_Q") < names.index("ln_final.gamma")


def test_grad_command_on_tiny_translate(capsys):
    from symblock import cli
    import json
    assert cli.main(["grad", "tiny-translate", "--wrt", "enc.layer0.W_V,layer0.cross.W_K,W_E", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [w["name"] for w in out["wrt"]] == ["grad.enc.layer0.W_V", "grad.layer0.cross.W_K", "grad.W_E"]
    s = symblock.load("tiny-translate")
    L, _, want = torch_grads(s, "sum")
    assert abs(out["value"]["float"] - L) < 1e-9
    for w in out["wrt"]:
        name = w["name"][len("grad."):]
        assert np.abs(np.array(w["float"]) - want[name]).max() < 1e-9, name


def test_the_decoder_final_norm_reads_the_last_decoder_layer():
    """The step graph the gradients walk: the decoder stack's final norm reads its last layer's
    output (a decoder layer's residual is resid3; a norm reading itself loops the graph)."""
    from dataclasses import replace
    from symblock.engine import model
    tr = model.forward(replace(translation("pre"), generate=0))
    assert tr["norm_final"].inputs[0] == "layer1.output" == tr["norm_final.mean"].inputs[0]
    assert tr["enc.norm_final"].inputs[0] == "enc.layer1.output"


def test_separate_source_and_target_embeddings_match_nn_transformer_and_every_path():
    """W_E_src embeds the source, W_E the target and the tied head: the exact trace against a
    greedy loop around nn.Transformer written here, and verify's NumPy and torch paths."""
    from symblock.engine import model
    from symblock.reference import verify
    s = translation("post", seed=7, embeddings="separate", generate=2)
    net, _ = build(s)
    W_E, W_src, W_P = (torch.tensor(np.array(m.tolist(), dtype=float)) for m in (s.W_E, s.W_E_src, s.W_P))
    src = (W_src[list(s.source_tokens)] + W_P[:4])[None]
    tokens = list(s.prompt)
    with torch.enable_grad():
        for _ in range(3):
            mask = torch.nn.Transformer.generate_square_subsequent_mask(len(tokens), dtype=torch.float64)
            out = net(src, (W_E[tokens] + W_P[:len(tokens)])[None], tgt_mask=mask).detach()[0]
            tokens.append(int(torch.argmax(out[-1] @ W_E.T)))
    trace = model.forward(s)
    assert trace["enc.embed"].inputs == ("W_E_src",) and trace["embed"].inputs == ("W_E",)
    assert np.abs(np.array(trace["gen2.norm_final"].value.floats()) - out.numpy()).max() < 1e-9
    ours = [int(float(trace[k].value.rows[0][0])) for k in ("next_token", "gen1.next_token", "gen2.next_token")]
    assert list(s.prompt) + ours == tokens
    r = verify.run(s, require_torch=True)
    assert r.ok and r.backends["torch"].available, r.problems


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_gradients_through_a_padded_source_match_autograd(norm_position):
    """model.source_padding_mask through the backward pass: every gradient against autograd on
    nn.Transformer run with both padding masks; a padded position's embedding row gets none."""
    pad = [False, True, False, True]
    s = translation(norm_position, embeddings="separate", source_padding_mask=pad)
    L, logits, want = torch_grads(s, "mse", pad)
    _, plain_logits, _ = torch_grads(s, "mse")
    assert np.abs(logits - plain_logits).max() > 1e-3   # the padding matters for this seed
    g = model_grad.backward(s, "mse")
    assert abs(float(g.loss_value) - L) < 1e-9 * max(1, abs(L))
    assert np.abs(np.array(g.logits.floats()) - logits).max() < 1e-9
    scale = max(1.0, max(np.abs(v).max() for v in want.values()))
    for name, w in want.items():
        assert np.abs(np.array(g.grads[name].floats()) - w).max() <= 1e-9 * scale, name
    # source a b c a: "b" (index 3) sits only at a padded position, "c" (4) only at a kept one
    src_grad = np.array(g.grads["W_E_src"].floats())
    assert np.all(src_grad[VOCAB.index("b")] == 0) and np.abs(src_grad[VOCAB.index("c")]).max() > 1e-6


def test_w_e_tgt_is_the_target_table_and_the_tied_head(tmp_path, capsys):
    """weights.W_E_tgt with separate embeddings: the same model as weights.W_E (its alias), the
    target's rows and the tied head read it, the source reads W_E_src; autograd agrees, and
    `grad --wrt W_E_tgt` gives the target table's gradient."""
    import json
    from symblock import cli

    def spec(**w):
        return from_mapping(data(**w), "t.yaml")

    def data(**w):
        return ({
            "model": {"kind": "encoder-decoder", "vocab": VOCAB, "positions": "learned", "source": ["a", "b"],
                      "prompt": ["<s>", "x"], "embeddings": "separate"},
            "dims": {"d_model": 4, "d_ff": 4, "heads": 1}, "block": {"eps": "1e-5"},
            "weights": {"W_E_src": [[(i + j) % 3 - 1 for j in range(4)] for i in range(8)], **w},
            "random": {"seed": 3}})
    table = [[(2 * i - j) % 5 - 2 for j in range(4)] for i in range(8)]
    a, b = spec(W_E_tgt=table), spec(W_E=table)
    assert a.W_E.tolist() == b.W_E.tolist() == table and a.W_E_src.tolist() != table
    L, logits, want = torch_grads(a, "sum")
    g = model_grad.backward(a, "sum")
    assert np.abs(np.array(g.logits.floats()) - logits).max() < 1e-9
    # the tied head and the target both read the target's table: logits = H W_tgtᵀ
    for name in ("W_E", "W_E_src"):
        assert np.abs(np.array(g.grads[name].floats()) - want[name]).max() < 1e-9, name
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data(W_E_tgt=table)), encoding="utf-8")
    assert cli.main(["grad", str(path), "--wrt", "W_E_tgt", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert np.abs(np.array(out["wrt"][0]["float"]) - want["W_E"]).max() < 1e-9


@pytest.mark.parametrize("model_keys, weights, where, what", [
    ({}, {"W_E_tgt": [[1] * 4] * 8, "W_E": [[1] * 4] * 8}, "weights.W_E_tgt", "weights.W_E is given as well"),
    ({"embeddings": "shared"}, {"W_E_tgt": [[1] * 4] * 8}, "weights.W_E_tgt", "model.embeddings: separate"),
    ({}, {"W_E_tgt": [[1] * 3] * 8}, "weights.W_E_tgt", "8×4"),
    ({"kind": "encoder"}, {"W_E_tgt": [[1] * 4] * 8}, "weights.W_E_tgt", "only an encoder-decoder"),
    ({"kind": "decoder"}, {}, "model.source_padding_mask", "only an encoder-decoder reads a source"),
])
def test_bad_target_embeddings_name_the_field(model_keys, weights, where, what):
    from symblock.errors import SpecError
    m = {"kind": "encoder-decoder", "vocab": VOCAB, "source": ["a"], "prompt": ["<s>"], "embeddings": "separate",
         **model_keys}
    if m["kind"] != "encoder-decoder":
        del m["source"], m["embeddings"]
        if not weights:
            m["source_padding_mask"] = [False]
    with pytest.raises(SpecError) as e:
        from_mapping({"model": m, "dims": {"d_model": 4, "d_ff": 4, "heads": 1}, "weights": weights,
                      "random": {"seed": 1}}, "t.yaml")
    assert e.value.where == where and what in e.value.message, e.value


@pytest.mark.parametrize("model_keys, weights, where", [
    ({"kind": "decoder", "layers": 1}, {"W_E_src": [[0]]}, "weights.W_E_src"),
    ({"embeddings": "both"}, {}, "model.embeddings"),
    ({"embeddings": "shared"}, {"W_E_src": [[1] * 4] * 8}, "weights.W_E_src"),
])
def test_bad_source_embeddings_name_the_field(model_keys, weights, where):
    from symblock.errors import SpecError
    base = {"kind": "encoder-decoder", "vocab": VOCAB, "source": ["a"], "prompt": ["<s>"]}
    m = {**base, **model_keys}
    if m["kind"] != "encoder-decoder":
        m.pop("source")
    with pytest.raises(SpecError) as e:
        from_mapping({"model": m, "dims": {"d_model": 4, "d_ff": 4, "heads": 1}, "weights": weights,
                      "random": {"seed": 1}}, "t.yaml")
    assert e.value.where == where, e.value
