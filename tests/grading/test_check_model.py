"""The checker on a decoder sheet (a model spec): answers computed here in NumPy float64 from the
spec's weights (an independent path: the decoding step written out below, not the engine), right
ones marked correct, and each model slip planted in NumPy and named by `symblock check`."""
import json

import numpy as np
import pytest

from symblock.cli import main
from symblock.exercises import variants

SPEC = "tiny-decoder"   # Post-LN, one head, d_model 4 = vocab 4, prompt "the cat", tied head


def arr(m):
    return np.array([[float(e) for e in m.row(i)] for i in range(m.rows)])


def layer_norm(x):
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True))


def softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def decode(spec):
    """The prompt's K/V and the first generated token's row, every asked step, in NumPy."""
    W = {k: arr(v) for k, v in spec.layers[0].params.items()}
    WE, WP = arr(spec.W_E), arr(spec.W_P)
    m = len(spec.prompt)
    X0 = WE[list(spec.prompt)] + WP[:m]
    K0, V0 = X0 @ W["W_K"], X0 @ W["W_V"]
    S0 = X0 @ W["W_Q"] @ K0.T / 2 + np.triu(np.full((m, m), -np.inf), 1)
    H = layer_norm(X0 + softmax(S0) @ V0)
    H = layer_norm(H + np.maximum(H @ W["W_1"], 0) @ W["W_2"])
    tok = int(np.argmax(H[-1] @ WE.T))
    T = {"gen1.embed": WE[[tok]], "gen1.pos": WP[[m]]}
    T["gen1.x"] = x = T["gen1.embed"] + T["gen1.pos"]
    q, k, v = x @ W["W_Q"], x @ W["W_K"], x @ W["W_V"]
    K, V = np.vstack([K0, k]), np.vstack([V0, v])
    s = q @ K.T
    w = softmax(s / 2)
    a = w @ V
    r1 = x + a
    mu1 = r1.mean(axis=1, keepdims=True)
    h1 = layer_norm(r1)
    z = h1 @ W["W_1"]
    f = np.maximum(z, 0) @ W["W_2"]
    h2 = layer_norm(h1 + f)
    logits = h2 @ WE.T
    L = "gen1.layer0."
    T.update({L + "attn.q": q, L + "attn.k": k, L + "attn.v": v, L + "cache.k": K, L + "cache.v": V,
              L + "cache.reused": np.array([[1.0] * m + [0.0]]),
              L + "attn.h0.scores": s, L + "attn.h0.scaled": s / 2, L + "attn.h0.weights": w,
              L + "attn.h0.out": a, L + "attn.out": a, L + "resid1": r1, L + "norm1.mean": mu1,
              L + "norm1.var": ((r1 - mu1) ** 2).mean(axis=1, keepdims=True),
              L + "norm1": h1, L + "ffn.hidden": z, L + "ffn.act": np.maximum(z, 0), L + "ffn.out": f,
              L + "resid2": h1 + f, L + "norm2": h2, "gen1.logits": logits, "gen1.probs": softmax(logits)})
    T[L + "norm1.std"] = np.sqrt(T[L + "norm1.var"])
    r2 = T[L + "resid2"]
    T[L + "norm2.mean"] = r2.mean(axis=1, keepdims=True)
    T[L + "norm2.var"] = ((r2 - T[L + "norm2.mean"]) ** 2).mean(axis=1, keepdims=True)
    T[L + "norm2.std"] = np.sqrt(T[L + "norm2.var"])
    aux = {"K0": K0, "V0": V0, "q": q, "WE": WE, "WP": WP, "W": W, "h2": h2, "tok": tok, "m": m}
    return T, aux


def spec_of(ident=SPEC + ".19"):
    data, source = variants.read(SPEC)
    return variants.with_seed(data, source, int(ident.rsplit(".", 1)[1]))


