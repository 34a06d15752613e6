"""symblock derive: formulas from the engine on symbols, simplified; facts verified by SymPy."""
import pytest
import sympy

from symblock.calculus import derive
from symblock.engine import spec
from symblock.cli import main


@pytest.fixture(scope="module")
def tiny():
    return derive.derive()


def test_layernorm_of_2d_rows_is_a_sign(tiny):
    r = {(i, j): sympy.Symbol(f"r^{{(1)}}_{{{i}{j}}}", real=True) for i in (1, 2) for j in (1, 2)}
    rows = tiny["norm1"].entries
    for i in (1, 2):
        assert rows[i - 1][0] == sympy.sign(r[i, 1] - r[i, 2])
        assert rows[i - 1][1] == -sympy.sign(r[i, 1] - r[i, 2])
    assert tiny["norm1"].over == "R_1"


def test_steps_are_the_blocks_in_order_and_agree_with_numbers(tiny):
    from symblock.engine import block
    s = spec.from_mapping(derive.TINY)
    assert list(tiny) == block.forward(s).names()
    # attn.q in symbols: Q = X W^Q entrywise
    x = sympy.Matrix(2, 2, lambda i, j: sympy.Symbol(f"x_{{{i + 1}{j + 1}}}", real=True))
    w = sympy.Matrix(2, 2, lambda i, j: sympy.Symbol(f"w^{{Q}}_{{{i + 1}{j + 1}}}", real=True))
    assert sympy.expand(sympy.Matrix(tiny["attn.q"].entries) - x * w) == sympy.zeros(2, 2)
    # residual in the symbols of its two summands
    assert tiny["resid2"].entries[0][0] == sympy.Symbol("h^{(1)}_{11}", real=True) + sympy.Symbol("f_{11}", real=True)


def test_facts_are_verified():
    fs = derive.facts()
    assert {f.name for f in fs} >= {"layernorm_2d", "softmax_shift", "causal_first_row",
                                    "layernorm_mean_var", "softmax_sums_to_one", "scaling_sqrt_dk",
                                    "online_softmax_tiles"}
    assert all(f.verified for f in fs)


def test_the_causal_fact_numbers_rows_from_1_as_its_scores_do(cli):
    """S's entries are s_11 … (rows from 1, as the sheets and keys number them), so the first row of
    the weights and outputs is p_1, o_1 (its value v_1); P_0, O_0 name head 0's matrices elsewhere."""
    code, out, _ = cli("derive", "--facts")
    line = next(l.strip() for l in out.splitlines() if "[s_{11}, -\\infty" in l)
    assert code == 0 and line == (r"p_{1} = \mathrm{softmax}([s_{11}, -\infty, -\infty]) = [1, 0, 0],"
                                  r"\quad o_{1} = p_{1} V = v_{1}")


def test_a_false_fact_would_not_verify():
    # the 2-d LayerNorm check must be able to fail: a row of 3 is not ±1
    a, b, c = sympy.symbols("a b c", real=True)
    y = derive._engine_norm([a, b, c])
    t = sympy.Symbol("t", positive=True)
    assert sympy.simplify(y[0].subs({a: b + t, c: b}) - sympy.sign(t)) != 0


