"""Rotary position embeddings (RoPE, "RoFormer: Enhanced Transformer with Rotary Position
Embedding"), exactly: each head's q and k turned pair by pair by angles that grow with the position.

Pair i of a head (0 ≤ i < d_k/2) at position m turns by m·θ^(−2i/d_k):

    x'_a = x_a cos − x_b sin,   x'_b = x_b cos + x_a sin

`half` pairs (a, b) = (i, i + d_k/2), as Hugging Face Llama / GPT-NeoX (`rotate_half`);
`interleaved` pairs (2i, 2i + 1), as RoFormer, GPT-J (`rotate_every_two`) and Meta's reference code.
θ is exact, so is every frequency (a rational, a square root, or one exact power: engine/powers.py,
shared with sinusoidal positions); cos and sin stay graph nodes with certified balls (engine/exact.py). RoPE has no parameters.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from symblock.engine import cancel, exact, powers
from symblock.engine.matrix import Entry, Mat
from symblock.errors import SpecError

STYLES = ("half", "interleaved")
DEFAULT_THETA = Fraction(10000)


@dataclass(frozen=True)
class Rope:
    """The rotation's base θ (exact) and how a head's entries pair up."""
    theta: Fraction = DEFAULT_THETA
    style: str = "half"

    def pairs(self, d_k: int) -> list[tuple[int, int]]:
        """(a, b) of pair i = 0 … d_k/2 − 1, within one head."""
        half = d_k // 2
        if self.style == "half":
            return [(i, i + half) for i in range(half)]
        return [(2 * i, 2 * i + 1) for i in range(half)]


def parse(raw: Any, source: str, where: str = "block.rope") -> Rope | None:
    """`block.rope`: absent/false (no RoPE), true (θ 10000, half), or {theta, style}."""
    from symblock.engine.fields import check_keys, kind_of
    from symblock.engine.numbers import parse_exact
    if raw is None or raw is False:
        return None
    if raw is True:
        return Rope()
    if not isinstance(raw, dict):
        raise SpecError(source, where, f"expected true, false or a mapping {{theta, style}}, got {kind_of(raw)}")
    check_keys(raw, ("theta", "style"), source, where)
    style = raw.get("style", "half")
    if style not in STYLES:
        raise SpecError(source, f"{where}.style", f"expected one of {', '.join(STYLES)}, got {kind_of(style)}")
    theta = parse_exact(raw.get("theta", 10000), source, f"{where}.theta")
    if not isinstance(theta, Fraction) or theta <= 1:
        raise SpecError(source, f"{where}.theta", f"expected a rational number > 1 (e.g. 10000), got {theta}")
    return Rope(theta=theta, style=style)


def check_dims(rope: Rope | None, d_k: int, source: str, where: str = "block.rope") -> None:
    """RoPE turns pairs of a head's entries: d_k must be even."""
    if rope is not None and d_k % 2:
        raise SpecError(source, where, f"RoPE rotates pairs of each head's entries, so d_k must be even; "
                        f"got d_k = {d_k} (set dims.d_k, or choose d_model/heads even)")


def positions(raw: Any, seq_len: int, source: str, where: str = "inputs.positions") -> tuple[int, ...]:
    """`inputs.positions`: one whole number >= 0 per row (default 0 … seq_len − 1: ())."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) != seq_len:
        raise SpecError(source, where, f"expected a list of {seq_len} whole numbers (one per row), got "
                        + (f"a list of {len(raw)}" if isinstance(raw, list) else repr(raw)))
    for j, p in enumerate(raw):
        if isinstance(p, bool) or not isinstance(p, int) or p < 0:
            raise SpecError(source, f"{where}[{j}]", f"expected a whole number >= 0, got {p!r}")
    return tuple(raw)


def frequency(theta: Fraction, i: int, d_k: int) -> exact.Real:
    """θ^(−2i/d_k), exact."""
    return power(theta, Fraction(-2 * i, d_k))


power = powers.power  # x^e exactly (engine/powers.py, shared with sinusoidal positions)


def table(rope: Rope, d_k: int, rows: Sequence[int]) -> list[list[tuple[Any, Any]]]:
    """(cos, sin) of m·θ^(−2i/d_k) for each position m of `rows` and pair i: what the key prints."""
    freqs = [frequency(rope.theta, i, d_k) for i in range(d_k // 2)]
    out = []
    for m in rows:
        angles = [exact.real(m) * f for f in freqs]
        out.append([(exact.cos(a), exact.sin(a)) for a in angles])
    return out


def rotate(x: Mat, heads: int, d_k: int, rows: Sequence[int], rope: Rope) -> Mat:
    """Every head's columns of x (heads · d_k wide) turned pair by pair; row r at position rows[r]."""
    cs = table(rope, d_k, rows)
    pairs = rope.pairs(d_k)
    out = []
    for row, trig in zip(x.rows, cs):
        new = list(row)
        for h in range(heads):
            o = h * d_k
            for (a, b), (c, s) in zip(pairs, trig):
                xa, xb = row[o + a], row[o + b]
                new[o + a], new[o + b] = turn(xa, xb, c, s, -1), turn(xb, xa, c, s, 1)
        out.append(new)
    return Mat(out)