def answers_yaml(ident, steps, token=None, places=3):
    lines = [f"id: {ident}", f"decimals: {places}", "steps:"]
    for name, m in steps.items():
        rows = ", ".join("[" + ", ".join(f"{v:.{places}f}" if np.isfinite(v) else "-inf" for v in r) + "]"
                         for r in np.atleast_2d(m))
        lines.append(f"  {name}: [{rows}]")
    if token is not None:
        lines.append(f"  gen1.next_token: {token}")
    return "\n".join(lines) + "\n"


def check(cli, spec_file, text):
    code, out, err = cli("check", spec_file(text, "answers.yaml"), "--json")
    assert err == ""
    data = json.loads(out)
    return code, data, {s["name"]: s for s in data["steps"]}


@pytest.fixture(scope="module")
def world():
    return decode(spec_of())


def test_numpy_path_agrees_on_the_generated_token(world):
    from symblock import forward
    T, aux = world
    trace = forward(spec_of())
    assert aux["tok"] == int(float(trace["next_token"].value.rows[0][0]))
    assert np.allclose(T["gen1.logits"], [[float(e) for e in trace["gen1.logits"].value.rows[0]]])


@pytest.mark.parametrize("token", ["name", "index"])
def test_right_answers_are_correct_and_the_token_may_be_a_string(cli, spec_file, world, token):
    T, aux = world
    spec = spec_of()
    nxt = int(np.argmax(T["gen1.logits"][0]))
    code, data, steps = check(cli, spec_file, answers_yaml(SPEC + ".19", T,
                                                              spec.vocab[nxt] if token == "name" else nxt))
    assert code == 0 and data["ok"]
    assert {s["status"] for s in data["steps"] if s["asked"]} == {"correct"}, \
        [(s["name"], s["status"]) for s in data["steps"] if s["status"] != "correct"]


def test_a_wrong_next_token_and_reused_rows_are_marked_wrong(cli, spec_file, world):
    T, aux = world
    nxt = int(np.argmax(T["gen1.logits"][0]))
    other = spec_of().vocab[(nxt + 1) % 4]
    text = answers_yaml(SPEC + ".19", {"gen1.layer0.cache.reused": np.array([[0.0, 0.0, 0.0]])}, other)
    code, data, steps = check(cli, spec_file, text)
    assert code == 1
    assert steps["gen1.next_token"]["status"] == "wrong"
    assert steps["gen1.layer0.cache.reused"]["status"] == "wrong"
    text = answers_yaml(SPEC + ".19", {}).replace("steps:", "steps:\n  gen1.layer0.cache.reused: {rows: [1, 2]}")
    assert check(cli, spec_file, text)[2]["gen1.layer0.cache.reused"]["status"] == "correct"
    # a 0/1 flag written as whole numbers is shown against whole numbers ("1", not "1.000")
    text = answers_yaml(SPEC + ".19", {}).replace("steps:", "steps:\n  gen1.layer0.cache.reused: [[0, 1.0, 0]]")
    entries = check(cli, spec_file, text)[2]["gen1.layer0.cache.reused"]["entries"]
    assert [(e["given"], e["expected"], e["mark"]) for e in entries] == \
        [("0", "1", "wrong"), ("1.0", "1.000", "correct"), ("0", "0", "correct")]


def planted(T, aux):
    """Each model slip written out in NumPy: (step, code, wrong value)."""
    q, K0, V0, m = aux["q"], aux["K0"], aux["V0"], aux["m"]
    w_old = softmax(q @ K0.T / 2)
    L = "gen1.layer0."
    yield L + "attn.h0.weights", "cache_not_appended", np.hstack([w_old, [[0.0]]])
    yield L + "attn.h0.out", "cache_not_appended", w_old @ V0
    for fill in (-np.inf, 0.0):   # the new key's score, missing: written as masked (unreadable here) or 0
        yield L + "attn.h0.scores", "cache_not_appended", np.hstack([q @ K0.T, [[fill]]])
    for j in range(m):   # the first prompt position and the last one
        pos = aux["WP"][[j]]
        yield "gen1.pos", "position_reused", pos
        yield "gen1.x", "position_reused", T["gen1.embed"] + pos
    yield L + "attn.q", "position_reused", (T["gen1.embed"] + aux["WP"][[m - 1]]) @ aux["W"]["W_Q"]
    yield "gen1.logits", "logits_untied_transpose", aux["h2"] @ aux["WE"]
    yield "gen1.probs", "logits_untied_transpose", softmax(aux["h2"] @ aux["WE"])


