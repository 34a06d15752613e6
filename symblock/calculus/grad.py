"""Exact gradients of a scalar loss of the block's output, backwards step by step: `symblock grad`.

    >>> from symblock import grad, spec
    >>> g = grad.backward(spec.load("seed-post-ln"), loss="sum", wrt=["W_2", "X"])
    >>> [s.name for s in g.steps][:3]          # reverse order: output first
    ['grad.output', 'grad.norm2', 'grad.norm2.std']
    >>> g.wrt["W_2"].value                     # exact: dL/dW_2, a Mat of exact Reals

Reverse mode over the Trace's step graph (`Step.inputs`, from steps.py): the forward values come
from the exact trace, and each step kind has one local backward rule (`_linear`, `_layernorm`, ...
below; the attention steps' in grad_attention.py), which turns dL/d(step) into contributions to
dL/d(input) for each input. Contributions are summed with exact arithmetic (`exact.Real`), so every gradient is exact.

Losses (of the block output Y, n × d):
- `sum`: L = Σ_ij Y_ij, so dL/dY = 1 everywhere;
- `mse`: L = (1/(n·d)) Σ_ij (Y_ij − T_ij)², the mean over all entries (torch's
  `F.mse_loss(reduction="mean")`), so dL/dY = 2 (Y − T) / (n·d). The target T is given with
  `--target` (a matrix or a YAML/JSON file); it defaults to zeros.

Only the steps that depend on a `wrt` name get a gradient (the others cannot change it).
Conventions: ReLU at exactly 0 has derivative 0 (torch's choice of subgradient); a masked (−∞)
score gets gradient 0; a given step is a constant (nothing flows past it, but `--wrt` may name it
to get dL/d of that step). `wrt` names: X, W_Q … W_3, b_Q … b_3, ln1.gamma, ln2.beta, …, or any
step name (e.g. attn.out); a decoder layer's also M (the memory), cross.W_Q … cross.b_O, ln3.*.
Its cross-attention heads read their own K/V columns of the memory's projections, and only
padded memory rows are masked (no causal mask).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from symblock.engine import exact
from symblock.engine.block import ACTIVATIONS, Step, Trace, forward
from symblock.engine.matrix import Mat
from symblock.engine.spec import BlockSpec, SpecError
from symblock.errors import did_you_mean
from symblock.engine.steps import batch_prefixes
from symblock.engine import cross, kinds, names, parameters
from symblock.calculus import grad_attention as attention

LOSSES = ("sum", "mse")
GRAD_PREFIX = names.GRAD


@dataclass(frozen=True)
class Grad:
    """dL/d(`of`): `name` is `grad.<of>`, `latex` the symbol, `rule` how it was obtained."""
    name: str
    of: str
    latex: str
    rule: str
    value: Mat


@dataclass(frozen=True)
class Backward:
    trace: Trace
    loss: str
    loss_latex: str
    loss_value: object             # exact Real
    steps: tuple[Grad, ...]        # dL/d step, reverse (backward) order
    wrt: Mapping[str, Grad]        # dL/d each requested name, in the requested order


# ---------------------------------------------------------------- matrices

def zeros(r: int, c: int) -> Mat:
    return Mat([[exact.ZERO] * c for _ in range(r)])


def ones(r: int, c: int) -> Mat:
    return Mat([[exact.ONE] * c for _ in range(r)])


def col_sums(m: Mat) -> Mat:
    """Σ over rows: a 1 × c row (the gradient of a broadcast bias or γ/β)."""
    return Mat([[exact.total(list(col)) for col in zip(*m.rows)]])


def row_sums(m: Mat) -> Mat:
    """Σ over columns: an r × 1 column (the gradient of a per-row statistic)."""
    return m.map_rows(lambda r: [exact.total(list(r))])


def num(v) -> exact.Real:
    return exact.from_sympy(v)  # ints and Fractions (a spec's ε, p) without importing SymPy


# ---------------------------------------------------------------- losses

def loss_grad(y: Mat, loss: str, target: Mat | None):
    """(L, dL/dY, LaTeX of L) for the output Y."""
    n, d = y.shape
    if loss == "sum":
        return exact.total([e for r in y.rows for e in r]), ones(n, d), r"L = \sum_{ij} Y_{ij}"
    t = target if target is not None else zeros(n, d)
    diff = y - t
    k = 1 / exact.real(n * d)
    value = exact.total([e * e for r in diff.rows for e in r]) * k
    return value, diff.scale(2 * k), r"L = \tfrac{1}{%d} \sum_{ij} (Y_{ij} - T_{ij})^2" % (n * d)


# ---------------------------------------------------------------- local backward rules
# Each rule gets the step, dL/d(step) `g`, a lookup `v(name)` of forward values (steps and
# parameters), the spec, and `want(name)` (does anyone need dL/d name?). It returns
# {input name: contribution to dL/d input} for the wanted inputs.

Rule = Callable[..., dict]
Values = Callable[[str], Mat]    # a step's or a parameter's forward value, by name
Wanted = Callable[[str], bool]   # does anyone need dL/d of this name?


def _identity(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """output, x, attn.out without W_O: the gradient passes through unchanged."""
    return {i: g for i in step.inputs if want(i)}


def _residual(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """R = A + B: both get dL/dR (a gradient highway)."""
    return {i: g for i in step.inputs if want(i)}


def _linear(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """Y = X W + b: dX = dY Wᵀ, dW = Xᵀ dY, db = Σ_rows dY."""
    src, w, b = step.inputs
    out = {}
    if want(src):
        out[src] = g @ v(w).T
    if want(w):
        out[w] = v(src).T @ g
    if want(b) and v(b) is not None:
        out[b] = col_sums(g)
    return out


def _dropped(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """D̃ = D ⊙ X / (1 − p): dX = D ⊙ dD̃ / (1 − p)."""
    (src,) = step.inputs
    if not want(src):
        return {}
    keep = Mat.from_sympy(spec.dropout_masks[src])
    return {src: (g * keep).scale(num(1 / (1 - spec.dropout_p)))}


def act_derivative(name: str) -> Callable:
    """The exact derivative of an activation (ReLU: 0 at 0, as torch)."""
    def relu(z):
        return exact.ONE if exact.sign(z) > 0 else exact.ZERO

    def gelu(z):  # Φ(z) + z φ(z)
        phi = exact.exp(-(z * z) / 2) * num("1/sqrt(2*pi)")
        return (1 + exact.erf(z / exact.sqrt(exact.real(2)))) / 2 + z * phi

    def gelu_tanh(z):  # ½(1 + t) + ½ z (1 − t²) c (1 + 3k z²), t = tanh(c (z + k z³))
        c, k = num("sqrt(2/pi)"), num("44715/1000000")
        t = exact.tanh(c * (z + k * z * z * z))
        return (1 + t) / 2 + z * (1 - t * t) * c * (1 + 3 * k * z * z) / 2

    def silu(z):  # s (1 + z (1 − s)), s = σ(z)
        s = 1 / (1 + exact.exp(-z))
        return s * (1 + z * (1 - s))

    return {"relu": relu, "gelu": gelu, "gelu_tanh": gelu_tanh, "silu": silu,
            "swiglu": silu, "geglu": gelu}[name]


def _activation(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """U = act(Z): dZ = dU ⊙ act'(Z). Gated U = act(Z) ⊙ G: dZ = dU ⊙ G ⊙ act'(Z), dG = dU ⊙ act(Z)."""
    act = spec.options.activation
    z = step.inputs[0]
    out = {}
    if want(z):
        dz = g * v(z).map(act_derivative(act))
        out[z] = dz * v(step.inputs[1]) if spec.options.gated else dz
    if spec.options.gated and want(step.inputs[1]):
        out[step.inputs[1]] = g * v(z).map(ACTIVATIONS[act][0])
    return out


def _layernorm(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """Y = (X − μ)/σ · γ + β: dX += dY γ/σ, dμ = −Σ_j dY γ/σ, dσ = −Σ_j dY γ (X − μ)/σ²,
    dγ = Σ_i dY (X − μ)/σ, dβ = Σ_i dY."""
    src, mu, std, gamma, beta = step.inputs
    x, m, s, gm = v(src), v(mu), v(std), v(gamma)
    dyg = g * gm
    centred = x - m
    out = {}
    if want(src):
        out[src] = dyg / s
    if want(mu):
        out[mu] = row_sums(dyg / s).scale(-1)
    if want(std):
        out[std] = row_sums(dyg * centred).map(lambda e: e * -1) / (s * s)
    if want(gamma):
        out[gamma] = col_sums(g * (centred / s))
    if want(beta):
        out[beta] = col_sums(g)
    return out


def _mean(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """μ = (1/d) Σ_j X_j: dX_ij += dμ_i / d."""
    (src,) = step.inputs
    d = spec.dims.d_model
    return {src: ones(*v(src).shape) * g.scale(1 / exact.real(d))} if want(src) else {}


def _var(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """σ² = (1/d) Σ_j (X_j − μ)²: dX += dσ² · 2(X − μ)/d, dμ = −dσ² · 2 Σ_j (X_j − μ)/d."""
    src, mu = step.inputs
    two_d = 2 / exact.real(spec.dims.d_model)
    centred = v(src) - v(mu)
    out = {}
    if want(src):
        out[src] = centred.scale(two_d) * g
    if want(mu):
        out[mu] = row_sums(centred).scale(-two_d) * g
    return out


def _root(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """σ = √(σ² + ε) (or r = √(m + ε)): dσ² = dσ / (2σ)."""
    (src,) = step.inputs
    return {src: g / v(step.name).scale(exact.real(2))} if want(src) else {}


def _rmsnorm(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """Y = X / r · γ: dX += dY γ / r, dr = −Σ_j dY γ X / r², dγ = Σ_i dY X / r."""
    src, rms, gamma = step.inputs
    x, r = v(src), v(rms)
    dyg = g * v(gamma)
    out = {}
    if want(src):
        out[src] = dyg / r
    if want(rms):
        out[rms] = row_sums(dyg * x).scale(-1) / (r * r)
    if want(gamma):
        out[gamma] = col_sums(g * (x / r))
    return out


def _ms(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """m = (1/d) Σ_j X_j²: dX += dm · 2X/d."""
    (src,) = step.inputs
    return {src: v(src).scale(2 / exact.real(spec.dims.d_model)) * g} if want(src) else {}


# Rule and its LaTeX (how dL/d(step) flows into the step's inputs), by step kind.
RULES: dict[str, tuple[Rule, str]] = {
    "identity": (_identity, r"\text{passes through}"),
    "residual": (_residual, r"\text{copied to both summands}"),
    "linear": (_linear, r"\partial X = \partial Y\, W^{\top},\ \partial W = X^{\top} \partial Y,\ \partial b = \textstyle\sum_i \partial Y_i"),
    "scores": (attention.RULES["scores"], r"\partial Q_h = \partial S\, K_h,\ \partial K_h = \partial S^{\top} Q_h"),
    "scaled": (attention.RULES["scaled"], r"\partial S = \partial S' / \sqrt{d_k}"),
    "masked": (attention.RULES["masked"], r"\partial S_{ij} = \partial M_{ij}\ (j \le i),\ 0\ (j > i)"),
    "softmax": (attention.RULES["softmax"], r"\partial S_{ij} = P_{ij} (\partial P_{ij} - \textstyle\sum_k P_{ik} \partial P_{ik})"),
    "head_out": (attention.RULES["head_out"], r"\partial P = \partial O\, V_h^{\top},\ \partial V_h = P^{\top} \partial O"),
    "rope": (attention.RULES["rope"], r"\partial X = \mathrm{RoPE}_{-m}(\partial X')\ \text{(the rotation back)}"),
    "concat": (attention.RULES["concat"], r"\text{split into the heads' column blocks}"),
    "activation": (_activation, r"\partial Z = \partial U \odot \mathrm{act}'(Z)"),
    "gated": (_activation, r"\partial Z = \partial U \odot G \odot \mathrm{act}'(Z),\ \partial G = \partial U \odot \mathrm{act}(Z)"),
    "layernorm": (_layernorm, r"\partial X \mathrel{+}= \partial Y \gamma/\sigma,\ \partial\mu = -\textstyle\sum_j \partial Y_j \gamma_j/\sigma,\ \partial\sigma = -\textstyle\sum_j \partial Y_j \gamma_j (X_j - \mu)/\sigma^2"),
    "mean": (_mean, r"\partial X_j \mathrel{+}= \partial\mu / d"),
    "var": (_var, r"\partial X_j \mathrel{+}= \partial\sigma^2 \cdot 2 (X_j - \mu)/d,\ \partial\mu \mathrel{+}= -\partial\sigma^2 \cdot 2 \textstyle\sum_j (X_j - \mu)/d"),
    "root": (_root, r"\partial v = \partial\sigma / (2\sigma)"),
    "rmsnorm": (_rmsnorm, r"\partial X \mathrel{+}= \partial Y \gamma / r,\ \partial r = -\textstyle\sum_j \partial Y_j \gamma_j X_j / r^2"),
    "ms": (_ms, r"\partial X_j \mathrel{+}= \partial m \cdot 2 X_j / d"),
    "dropped": (_dropped, r"\partial X = D \odot \partial \tilde{X} / (1 - p)"),
    "side": (lambda step, g, v, spec, want: {}, r"\text{0: the output does not read this step}"),
}


def step_kind(name: str, spec: BlockSpec) -> str:
    """Which local rule a step uses (the table of kinds names it)."""
    if names.parse(name).dropped:
        return "dropped"
    return kinds.of(name).rule_for(spec.options)


def symbol(step: Step) -> str:
    """The step's symbol from its formula: `Q = X W^{Q}` -> `Q`."""
    return step.latex.split(" = ", 1)[0].strip()


