"""Working of the products and sums of the block: linear layers, scores, head outputs, residuals.
A mixin of builder.Builder (it reads self.trace, self.places, self.t, self.value, self.symbol)."""
from __future__ import annotations

from symblock.sheets.numbers import (ALL_TERMS, SUBSTITUTE_ENTRIES, num, operand, operand_matrix,
                                     param_symbol, result, step_symbol)


class LinearWork:
    def substitute(self, lhs: str, parts: list[tuple[str, object]], op: str = " ") -> tuple[None, str] | None:
        """`lhs = A B = [a] [b]`: the operands' numbers, when they are small enough to print."""
        if any(m.shape[0] * m.shape[1] > SUBSTITUTE_ENTRIES for _, m in parts):
            return None
        mats = [operand_matrix(m, self.places)[0] for _, m in parts]
        syms = op.join(s for s, _ in parts)
        return None, f"{lhs} = {syms} = " + op.join(mats)

    def dot_entries(self, step, a_rows, b_cols, positions, bias=None, lhs=None,
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

    def positions(self, rows: int, cols: int, inner: int, row: int = 0) -> list[tuple[int, int]]:
        k = min(cols, 3) if inner <= 4 else 1
        return [(row, j) for j in range(k)]

    def work_linear(self, step) -> list:
        src, w, b = (list(step.inputs) + [None])[:3]
        x, W = self.value(src), self.value(w)
        bias = self.trace.params[b].rows[0] if b and b in self.trace.params else None
        lhs = step_symbol(step)
        parts = [(self.symbol(src), x), (param_symbol(w), W)]
        out = []
        sub = self.substitute(lhs, parts)
        if sub:
            if bias is not None:
                sub = (None, sub[1] + " + " + operand_matrix(self.trace.params[b], self.places)[0])
            out.append(sub)
        pos = self.positions(*step.value.shape, x.shape[1])
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self.dot_entries(step, x.rows, W.T.rows, pos, bias)
        return out

    def work_scores(self, step, h: int) -> list:
        lo, hi = h * self.dims.d_head, (h + 1) * self.dims.d_head
        q, k = self.value("attn.q").cols(lo, hi), self.value("attn.k").cols(lo, hi)
        out = []
        sub = self.substitute(step_symbol(step), [(f"Q_{h}", q), (rf"K_{h}^{{\top}}", k.T)])
        if sub:
            out.append(sub)
        pos = self.positions(*step.value.shape, hi - lo)
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self.dot_entries(step, q.rows, k.rows, pos)
        return out
    def work_out(self, step, h: int) -> list:
        lo, hi = h * self.dims.d_head, (h + 1) * self.dims.d_head
        p, v = self.value(f"attn.h{h}.weights"), self.value("attn.v").cols(lo, hi)
        out = []
        sub = self.substitute(step_symbol(step), [(f"P_{h}", p), (f"V_{h}", v)])
        if sub:
            out.append(sub)
        n = self.dims.seq_len
        pos = self.positions(*step.value.shape, n, row=n - 1)  # the last row mixes every value row
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self.dot_entries(step, p.rows, v.T.rows, pos)
        return out

    def work_add(self, step) -> list:
        a, b = step.inputs
        A, B = self.value(a), self.value(b)
        lhs = step_symbol(step)
        sub = self.substitute(lhs, [(self.symbol(a), A), (self.symbol(b), B)], op=" + ")
        if sub:
            return [sub]
        (ta, xa), (tb, xb) = num(A.rows[0][0], self.places), operand(B.rows[0][0], self.places)
        return [(self.t("elementwise"), None),
                (None, rf"({lhs})_{{11}} = {ta} + {tb} " + result(step.value.rows[0][0], self.places, xa or xb))]