CASES = list(planted(*decode(spec_of())))


@pytest.mark.parametrize("k", range(len(CASES)), ids=[f"{c[1]}:{c[0]}" for c in CASES])
def test_planted_model_slip_is_diagnosed(cli, spec_file, world, k):
    step, code, value = CASES[k]
    T, _ = world
    assert not np.allclose(np.nan_to_num(value), np.nan_to_num(T[step])), "the slip must change the step"
    rc, data, steps = check(cli, spec_file, answers_yaml(SPEC + ".19", {step: value}))
    assert rc == 1 and data["first_break"] == step
    assert steps[step]["status"] == "wrong"
    assert steps[step]["diagnosis"] == [code]


def test_blank_last_entry_of_an_unappended_weight_row_is_still_diagnosed(cli, spec_file, world):
    T, aux = world
    w_old = softmax(aux["q"] @ aux["K0"].T / 2)
    text = answers_yaml(SPEC + ".19", {"gen1.layer0.attn.h0.weights": np.hstack([w_old, [[0.0]]])})
    text = text.replace(", 0.000]]", ", null]]")
    rc, data, steps = check(cli, spec_file, text)
    assert steps["gen1.layer0.attn.h0.weights"]["diagnosis"] == ["cache_not_appended"]


def test_every_model_catalogue_entry_is_planted():
    from symblock.grading.mistakes import EXPLANATIONS, MODEL_CATALOGUE
    positions = {"pe_sin_cos_swapped", "pe_base_10000"}   # planted in a base-100 table: test_check_positions.py
    assert {m.code for m in MODEL_CATALOGUE} == {c[1] for c in CASES} | positions
    assert all(EXPLANATIONS[m.code] for m in MODEL_CATALOGUE)


def test_the_transpose_slip_needs_d_model_equal_to_the_vocabulary():
    from symblock import load
    from symblock.grading.slips import transpose_applies
    assert transpose_applies("gen1.logits", spec_of())
    assert not transpose_applies("gen1.logits", load("tiny-gpt"))   # d_model 4, vocab 5


def test_a_carried_error_is_not_diagnosed_again(cli, spec_file, world):
    """A reused position in x: q from that x is carried, not wrong."""
    T, aux = world
    x = T["gen1.embed"] + aux["WP"][[0]]
    steps_ = {"gen1.x": x, "gen1.layer0.attn.q": x @ aux["W"]["W_Q"]}
    rc, data, steps = check(cli, spec_file, answers_yaml(SPEC + ".19", steps_))
    assert steps["gen1.x"]["diagnosis"] == ["position_reused"]
    assert steps["gen1.layer0.attn.q"]["status"] == "carried"