def test_cli_formats_and_limits(capsys, tmp_path):
    assert main(["derive", "--step", "norm1", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "### `norm1`" in out and "$$" in out and r"\operatorname{sign}" in out
    assert main(["derive", "--step", "attn.q", "--format", "latex"]) == 0
    assert r"\begin{bmatrix}" in capsys.readouterr().out
    assert main(["derive", "--facts"]) == 0
    assert "verified by SymPy" in capsys.readouterr().out
    assert main(["derive", "--step", "nope"]) == 2
    wide = tmp_path / "wide.yaml"   # 5 × 4 symbols: over the size limit
    wide.write_text("dims: {seq_len: 5, d_model: 4, d_ff: 2, heads: 1}\nrandom: {seed: 1}\n")
    assert main(["derive", str(wide)]) == 2
    assert "limited to seq_len·d_model <= 16" in capsys.readouterr().err
    assert main(["derive", "seed-post-ln"]) == 2         # a given step has no general formula


# ---------------------------------------------------------------- attention in its direct inputs

def _sym(name):
    return sympy.Symbol(name, real=True)


def test_attention_steps_are_written_in_their_direct_inputs(tiny):
    # scores: Σ q k over the head's columns
    sc = tiny["attn.h0.scores"]
    assert sc.over == "Q, K"
    for i in (1, 2):
        for j in (1, 2):
            want = sum(_sym(f"q_{{{i}{c}}}") * _sym(f"k_{{{j}{c}}}") for c in (1, 2))
            assert sympy.expand(sc.entries[i - 1][j - 1] - want) == 0
    # scaled: s / √2; weights: the softmax of the scaled scores' symbols
    assert sympy.simplify(tiny["attn.h0.scaled"].entries[0][1] - _sym("s_{12}") / sympy.sqrt(2)) == 0
    w = tiny["attn.h0.weights"]
    s11, s12 = _sym("s'_{11}"), _sym("s'_{12}")
    assert w.over == "S_0'"
    assert sympy.simplify(w.entries[0][0] - sympy.exp(s11) / (sympy.exp(s11) + sympy.exp(s12))) == 0
    out = tiny["attn.h0.out"]
    assert out.over == "P_0, V"
    assert sympy.expand(out.entries[1][0] - (_sym("p_{21}") * _sym("v_{11}") + _sym("p_{22}") * _sym("v_{21}"))) == 0
    a = tiny["attn.out"]
    assert a.over == "O_0" and _sym("o_{11}") in a.entries[0][0].free_symbols
    assert all(e.count_ops() < 20 for d in (sc, w, out, a) for r in d.entries for e in r)


def test_unscaled_causal_two_heads_in_direct_inputs(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("dims: {seq_len: 2, d_model: 4, d_ff: 2, heads: 2}\n"
                    "block: {norm_position: pre, attention_scale: none, causal: true}\n"
                    "random: {seed: 1}\n")
    d = derive.derive(str(path))
    # no scaling: softmax straight over the masked scores m = s where j <= i
    w = d["attn.h1.weights"].entries
    m21, m22 = _sym("m^{(1)}_{21}"), _sym("m^{(1)}_{22}")
    assert w[0] == [1, 0]
    assert sympy.simplify(w[1][0] - sympy.exp(m21) / (sympy.exp(m21) + sympy.exp(m22))) == 0
    assert d["attn.h1.masked"].entries[0][1] == -sympy.oo
    # head 1 uses columns 3, 4 of Q and K
    want = _sym("q_{23}") * _sym("k_{13}") + _sym("q_{24}") * _sym("k_{14}")
    assert sympy.expand(d["attn.h1.scores"].entries[1][0] - want) == 0
    assert d["attn.concat"].over == "O_0, O_1" and d["attn.out"].over == "O"
    assert d["attn.q"].over == "N_1"


def test_direct_input_formulas_agree_with_the_numbers(tiny):
    """Substituting the NumPy path's numbers for the direct inputs gives NumPy's value of the step."""
    from symblock.reference import numeric
    ref = numeric.forward(spec.from_mapping(derive.TINY))
    subs = {}
    for base, step in (("q", "attn.q"), ("k", "attn.k"), ("v", "attn.v"), ("s", "attn.h0.scores"),
                       ("s'", "attn.h0.scaled"), ("p", "attn.h0.weights"), ("o", "attn.h0.out")):
        for i, row in enumerate(ref[step].tolist()):
            subs.update({_sym(f"{base}_{{{i + 1}{j + 1}}}"): x for j, x in enumerate(row)})
    for step in ("attn.h0.scores", "attn.h0.scaled", "attn.h0.weights", "attn.h0.out"):
        for got, want in zip(tiny[step].entries, ref[step].tolist()):
            for g, w in zip(got, want):
                assert abs(float(g.subs(subs)) - w) < 1e-12 * max(1, abs(w)), step


def test_normal_moments_agree_with_sympy_stats_and_hand_values():
    """derive's expectation over independent N(0, 1) against sympy.stats' integrals (an independent
    path) and numbers worked by hand: E[q0⁴ k1² + 3 q0 k0 − q1²] = 3·1 + 0 − 1 = 2."""
    from sympy.stats import E, Normal, variance
    q0, q1, k0, k1 = sympy.symbols("q0 q1 k0 k1", real=True)
    assert derive.normal_expectation(q0 ** 4 * k1 ** 2 + 3 * q0 * k0 - q1 ** 2, (q0, q1, k0, k1)) == 2
    assert derive.normal_expectation(q0 ** 6, (q0,)) == 15          # 5!! = 15
    assert derive.normal_expectation(q0 ** 3 * k1 ** 2, (q0, k1)) == 0
    Q = [Normal(f"Q{i}", 0, 1) for i in range(2)]
    K = [Normal(f"K{i}", 0, 1) for i in range(2)]
    dot = Q[0] * K[0] + Q[1] * K[1]
    mine = derive.normal_expectation((q0 * k0 + q1 * k1) ** 2, (q0, q1, k0, k1))
    assert mine == sympy.simplify(variance(dot)) == 2
    assert derive.normal_expectation(q0 * k0 + q1 * k1, (q0, q1, k0, k1)) == sympy.simplify(E(dot)) == 0


def test_the_online_softmax_fact_is_proved_and_would_fail_without_the_rescaling(monkeypatch):
    from symblock.engine import online_softmax
    f = derive.fact_online_softmax()
    assert f.name == "online_softmax_tiles" and f.verified
    assert r"e^{m_{1} - m_{2}}" in f.latex          # the running sum rescaled by e^(m_old − m_new)
    # a tile that forgets to rescale the earlier sum and accumulator is not softmax·V
    monkeypatch.setattr(online_softmax, "_factor", lambda old, new: 1)
    assert not derive.fact_online_softmax().verified


def test_derive_refuses_the_tiles_clearly(capsys):
    assert main(["derive", "tiled-attention"]) == 2
    err = capsys.readouterr().err
    assert "block.attention_tiles: derive writes the steps in symbols" in err and "internal" not in err


def test_a_built_in_with_a_given_step_says_how_to_copy_it(capsys):
    """seed-post-ln pins attn.out: a built-in cannot be edited in place, so the refusal names the
    command that writes the copy whose `given` section can be removed."""
    assert main(["derive", "seed-post-ln"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symblock: error: example:seed-post-ln: given: ") and len(err.strip().splitlines()) == 1
    assert "`symblock examples --show seed-post-ln > my.yaml`" in err
