"""Working of the products and sums of the block: linear layers, scores, head outputs, residuals.
A mixin of builder.Builder (it reads self.trace, self.places, self.t, self.value, self.symbol).

Every product is worked from the operands as printed (numbers.show): exact when short, else the
rounded decimal; the result is what those printed numbers give (builder.outcome)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import exact
from symblock.engine.steps import key_columns, kv_head, value_columns
from symblock.engine.tex_width import width
from symblock.options import KEY_LINE
from symblock.sheets.numbers import SUBSTITUTE_ENTRIES, bmatrix, step_symbol

if TYPE_CHECKING:
    from symblock.engine.block import Step

TERMS_PER_LINE = 6   # a long sum of products continues on the next line (sooner when wide)
PLUS, QUAD = width("a + b") - 2, width(r"\quad")   # a `+` (or `=`) between terms, a continued line's indent
MAX_TERMS = 24       # longer sums are written with Σ (no operands printed)


class LinearWork:
    def substitute(self, lhs: str, parts: list[tuple[str, object]], op: str = " ",
                   plus: tuple[str, list] | None = None) -> tuple[None, str] | None:
        """`lhs = A B [+ b] = [a] [b] [+ [b]]`: the operands' numbers, when they are small enough
        to print (`plus`: a bias row added to the product); as the lines below print them (shows):
        every entry exact, or every one that is not plain as its decimal."""
        if any(m.shape[0] * m.shape[1] > SUBSTITUTE_ENTRIES for _, m in parts):
            return None
        rows = [m.rows for _, m in parts] + ([[list(plus[1])]] if plus else [])
        each = iter(self.shows([e for m in rows for r in m for e in r]))   # all exact, or decimals: no mix
        shown = [[[next(each) for _ in r] for r in m] for m in rows]
        mats = [bmatrix([[c.tex for c in r] for r in m]) for m in shown]
        rel = "=" if all(c.exact for m in shown for r in m for c in r) else r"\approx"   # a rounded entry
        syms = op.join(s for s, _ in parts)
        if plus:
            return None, f"{lhs} = {syms} + {plus[0]} {rel} " + op.join(mats[:-1]) + " + " + mats[-1]
        return None, f"{lhs} = {syms} {rel} " + op.join(mats)

    def dot_line(self, lhs: str, xs, ys, bias, true) -> str:
        """`(lhs) &= x₁·y₁ + … [+ b] ≈ r`, continued over lines when long."""
        if len(xs) > MAX_TERMS:
            return rf"{lhs} &= \textstyle\sum_{{k=1}}^{{{len(xs)}}} \cdots " + self.outcome(true, true, True)
        shown = self.shows(list(xs) + list(ys) + [bias])
        sx, sy, sb = shown[:len(xs)], shown[len(xs):-1], shown[-1]
        terms = [rf"{a.op} \cdot {b.op}" for a, b in zip(sx, sy)]
        computed = exact.dot([a.value for a in sx], [b.value for b in sy])
        shown = sx + sy
        if bias is not None:
            terms.append(sb.op)
            computed = computed + sb.value
            shown.append(sb)
        result = self.outcome(computed, true, all(s.exact for s in shown), aligned=True)
        room = None if self.v1 else KEY_LINE   # version 1's keys: TERMS_PER_LINE alone
        sizes = [width(t) + PLUS for t in terms] + [width(result.split(r"\\")[0])]   # widths add up
        lines: list[list[str]] = [[]]
        used = width(lhs) + PLUS
        for n, term in enumerate(terms):   # at most TERMS_PER_LINE a line, and as many as fit a key's line
            more = sizes[n] + (sizes[-1] if n == len(terms) - 1 else 0)
            if lines[-1] and (len(lines[-1]) == TERMS_PER_LINE or (room is not None and used + more > room)):
                lines.append([])
                used = QUAD + PLUS
            lines[-1].append(term)
            used += sizes[n]
        body = r" \\ &\quad + ".join(" + ".join(chunk) for chunk in lines)
        return rf"{lhs} &= {body} " + result

    def dot_entries(self, step: Step, a_rows, b_cols, positions, bias=None, lhs=None,
                    value=None) -> list[tuple[str | None, str]]:
        """Entries (i, j) of A·B written out as sums of products, with their results
        (of `value`, default the step's; `lhs` names it, default the step's symbol)."""
        lhs = step_symbol(step) if lhs is None else lhs
        value_of = step.value if value is None else value
        lines = [self.dot_line(rf"({lhs})_{{{i + 1}{j + 1}}}", a_rows[i], b_cols[j],
                               None if bias is None else bias[j], value_of.rows[i][j]) for i, j in positions]
        return [(None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")] if lines else []

    def positions(self, rows: int, cols: int, inner: int, row: int = 0) -> list[tuple[int, int]]:
        k = min(cols, 3) if inner <= 4 else 1
        return [(row, j) for j in range(k)]

    def work_linear(self, step: Step) -> list:
        src, w, b = (list(step.inputs) + [None])[:3]
        x, W = self.value(src), self.value(w)
        bias = self.trace.params[b].rows[0] if b and b in self.trace.params else None
        lhs = step_symbol(step)
        parts = [(self.symbol(src, step.name), x), (self.symbol(w), W)]
        out = []
        sub = self.substitute(lhs, parts, plus=None if bias is None else (self.symbol(b), bias))
        if sub:
            out.append(sub)
        pos = self.positions(*step.value.shape, x.shape[1])
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self.dot_entries(step, x.rows, W.T.rows, pos, bias)
        return out

    def work_scores(self, step: Step, h: int) -> list:
        lo, hi = h * self.dims.d_head, (h + 1) * self.dims.d_head
        g, rot = kv_head(h, self.dims), "'" if self.o.rope else ""   # grouped heads: K/V head g
        q, k = self.value(step.inputs[0]).cols(lo, hi), self.value(step.inputs[1]).cols(*key_columns(step.name, self.dims))
        reads = self.rope_reads(h)
        out = [(reads, None)] if reads else []
        sub = self.substitute(step_symbol(step), [(f"Q{rot}_{h}", q), ((rf"{{K'_{g}}}" if rot else f"K_{g}") + r"^{\top}", k.T)])
        if sub:
            out.append(sub)
        pos = self.positions(*step.value.shape, hi - lo)
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        out += self.dot_entries(step, q.rows, k.rows, pos)
        return out

    def work_out(self, step: Step, h: int) -> list:
        p, v = self.value(step.inputs[0]), self.value(step.inputs[1]).cols(*value_columns(step.name, self.dims))
        reads = self.rope_reads(h)
        out = [(reads, None)] if reads else []
        sub = self.substitute(step_symbol(step), [(self.symbol(step.inputs[0]), p), (f"V_{kv_head(h, self.dims)}", v)])
        if sub:
            out.append(sub)
        n = self.dims.seq_len
        pos = self.positions(*step.value.shape, n, row=n - 1)  # the last row mixes every value row
        last = n > 1 and not self.v1   # version 1's keys keep their words
        out.append((self.t(("last_row_" if last else "first_") + ("entries" if len(pos) > 1 else "entry")), None))
        out += self.dot_entries(step, p.rows, v.T.rows, pos)
        return out

    def work_add(self, step: Step) -> list:
        a, b = step.inputs
        A, B = self.value(a), self.value(b)
        lhs = step_symbol(step)
        sub = self.substitute(lhs, [(self.symbol(a, step.name), A), (self.symbol(b, step.name), B)], op=" + ")
        if sub:
            return [sub]
        sa, sb = self.shows([A.rows[0][0], B.rows[0][0]])
        return [(self.t("elementwise"), None),
                (None, rf"({lhs})_{{11}} = {sa.tex} + {sb.op} "
                 + self.outcome(sa.value + sb.value, step.value.rows[0][0], sa.exact and sb.exact))]