# ---------------------------------------------------------------- the backward pass

def wrt_names(trace: Trace) -> list[str]:
    """Names `wrt` accepts: X, the parameters the trace read, and every step."""
    return list(dict.fromkeys(n for n in ["X", *trace.params] if n in trace.params)) + trace.names()


def backward(spec: BlockSpec, loss: str = "sum", wrt: Sequence[str] = ("X",), target=None,
             trace: Trace | None = None, upstream: Mat | None = None) -> Backward:
    """dL/d every step that depends on a `wrt` name (reverse order) and dL/d each `wrt` name.

    `target` (mse only): a SymPy matrix the shape of the output; None means zeros. `upstream`:
    dL/dY given from above (a block inside a stack, calculus/model_grad.py) instead of a loss."""
    if loss not in LOSSES and upstream is None:
        raise SpecError(spec.source, "--loss", f"expected one of {', '.join(LOSSES)}, got {loss!r}")
    trace = trace or forward(spec)
    if spec.dims.batch:  # X in a batch: every sequence's input, b0.X, b1.X, …
        wrt = [x for w in wrt for x in ([f"{p}X" for p in batch_prefixes(spec.dims)] if w == "X" else [w])]
    known = wrt_names(trace)
    for name in wrt:
        if name not in known:
            why = " (a given step cuts off the weights that only fed it)" if spec.given else ""
            raise SpecError(spec.source, "--wrt", f"no parameter or step {name!r} in this block{why}; "
                            + did_you_mean(name, known) + "expected one of " + ", ".join(known))
    if not wrt:
        raise SpecError(spec.source, "--wrt", "name at least one parameter or step, e.g. W_2,X")

    # which steps depend on a wrt name: only they carry a gradient worth computing
    live = set(wrt)
    for s in trace:
        if any(i in live for i in s.inputs):
            live.add(s.name)

    def v(name):
        return trace[name].value if name in trace else trace.params.get(name)

    # a batch: the loss is over every sequence's output, stacked (the target likewise)
    outputs = [f"{p}output" for p in batch_prefixes(spec.dims)]
    y = Mat([r for o in outputs for r in trace[o].value.rows])
    tgt = None
    if target is not None:
        tgt = Mat.from_sympy(target)
        if tgt.shape != y.shape:
            stacked = " (the batch's outputs stacked)" if spec.dims.batch else ""
            raise SpecError(spec.source, "--target", f"expected a {y.shape[0]}×{y.shape[1]} matrix{stacked}, "
                            f"got {tgt.shape[0]}×{tgt.shape[1]}")
    if upstream is None:
        value, dy, loss_tex = loss_grad(y, loss, tgt)
    else:
        value, dy, loss_tex = None, upstream, r"\partial L / \partial Y \text{ given}"
    n = spec.dims.seq_len
    acc: dict[str, Mat] = {o: Mat(dy.rows[i * n:(i + 1) * n]) for i, o in enumerate(outputs)}

    def add(name: str, m: Mat) -> None:
        acc[name] = acc[name] + m if name in acc else m

    steps = []
    for s in reversed(trace.steps):
        if s.name not in live:
            continue
        g = acc.get(s.name) or zeros(*s.value.shape)
        kind = step_kind(s.name, spec)
        rule, rule_tex = RULES[kind]
        steps.append(Grad(GRAD_PREFIX + s.name, s.name, r"\partial L / \partial %s" % symbol(s),
                          rule_tex if s.inputs else r"\text{given: a constant}", g))
        if s.inputs:
            for name, m in rule(s, g, v, spec, lambda i: i in live).items():
                add(name, m)
    out = {}
    for name in wrt:
        if name in trace:
            g = next(x for x in steps if x.of == name)
        else:
            value_p = trace.params[name]
            g = Grad(GRAD_PREFIX + name, name, r"\partial L / \partial %s" % _param_tex(name), "",
                     acc.get(name) or zeros(*value_p.shape))
        out[name] = g
    return Backward(trace, loss, loss_tex, value, tuple(steps), out)


def _param_tex(name: str) -> str:
    p = parameters.parse(name)
    if p.kind == "input":
        return "X" if p.batch is None else f"X^{{(b{p.batch})}}"   # a batch's b1.X
    if p.kind == "memory":   # the parameter M, written as the sheets write the memory
        return cross.MEMORY_TEX
    if p.linear:
        kind = "W" if p.kind == "weight" else "b"
        if p.cross:  # as the decoder layer's formulas write them: W^{Q}_{c}
            return f"{kind}^{{{p.sub}}}_{{c}}"
        return f"{kind}^{{{p.sub}}}" if p.sub in "QKVO" else f"{kind}_{{{p.sub}}}"
    return f"\\{p.kind}^{{({p.norm})}}"
