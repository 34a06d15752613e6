"""The exercise generator: every guarantee checked on the generated values (exact trace or NumPy),
never on the generator's own flags; determinism; impossible constraints fail fast by name; the
stress report recomputed independently."""
from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from symblock.engine import exact
from symblock.exercises import generate
from symblock.reference import numeric
from symblock.cli import main
from symblock.engine.spec import SpecError, draw
from symblock.exercises.generate import from_mapping
from symblock.exercises.stress import stress

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(min_value=0, max_value=10**6)


def frac(e) -> Fraction:
    assert isinstance(e, exact.Real) and e.is_rational, f"not rational: {e!r}"
    return Fraction(int(e.q.p), int(e.q.q))


def values(trace, name):
    return trace[name].value.rows


def norm_names(trace):
    return [n[:-4] for n in trace.names() if n.endswith((".std", ".rms"))]


def norm_input(trace, name):
    return trace[trace[f"{name}.mean" if f"{name}.mean" in trace else f"{name}.ms"].inputs[0]].value.rows


def V(seed, **rnd):
    return generate.variant({"random": {"seed": seed, **rnd}}, "test")


# ---------------------------------------------------------------- guarantees, on the values

@SETTINGS
@given(seeds)
def test_exact_norm_sigma_rational_where_input_rational(seed):
    v = V(seed, difficulty="medium")
    checked = 0
    for name in [n for n in norm_names(v.trace) if n in v.constraints.exact_norm]:  # medium: norm1
        stat = f"{name}.std" if f"{name}.std" in v.trace else f"{name}.rms"
        for row, (root,) in zip(norm_input(v.trace, name), values(v.trace, stat)):
            if all(e.is_rational for e in row):
                frac(root)
                checked += 1
    assert checked >= v.spec.dims.seq_len  # norm1 reads the integer X: every row is checked


@SETTINGS
@given(seeds)
def test_integer_scores_q_k_v_scores_are_integers(seed):
    v = V(seed, difficulty="easy", staged=None)  # unstaged: attention steps stay in the trace
    names = [n for n in v.trace.names() if n in ("attn.q", "attn.k", "attn.v") or n.endswith(".scores")]
    assert len(names) >= 4
    for n in names:
        for row in values(v.trace, n):
            assert all(frac(e).denominator == 1 for e in row)


@SETTINGS
@given(seeds)
def test_easy_staged_given_are_exact_decimals_and_later_steps_rational(seed):
    v = V(seed, difficulty="easy")
    step = v.trace["attn.out"]
    assert step.given
    for row, full in zip(step.value.rows, v.unstaged["attn.out"].value.rows):
        for e, f in zip(row, full):
            q = frac(e)
            assert (q * 100).denominator == 1                       # two decimal places
            assert abs(q - Fraction(float(f))) <= Fraction(1, 200)  # the rounded full value
    for name in ("resid1", "norm1.mean", "norm1.var"):  # σ itself may be irrational (no exact_norm)
        assert all(e.is_rational for row in values(v.trace, name) for e in row), name
    # integer scores and distinct softmax rows hold on the unstaged attention (stage 1)
    for row in values(v.unstaged, "attn.h0.scores"):
        assert all(frac(e).denominator == 1 and -6 <= frac(e) <= 6 for e in row)


@SETTINGS
@given(seeds, st.sampled_from(["easy", "medium", "hard"]))
def test_softmax_distinct_no_ties_and_score_range(seed, difficulty):
    v = V(seed, difficulty=difficulty)
    trace = v.unstaged
    for name in trace.names():
        if name.endswith(".weights"):
            src = trace[name].inputs[0]
            for i, row in enumerate(values(trace, src)):
                live = [float(e) for e in row if e is not exact.NEG_INF]
                assert len(set(live)) == len(live)  # floats differ, so the exact values do
                w = [float(e) for e in values(trace, name)[i] if float(e) > 0]
                assert len(set(w)) == len(w)
    if v.constraints.score_range:
        lo, hi = v.constraints.score_range
        for name in trace.names():
            if name.endswith(".scores"):
                assert all(lo <= Fraction(float(e)) <= hi for row in values(trace, name) for e in row)


