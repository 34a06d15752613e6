"""symblock grad: exact gradients against torch autograd (float64), SymPy diff of the symbolic
forward, and hand-worked cases."""
import json
import math

import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from symblock.engine import block, spec
from symblock.calculus import grad
from symblock.cli import main
from strategies import matrix, vector
import torch  # CI installs torch: a missing torch fails here, never skips the gradient checks
from torch_grad_tools import torch_grads

F = torch.nn.functional
REL = 1e-9
ABS = 1e-12


# ---------------------------------------------------------------- an independent torch reference
# (tests/torch_grad_tools.py: the block written directly in torch, shared with tests/sheets)


def close(exact_mat, ref, what, scale=0.0):
    got = exact_mat.floats()
    ref = ref.tolist()
    scale = max([scale] + [abs(v) for r in ref for v in r])
    for i, (a, b) in enumerate(zip(got, ref)):
        for j, (x, y) in enumerate(zip(a, b)):
            # 1e-9 relative to `scale`: the largest gradient entry of the spec (an entry that comes
            # from cancelling large terms, e.g. through a saturated softmax, carries their float64
            # error); an entry that is an exact 0 in
            # the engine is float64 noise (~1e-17) in torch, hence the absolute floor
            assert abs(x - y) <= max(REL * scale, ABS), f"{what}[{i}][{j}]: exact {x!r} vs torch {y!r}"


def check_against_torch(s, loss, target=None):
    trace = block.forward(s)
    names = grad.wrt_names(trace)
    b = grad.backward(s, loss, names, target=target, trace=trace)
    L, ref = torch_grads(s, loss, target)
    assert math.isclose(float(b.loss_value), L, rel_tol=REL, abs_tol=1e-12)
    compared = 0
    scale = max(float(t.abs().max()) for t in ref.values())
    for name, g in b.wrt.items():
        if name in ref:
            close(g.value, ref[name], f"{s.source} {loss} d/d{name}", scale)
            compared += 1
        elif name in s.params or name == "X":
            raise AssertionError(f"torch has no gradient for {name}")
    return compared


# ---------------------------------------------------------------- torch autograd

TARGET = {"seed-post-ln": sympy.Matrix([[1, 0], [0, 1], [sympy.Rational(1, 2), -2]])}


# the torch replay here has no RoPE, no grouped heads and no cross-attention: rope-gqa's gradients are
# checked against autograd in test_grad_rope_gqa.py, decoder-layer's in test_grad_cross.py
PLAIN_EXAMPLES = [e for e in spec.block_example_names() if e not in ("rope-gqa", "decoder-layer")]


@pytest.mark.parametrize("example", PLAIN_EXAMPLES)
@pytest.mark.parametrize("loss", ["sum", "mse"])
def test_every_example_every_wrt_matches_torch(example, loss):
    s = spec.load(example)
    n, d = s.dims.seq_len * max(s.dims.batch, 1), s.dims.d_model  # a batch: outputs stacked
    target = TARGET.get(example, sympy.Matrix(n, d, lambda i, j: sympy.Rational(i - j, 3)))
    for tgt in ([None, target] if loss == "mse" else [None]):
        assert check_against_torch(s, loss, tgt) >= 5


