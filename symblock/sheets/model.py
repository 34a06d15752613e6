"""The worksheet's data model: plain dicts and lists built from a Trace, shared by every format.

`build(trace, exercise, ...)` says, for each asked step, what is computed (prose), the formula,
the numbers going in, the work (entries written out: sums of products, per-row statistics,
exponentials) and the result. Results always come from the Trace; the only numbers computed here
are display-only intermediates of the work shown (a deviation x − μ, an exponential e^s and their
sum). Math is LaTeX that both TeX (amsmath) and KaTeX accept; prose comes from `lang.py`; both
are marked `Safe`. Everything else (titles, file names) is user text that the writers escape.
"""
from __future__ import annotations

from decimal import Context, Decimal
from fractions import Fraction

from symblock.engine import exact
from symblock.engine.steps import split_batch
from symblock.sheets.lang import TEXTS

MAX_EXACT_PLACES = 6        # a terminating decimal up to this many places is shown exactly
MAX_EXACT_TEX = 26          # longer closed forms are shown as decimals with ≈
SUBSTITUTE_ENTRIES = 24     # show whole operand matrices when each has at most this many entries
ALL_TERMS = 8               # write every term of a row sum up to this many terms


class Safe(str):
    """Trusted text, valid as LaTeX math/prose and as Markdown (from this package, never a user)."""


# ---------------------------------------------------------------- numbers

def _fraction(e) -> Fraction | None:
    if e is exact.NEG_INF or not e.is_rational:
        return None
    r = e.to_sympy()
    return Fraction(int(r.p), int(r.q))