def _score_ties(s) -> int:
    """Score rows with two equal entries, in the NumPy path (ties are exact, so 1e-9 tells)."""
    ref = numeric.forward(s)
    return sum(len(set(np.round(row, 9))) < len(row)
               for name, m in ref.items() if name.endswith(".scores") for row in m)


def test_softmax_distinct_where_the_scores_are_irrational():
    """Pre-LN over 3-wide rows without exact_norm: σ is irrational, so the Fraction pre-check
    cannot see the scores and the exact check must reject the ties. Weights in [0, 1] tie often."""
    def spec(seed, distinct):
        return generate.variant({"dims": {"seq_len": 3, "d_model": 3, "d_ff": 2},
                                 "block": {"norm_position": "pre"},
                                 "random": {"seed": seed, "ranges": {"X": [-1, 1], "weights": [0, 1]},
                                            "softmax_distinct": distinct}}, "test").spec
    assert sum(_score_ties(spec(seed, False)) > 0 for seed in range(2, 6)) >= 3  # ties are common
    assert all(_score_ties(spec(seed, True)) == 0 for seed in range(2, 6))


@SETTINGS
@given(seeds, st.sampled_from(["easy", "medium", "hard"]), st.sampled_from(["rows", "columns", "both"]))
def test_relu_mixed_both_signs_numpy(seed, difficulty, mode):
    v = V(seed, difficulty=difficulty, relu_mixed=mode)
    z = np.array(numeric.forward(v.spec)["ffn.hidden"])  # independent float64 path
    lines = ([*z] if mode in ("rows", "both") else []) + ([*z.T] if mode in ("columns", "both") else [])
    for line in lines:
        assert (line > 1e-12).any() and (line < -1e-12).any()


@SETTINGS
@given(seeds, st.sampled_from(["easy", "medium", "hard"]))
def test_no_degenerate_rows(seed, difficulty):
    v = V(seed, difficulty=difficulty)
    for name in norm_names(v.trace):
        for row in norm_input(v.trace, name):
            x = np.array([float(e) for e in row])
            dev = np.abs(x - x.mean())
            assert dev.max() - dev.min() > 1e-9  # not constant, not forced to ±1


@SETTINGS
@given(seeds)
def test_exact_scale_and_ranges_and_sparsity(seed):
    v = V(seed, ranges={"X": [-2, 2], "weights": [0, 1], "W_Q": [-3, -1]}, sparsity="1/3",
          exact_scale=True, difficulty="medium")
    for e in values(v.trace, "attn.h0.scaled")[0]:
        frac(e)
    X = np.array(v.spec.X.tolist(), dtype=float)
    assert X.min() >= -2 and X.max() <= 2
    WQ = np.array(v.spec.params["W_Q"].tolist(), dtype=float)
    assert WQ.max() <= 0 and WQ.min() >= -3
    for name in ("W_K", "W_V", "W_O", "W_1", "W_2"):
        W = np.array(v.spec.params[name].tolist(), dtype=float)
        assert set(np.unique(W)) <= {0.0, 1.0}
        assert (W == 0).sum() >= math.ceil(W.size / 3)


@SETTINGS
@given(seeds)
def test_hard_preset_shape(seed):
    v = V(seed, difficulty="hard")
    o, d = v.spec.options, v.spec.dims
    assert d.heads == 2 and o.causal and o.activation == "gelu" and o.bias and o.norm_position == "pre"


# ---------------------------------------------------------------- determinism, hooks