SETTINGS = dict(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def random_specs(draw):
    heads = draw(st.sampled_from([1, 2]))
    d_model = heads * draw(st.integers(1, 2)) + (1 if heads == 1 else 0)
    pre = draw(st.booleans())
    norm = draw(st.sampled_from(["layernorm", "rmsnorm"]))
    bound = draw(st.sampled_from([2, 3]))  # larger weights saturate the softmax: float64 noise
    activation = draw(st.sampled_from(["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"]))
    data = {
        "dims": {"seq_len": draw(st.integers(1, 3)), "d_model": d_model,
                 "d_ff": draw(st.integers(1, 3)), "heads": heads},
        "block": {"norm_position": "pre" if pre else "post", "norm": norm,
                  "eps": draw(st.sampled_from([0, "1/10", "1e-5"])),
                  "final_norm": pre and draw(st.booleans()), "activation": activation,
                  "attention_scale": draw(st.sampled_from(["sqrt_dk", "none"])),
                  "causal": draw(st.booleans()), "bias": draw(st.booleans()),
                  "out_proj": draw(st.booleans())},
        "random": {"seed": draw(st.integers(0, 10**6)), "low": -bound, "high": bound},
    }
    if draw(st.booleans()):  # X with fractions, decimals as written and repeated entries
        data["inputs"] = {"X": draw(matrix(data["dims"]["seq_len"], d_model, bound))}
    if draw(st.booleans()):  # γ and β away from 1 and 0
        o = data["block"]
        lns = ["ln1", "ln2"] + (["ln_final"] if o["final_norm"] else [])
        data["weights"] = {ln: {"gamma": draw(vector(d_model)),
                                **({"beta": draw(vector(d_model))} if norm == "layernorm" else {})} for ln in lns}
    return data


@settings(**SETTINGS)
@given(random_specs(), st.sampled_from(["sum", "mse"]))
def test_random_specs_match_torch(data, loss):
    try:
        s = spec.from_mapping(data)
        check = block.forward(s)
    except spec.SpecError as e:  # a zero-variance row with ε = 0: not a gradient question
        assert "divide by zero" in str(e)
        return
    # A near-constant row (σ or r ≈ 1e-6 with ε = 0) is ill-conditioned in float64: torch loses up to
    # ~10 digits there (the exact engine does not; see test_float64_loses_digits_at_tiny_sigma).
    assume(min(abs(v) for st in check if st.name.endswith((".std", ".rms"))
               for r in st.value.floats() for v in r) > 0.05)
    # Likewise a ReLU input within float64 noise of the kink (found: an exact 2.08e-16 that torch
    # computes as ≤ 0), or exactly at it (an exact 0 from decimals that float64 does not hold
    # exactly): the certified sign decides the exact derivative, float64 cannot.
    # test_relu_at_exactly_zero_has_gradient_zero_like_torch covers the kink itself.
    if s.options.activation == "relu":
        assume(all(abs(v) > 1e-9 for r in check["ffn.hidden"].value.floats() for v in r))
    n, d = s.dims.seq_len, s.dims.d_model
    target = sympy.Matrix(n, d, lambda i, j: (i + 2 * j) % 3 - 1) if loss == "mse" else None
    check_against_torch(s, loss, target)


@st.composite
def attention_form_specs(draw):
    """Issue 15's options: widths d_k, d_v, a padding mask, a batch, fixed dropout masks."""
    data = draw(random_specs())
    dims, o = data["dims"], data["block"]
    o["eps"] = "1/10"
    d_v = draw(st.integers(1, 2))
    dims |= {"d_k": draw(st.integers(1, 3)), "d_v": d_v}
    if not o["out_proj"]:
        dims["d_model"] = dims["heads"] * d_v
        data.pop("weights", None)
    n, batch = dims["seq_len"], draw(st.integers(0, 2))
    rows = [[False] + [draw(st.booleans()) for _ in range(n - 1)] for _ in range(max(batch, 1))]
    data["inputs"] = {"key_padding_mask": rows if batch else rows[0]}
    if batch:
        data["inputs"]["X"] = [[[draw(st.integers(-2, 2)) for _ in range(dims["d_model"])] for _ in range(n)]
                               for _ in range(batch)]
    prefix = "b0." if batch else ""
    if draw(st.booleans()):
        f = dims["d_ff"]
        data["dropout"] = {"p": "1/4", "masks": {
            f"{prefix}ffn.act": [[draw(st.integers(0, 1)) for _ in range(f)] for _ in range(n)],
            f"{prefix}attn.h0.weights": [[draw(st.integers(0, 1)) for _ in range(n)] for _ in range(n)]}}
    return data


@settings(**SETTINGS)
@given(attention_form_specs(), st.sampled_from(["sum", "mse"]))
def test_attention_forms_match_torch_autograd(data, loss):
    s = spec.from_mapping(data)
    check = block.forward(s)
    if s.options.activation == "relu":   # off the kink, as test_random_specs_match_torch says why (found
        # here too: an exact 0 that cancels ±a·w in float64 to 1e-17 > 0, so torch's ReLU passes it)
        assume(all(abs(v) > 1e-9 for st in check if st.name.endswith("ffn.hidden")
                   for r in st.value.floats() for v in r))
    n, d = s.dims.seq_len * max(s.dims.batch, 1), s.dims.d_model
    target = sympy.Matrix(n, d, lambda i, j: (i + 2 * j) % 3 - 1) if loss == "mse" else None
    assert check_against_torch(s, loss, target) >= 5


def test_float64_loses_digits_at_tiny_sigma():
    """Found by Hypothesis: resid1 row 1 is [5, 4.999994…] (σ ≈ 2.9e-6). torch float64 gets dL/dX
    wrong in the 4th digit; the exact gradient is the one mpmath at 60 digits agrees with."""
    s = spec.from_mapping({
        "dims": {"seq_len": 2, "d_model": 2, "d_ff": 1, "heads": 1},
        "block": {"norm_position": "pre", "out_proj": False},
        "random": {"seed": 129, "low": -2, "high": 2},
        "weights": {"ln1": {"gamma": [-2, -2], "beta": [1, 1]}, "ln2": {"gamma": [-2, -2], "beta": [1, 1]}}})
    b = grad.backward(s, "sum", ["X"])
    assert float(b.trace["norm2.std"].value.rows[1][0]) < 1e-5
    _, ref = torch_grads(s, "sum")
    got, want = b.wrt["X"].value.floats(), ref["X"].tolist()
    assert max(abs(x - y) for a, c in zip(got, want) for x, y in zip(a, c)) > 1e-6  # torch is off
    # finite differences at 60 digits on the exact engine's own forward agree with the exact gradient
    import mpmath
    mpmath.mp.dps = 60
    h = sympy.Rational(1, 10**25)
    for i in range(2):
        for j in range(2):
            def L(dx):
                X = sympy.Matrix(s.X)
                X[i, j] += dx
                from dataclasses import replace
                tr = block.forward(replace(s, X=sympy.ImmutableMatrix(X)))
                return sum(mpmath.mpf(e.digits(50)) for r in tr["output"].value.rows for e in r)
            fd = (L(h) - L(-h)) / (2 * mpmath.mpf(h))
            assert abs(fd - mpmath.mpf(b.wrt["X"].value.rows[i][j].digits(50))) < 1e-15


def test_intermediate_steps_match_torch():
    """dL/d step for the module-level steps (not only the parameters)."""
    s = spec.load("rmsnorm-swiglu")
    trace = block.forward(s)
    b = grad.backward(s, "mse", ["X"], trace=trace)
    _, ref = torch_grads(s, "mse")
    by_name = {g.of: g for g in b.steps}
    for name in ["output", "resid2", "ffn.out", "ffn.act", "ffn.gate", "ffn.hidden", "norm2",
                 "resid1", "attn.out", "attn.q", "attn.k", "attn.v", "norm1", "x"]:
        close(by_name[name].value, ref[name], name)


def test_relu_at_exactly_zero_has_gradient_zero_like_torch():
    # x W_1 has an exact 0 in ffn.hidden: torch and symblock both give it derivative 0
    s = spec.from_mapping({
        "dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
        "block": {"norm_position": "pre"},
        "weights": {"W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 1]], "W_V": [[1, 0], [0, 1]],
                    "W_O": [[1, 0], [0, 1]], "W_1": [[1, 1], [1, 0]], "W_2": [[1, 2], [3, 4]]},
        "inputs": {"X": [[1, -1], [2, 0]]}})
    trace = block.forward(s)
    assert trace["ffn.hidden"].value.rows[0][0].sign() == 0   # LN row [1, -1] → [1, -1]; 1 − 1 = 0
    b = grad.backward(s, "sum", ["W_1"], trace=trace)
    dz = next(g for g in b.steps if g.of == "ffn.hidden").value
    assert dz.rows[0][0].sign() == 0
    check_against_torch(s, "sum")


# ---------------------------------------------------------------- SymPy diff of the symbolic forward

def fold(m):
    """Entries free of the symbol become 60-digit floats: SymPy then carries only what depends on it."""
    return m.applyfunc(lambda e: e if e.free_symbols else sympy.Float(e.evalf(60), 60))


def sympy_forward(s, P, X, relu_on):
    """The spec's block (pre-LN, RMSNorm, no attention scale, one head, ReLU, biases, no final norm)
    written directly in SymPy from DESIGN.md's conventions: independent of the engine. ReLU takes
    the branch `relu_on` (an array of booleans: the sign of ffn.hidden where it is evaluated)."""
    def lin(x, w, b):
        return fold(x * P[w] + sympy.ones(x.rows, 1) * P[b])

    def rms(x, ln):
        g = P.get(f"{ln}.gamma", sympy.ones(1, x.cols))
        out = sympy.zeros(x.rows, x.cols)
        for i in range(x.rows):
            r = sympy.sqrt(sum(v ** 2 for v in x.row(i)) / x.cols + s.options.eps)
            out[i, :] = sympy.Matrix([[x[i, j] / r * g[j] for j in range(x.cols)]])
        return out

    def softmax(m):
        out = sympy.zeros(m.rows, m.cols)
        for i in range(m.rows):
            e = [sympy.exp(v) for v in m.row(i)]
            out[i, :] = sympy.Matrix([[v / sum(e) for v in e]])
        return out

    n1 = rms(X, "ln1")
    q, k, v = (lin(n1, f"W_{p}", f"b_{p}") for p in "QKV")
    r1 = X + lin(softmax(q * k.T) * v, "W_O", "b_O")
    z = lin(rms(r1, "ln2"), "W_1", "b_1")
    u = sympy.Matrix(z.rows, z.cols, lambda i, j: z[i, j] if relu_on[i][j] else 0)
    return r1 + lin(u, "W_2", "b_2")


SYMPY_SPEC = {
    "dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
    "block": {"norm_position": "pre", "activation": "relu", "bias": True, "norm": "rmsnorm",
              "attention_scale": "none"},
    "random": {"seed": 11, "low": -2, "high": 2}}


def sympy_diff_agrees(picks):
    """Third path: one entry at a time becomes a Symbol t in the SymPy forward above, L(t) is
    differentiated by sympy.diff and evaluated at t = its value (mpmath, 50 digits); against the
    exact gradient entry. Returns the derivatives."""
    import mpmath
    from symblock.reference import numeric
    s = spec.from_mapping(SYMPY_SPEC)
    target = sympy.Matrix([[1, 0], [0, -1]])
    b = grad.backward(s, "mse", sorted({p[0] for p in picks}), target=target)
    relu_on = (numeric.forward(s)["ffn.hidden"] > 0).tolist()
    t = sympy.Symbol("t", real=True)
    mpmath.mp.dps = 50
    out = {}
    for name, i, j in picks:
        P = {k: sympy.Matrix(v) for k, v in s.params.items()}
        X = sympy.Matrix(s.X)
        m = X if name == "X" else P[name]
        value, m[i, j] = m[i, j], t
        y = sympy_forward(s, P, X, relu_on)
        L = sum((y[r, c] - target[r, c]) ** 2 for r in range(2) for c in range(2)) / 4
        want = float(sympy.lambdify(t, sympy.diff(L, t), "mpmath", cse=True)(mpmath.mpf(value)))
        got = float(b.wrt[name].value.rows[i][j])
        assert abs(got - want) <= 1e-12 * max(1.0, abs(want)), (name, i, j, got, want)
        out[name, i, j] = want
    return out


def test_sympy_diff_of_a_sympy_forward_agrees():
    """The FFN, the value/output path of attention, and a key bias (whose gradient is exactly 0:
    b_K adds the same q·b_K to every score of a row, and softmax ignores a shift)."""
    d = sympy_diff_agrees([("W_2", 0, 1), ("W_1", 1, 0), ("b_1", 0, 0), ("W_V", 0, 0),
                           ("W_O", 1, 0), ("b_K", 0, 1)])
    assert abs(d["b_K", 0, 1]) < 1e-40
    assert sum(abs(v) > 1e-3 for v in d.values()) == 5  # live entries, not a trivial 0 = 0


@pytest.mark.slow
def test_sympy_diff_through_the_softmax_and_both_norms():
    """W_Q (through the scores and the softmax) and X (through every step): ~10 s."""
    d = sympy_diff_agrees([("W_Q", 1, 1), ("X", 1, 0)])
    assert all(abs(v) > 1e-3 for v in d.values())


# ---------------------------------------------------------------- hand-worked cases

def test_sum_loss_after_a_layernorm_has_zero_gradient():
    """Each LN output row (γ=1, β=0) sums to 0, so L = Σ Y is constant: every gradient is exactly 0,
    and dL/dμ = −Σ_j 1/σ = −2/σ for the last norm (σ of norm2 in seed 000 is 3/2: −4/3)."""
    s = spec.load("seed-post-ln")
    b = grad.backward(s, "sum", ["W_2", "W_1", "X", "attn.out"])
    for g in b.wrt.values():
        assert all(e.is_rational and e.q == 0 for r in g.value.rows for e in r)
    from symblock.reference import numeric
    mean = next(g for g in b.steps if g.of == "norm2.mean").value
    std = numeric.forward(s)["norm2.std"]   # σ from the NumPy path, not the engine's trace
    for (m,), (sd,) in zip(mean.rows, std.tolist()):
        assert float(m) == pytest.approx(-2 / sd, rel=1e-14)
    assert [str(m.to_sympy()) for (m,) in mean.rows] == ["-4/3", "-4/3", "-4/3"]


def test_bias_of_the_last_linear_layer_by_hand():
    """Pre-LN without a final norm: Y = R_1 + U W_2 + b_2, so with L = Σ Y, dL/db_2 = [n, …, n]
    and dL/dW_2 = Uᵀ 1 (column sums of U repeated); with mse, dL/dY = 2(Y − T)/(n d)."""
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 4, "d_ff": 3, "heads": 1},
                           "block": {"norm_position": "pre", "norm": "rmsnorm", "activation": "swiglu",
                                     "bias": True, "out_proj": False},
                           "inputs": {"X": [[2, 0, 1, -1], [1, 1, 0, 2]]},
                           "random": {"seed": 3, "low": -1, "high": 1}})
    from symblock.reference import numeric
    ref = numeric.forward(s)   # U and Y from the NumPy path, not the engine's trace
    b = grad.backward(s, "sum", ["b_2", "W_2"])
    assert [[str(e.to_sympy()) for e in r] for r in b.wrt["b_2"].value.rows] == [["2"] * 4]
    u = ref["ffn.act"].tolist()
    for i in range(3):
        for j in range(4):
            assert float(b.wrt["W_2"].value.rows[i][j]) == pytest.approx(u[0][i] + u[1][i], rel=1e-14)
    target = sympy.Matrix([[1, 2, 3, 4], [0, 0, 0, 0]])
    m = grad.backward(s, "mse", ["W_2"], target=target)
    y = ref["output"]
    dy = m.steps[0]
    assert dy.of == "output"
    for i in range(2):
        for j in range(4):
            want = 2 * (y[i, j] - int(target[i, j])) / 8
            assert float(dy.value.rows[i][j]) == pytest.approx(want, rel=1e-13, abs=1e-15)