def turn(x: Entry, y: Entry, c: Entry, s: Entry, sign: int) -> Entry:
    """x cos ± y sin as one graph node (not three: two products and their sum)."""
    if exact.is_symbolic(x) or exact.is_symbolic(y):   # derive: cos and sin as closed forms, never floats
        c, s = (exact.to_sympy(v, 10**9) if isinstance(v, exact.Real) else v for v in (c, s))
        return x * c + y * s * sign
    return exact.sum_of_products(exact.fmpq(0), [(exact.fmpq(1), (exact.real(x), c)),
                                                 (exact.fmpq(sign), (exact.real(y), s))])


def latex(sym: str, rope: Rope) -> str:
    pair = r"(i,\ i + d_k/2)" if rope.style == "half" else r"(2i,\ 2i+1)"
    return (rf"{sym}' = \mathrm{{RoPE}}({sym}):\ (x_a, x_b) \mapsto (x_a \cos\phi - x_b \sin\phi,\ "
            rf"x_b \cos\phi + x_a \sin\phi),\ \phi = m\,\theta^{{-2i/d_k}},\ (a, b) = {pair},\ "
            rf"\theta = {_theta_tex(rope.theta)}")


def _theta_tex(t: Fraction) -> str:
    return str(t) if t.denominator == 1 else rf"\frac{{{t.numerator}}}{{{t.denominator}}}"


def queries_and_keys(t: Any, q: Mat, k: Mat) -> tuple[Mat, Mat]:
    """The q and k the heads score (`t`: a Tracer of engine/block.py, which imports this
    module): `attn.q_rot` and `attn.k_rot` with RoPE, else the projections. `t.same` remembers
    them and which of their rows share a position, for `scores`."""
    if t.o.rope:
        return rotate_steps(t, q, k)
    t.same = Same(q, k, q, k, t.spec.position_list()) if q is not None and k is not None else None
    return q, k


def rotate_steps(t: Any, q: Mat, k: Mat) -> tuple[Mat, Mat]:
    """`attn.q_rot` and `attn.k_rot`; `t.same` only when both are worked here (not given or
    kept: only then are they the rotations of q and k)."""
    rope, dims = t.o.rope, t.dims
    rows = t.spec.position_list()
    made: dict[str, Mat] = {}

    def turned(name: str, x: Mat, heads: int) -> Mat:
        made[name] = rotate(x, heads, dims.d_k, rows, rope)
        return made[name]

    qr = t.step("attn.q_rot", latex("Q", rope), lambda: turned("q", q, dims.heads))
    kr = t.step("attn.k_rot", latex("K", rope), lambda: turned("k", k, dims.kv_heads))
    t.same = Same(q, k, made["q"], made["k"], rows) if len(made) == 2 else None
    return qr, kr


@dataclass(frozen=True)
class Same:
    """The heads' q and k (`q_rot`, `k_rot`: turned by RoPE, or q and k themselves), what they
    were turned from and the rows' positions. A query and a key at the same position turn by
    the same angles, R(φ)ᵀR(φ) = I (cos² + sin² = 1), so their score is the unturned q·k,
    rational when q·k is (a first layer's normalised rows: 1/r_i · 1/r_i)."""
    q: Mat
    k: Mat
    q_rot: Mat
    k_rot: Mat
    rows: tuple[int, ...]

    def pairs(self, q: Mat, k: Mat) -> list[tuple[int, int, int]]:
        """(i, j, jk): query row i and key row j of this rotation at the same position, j being
        row jk of `k`; [] unless `q` is its q_rot and `k` ends with its k_rot (a KV cache puts
        the earlier positions' rows first)."""
        n = len(self.k_rot.rows)
        off = len(k.rows) - n
        if q is not self.q_rot or off < 0 or any(a is not b for a, b in zip(k.rows[off:], self.k_rot.rows)):
            return []
        return [(i, j, off + j) for i in range(len(self.rows)) for j in range(n) if self.rows[i] == self.rows[j]]


def scores(t: Any, q: Mat, k: Mat, qcols: tuple[int, int], kcols: tuple[int, int]) -> Mat:
    """Q_h K_gᵀ (turned or not) as `@` makes it, entry for entry; a same-position score that the
    unturned q·k proves rational is handed to the rational snap as known, which then needs no
    certification at thousands of bits (with RoPE each such score would refine its cos and sin
    nodes there)."""
    same, qh, kh = t.same, q.cols(*qcols), k.cols(*kcols)
    known: dict[tuple[int, int], Any] = {}
    if same is not None and not t.symbolic and not all(e.q is not None for r in kh.rows for e in r):
        for i, j, jk in same.pairs(q, k):
            v = cancel.rational_dot(same.q.rows[i][qcols[0]:qcols[1]], same.k.rows[j][kcols[0]:kcols[1]])
            if v is not None:
                known[i, jk] = v
    if not known:
        return qh @ kh.T  # a rational K_g: the bulk product (engine/matmul.py)
    cols = list(kh.rows)
    return Mat([[exact.dot(row, c, known.get((i, j))) for j, c in enumerate(cols)] for i, row in enumerate(qh.rows)])


def recompute(name: str, ins: tuple[str, ...], env: dict[str, Mat], spec: Any) -> Mat:
    """A rotation worked again from a person's own `attn.q` / `attn.k` (`env[ins[0]]`)."""
    x, d_k = env[ins[0]], spec.dims.d_k
    return rotate(x, x.shape[1] // d_k, d_k, spec.position_list(), spec.options.rope)


RECOMPUTE = {"q_rot": recompute, "k_rot": recompute}  # by kind (the grading table's signature)
