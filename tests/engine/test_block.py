"""The exact forward against numbers worked out by hand (seed 000 and small cases)."""
import sympy
from sympy import E, Rational, erf, exp, sqrt

from symblock.engine import block, spec
from symblock.engine.steps import step_names, step_shape


def values(trace, name, max_size=2000):
    return trace[name].value.to_sympy(max_size)


def same(a, b) -> bool:
    a, b = sympy.Matrix(a), sympy.Matrix(b)
    return a.shape == b.shape and all(sympy.simplify(x - y) == 0 for x, y in zip(a, b))


def fwd(**over):
    data = {"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
            "weights": {k: [[1, 0], [0, 1]] for k in ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")},
            "inputs": {"X": [[1, 0], [0, 1]]}}
    for key, val in over.items():
        data.setdefault(key, {})
        data[key] = {**data[key], **val} if isinstance(val, dict) else val
    return block.forward(spec.from_mapping(data))


def test_seed_000_reproduces_the_article():
    """Every number the article writes down (seed 000_58a5ab84bcc093d3, sections 五 to 十五)."""
    t = block.forward(spec.load("seed-post-ln"))
    R = Rational
    assert values(t, "resid1") == sympy.Matrix([[R("2.401"), R("0.599")], [R("1.504"), R("1.752")],
                                                [R("2.576"), R("1.716")]])
    assert values(t, "norm1.mean") == sympy.Matrix([R("1.5"), R("1.628"), R("2.146")])
    assert values(t, "norm1.var")[0] == R("0.901") ** 2  # the article rounds it to 0.8118
    assert values(t, "norm1.std") == sympy.Matrix([R("0.901"), R("0.124"), R("0.43")])
    assert values(t, "norm1") == sympy.Matrix([[1, -1], [-1, 1], [1, -1]])
    assert values(t, "ffn.hidden")[0, :] == sympy.Matrix([[1, -1, 2]])
    assert values(t, "ffn.act")[0, :] == sympy.Matrix([[1, 0, 2]])
    assert values(t, "ffn.act")[1, :] == sympy.Matrix([[0, 1, 0]])
    assert values(t, "ffn.out") == sympy.Matrix([[3, 2], [0, 1], [3, 2]])
    assert values(t, "resid2") == sympy.Matrix([[4, 1], [-1, 2], [4, 1]])
    assert values(t, "norm2.mean") == sympy.Matrix([R(5, 2), R(1, 2), R(5, 2)])
    assert values(t, "norm2.std") == sympy.Matrix([R(3, 2)] * 3)
    assert values(t, "output") == sympy.Matrix([[1, -1], [-1, 1], [1, -1]])
    assert t["attn.out"].given and not t["resid1"].given
    assert "attn.q" not in t  # cut off by the given attention output


def test_single_head_softmax_by_hand():
    """X = I, all weights I, no scale: scores = I, so row 0 of the weights is [e, 1]/(e + 1)."""
    t = fwd(block={"attention_scale": "none"})
    assert values(t, "attn.h0.scores") == sympy.eye(2)
    assert same(values(t, "attn.h0.weights"), [[E / (E + 1), 1 / (E + 1)], [1 / (E + 1), E / (E + 1)]])
    assert same(values(t, "attn.out"), [[E / (E + 1), 1 / (E + 1)], [1 / (E + 1), E / (E + 1)]])
    assert "attn.h0.scaled" not in t and "attn.h0.masked" not in t and "attn.concat" not in t


def test_scale_mask_and_heads_by_hand():
    t = fwd(block={"causal": True})
    assert same(values(t, "attn.h0.scaled"), [[1 / sqrt(2), 0], [0, 1 / sqrt(2)]])
    assert values(t, "attn.h0.masked")[0, 1] == -sympy.oo
    w = values(t, "attn.h0.weights")
    assert w[0, 0] == 1 and w[0, 1] == 0  # first token sees only itself
    assert same(w[1, :], [[1 / (1 + exp(1 / sqrt(2))), exp(1 / sqrt(2)) / (1 + exp(1 / sqrt(2)))]])
    # two heads of width 1: head 0 sees column 0 only, scores [[1, 0], [0, 0]]
    t2 = fwd(dims={"heads": 2}, block={"attention_scale": "none"})
    assert values(t2, "attn.h0.scores") == sympy.Matrix([[1, 0], [0, 0]])
    assert same(values(t2, "attn.h0.out"), [[E / (E + 1)], [Rational(1, 2)]])
    assert same(values(t2, "attn.h1.out"), [[Rational(1, 2)], [E / (E + 1)]])
    assert same(values(t2, "attn.concat"), [[E / (E + 1), Rational(1, 2)], [Rational(1, 2), E / (E + 1)]])


def test_out_proj_false_and_biases():
    t = fwd(block={"out_proj": False, "attention_scale": "none"},
            weights={"W_O": [[5, 5], [5, 5]], "b_Q": [1, 0], "b_1": [0, -1]})
    assert values(t, "attn.out") == values(t, "attn.h0.out")  # no W_O applied
    assert values(t, "attn.q") == sympy.Matrix([[2, 0], [1, 1]])  # X + b_Q
    assert "W_O" not in t.params


def test_layernorm_with_eps_gamma_beta_by_hand():
    """Pre-LN row [1, 3]: μ = 2, σ² = 1, ε = 1 → σ = √2, normalised [−1/√2, 1/√2]·γ + β."""
    t = fwd(inputs={"X": [[1, 3], [0, 2]]},
            block={"norm_position": "pre", "eps": 1},
            weights={"ln1": {"gamma": [2, 3], "beta": [1, 0]}})
    assert values(t, "norm1.mean")[0] == 2 and values(t, "norm1.var")[0] == 1
    assert values(t, "norm1.std")[0] == sqrt(2)
    assert same(values(t, "norm1")[0, :], [[1 - sqrt(2), 3 / sqrt(2)]])


def test_rmsnorm_by_hand():
    """Row [3, 4]: mean square 25/2, rms 5/√2, normalised [3√2/5, 4√2/5]."""
    t = fwd(inputs={"X": [[3, 4], [1, 1]]}, block={"norm_position": "pre", "norm": "rmsnorm"})
    assert values(t, "norm1.ms")[0] == Rational(25, 2)
    assert same([[values(t, "norm1.rms")[0]]], [[5 / sqrt(2)]])
    assert same(values(t, "norm1")[0, :], [[3 * sqrt(2) / 5, 4 * sqrt(2) / 5]])
    assert "norm1.mean" not in t and "norm1.ms" in t


def test_activations_at_known_points():
    """FFN input rows fixed by giving norm1: hidden = [[1, -1], [2, 0]] (W_1 = I)."""
    given = {"norm1": [[1, -1], [2, 0]]}
    for act, at_1, at_2 in (
        ("relu", 1, 2),
        ("gelu", (1 + erf(1 / sqrt(2))) / 2, 1 + erf(sqrt(2))),
        ("silu", 1 / (1 + exp(-1)), 2 / (1 + exp(-2))),
        ("gelu_tanh", (1 + sympy.tanh(sqrt(2 / sympy.pi) * (1 + Rational(44715, 10**6)))) / 2, None),
    ):
        t = fwd(given=given, block={"activation": act})
        u = values(t, "ffn.act")
        assert same([[u[0, 0]]], [[at_1]]), act
        if at_2 is not None:
            assert same([[u[1, 0]]], [[at_2]]), act
        assert u[1, 1] == 0  # every activation maps 0 to 0
    t = fwd(given=given, block={"activation": "swiglu"}, weights={"W_3": [[2, 0], [0, 2]]})
    assert values(t, "ffn.gate") == sympy.Matrix([[2, -2], [4, 0]])
    assert same([[values(t, "ffn.act")[0, 0]]], [[2 / (1 + exp(-1))]])
    assert step_names(t.spec.dims, t.spec.options).index("ffn.gate") == \
        step_names(t.spec.dims, t.spec.options).index("ffn.hidden") + 1


def test_pre_ln_order_and_final_norm():
    t = fwd(block={"norm_position": "pre", "final_norm": True}, inputs={"X": [[1, 0], [0, 2]]})
    names = t.names()
    assert names.index("norm1") < names.index("attn.q") < names.index("resid1") < names.index("norm2")
    assert names[-5:] == ["norm_final.mean", "norm_final.var", "norm_final.std", "norm_final", "output"]
    assert values(t, "output") == values(t, "norm_final")
    assert t["norm1"].inputs[0] == "x" and t["norm2"].inputs[0] == "resid1"
    r1, f, r2 = (t[n].value.floats() for n in ("resid1", "ffn.out", "resid2"))
    assert all(abs(a + b - c) < 1e-12 for ra, rb, rc in zip(r1, f, r2) for a, b, c in zip(ra, rb, rc))


def test_steps_follow_the_vocabulary_in_order():
    for name in spec.block_example_names():
        s = spec.load(name)
        t = block.forward(s)
        order = step_names(s.dims, s.options)
        assert t.names() == [n for n in order if n in t.names()]
        for st in t:
            assert st.value.shape == step_shape(st.name, s.dims)


def test_symbolic_forward_on_a_2x2_block():
    """Symbols in, general formulas out; substituting numbers gives the NumPy path's values."""
    from symblock.reference import numeric
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2}, "random": {"seed": 4}})
    sym = block.forward(block.symbolic_spec(s))
    ref = numeric.forward(s)
    x11 = sympy.Symbol("x_{11}", real=True)
    assert values(sym, "x")[0, 0] == x11
    subs = {}
    for name, m in block.symbolic_spec(s).params.items():
        subs.update(zip(m, map(sympy.sympify, s.params[name])))
    subs.update(zip(block.symbolic_spec(s).X, map(sympy.sympify, s.X)))
    for step in ("attn.q", "attn.h0.scaled", "attn.h0.weights", "resid1", "norm1"):
        general = values(sym, step)
        assert general.free_symbols
        got = general.xreplace(subs)   # plain replacement: `subs` re-matches every subtree (~10 s here)
        for g, e in zip(got, ref[step].flatten()):
            assert abs(float(sympy.N(g, 40)) - e) < 1e-12 * max(1, abs(e)), step
    # a 2-d LayerNorm row [a, b] is (a − b)/|a − b| = ±1 whatever the numbers (seed 000, §十七)
    pre = block.forward(block.symbolic_spec(spec.from_mapping(
        {"dims": {"seq_len": 1, "d_model": 2, "d_ff": 1}, "block": {"norm_position": "pre"},
         "random": {"seed": 1}})))
    a, b = sympy.Symbol("x_{11}", real=True), sympy.Symbol("x_{12}", real=True)
    first = sympy.simplify(values(pre, "norm1", 10**6)[0, 0])
    assert sympy.simplify(first - (a - b) / sympy.Abs(a - b)) == 0