def test_backward_order_and_only_dependent_steps():
    s = spec.load("pre-ln-causal-gelu")
    b = grad.backward(s, "sum", ["W_2"])
    assert [g.of for g in b.steps] == ["output", "norm_final", "norm_final.std", "norm_final.var",
                                        "norm_final.mean", "resid2", "ffn.out"]
    full = grad.backward(s, "sum", ["X"])
    order = [g.of for g in full.steps]
    assert order == list(reversed(block.forward(s).names()))
    assert all(g.name == "grad." + g.of for g in full.steps)


def test_bad_wrt_and_target_are_named():
    s = spec.load("seed-post-ln")
    with pytest.raises(spec.SpecError, match="W_Q"):
        grad.backward(s, "sum", ["W_Q"])  # attn.out is given: W_Q is not read
    with pytest.raises(spec.SpecError, match="--target"):
        grad.backward(s, "mse", ["X"], target=sympy.Matrix([[1, 2]]))


def test_only_a_spec_with_a_given_step_is_told_that_it_cuts_weights_off():
    """seed-post-ln pins attn.out, so W_Q is not read; pre-ln-causal-gelu pins nothing and has no
    biases (block.bias false): its missing b_Q is not blamed on a given step."""
    with pytest.raises(spec.SpecError, match="a given step cuts off"):
        grad.backward(spec.load("seed-post-ln"), "sum", ["W_Q"])
    with pytest.raises(spec.SpecError, match=r"no parameter or step 'b_Q' in this block; (did you mean \S+\? )?expected one of X, W_Q") as e:
        grad.backward(spec.load("pre-ln-causal-gelu"), "sum", ["b_Q"])
    assert "given" not in str(e.value)


