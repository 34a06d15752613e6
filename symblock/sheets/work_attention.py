"""Working of the attention steps that are not products: scaling, the mask, the softmax rows.
A mixin of builder.Builder."""
from __future__ import annotations

from symblock.engine import exact
from symblock.sheets.numbers import dec_tex, exact_tex, is_plain, num, rel, result, step_symbol


class AttentionWork:
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
