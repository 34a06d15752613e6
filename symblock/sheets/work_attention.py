"""Working of the attention steps that are not products: scaling, the mask, the softmax rows.
A mixin of builder.Builder.

The softmax is worked as a person (and every library) does it: subtract the row's maximum, so
every exponential is at most 1; the exponentials and their sum carry one guard digit."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import exact
from symblock.sheets.numbers import step_symbol

if TYPE_CHECKING:
    from symblock.engine.block import Step

MAX_ROWS = 6   # softmax rows written out; later rows are like them


class AttentionWork:
    def work_scaled(self, step: Step, h: int) -> list:
        s = self.value(step.inputs[0])
        import sympy
        d = self.dims.d_head
        c = sympy.latex(1 / sympy.sqrt(d))
        lhs, src = step_symbol(step), self.symbol(step.inputs[0])
        a = self.show(s.rows[0][0])
        computed = a.value / exact.sqrt(exact.real(d)) if a.value is not exact.NEG_INF else a.value
        first = (rf"({lhs})_{{11}} = ({src})_{{11}} / \sqrt{{{d}}} = {a.op} / \sqrt{{{d}}} "
                 + self.outcome(computed, step.value.rows[0][0], a.exact))
        return [(self.t("scale_text", c), None), (None, first)]

    def work_masked(self, step: Step, h: int) -> list:
        if self.o.padding:
            return [(self.t("pad_text" if not self.o.causal else "mask_pad_text"), None)]
        return [(self.t("mask_text"), None)]

    def softmax_row(self, i: int, row, true_row, label: str) -> list[str]:
        """Four aligned lines: the row maximum, the exponentials, their sum, the weights (`label`:
        the row's name, (P_0)_{1·}: P_1 alone would read as head 1's weights)."""
        shown = self.shows(list(row))
        finite = [s.value for s in shown if s.value is not exact.NEG_INF]
        top = max(finite, key=lambda v: float(v))
        for v in finite:   # the float picked a candidate; make sure it is the maximum
            if (v - top).sign() > 0:
                top = v
        m = self.show(top)
        diffs = [None if s.value is exact.NEG_INF else self.show(s.value - top) for s in shown]
        exps = [None if d is None else self.show(exact.exp(d.value), guard=1, short=False) for d in diffs]
        total = exact.total([e.value for e in exps if e is not None])
        tot = self.show(total, guard=1, short=False)
        args = [r"-\infty" if d is None else d.tex for d in diffs]
        ex_tex = ["0" if e is None else e.tex for e in exps]
        rel = "=" if all(e is None or e.exact for e in exps) else r"\approx"
        sum_rel = "=" if tot.exact else r"\approx"
        exact_in = all(s.exact for s in shown) and all(d is None or d.exact for d in diffs)
        denom = exact.total([exact.exp(d.value) for d in diffs if d is not None])
        weights = [exact.ZERO if d is None else exact.exp(d.value) / denom for d in diffs]
        n = i + 1
        exps_line = (r"& \left(" + ", ".join(f"e^{{{a}}}" for a in args) + r"\right)",
                     rf"{rel} \left(" + ", ".join(ex_tex) + r"\right)")
        p_line = (rf"& {label} = \left(" + ", ".join(r"\frac{" + t + "}{" + tot.tex + "}" for t in ex_tex) + r"\right)",
                  self.tuple_outcome(weights, list(true_row), exact_in, aligned=True))
        first = rf"i = {n}:\ "
        return [rf"{first}& \max_j = {m.tex}", self.continued(first, *exps_line),
                r"& \textstyle\sum = " + " + ".join("0" if e is None else e.op for e in exps) + f" {sum_rel} {tot.tex}",
                self.continued(first, *p_line)]

    def continued(self, column: str, left: str, right: str) -> str:
        """`left right` on one aligned line, or `right` on the next when both do not fit a key's
        line beside the aligned block's first `column`."""
        return f"{left} {right}" if self.fits(f"{column}{left} {right}") else rf"{left} \\ &\quad {right}"

    def work_weights(self, step: Step, h: int) -> list:
        s = self.value(step.inputs[0])
        lines = []
        for i, row in enumerate(s.rows[:MAX_ROWS]):
            lines += self.softmax_row(i, row, step.value.rows[i], rf"({step_symbol(step)})_{{{i + 1}\cdot}}")
        return [(self.t("softmax_max"), None),
                (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]