def test_symbolic_size_limit():
    s = spec.from_mapping({"dims": {"seq_len": 3, "d_model": 4, "d_ff": 2}, "random": {"seed": 1}})
    try:
        block.forward(block.symbolic_spec(s))
    except spec.SpecError as e:
        assert "symbolic forward is limited" in str(e)
    else:
        raise AssertionError("a 3×4 symbolic forward must be refused")


def test_hidden_cancellations_come_out_exact():
    """LayerNorm rows sum to 0, so a constant W_1 column gives an exact 0 before ReLU, and a
    2-d LayerNorm row is exactly ±1 even when the attention output is irrational (seed 000 §十七)."""
    t = fwd(inputs={"X": [[1, 2], [3, -1]]},
            weights={"W_1": [[2, 1], [2, -1]], "W_2": [[1, 0], [1, 0]], "W_Q": [[1, 1], [0, 1]]})
    assert not t["attn.out"].value.rows[0][0].is_rational  # e^(…) everywhere upstream
    assert values(t, "norm1") == sympy.Matrix([[-1, 1], [1, -1]])
    assert values(t, "ffn.hidden")[:, 0] == sympy.Matrix([0, 0])
    assert values(t, "ffn.act")[:, 0] == sympy.Matrix([0, 0])


def test_symbolic_forward_with_causal_mask():
    """Masked weights are a SymPy 0 in symbolic mode, so later products stay symbolic."""
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2}, "block": {"causal": True},
                           "random": {"seed": 1}})
    sym = block.forward(block.symbolic_spec(s))
    w = values(sym, "attn.h0.weights", 10**6)
    assert w[0, 0] == 1 and w[0, 1] == 0
    assert values(sym, "attn.h0.masked", 10**6)[0, 1] == -sympy.oo
    assert values(sym, "attn.h0.out", 10**6)[0, 0].free_symbols  # row 0 is V's row 0, in symbols