# ---------------------------------------------------------------- command line

def test_cli_text_and_json(capsys, tmp_path):
    assert main(["grad", "seed-post-ln", "--loss", "mse", "--wrt", "W_2,X",
                 "--target", "[[1, 0], [0, 1], [1/2, -2]]"]) == 0
    out = capsys.readouterr().out
    assert "■ grad.output" in out and "■ grad.W_2" in out and "■ grad.X" in out
    assert main(["grad", "seed-post-ln", "--loss", "mse", "--wrt", "W_2", "--json",
                 "--target", "[[1, 0], [0, 1], [0.5, -2]]"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["loss"] == "mse" and [w["name"] for w in data["wrt"]] == ["grad.W_2"]
    b = grad.backward(spec.load("seed-post-ln"), "mse", ["W_2"], target=TARGET["seed-post-ln"])
    for row_e, row_v in zip(data["wrt"][0]["exact"], b.wrt["W_2"].value.rows):
        for e, v in zip(row_e, row_v):
            assert sympy.simplify(sympy.sympify(e) - v.to_sympy(10**6)) == 0
    assert sympy.sympify(data["value"]["exact"]) == b.loss_value.to_sympy(10**6)
    f = tmp_path / "t.yaml"
    f.write_text("target: [[1, 0], [0, 1], [0.5, -2]]\n")
    assert main(["grad", "seed-post-ln", "--loss", "mse", "--wrt", "W_2", "--json", "--target", str(f)]) == 0
    assert json.loads(capsys.readouterr().out)["wrt"] == data["wrt"]
    assert main(["grad", "seed-post-ln", "--wrt", "W_Q"]) == 2
    assert "no parameter or step 'W_Q'" in capsys.readouterr().err
    assert main(["grad", "seed-post-ln", "--target", "[[1]]"]) == 2


def test_command_glue_matches_the_engine(capsys):
    from symblock.commands import grad as grad_cli
    from symblock.cli import main
    assert grad_cli.LOSSES == grad.LOSSES
    assert main(["grad", "--loss", "mse", "--target", "[[1, 0], [0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symblock: error: example:seed-post-ln: --target: expected a matrix") and "Traceback" not in err


@pytest.mark.parametrize("target, said", [
    ("[[1, 2]]", "S: --target: expected shape 3×2, got 1×2"),
    ("[[1, a], [1, 2], [3, 4]]", "S: --target[0][1]: expected a number"),
    ("oops", "S: --target: expected a matrix: a list of rows"),
    ("missing.yaml", "S: --target: no file 'missing.yaml'; expected a matrix like [[1, 0], [0, 1]] or a YAML/JSON file"),
])
def test_a_bad_inline_target_names_the_spec_and_the_option_once(cli, spec_file, target, said):
    path = spec_file(spec.example_text("seed-post-ln"))
    code, out, err = cli("grad", path, "--loss", "mse", "--target", target)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith("symblock: error: " + said.replace("S", str(path), 1))
    assert err.replace(str(path), "").count("target") == 1


def test_a_bad_target_file_names_the_file_and_its_field_once(cli, tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("target: [[1, 0], [0, 1]]\n")
    code, _, err = cli("grad", "--loss", "mse", "--target", f)
    assert code == 2 and err == f"symblock: error: {f}: target: expected shape 3×2, got 2×2\n"


def test_loss_line_shows_the_closed_form_only_when_short(capsys):
    from symblock.cli import main
    assert main(["grad", "rmsnorm-swiglu", "--wrt", "W_2"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("loss:"))
    assert line.endswith("≈ 19.9801") and "= ≈" not in line
    assert main(["grad", "seed-post-ln", "--loss", "mse", "--wrt", "W_2",
                 "--target", "[[1, 0], [0, 1], [1/2, -2]]"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("loss:"))
    assert line.endswith("= 13/24  ≈ 0.5417")  # (0 + 1 + 1 + 0 + 1/4 + 1)/6: worked by hand