def _terminating(q: Fraction) -> str | None:
    """The exact decimal text of q when it terminates within MAX_EXACT_PLACES places."""
    scaled = q * 10 ** MAX_EXACT_PLACES
    if scaled.denominator != 1:
        return None
    wide = Context(prec=scaled.numerator.bit_length() // 3 + 2)  # 28 digits would round 10**40 + 1
    d = Decimal(scaled.numerator).scaleb(-MAX_EXACT_PLACES, wide).normalize(wide)
    text = format(d, "f")
    return "0" if text in ("-0", "0") else text


def is_plain(e) -> bool:
    """An integer, a short terminating decimal or −∞: exact and already a decimal."""
    if e is exact.NEG_INF:
        return True
    q = _fraction(e)
    return q is not None and _terminating(q) is not None


def exact_tex(e) -> str | None:
    """A short exact form in LaTeX, or None when the value is best shown as a decimal."""
    if e is exact.NEG_INF:
        return r"-\infty"
    q = _fraction(e)
    if q is not None:
        text = _terminating(q)
        if text is not None:
            return text
        if len(str(abs(q.numerator))) + len(str(q.denominator)) <= 6:
            sign = "-" if q < 0 else ""
            return rf"{sign}\frac{{{abs(q.numerator)}}}{{{q.denominator}}}"
        return None
    form = e.to_sympy(24)
    if form is None:
        return None
    import sympy
    tex = sympy.latex(form)
    return tex if len(tex) <= MAX_EXACT_TEX else None


def dec_tex(e, places: int) -> str:
    if e is exact.NEG_INF:
        return r"-\infty"
    d = exact.real(e).decimal(places)
    if d == 0:
        d = abs(d)
    return f"{d:.{places}f}"


def num(e, places: int) -> tuple[str, bool]:
    """A number as it goes into written-out work: (tex, approximate?)."""
    if is_plain(e):
        return exact_tex(e), False
    return dec_tex(e, places), True


def operand(e, places: int) -> tuple[str, bool]:
    """`num`, parenthesised when negative (so that 1·(−1) reads right)."""
    tex, approx = num(e, places)
    return (f"({tex})" if tex.startswith("-") else tex), approx


def rel(approx: bool) -> str:
    return r"\approx" if approx else "="


def result(e, places: int, approx_in: bool = False) -> str:
    """`= 3`, `= \\frac{1}{3} \\approx 0.333` or `\\approx 0.447` for a computed entry."""
    tex = exact_tex(e)
    if tex is not None and is_plain(e):
        return f"{rel(approx_in)} {tex}"
    if tex is not None and not approx_in:
        return rf"= {tex} \approx {dec_tex(e, places)}"
    return rf"\approx {dec_tex(e, places)}"


def bmatrix(cells: list[list[str]]) -> str:
    body = r" \\ ".join(" & ".join(row) for row in cells)
    return r"\begin{bmatrix} " + body + r" \end{bmatrix}"


def matrix_value(mat, places: int) -> str:
    """`= [exact]`, `= [exact] ≈ [decimals]` or `≈ [decimals]` for a whole matrix."""
    rows = mat.rows
    exact_cells = [[exact_tex(e) for e in r] for r in rows]
    dec = bmatrix([[dec_tex(e, places) for e in r] for r in rows])
    if all(c is not None for r in exact_cells for c in r):
        out = "= " + bmatrix(exact_cells)
        if not all(is_plain(e) for r in rows for e in r):
            out += r" \approx " + dec
        return out
    return r"\approx " + dec


def operand_matrix(mat, places: int) -> tuple[str, bool]:
    cells = [[num(e, places) for e in r] for r in mat.rows]
    return bmatrix([[c for c, _ in r] for r in cells]), any(a for r in cells for _, a in r)


def grid(rows: int, cols: int, places: int) -> str:
    """An empty grid of the step's shape to write the answer in."""
    cell = r"\vphantom{\Big|}\hphantom{-0." + "0" * max(places, 1) + "}"
    spec = "|" + "c|" * cols
    body = r" \\ \hline ".join(" & ".join([cell] * cols) for _ in range(rows))
    return r"\begin{array}{" + spec + r"} \hline " + body + r" \\ \hline \end{array}"


# ---------------------------------------------------------------- symbols

def param_symbol(name: str) -> str:
    if name == "X":
        return "X"
    if name.endswith(".X"):  # a batch's input: b1.X
        return f"X^{{({name[:-2]})}}"
    if "." in name:
        ln, part = name.split(".")
        tag = {"ln1": "1", "ln2": "2", "ln_final": "f"}[ln]
        return rf"\{part}^{{({tag})}}"
    kind, sub = name.split("_")
    return f"{kind}^{{{sub}}}" if sub in "QKVO" else f"{kind}_{sub}"


def step_symbol(step) -> str:
    return step.latex.split(" = ")[0].strip()


def _shape(r: int, c: int) -> str:
    return rf"{r} \times {c}"


# ---------------------------------------------------------------- the model

class _Builder:
    def __init__(self, trace, exercise, lang: str, places: int):
        self.trace, self.ex, self.places = trace, exercise, places
        self.spec, self.o, self.dims = trace.spec, trace.spec.options, trace.spec.dims
        self.T = TEXTS[lang]

    def t(self, key: str, *args, **kw) -> Safe:
        return Safe(self.T[key].format(*args, **kw))

    def value(self, name: str):
        return self.trace[name].value if name in self.trace else self.trace.params[name]

    def symbol(self, name: str) -> str:
        if name in self.trace:
            return step_symbol(self.trace[name])
        return param_symbol(name)

    # -- sections
    def conventions(self) -> list[Safe]:
        d, o = self.dims, self.o
        import sympy
        eps = sympy.latex(sympy.sympify(o.eps))
        scale = self.t("conv_scale", d.d_head) if o.attention_scale == "sqrt_dk" else self.t("conv_noscale")
        cols = r"1, \dots, d" if d.heads == 1 else r"h d_k + 1, \dots, (h + 1) d_k"
        if d.heads * d.d_k != d.d_model or d.d_k != d.d_v:  # issue 15: other projection widths
            cols = rf"h d_k + 1, \dots, (h + 1) d_k\ (d_k = {d.d_k};\ V\!: d_v = {d.d_v})"
        out = [self.t("conv_rows", d.seq_len, d.d_model), self.t("conv_attn", scale, cols)]
        if o.causal:
            out.append(self.t("conv_mask"))
        if o.padding:  # issue 15: the key padding mask, shown like the causal one
            rows = self.spec.key_padding_mask
            keys = [", ".join(str(j + 1) for j, p in enumerate(r) if p) or "—" for r in rows]
            out.append(self.t("conv_padding", keys[0] if len(rows) == 1 else
                              "; ".join(f"b{b}: {k}" for b, k in enumerate(keys))))
        if o.dropout:
            import sympy as _s
            out.append(self.t("conv_dropout", _s.latex(self.spec.dropout_p)))
        out.append(self.t(f"conv_{o.norm}", eps))
        if o.norm_position == "post":
            out.append(self.t("conv_post"))
        else:
            out.append(self.t("conv_pre", self.t("conv_final") if o.final_norm else ""))
        out.append(self.t("conv_ffn", self.ffn_formula()))
        out.append(self.t("conv_round", self.places))
        return out

    def ffn_formula(self) -> str:
        from symblock.engine.block import ACTIVATIONS
        act = ACTIVATIONS[self.o.activation][1]
        p = self.trace.params
        b = lambda n: f" + b_{n}" if f"b_{n}" in p else ""  # noqa: E731
        inner = rf"\mathrm{{{act}}}(x W_1{b(1)})"
        if self.o.gated:
            inner = rf"\left({inner} \odot (x W_3{b(3)})\right)"
        return rf"{inner} W_2{b(2)}"

    def describe(self) -> Safe:
        d, o = self.dims, self.o
        from symblock.engine.block import ACTIVATIONS
        heads = self.t("heads_1") if d.heads == 1 else self.t("heads_n", d.heads)
        order = self.t("post") if o.norm_position == "post" else self.t("pre_final" if o.final_norm else "pre")
        norm = "LayerNorm" if o.norm == "layernorm" else "RMSNorm"
        act = "$\\mathrm{" + ACTIVATIONS[o.activation][1] + "}$" + (" (gated)" if o.gated and self.T is TEXTS["en"] else "")
        if o.gated and self.T is not TEXTS["en"]:
            act += "（门控）"
        return self.t("describe", n=d.seq_len, d=d.d_model, f=d.d_ff, heads=heads, order=order,
                      norm=norm, act=act, mask=self.t("mask_on" if o.causal else "mask_pad" if o.padding
                                                      else "mask_off"))

    def data(self) -> list[dict]:
        """The given matrices: the input X first, then parameters, then given steps."""
        def item(name, symbol, mat, kind, given):
            return {"symbol": Safe(symbol), "name": name, "kind": kind, "given": given,
                    "shape": Safe(_shape(*mat.shape)),
                    "math": Safe(f"{symbol} {matrix_value(mat, self.places)}")}
        steps = [self.trace[n] for n in self.ex.data_steps]
        first = [item(s.name, step_symbol(s), s.value, "step", s.given) for s in steps if s.name == "x"]
        params = [item(p, param_symbol(p), self.trace.params[p], "param", False) for p in self.ex.data_params]
        rest = [item(s.name, step_symbol(s), s.value, "step", s.given) for s in steps if s.name != "x"]
        from symblock.engine.matrix import Mat
        masks = [item(f"dropout.masks.{n}", rf"D_{{\mathrm{{{n}}}}}", Mat.from_sympy(m), "param", False)
                 for n, m in self.spec.dropout_masks.items()]  # the fixed dropout masks, given
        return first + params + masks + rest

    def task(self, i: int, name: str) -> dict:
        step = self.trace[name]
        r, c = step.value.shape
        return {"n": i, "name": name, "heading": self.t("task", i), "what": self.what(step),
                "formula": Safe(step.latex), "shape": Safe(_shape(r, c)),
                "grid": Safe(f"{step_symbol(step)} = {grid(r, c, self.places)}"),
                "work": [{"text": Safe(t) if t else None, "math": Safe(m) if m else None}
                         for t, m in self.work(step)],
                "answer": Safe(f"{step_symbol(step)} {matrix_value(step.value, self.places)}")}

    # -- prose: what is computed
    def what(self, step) -> Safe:
        name = split_batch(step.name)[1]  # a batch's b1.attn.q reads as attn.q
        if name.endswith(".dropped"):
            return self.t("s.dropped", src=self.symbol(step.inputs[0]))
        parts = name.split(".")
        if name.startswith("attn.h"):
            pad = "_pad" if parts[2] == "masked" and self.o.padding and not self.o.causal else ""
            return self.t(f"s.{parts[2]}{pad}", h=int(parts[1][1:]))
        if name.startswith("norm"):
            src = self.symbol(step.inputs[0])
            norm = "LayerNorm" if self.o.norm == "layernorm" else "RMSNorm"
            key = f"s.{parts[1]}" if len(parts) > 1 else f"s.{self.o.norm}"
            return self.t(key, src=src, norm=norm)
        if name in ("ffn.hidden", "ffn.gate"):
            w = "W_1" if name == "ffn.hidden" else "W_3"
            b = "b_1" if name == "ffn.hidden" else "b_3"
            return self.t(f"s.{name}", src=self.symbol(step.inputs[0]), w=w,
                          b=f" + {b}" if b in self.trace.params else "")
        if name == "attn.out" and not self.o.out_proj:
            return self.t("s.attn.out_noproj")
        return self.t(f"s.{name}")

    # -- work shown: a list of (prose or None, display math or None)
    def work(self, step) -> list[tuple[str | None, str | None]]:
        name = split_batch(step.name)[1]
        last = name.rsplit(".", 1)[-1]
        if last == "dropped":
            return [(self.t("dropped_text"), None)]
        if name in ("attn.q", "attn.k", "attn.v", "ffn.hidden", "ffn.gate", "ffn.out") or \
                (name == "attn.out" and self.o.out_proj):
            return self.work_linear(step)
        if name.startswith("attn.h"):
            h = int(name.split(".")[1][1:])
            return getattr(self, f"work_{last}")(step, h)
        if name in ("resid1", "resid2"):
            return self.work_add(step)
        if name.startswith("norm"):
            kind = last if last in ("mean", "var", "std", "ms", "rms") else self.o.norm
            return getattr(self, f"work_{kind}")(step)
        if name == "ffn.act":
            return self.work_act(step)
        if name == "attn.concat":
            return [(self.t("concat"), None)]
        if name == "output":
            return [(self.t("copy"), None)]
        return []

    def _substitute(self, lhs: str, parts: list[tuple[str, object]], op: str = " ") -> tuple[None, str] | None:
        """`lhs = A B = [a] [b]`: the operands' numbers, when they are small enough to print."""
        if any(m.shape[0] * m.shape[1] > SUBSTITUTE_ENTRIES for _, m in parts):
            return None
        mats = [operand_matrix(m, self.places)[0] for _, m in parts]
        syms = op.join(s for s, _ in parts)
        return None, f"{lhs} = {syms} = " + op.join(mats)

    def _dot_entries(self, step, a_rows, b_cols, positions, bias=None, lhs=None,
                     value=None) -> list[tuple[str | None, str]]:
        """Entries (i, j) of A·B written out as sums of products, with their exact results
        (of `value`, default the step's; `lhs` names it, default the step's symbol)."""
        lhs = step_symbol(step) if lhs is None else lhs
        value_of = step.value if value is None else value
        lines = []
        for i, j in positions:
            terms, approx = [], False
            for x, y in zip(a_rows[i], b_cols[j]):
                (tx, ax), (ty, ay) = operand(x, self.places), operand(y, self.places)
                approx |= ax or ay
                terms.append(rf"{tx} \cdot {ty}")
            if len(terms) > ALL_TERMS:
                terms = terms[:3] + [r"\cdots"] + terms[-1:]
            if bias is not None:
                tb, ab = operand(bias[j], self.places)
                approx |= ab
                terms.append(tb)
            value = value_of.rows[i][j]
            lines.append(rf"({lhs})_{{{i + 1}{j + 1}}} = " + " + ".join(terms) + " " + result(value, self.places, approx))
        return [(None, r"\begin{aligned} " + r" \\ ".join(l.replace(" = ", " &= ", 1) for l in lines)
                 + r" \end{aligned}")] if lines else []

    def _positions(self, rows: int, cols: int, inner: int, row: int = 0) -> list[tuple[int, int]]:
        k = min(cols, 3) if inner <= 4 else 1
        return [(row, j) for j in range(k)]

    def work_linear(self, step) -> list:
        src, w, b = (list(step.inputs) + [None])[:3]
        x, W = self.value(src), self.value(w)
        bias = self.trace.params[b].rows[0] if b and b in self.trace.params else None
        lhs = step_symbol(step)
        parts = [(self.symbol(src), x), (param_symbol(w), W)]
        out = []
        sub = self._substitute(lhs, parts)
        if sub:
            if bias is not None:
                sub = (None, sub[1] + " + " + operand_matrix(self.trace.params[b], self.places)[0])
            out.append(sub)
        pos = self._positions(*step.value.shape, x.shape[1])
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self._dot_entries(step, x.rows, W.T.rows, pos, bias)
        return out

    def work_scores(self, step, h: int) -> list:
        lo, hi = h * self.dims.d_head, (h + 1) * self.dims.d_head
        q, k = (self.value(n).cols(lo, hi) for n in step.inputs)
        out = []
        sub = self._substitute(step_symbol(step), [(f"Q_{h}", q), (rf"K_{h}^{{\top}}", k.T)])
        if sub:
            out.append(sub)
        pos = self._positions(*step.value.shape, hi - lo)
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self._dot_entries(step, q.rows, k.rows, pos)
        return out

    def work_scaled(self, step, h: int) -> list:
        s = self.value(step.inputs[0])
        import sympy
        c = sympy.latex(1 / sympy.sqrt(self.dims.d_head))
        lhs, src = step_symbol(step), self.symbol(step.inputs[0])
        t, a = num(s.rows[0][0], self.places)
        first = (rf"({lhs})_{{11}} = ({src})_{{11}} / \sqrt{{{self.dims.d_head}}} = {t} / \sqrt{{{self.dims.d_head}}} "
                 + result(step.value.rows[0][0], self.places, a))
        return [(self.t("scale_text", c), None), (None, first)]

    def work_masked(self, step, h: int) -> list:
        if self.o.padding:
            return [(self.t("pad_text" if not self.o.causal else "mask_pad_text"), None)]
        return [(self.t("mask_text"), None)]

    def work_weights(self, step, h: int) -> list:
        s = self.value(step.inputs[0])
        lines = []
        for i, row in enumerate(s.rows):
            args = [num(e, self.places)[0] for e in row]
            exps = [None if e is exact.NEG_INF else exact.exp(e) for e in row]
            total = exact.total([x for x in exps if x is not None])
            ex_vals = ["0" if x is None else (num(x, self.places)[0]) for x in exps]
            approx = any(x is not None and not is_plain(x) for x in exps)
            w = [dec_tex(e, self.places) if not is_plain(e) else exact_tex(e) for e in step.value.rows[i]]
            w_approx = not all(is_plain(e) for e in step.value.rows[i])
            lines.append(rf"i = {i + 1}:\ & \left(" + ", ".join(f"e^{{{a}}}" for a in args) + r"\right) "
                         + rel(approx) + r" \left(" + ", ".join(ex_vals) + r"\right),\ \textstyle\sum "
                         + rel(approx) + f" {num(total, self.places)[0]}" + r",\ P_{" + f"{i + 1}" + r"\cdot} "
                         + rel(w_approx) + r" \left(" + ", ".join(w) + r"\right)")
        return [(self.t("per_row"), None),
                (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]

    def work_out(self, step, h: int) -> list:
        lo, hi = h * self.dims.d_v, (h + 1) * self.dims.d_v
        p, v = self.value(step.inputs[0]), self.value(step.inputs[1]).cols(lo, hi)
        out = []
        sub = self._substitute(step_symbol(step), [(f"P_{h}", p), (f"V_{h}", v)])
        if sub:
            out.append(sub)
        n = self.dims.seq_len
        pos = self._positions(*step.value.shape, n, row=n - 1)  # the last row mixes every value row
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self._dot_entries(step, p.rows, v.T.rows, pos)
        return out

    def work_add(self, step) -> list:
        a, b = step.inputs
        A, B = self.value(a), self.value(b)
        lhs = step_symbol(step)
        sub = self._substitute(lhs, [(self.symbol(a), A), (self.symbol(b), B)], op=" + ")
        if sub:
            return [sub]
        (ta, xa), (tb, xb) = num(A.rows[0][0], self.places), operand(B.rows[0][0], self.places)
        return [(self.t("elementwise"), None),
                (None, rf"({lhs})_{{11}} = {ta} + {tb} " + result(step.value.rows[0][0], self.places, xa or xb))]

    # -- norms, row by row as in the seed article
    def _rows_block(self, lines: list[str]) -> list:
        return [(self.t("per_row"), None), (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]

    def _terms(self, items: list[str]) -> str:
        if len(items) > ALL_TERMS:
            items = items[:2] + [r"\cdots"] + items[-1:]
        return " + ".join(items)

    def work_mean(self, step) -> list:
        x, d = self.value(step.inputs[0]), self.dims.d_model
        lines = []
        for i, row in enumerate(x.rows):
            ops = [num(row[0], self.places)] + [operand(e, self.places) for e in row[1:]]
            approx = any(a for _, a in ops)
            lines.append(rf"\mu_{{{i + 1}}} &= \frac{{{self._terms([t for t, _ in ops])}}}{{{d}}} "
                         + result(step.value.rows[i][0], self.places, approx))
        return self._rows_block(lines)

    def work_var(self, step) -> list:
        src, mean = step.inputs
        x, mu, d = self.value(src), self.value(mean), self.dims.d_model
        lines = []
        for i, row in enumerate(x.rows):
            m = mu.rows[i][0]
            tm, am = operand(m, self.places)
            ops = [num(e, self.places) for e in row]
            approx = am or any(a for _, a in ops)
            first = self._terms([rf"({t} - {tm})^2" for t, _ in ops])
            devs = [operand(e - m, self.places) for e in row]
            line = rf"\sigma^2_{{{i + 1}}} &= \frac{{{first}}}{{{d}}}"
            if d <= 4:
                line += rf" {rel(approx)} \frac{{{self._terms([f'{t}^2' for t, _ in devs])}}}{{{d}}}"
                approx = approx or any(a for _, a in devs)
            lines.append(line + " " + result(step.value.rows[i][0], self.places, approx))
        return self._rows_block(lines)

    def _root_rows(self, step, sym: str, inner_sym: str) -> list:
        v = self.value(step.inputs[0])
        import sympy
        eps_tex = "" if self.o.eps == 0 else " + " + sympy.latex(sympy.sympify(self.o.eps))
        lines = []
        for i, (e,) in enumerate(v.rows):
            t, a = num(e, self.places)
            lines.append(rf"{sym}_{{{i + 1}}} &= \sqrt{{{inner_sym}_{{{i + 1}}}{eps_tex}}} = \sqrt{{{t}{eps_tex}}} "
                         + result(step.value.rows[i][0], self.places, a))
        return self._rows_block(lines)

    def work_std(self, step) -> list:
        return self._root_rows(step, r"\sigma", r"\sigma^2")

    def work_rms(self, step) -> list:
        return self._root_rows(step, "r", "m")

    def work_ms(self, step) -> list:
        x, d = self.value(step.inputs[0]), self.dims.d_model
        lines = []
        for i, row in enumerate(x.rows):
            ops = [operand(e, self.places) for e in row]
            approx = any(a for _, a in ops)
            lines.append(rf"m_{{{i + 1}}} &= \frac{{{self._terms([f'{t}^2' for t, _ in ops])}}}{{{d}}} "
                         + result(step.value.rows[i][0], self.places, approx))
        return self._rows_block(lines)

    def _affine(self, gamma, beta) -> str:
        """` \\odot γ + β` unless γ = 1 and β = 0 (then the scale and shift change nothing)."""
        trivial = all(is_plain(g) and exact_tex(g) == "1" for g in gamma.rows[0]) and \
            (beta is None or all(is_plain(b) and exact_tex(b) == "0" for b in beta.rows[0]))
        if trivial:
            return ""
        return r" \odot \gamma" + (r" + \beta" if beta is not None else "")

    def _norm_rows(self, step, fracs) -> list:
        d = self.dims.d_model
        rows = range(self.dims.seq_len) if d <= 4 else range(1)
        lines = []
        for i in rows:
            parts, approx = fracs(i)
            if len(parts) > ALL_TERMS:
                parts = parts[:2] + [r"\cdots"] + parts[-1:]
            vals = [exact_tex(e) if is_plain(e) else dec_tex(e, self.places) for e in step.value.rows[i]]
            approx = approx or not all(is_plain(e) for e in step.value.rows[i])
            lines.append(rf"i = {i + 1}:\ & \left(" + ", ".join(parts) + r"\right)" + self._affine_tex
                         + f" {rel(approx)} " + r"\left(" + ", ".join(vals) + r"\right)")
        return self._rows_block(lines)

    def work_layernorm(self, step) -> list:
        src, mean, std, g, b = step.inputs
        x, mu, sd = self.value(src), self.value(mean), self.value(std)
        self._affine_tex = self._affine(self.trace.params[g], self.trace.params.get(b))

        def fracs(i):
            (tm, am), (ts, as_) = operand(mu.rows[i][0], self.places), num(sd.rows[i][0], self.places)
            ops = [num(e, self.places) for e in x.rows[i]]
            return [rf"\frac{{{t} - {tm}}}{{{ts}}}" for t, _ in ops], am or as_ or any(a for _, a in ops)
        return self._norm_rows(step, fracs)

    def work_rmsnorm(self, step) -> list:
        src, rms, g = step.inputs
        x, r = self.value(src), self.value(rms)
        self._affine_tex = self._affine(self.trace.params[g], None)

        def fracs(i):
            tr, ar = num(r.rows[i][0], self.places)
            ops = [num(e, self.places) for e in x.rows[i]]
            return [rf"\frac{{{t}}}{{{tr}}}" for t, _ in ops], ar or any(a for _, a in ops)
        return self._norm_rows(step, fracs)

    def work_act(self, step) -> list:
        act = self.o.activation
        base = {"swiglu": "silu", "geglu": "gelu"}.get(act, act)
        z = self.value(step.inputs[0])
        out = [(self.t(f"act_{base}") + (" " + self.t("gated") if self.o.gated else ""), None)]
        from symblock.engine.block import ACTIVATIONS
        fn = ACTIVATIONS[act][1]
        row = z.rows[0]
        ops = [num(e, self.places) for e in row]
        approx = any(a for _, a in ops)
        if self.o.gated:
            g = self.value(step.inputs[1]).rows[0]
            gops = [operand(e, self.places) for e in g]
            approx = approx or any(a for _, a in gops)
            terms = [rf"\mathrm{{{fn}}}({t}) \cdot {tg}" for (t, _), (tg, _) in zip(ops, gops)]
        else:
            terms = [rf"\mathrm{{{fn}}}({t})" for t, _ in ops]
        if len(terms) > 4:
            terms = terms[:2] + [r"\dots"]
        vals = [exact_tex(e) if is_plain(e) else dec_tex(e, self.places) for e in step.value.rows[0]]
        if len(vals) > 4:
            vals = vals[:2] + [r"\dots"]
        approx = approx or not all(is_plain(e) for e in step.value.rows[0])
        lhs = step_symbol(step)
        out.append((None, rf"({lhs})_{{1\cdot}} = \left(" + ", ".join(terms) + r"\right) " + rel(approx)
                    + r" \left(" + ", ".join(vals) + r"\right)"))
        return out


class _GradBuilder(_Builder):
    """Backprop tasks (preset backprop): each asked `grad.<name>` is a task whose value is the
    grad.Backward's; the key shows the rule grad.py applies and the numbers going in."""

    def __init__(self, trace, exercise, lang: str, places: int):
        super().__init__(trace, exercise, lang, places)
        self.back = exercise.backward
        self.grads = {g.name: g for g in self.back.steps}
        self.grads.update({g.name: g for g in self.back.wrt.values()})
        self.live = {g.of for g in self.back.steps}

    def conventions(self) -> list[Safe]:
        out = super().conventions()
        return out[:-1] + [self.t("conv_grad"), out[-1]]

    def loss(self) -> Safe:
        return self.t("g.loss", self.back.loss_latex)

    def data(self) -> list[dict]:
        out = super().data()
        if self.ex.target is not None:
            t = self.ex.target
            out.append({"symbol": Safe("T"), "name": "target", "kind": "target", "given": False,
                        "shape": Safe(_shape(*t.shape)), "math": Safe(f"T {matrix_value(t, self.places)}")})
        return out

    def gsym(self, name: str) -> str:
        """∂L/∂(symbol) of a step or parameter."""
        return rf"\partial L / \partial {self.symbol(name)}"

    def task(self, i: int, name: str) -> dict:
        from symblock.calculus.grad import RULES, step_kind
        g = self.grads[name]
        r, c = g.value.shape
        sym = g.latex
        if g.of == "output":
            what, formula, work = self.t("g.output"), self.back.loss_latex, self.work_loss(g)
        else:
            what = self.t("g.step" if g.of in self.trace else "g.param", self.symbol(g.of))
            cons = [s for s in self.trace if s.name in self.live and g.of in s.inputs]
            formula = r" \quad\text{and}\quad ".join(RULES[step_kind(s.name, self.spec)][1] for s in cons)
            work = [(self.t("g.sum", self.symbol(g.of)), None)] if len(cons) > 1 else []
            for s in cons:
                work.append((self.t("g.through", s.latex), None))
                if len(cons) == 1:
                    work += self.work_back(s, g)
        return {"n": i, "name": name, "heading": self.t("task", i), "what": what,
                "formula": Safe(formula), "shape": Safe(_shape(r, c)),
                "grid": Safe(f"{sym} = {grid(r, c, self.places)}"),
                "work": [{"text": Safe(t) if t else None, "math": Safe(m) if m else None} for t, m in work],
                "answer": Safe(f"{sym} {matrix_value(g.value, self.places)}")}

    def work_loss(self, g) -> list:
        n, d = g.value.shape
        if self.back.loss == "sum":
            return [(None, r"\partial L / \partial Y_{ij} = 1")]
        y, t = self.value("output").rows[0][0], self.ex.target.rows[0][0]
        (ty, ay), (tt, at) = num(y, self.places), operand(t, self.places)
        return [(None, rf"\partial L / \partial Y_{{ij}} = \tfrac{{2}}{{{n * d}}} (Y_{{ij}} - T_{{ij}})"),
                (None, rf"(\partial L / \partial Y)_{{11}} = \tfrac{{2}}{{{n * d}}} ({ty} - {tt}) "
                 + result(g.value.rows[0][0], self.places, ay or at))]

    def work_back(self, step, g) -> list:
        """The numbers of the one step `g` flows back from, for the rules written out entry by
        entry (linear layers, the activation); the other rules show the rule and the answer."""
        from symblock.calculus.grad import step_kind
        kind = step_kind(step.name, self.spec)
        up = self.grads["grad." + step.name].value
        lhs, dy = g.latex, f"({self.gsym(step.name)})"
        if kind == "linear":
            src, w, b = step.inputs
            if g.of == src:
                W = self.value(w)
                parts = [(dy, up), ("{" + param_symbol(w) + r"}^{\top}", W.T)]
                a_rows, b_cols, inner = up.rows, W.rows, W.shape[1]
            elif g.of == w:
                X = self.value(src)
                parts = [("{" + self.symbol(src) + r"}^{\top}", X.T), (dy, up)]
                a_rows, b_cols, inner = X.T.rows, up.T.rows, X.shape[0]
            else:
                return [(self.t("g.colsum"), None)]
            out = []
            sub = self._substitute(lhs, parts)
            if sub:
                out.append(sub)
            pos = self._positions(*g.value.shape, inner)
            out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
            return out + self._dot_entries(step, a_rows, b_cols, pos, lhs=lhs, value=g.value)
        if kind in ("activation", "gated") and g.of == step.inputs[0]:
            from symblock.calculus.grad import act_derivative
            z = self.value(g.of).rows[0]
            der = [act_derivative(self.o.activation)(e) for e in z]
            zs, ds = [num(e, self.places)[0] for e in z], [num(e, self.places)[0] for e in der]
            approx = any(not is_plain(e) for e in der)
            if len(zs) > 4:
                zs, ds = zs[:2] + [r"\dots"], ds[:2] + [r"\dots"]
            return [(self.t("g.act"), None),
                    (None, r"\mathrm{act}'\left(" + ", ".join(zs) + r"\right) " + rel(approx)
                     + r" \left(" + ", ".join(ds) + r"\right)")]
        return []


def cells(mat, places: int) -> list[list[dict]]:
    """Each entry of an answer for the writers that grade (HTML, Moodle, QTI, notebook): its short
    exact form (LaTeX, or None), its decimal rounded to `places`, and a 12-place decimal for a
    tolerance centred on the exact value (None for a masked −∞)."""
    return [[{"exact": exact_tex(e), "decimal": dec_tex(e, places), "plain": is_plain(e),
              "precise": None if e is exact.NEG_INF else dec_tex(e, 12)} for e in row] for row in mat.rows]


def build(trace, exercise, *, lang: str = "en", places: int = 3, ident: str = "",
          title: str | None = None) -> dict:
    """The worksheet (and key) as plain data for the templates."""
    backprop = getattr(exercise, "backward", None) is not None
    b = (_GradBuilder if backprop else _Builder)(trace, exercise, lang, places)
    spec = trace.spec
    tasks = [b.task(i, n) for i, n in enumerate(exercise.ask, 1)]
    for task in tasks:
        task["cells"] = cells(b.grads[task["name"]].value if backprop else trace[task["name"]].value, places)
    return {
        "lang": lang,
        "title": title if title is not None else (spec.title or "Transformer block"),
        "ident": ident,
        "describe": b.describe(),
        "loss": b.loss() if backprop else None,
        "conventions": b.conventions(),
        "data": b.data(),
        "tasks": tasks,
        "approx_note": b.t("approx_note", places),
        "places": places,
        "t": {k: Safe(v) for k, v in TEXTS[lang].items() if "{" not in v},
    }