def test_same_seed_same_variant_and_attempt_zero_is_spec_draw():
    a, b = V(5, difficulty="medium"), V(5, difficulty="medium")
    assert a.key == b.key and a.spec == b.spec
    assert V(6, difficulty="medium").key != a.key
    # no constraint bites: the first draw is spec.draw's, tensor for tensor
    plain = from_mapping({"dims": {"seq_len": 2, "d_model": 4, "d_ff": 3, "heads": 1},
                          "random": {"seed": 9, "low": -2, "high": 2}})
    gen = generate.variant({"dims": {"seq_len": 2, "d_model": 4, "d_ff": 3, "heads": 1},
                            "random": {"seed": 9, "low": -2, "high": 2, "max_draws": 5}}, "t")
    assert gen.draws == 1 and dict(gen.spec.params) == dict(plain.params) and gen.spec.X == plain.X
    assert draw(9, "W_Q", (4, 4), -2, 2).tolist() == [list(r) for r in dict(gen.key)["W_Q"]]


def test_from_mapping_runs_the_generator():
    spec = from_mapping({"random": {"seed": 3, "difficulty": "medium"}}, "t")
    assert spec.seed == 3 and spec.X == V(3, difficulty="medium").spec.X


@pytest.mark.parametrize("rnd, where", [
    ({"dims": {"seq_len": 2, "d_model": 3, "d_ff": 2}, "block": {"norm_position": "pre"},
      "random": {"seed": 1, "low": 0, "high": 1, "exact_norm": True}}, "random.exact_norm"),
    ({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2}, "random": {"no_degenerate_rows": True}},
     "random.no_degenerate_rows"),
    ({"dims": {"seq_len": 2, "d_model": 4, "d_ff": 2, "heads": 2}, "random": {"exact_scale": True}},
     "random.exact_scale"),
    ({"dims": {"seq_len": 2, "d_model": 4, "d_ff": 2}, "block": {"norm_position": "pre"},
      "random": {"integer_scores": True, "no_degenerate_rows": True}}, "random.integer_scores"),
    ({"random": {"exact_norm": "yes"}}, "random.exact_norm"),
    ({"random": {"ranges": {"Y": [0, 1]}}}, "random.ranges.Y"),
    ({"random": {"sparsity": 1}}, "random.sparsity"),
    ({"random": {"difficulty": "extreme"}}, "random.difficulty"),
    ({"dims": {"seq_len": 2, "d_model": 4, "d_ff": 2}, "random": {"staged": {"step": "attn.nope"}}},
     "random.staged.step"),
])
def test_impossible_or_bad_constraints_fail_by_name(rnd, where):
    with pytest.raises(SpecError) as e:
        from_mapping(rnd, "t")
    assert e.value.where == where, str(e.value)


def test_cli_exit_2_names_the_constraint(tmp_path, capsys):
    p = tmp_path / "s.yaml"
    p.write_text("dims: {seq_len: 2, d_model: 3, d_ff: 2}\nblock: {norm_position: pre}\n"
                 "random: {seed: 1, low: 0, high: 1, exact_norm: true}\n")
    for argv in (["forward", str(p)], ["stress", str(p), "-n", "3"],
                 ["stress", "--difficulty", "easy", "-n", "2", "--range", "X=0:0"]):
        assert main(argv) == 2
        assert "random." in capsys.readouterr().err


def test_worksheet_variants_with_constraints(tmp_path):
    from symblock.exercises.variant import draw_set
    p = tmp_path / "s.yaml"
    p.write_text("random: {seed: 1, difficulty: medium}\n")
    out = [(v.ident, v.spec, v.trace) for v in draw_set(str(p), 3, 1)]
    for (ident, spec, trace), seed in zip(out, (1, 2, 3)):
        assert ident.endswith(f".{seed}") and spec.X == V(seed, difficulty="medium").spec.X


# ---------------------------------------------------------------- stress, recomputed

