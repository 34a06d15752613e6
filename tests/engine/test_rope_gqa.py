"""RoPE and grouped K/V heads in the exact block: numbers worked by hand, the properties the
rotation must have, and the errors a spec gets for the wrong shapes."""
import math

import numpy as np
import pytest

from fractions import Fraction

from symblock.engine import block, exact, rope, spec
from symblock.engine.steps import Dims, Options, param_shape, step_names


def _load(data):
    return spec.from_mapping(data, "t.yaml")


def _block(rope=None, heads=2, kv_heads=None, X=None, positions=None, d_model=4, **weights):
    dims = {"seq_len": len(X) if X else 3, "d_model": d_model, "d_ff": 2, "heads": heads}
    if kv_heads:
        dims["kv_heads"] = kv_heads
    data = {"dims": dims, "block": {"norm_position": "pre", "norm": "rmsnorm", "causal": True,
                                    **({"rope": rope} if rope is not None else {})},
            "random": {"seed": 5}}
    if X:
        data["inputs"] = {"X": X}
    if positions is not None:
        data.setdefault("inputs", {})["positions"] = positions
    if weights:
        data["weights"] = weights
    return _load(data)


def test_mqa_equals_multi_head_attention_with_the_kv_weights_repeated_per_head():
    """One K/V head read by both query heads is MHA whose W_K, W_V hold that head twice
    (Hugging Face's repeat_kv): every head's output, exactly."""
    gqa = _block(heads=2, kv_heads=1, d_model=4)
    def raw(name):
        return [[str(v) for v in r] for r in gqa.params[name].tolist()]
    WK, WV = raw("W_K"), raw("W_V")
    assert gqa.params["W_K"].shape == (4, 2)                  # d_model × kv_heads·d_k
    mha = _block(heads=2, d_model=4, W_Q=raw("W_Q"), W_O=raw("W_O"), W_K=[r + r for r in WK],
                 W_V=[r + r for r in WV], W_1=raw("W_1"), W_2=raw("W_2"))
    a, b = block.forward(gqa), block.forward(mha)
    assert a["attn.k"].value.shape == (3, 2) and b["attn.k"].value.shape == (3, 4)
    for name in ("attn.h0.weights", "attn.h1.weights", "attn.out", "output"):
        assert a[name].value.rows == b[name].value.rows or all(
            exact.sign(x - y) == 0 for r, s in zip(a[name].value.rows, b[name].value.rows) for x, y in zip(r, s)), name


def test_grouped_heads_read_their_kv_head_in_repeat_kv_order():
    """heads 4 over kv_heads 2: heads 0, 1 read K/V head 0 and heads 2, 3 head 1 (h // 2,
    not h mod 2): checked on the scores worked from the columns by hand."""
    s = _block(heads=4, kv_heads=2, d_model=4)
    t = block.forward(s)
    q, k = t["attn.q"].value, t["attn.k"].value
    assert k.shape == (3, 2)
    for h, g in ((0, 0), (1, 0), (2, 1), (3, 1)):
        want = [[float(q[i, h] * k[j, g]) for j in range(3)] for i in range(3)]
        got = t[f"attn.h{h}.scores"].value.floats()
        assert np.allclose(got, want, atol=1e-12), h
    assert "W_K" in s.params and param_shape("W_V", s.dims) == (4, 2)


def test_rope_half_and_interleaved_turn_the_pairs_each_style_names():
    """q = e_0 at position 1, d_k = 4, θ = 10000: pair 0 turns by 1 rad. Half pairs (0, 2),
    interleaved (0, 1); pair 1 turns by 10000^(-1/2) = 1/100 rad."""
    X = [[1, 0, 0, 0], [1, 0, 0, 0]]
    eye = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    for style, where in (("half", 2), ("interleaved", 1)):
        s = _block(rope={"theta": 10000, "style": style}, heads=1, X=X, W_Q=eye, W_K=eye, W_V=eye, W_O=eye)
        row = s and block.forward(s)["attn.q_rot"].value.rows[1]
        c, si = math.cos(1.0), math.sin(1.0)
        # norm1 scales e_0 by 1/rms = 2 (rms of (1,0,0,0) is 1/2)
        want = [0.0] * 4
        want[0], want[where] = 2 * c, 2 * si
        assert [float(v) for v in row] == pytest.approx(want, abs=1e-15), style
        assert exact.text(row[where]) == "2*sin(1)"
    e1 = [[0, 1, 0, 0], [0, 1, 0, 0]]
    s = _block(rope=True, heads=1, X=e1, W_Q=eye, W_K=eye, W_V=eye, W_O=eye)
    row = block.forward(s)["attn.q_rot"].value.rows[1]            # half: pair 1 is (1, 3)
    assert exact.text(row[1]) == "2*cos(1/100)" and exact.text(row[3]) == "2*sin(1/100)"