def test_grade_a_class_of_decoder_answers(tmp_path, capsys):
    """A set of decoder sheets, three answers files (right, one slip, blank): a gradebook row each."""
    import csv
    set_dir, answers = tmp_path / "set", tmp_path / "answers"
    assert main(["worksheet", SPEC, "--variants", "3", "--seed", "1", "--out", str(set_dir),
                 "--allow-repeats", "--format", "markdown"]) == 0
    capsys.readouterr()
    ids = sorted(p.name for p in (set_dir / "students").iterdir() if p.is_dir())
    answers.mkdir()
    for n, ident in enumerate(ids):
        T, aux = decode(spec_of(ident))
        nxt = int(np.argmax(T["gen1.logits"][0]))
        if n == 1:   # the head the wrong way round
            T = {**T, "gen1.logits": aux["h2"] @ aux["WE"]}
        text = answers_yaml(ident, T, nxt) if n < 2 else (set_dir / "students" / ident / "answers.yaml").read_text()
        text = text.replace('name: ""\n', "")   # the set's blank file names nobody yet
        (answers / f"s{n}.yaml").write_text(text.replace("steps:", f"name: student {n}\nsteps:"), encoding="utf-8")
    assert main(["grade", str(set_dir), str(answers)]) == 1   # the blank file is graded 0 and flagged
    capsys.readouterr()
    rows = {r["Student"]: r for r in csv.DictReader((answers / "graded" / "gradebook.csv").open(encoding="utf-8"))}
    assert set(rows) == {"student 0", "student 1", "student 2"}
    assert rows["student 0"]["total"] == f"{len(decode(spec_of(ids[0]))[0]) + 1}.00" == rows["student 0"]["max"] + ".00"
    assert rows["student 1"]["gen1.logits"] == "0.00" and rows["student 1"]["gen1.probs"] == "1.00"
    assert rows["student 2"]["total"] == "0.00"
    summary = (answers / "graded" / "summary.md").read_text(encoding="utf-8")
    assert "logits_untied_transpose" in summary


def test_a_two_layer_two_head_pre_ln_model_with_a_final_norm_checks_too(tmp_path, capsys):
    """tiny-gpt (2 Pre-LN layers, 2 heads, final LayerNorm, vocab 5): every asked step of its
    decoder sheet from the NumPy reference path (reference/numeric_model.py, a full recompute
    without a cache, named as the cached steps), rounded to 3 places, is marked right."""
    from symblock import forward, load
    from symblock.exercises import variant
    from symblock.reference import numeric_model
    spec = load("tiny-gpt")
    ex = variant.build("tiny-gpt", forward(spec)).exercise
    ref = numeric_model.forward(spec)
    steps = {}
    for name in ex.ask:
        if name in ex.extra:
            steps[name] = np.array([[1.0, 1.0, 0.0]])
        elif not name.endswith("next_token"):
            steps[name] = ref[name]
    assert any(".layer1." in n for n in steps) and "gen1.norm_final" in steps and "gen1.layer0.attn.concat" in steps
    text = answers_yaml("tiny-gpt", steps, int(ref["gen1.next_token"][0][0]))
    path = tmp_path / "answers.yaml"
    path.write_text(text.replace("id: tiny-gpt\n", ""), encoding="utf-8")
    assert main(["check", "tiny-gpt", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {s["status"] for s in data["steps"] if s["asked"]} == {"correct"}
    # a slip in the second layer is named on that layer's block: the sample variance of LayerNorm
    r = ref["gen1.layer1.resid1"][-1:]
    bad = ((r - r.mean()) ** 2).sum(keepdims=True) / 3
    path.write_text(answers_yaml("x", {"gen1.layer1.norm2.var": bad}).replace("id: x\n", ""), encoding="utf-8")
    assert main(["check", "tiny-gpt", str(path), "--json"]) == 1
    step = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}["gen1.layer1.norm2.var"]
    assert step["diagnosis"] == ["ln_sample_variance"]


def test_an_encoder_decoders_carried_step_is_worked_with_the_decoders_weights(cli, spec_file):
    """A decoder layer's step recomputed from the person's own wrong input uses that layer's
    weights (layer0.W_Q), not the encoder layer's of the same index (enc.layer0.W_Q)."""
    data, source = variants.read("tiny-translate")
    spec = variants.with_seed(data, source, 381)
    x = np.array([[1.0, 0.0, 1.0, 0.0]])   # a wrong gen1.x
    q = x @ arr(spec.layers[0].params["W_Q"])
    assert not np.allclose(q, x @ arr(spec.encoder[0].params["W_Q"]))   # the two weights tell apart
    _, _, steps = check(cli, spec_file, answers_yaml("tiny-translate.381", {"gen1.x": x, "gen1.layer0.attn.q": q}))
    assert steps["gen1.x"]["status"] == "wrong" and steps["gen1.layer0.attn.q"]["status"] == "carried"