def test_stress_numbers_recomputed_independently(capsys):
    data = {"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
            "block": {"attention_scale": "none"},
            "random": {"seed": 1, "ranges": {"X": [0, 1], "weights": [0, 1]}, "softmax_distinct": True,
                       "integer_scores": True}}
    rep = stress(data, "t", 12, first_seed=4)
    draws, rejected, keys, spans = 0, 0, set(), {}
    for seed in range(4, 16):
        v = generate.variant(data, "t", overrides={"seed": seed})
        draws += v.draws
        rejected += sum(v.rejections.values())
        keys.add(v.key)
        for name, m in numeric.forward(v.spec).items():
            a = np.array(m, dtype=float)
            lo, hi = spans.get(name, (np.inf, -np.inf))
            spans[name] = (min(lo, a.min()), max(hi, a.max()))
    assert rep.draws == draws and sum(rep.rejections.values()) == rejected
    assert rep.distinct == len(keys)
    assert rep.space == 2 ** (4 + 4 * 4 + 4 + 4)  # X 2×2, W_Q W_K W_V W_O 2×2, W_1 2×2, W_2 2×2 in 0..1
    for name, (lo, hi) in spans.items():
        if name in rep.steps:
            assert rep.steps[name].min == pytest.approx(lo, abs=1e-12)
            assert rep.steps[name].max == pytest.approx(hi, abs=1e-12)
    assert rep.steps["attn.h0.scores"].rational == 12 and rep.steps["attn.h0.weights"].rational == 0
    assert rep.steps["x"].largest_integer == 1
    # the CLI prints the same numbers
    assert main(["stress", "--seed", "4", "-n", "12", "--json", *_yaml(data)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["draws"] == draws and got["distinct"] == rep.distinct and got["space_bound"] == rep.space


def _yaml(data):
    import tempfile, yaml
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    yaml.safe_dump(data, f)
    f.close()
    return [f.name]


def test_stress_text_output(capsys):
    assert main(["stress", "--difficulty", "medium", "-n", "5"]) == 0
    out = capsys.readouterr().out
    assert "rejected draws" in out and "norm1.std" in out and "distinct variants: 5 of 5" in out
    assert "variety of the asked steps over 5 variants" in out and "time by hand" in out


def test_draws_per_variant_stay_small():
    """Constraints built into the draws: candidate blocks per variant, counted (the bench times them)."""
    for difficulty in ("easy", "medium", "hard"):
        vs = [V(seed, difficulty=difficulty) for seed in range(1, 9)]
        assert sum(v.draws for v in vs) / len(vs) <= 5, difficulty
        assert sum(v.forwards for v in vs) / len(vs) <= 6, difficulty


def test_worksheet_random_flags_reach_the_variants(tmp_path):
    """`symblock worksheet --difficulty easy --variants N` draws constrained variants, and --id with
    the same flags regenerates one byte for byte."""
    from symblock.cli import main
    spec_file = tmp_path / "easy.yaml"
    spec_file.write_text('title: "Easy"\nrandom: {seed: 1}\n')
    assert main(["worksheet", str(spec_file), "--difficulty", "easy", "--variants", "2", "--seed", "3",
                 "--format", "markdown", "--out", str(tmp_path / "set")]) == 0
    ids = sorted(p.name for p in (tmp_path / "set" / "students").iterdir() if p.is_dir())
    assert len(ids) == 2
    for ident in ids:  # easy: Post-LN, one head, d_model 3
        key = (tmp_path / "set" / "instructor" / ident / "key.md").read_text()
        assert "Post-LN" in key and "one head" in key
    assert main(["worksheet", str(spec_file), "--difficulty", "easy", "--id", ids[0], "--format", "markdown",
                 "--out", str(tmp_path / "again")]) == 0
    for name, side in (("sheet.md", "students"), ("key.md", "instructor")):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "set" / side / ids[0] / name).read_bytes()


def test_stress_on_a_model_spec_says_where_its_variants_are_drawn(capsys):
    from symblock import cli
    assert cli.main(["stress", "tiny-decoder", "-n", "2"]) == 2
    err = capsys.readouterr().err
    assert "a model spec" in err and "symblock worksheet SPEC --variants N" in err and "unknown key" not in err, err