def test_rotated_scores_depend_only_on_the_distance_between_positions():
    a = block.forward(_block(rope=True, positions=[0, 1, 2]))
    b = block.forward(_block(rope=True, positions=[7, 8, 9]))
    for h in (0, 1):
        assert np.allclose(a[f"attn.h{h}.scores"].value.floats(), b[f"attn.h{h}.scores"].value.floats(), atol=1e-12)
    # its own position's rotation cancels exactly: q_m · k_m is the unrotated product
    s, plain = a["attn.h0.scores"].value, block.forward(_block())["attn.h0.scores"].value
    assert all(s[i, i] == plain[i, i] or exact.sign(s[i, i] - plain[i, i]) == 0 for i in range(3))
    assert not np.allclose(a["attn.h0.scores"].value.floats(), plain.floats(), atol=1e-6)


def test_rope_steps_sit_between_the_projections_and_the_scores():
    names = step_names(Dims(3, 4, 2, 2, kv_heads=1), Options(rope=_block(rope=True).options.rope))
    assert names[names.index("attn.v") + 1:names.index("attn.v") + 3] == ["attn.q_rot", "attn.k_rot"]
    t = block.forward(_block(rope=True, kv_heads=1))
    assert t["attn.h1.scores"].inputs == ("attn.q_rot", "attn.k_rot")
    assert t["attn.k_rot"].value.shape == (3, 2) and t["attn.q_rot"].value.shape == (3, 4)


def test_an_irrational_frequency_stays_exact():
    """d_k = 6, θ = 10000: 10000^(-1/3) is no rational nor square root: 10^(-4/3), one exact power
    (engine/powers.py, shared with sinusoidal positions)."""
    f = rope.power(10000, Fraction(-1, 3))
    assert float(f) == pytest.approx(10000 ** (-1 / 3), rel=1e-15) and not f.is_rational
    assert rope.power(10000, Fraction(-1, 2)).q == exact.fmpq(1, 100)
    assert rope.power(Fraction(1, 8), Fraction(2, 3)).q == exact.fmpq(1, 4)
    assert exact.text(rope.power(10, Fraction(-1, 2))) == "sqrt(10)/10"
    assert exact.text(rope.frequency(Fraction(10000), 1, 6)) == "(10**(-4/3))"


@pytest.mark.parametrize("data, where, words", [
    ({"dims": {"heads": 4, "kv_heads": 3}}, "dims.kv_heads", "divisor of heads = 4"),
    ({"dims": {"heads": 2, "kv_heads": 4}}, "dims.kv_heads", "divisor of heads = 2"),
    ({"dims": {"heads": 1, "d_k": 3, "d_v": 3}, "block": {"rope": True}}, "block.rope", "d_k must be even"),
    ({"block": {"rope": {"style": "rotary"}}}, "block.rope.style", "half, interleaved"),
    ({"block": {"rope": {"theta": 1}}}, "block.rope.theta", "> 1"),
    ({"block": {"rope": "yes"}}, "block.rope", "true, false or a mapping"),
    ({"block": {"rope": True}, "inputs": {"positions": [0, 1]}}, "inputs.positions", "3 whole numbers"),
    ({"block": {"rope": True}, "inputs": {"positions": [0, -1, 2]}}, "inputs.positions[1]", ">= 0"),
])
def test_wrong_rope_and_kv_heads_fields_are_named(data, where, words):
    base = {"dims": {"seq_len": 3, "d_model": 4, "d_ff": 2, "heads": 2}, "random": {"seed": 1}}
    base["dims"].update(data.get("dims", {}))
    for key in ("block", "inputs"):
        if key in data:
            base[key] = data[key]
    with pytest.raises(spec.SpecError) as e:
        _load(base)
    assert e.value.where == where and words in e.value.message


def test_a_bad_kv_heads_exits_2_without_a_traceback(tmp_path, capsys):
    from symblock.cli import main
    p = tmp_path / "b.yaml"
    p.write_text("dims: {seq_len: 2, d_model: 4, d_ff: 2, heads: 4, kv_heads: 3}\nrandom: {seed: 1}\n")
    assert main(["forward", str(p)]) == 2
    err = capsys.readouterr().err
    assert "dims.kv_heads" in err and "Traceback" not in err


@pytest.mark.parametrize("extra", ["block: {rope: true}\n", "dims: {seq_len: 2, d_model: 4, d_ff: 2, heads: 2, kv_heads: 1}\n"])
def test_sheets_and_the_checker_work_rope_and_grouped_heads(tmp_path, capsys, extra):
    """Sheets, keys and the checker work the rotated steps and the grouped columns (no refusal):
    a sheet is written, and a wrong attn.q is marked wrong (exit 1), not refused."""
    from symblock.cli import main
    spec_path, answers = tmp_path / "b.yaml", tmp_path / "a.yaml"
    dims = "" if "dims" in extra else "dims: {seq_len: 2, d_model: 4, d_ff: 2, heads: 2}\n"
    spec_path.write_text(dims + extra + "random: {seed: 1}\n")
    answers.write_text("steps: {attn.q: [[1, 2, 3, 4], [1, 2, 3, 4]]}\n")
    assert main(["worksheet", str(spec_path), "--out", str(tmp_path / "out")]) == 0
    key = (tmp_path / "out" / "key.md").read_text(encoding="utf-8")
    assert ("attn.q_rot" in key) == ("rope" in extra) and ("reads K/V head 0" in key) == ("kv_heads" in extra)
    assert main(["check", str(spec_path), str(answers)]) == 1
    out = capsys.readouterr().out
    assert "wrong    attn.q" in out
