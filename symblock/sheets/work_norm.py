"""Working of the norms, row by row as in the seed article: mean, variance, root, normalised rows.
A mixin of builder.Builder."""
from __future__ import annotations

from symblock.sheets.numbers import ALL_TERMS, dec_tex, exact_tex, is_plain, num, operand, rel, result


class NormWork:
    # -- norms, row by row as in the seed article
    def rows_block(self, lines: list[str]) -> list:
        return [(self.t("per_row"), None), (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]

    def terms(self, items: list[str]) -> str:
        if len(items) > ALL_TERMS:
            items = items[:2] + [r"\cdots"] + items[-1:]
        return " + ".join(items)

    def work_mean(self, step) -> list:
        x, d = self.value(step.inputs[0]), self.dims.d_model
        lines = []
        for i, row in enumerate(x.rows):
            ops = [num(row[0], self.places)] + [operand(e, self.places) for e in row[1:]]
            approx = any(a for _, a in ops)
            lines.append(rf"\mu_{{{i + 1}}} &= \frac{{{self.terms([t for t, _ in ops])}}}{{{d}}} "
                         + result(step.value.rows[i][0], self.places, approx))
        return self.rows_block(lines)

    def work_var(self, step) -> list:
        src, mean = step.inputs
        x, mu, d = self.value(src), self.value(mean), self.dims.d_model
        lines = []
        for i, row in enumerate(x.rows):
            m = mu.rows[i][0]
            tm, am = operand(m, self.places)
            ops = [num(e, self.places) for e in row]
            approx = am or any(a for _, a in ops)
            first = self.terms([rf"({t} - {tm})^2" for t, _ in ops])
            devs = [operand(e - m, self.places) for e in row]
            line = rf"\sigma^2_{{{i + 1}}} &= \frac{{{first}}}{{{d}}}"
            if d <= 4:
                line += rf" {rel(approx)} \frac{{{self.terms([f'{t}^2' for t, _ in devs])}}}{{{d}}}"
                approx = approx or any(a for _, a in devs)
            lines.append(line + " " + result(step.value.rows[i][0], self.places, approx))
        return self.rows_block(lines)

    def root_rows(self, step, sym: str, inner_sym: str) -> list:
        v = self.value(step.inputs[0])
        import sympy
        eps_tex = "" if self.o.eps == 0 else " + " + sympy.latex(sympy.sympify(self.o.eps))
        lines = []
        for i, (e,) in enumerate(v.rows):
            t, a = num(e, self.places)
            lines.append(rf"{sym}_{{{i + 1}}} &= \sqrt{{{inner_sym}_{{{i + 1}}}{eps_tex}}} = \sqrt{{{t}{eps_tex}}} "
                         + result(step.value.rows[i][0], self.places, a))
        return self.rows_block(lines)

    def work_std(self, step) -> list:
        return self.root_rows(step, r"\sigma", r"\sigma^2")

    def work_rms(self, step) -> list:
        return self.root_rows(step, "r", "m")

    def work_ms(self, step) -> list:
        x, d = self.value(step.inputs[0]), self.dims.d_model
        lines = []
        for i, row in enumerate(x.rows):
            ops = [operand(e, self.places) for e in row]
            approx = any(a for _, a in ops)
            lines.append(rf"m_{{{i + 1}}} &= \frac{{{self.terms([f'{t}^2' for t, _ in ops])}}}{{{d}}} "
                         + result(step.value.rows[i][0], self.places, approx))
        return self.rows_block(lines)

    def affine(self, gamma, beta) -> str:
        """` \\odot γ + β` unless γ = 1 and β = 0 (then the scale and shift change nothing)."""
        trivial = all(is_plain(g) and exact_tex(g) == "1" for g in gamma.rows[0]) and \
            (beta is None or all(is_plain(b) and exact_tex(b) == "0" for b in beta.rows[0]))
        if trivial:
            return ""
        return r" \odot \gamma" + (r" + \beta" if beta is not None else "")

    def norm_rows(self, step, fracs) -> list:
        d = self.dims.d_model
        rows = range(self.dims.seq_len) if d <= 4 else range(1)
        lines = []
        for i in rows:
            parts, approx = fracs(i)
            if len(parts) > ALL_TERMS:
                parts = parts[:2] + [r"\cdots"] + parts[-1:]
            vals = [exact_tex(e) if is_plain(e) else dec_tex(e, self.places) for e in step.value.rows[i]]
            approx = approx or not all(is_plain(e) for e in step.value.rows[i])
            lines.append(rf"i = {i + 1}:\ & \left(" + ", ".join(parts) + r"\right)" + self.affine_tex
                         + f" {rel(approx)} " + r"\left(" + ", ".join(vals) + r"\right)")
        return self.rows_block(lines)

    def work_layernorm(self, step) -> list:
        src, mean, std, g, b = step.inputs
        x, mu, sd = self.value(src), self.value(mean), self.value(std)
        self.affine_tex = self.affine(self.trace.params[g], self.trace.params.get(b))

        def fracs(i):
            (tm, am), (ts, as_) = operand(mu.rows[i][0], self.places), num(sd.rows[i][0], self.places)
            ops = [num(e, self.places) for e in x.rows[i]]
            return [rf"\frac{{{t} - {tm}}}{{{ts}}}" for t, _ in ops], am or as_ or any(a for _, a in ops)
        return self.norm_rows(step, fracs)

    def work_rmsnorm(self, step) -> list:
        src, rms, g = step.inputs
        x, r = self.value(src), self.value(rms)
        self.affine_tex = self.affine(self.trace.params[g], None)

        def fracs(i):
            tr, ar = num(r.rows[i][0], self.places)
            ops = [num(e, self.places) for e in x.rows[i]]
            return [rf"\frac{{{t}}}{{{tr}}}" for t, _ in ops], ar or any(a for _, a in ops)
        return self.norm_rows(step, fracs)
