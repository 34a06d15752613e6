"""The checker on RoPE and grouped K/V heads, end to end: answers from the NumPy float64 forwards of
reference/ (independent of the engine) or worked here in NumPy, graded full marks; an error carried
into the rotation; planted slips named in a block and in a tiny Llama's cached decoding step."""
import json
import math

import numpy as np

from symblock.exercises.generate import load
from symblock.reference import numeric, numeric_model


def fmt(v, places):
    return "-inf" if np.isneginf(v) else f"{v:.{places}f}"


def answers(steps: dict, places=3, ident=None) -> str:
    lines = ([f"id: {ident}"] if ident else []) + [f"decimals: {places}", "steps:"]
    for name, m in steps.items():
        rows = ", ".join("[" + ", ".join(fmt(v, places) for v in r) + "]" for r in np.atleast_2d(m))
        lines.append(f"  {name}: [{rows}]")
    return "\n".join(lines) + "\n"


def check(cli, spec_file, spec, steps, places=3, *extra):
    code, out, err = cli("check", spec, spec_file(answers(steps, places), "answers.yaml"), "--json", *extra)
    assert err == ""
    data = json.loads(out)
    return code, data, {s["name"]: s for s in data["steps"]}


def turn_half(x, positions, sign=1.0, theta=10000.0):
    """RoPE with half pairs (i, i + w/2) over heads of width 2 (the examples' d_k): one pair per
    head, turned by m radians (θ^0 = 1)."""
    out = x.copy()
    for r, m in enumerate(positions):
        c, s = math.cos(sign * m), math.sin(sign * m)
        for o in range(0, x.shape[1], 2):
            out[r, o], out[r, o + 1] = x[r, o] * c - x[r, o + 1] * s, x[r, o + 1] * c + x[r, o] * s
    return out


def test_a_rope_gqa_block_answered_with_numpy_gets_full_marks(cli, spec_file):
    T = numeric.forward(load("rope-gqa"))
    asked = {k: v for k, v in T.items() if k != "x"}
    code, data, steps = check(cli, spec_file, "rope-gqa", asked)
    assert code == 0 and data["ok"], [s for s in steps.values() if s["status"] not in ("correct", "rounded")]
    assert {steps[n]["status"] for n in ("attn.q_rot", "attn.k_rot", "attn.h1.scores", "attn.h1.out")} == {"correct"}


def test_an_error_in_q_is_carried_into_its_rotation_and_the_scores(cli, spec_file):
    T = numeric.forward(load("rope-gqa"))
    q = T["attn.q"].copy()
    q[1, 2] += 1                         # a slip in Q row 2, head 1 ...
    q_rot = turn_half(q, [0, 1, 2])      # ... rotated correctly from the person's own Q
    s1 = np.round(q_rot, 3)[:, 2:4] @ T["attn.k_rot"][:, 0:2].T   # head 1 (as written) against K/V head 0
    code, data, steps = check(cli, spec_file, "rope-gqa", {"attn.q": q, "attn.q_rot": q_rot, "attn.h1.scores": s1})
    assert code == 1 and data["first_break"] == "attn.q"
    assert steps["attn.q_rot"]["status"] == "carried"
    assert steps["attn.h1.scores"]["status"] == "carried"


def test_a_rotation_turned_the_wrong_way_is_named(cli, spec_file):
    T = numeric.forward(load("rope-gqa"))
    code, data, steps = check(cli, spec_file, "rope-gqa", {"attn.k_rot": turn_half(T["attn.k"], [0, 1, 2], -1.0)})
    assert code == 1 and steps["attn.k_rot"]["diagnosis"] == ["rope_sign_flipped"]


def _rms(x, g, eps=0.01):
    return x / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + eps) * g


def test_a_tiny_llama_decoding_step_graded_and_its_slip_named_at_the_new_position(cli, spec_file, tmp_path):
    """The decoder preset of tiny-llama: every asked step from the NumPy model forward is right; the
    new token sits at position 3 (the prompt has 3): its q turned by +3 is right, by −3 the sign slip."""
    spec = load("tiny-llama", allow_model=True)
    T = numeric_model.forward(spec)
    out = tmp_path / "ws"
    code, _, err = cli("worksheet", "tiny-llama", "--out", str(out), "--format", "markdown")
    assert code == 0, err
    asked = [n for n in T if n.startswith("gen1.") and not n.endswith(".output")]
    code, data, steps = check(cli, spec_file, "tiny-llama", {n: T[n] for n in asked}, 3, "--preset", "decoder")
    assert data["ok"], [(n, s["status"]) for n, s in steps.items() if s["status"] not in ("correct", "rounded", "given")]
    L = "gen1.layer0."
    W = {k: np.array(v.tolist(), dtype=float) for k, v in spec.layers[0].params.items()}
    x = np.array(spec.W_E.tolist(), dtype=float)[[int(T["next_token"][0][0])]]
    q = _rms(x, W["ln1.gamma"]) @ W["W_Q"]
    assert np.allclose(q, T[L + "attn.q"])                 # the NumPy model's own row, re-derived here
    code, data, steps = check(cli, spec_file, "tiny-llama", {L + "attn.q_rot": turn_half(q, [3], -1.0)}, 3,
                              "--preset", "decoder")
    assert steps[L + "attn.q_rot"]["diagnosis"] == ["rope_sign_flipped"]
    code, data, steps = check(cli, spec_file, "tiny-llama", {L + "attn.q_rot": turn_half(q, [3])}, 3,
                              "--preset", "decoder")
    assert steps[L + "attn.q_rot"]["status"] == "correct"
