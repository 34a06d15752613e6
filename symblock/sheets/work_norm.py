"""Working of the norms, row by row as the hand-worked article does: mean, variance, root, normalised rows.
A mixin of builder.Builder.

Each row is worked from its printed operands (the row's entries, μ, σ as the earlier tasks give
them); deviations x − μ carry one guard digit when they are not short and exact."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import exact, names
from symblock.sheets.numbers import number_tex

if TYPE_CHECKING:
    from symblock.engine.block import Step

ALL_TERMS = 8    # a row sum is written out up to this many terms (else with Σ)
MAX_ROWS = 6     # rows written out
ROW_ENTRIES = 8  # entries of a normalised row written out (else the first ones and …)


ROW_SYMBOLS = {"mean": (r"\mu", r"\mu_i"), "var": (r"\sigma^2", r"\sigma_i^2"), "ms": ("m", "m_i")}


class NormWork:
    @staticmethod
    def row_statistic(step: Step, tex: str) -> str:
        """A norm's mean, variance or mean square as it is worked, row by row: the formula's
        left side takes the row i its right side sums over (μ_i = ¼ Σ_j X_ij); others as they are."""
        sym = ROW_SYMBOLS.get(names.parse(step.name).stat or "")
        if sym is None or not tex.startswith(f"{sym[0]} = "):
            return tex
        return sym[1] + tex[len(sym[0]):]

    def rows_block(self, lines: list[str]) -> list:
        return [(self.t("per_row"), None), (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]

    def stat_rows(self, step: Step, sym: str, terms_of, value_of, src: str | None = None) -> list:
        """`sym_i = (t₁ + … + t_d)/d ≈ r` per row; `terms_of(i)` gives the printed terms and
        operands, `value_of(i)` what they give; wide rows are written with Σ."""
        d, lines = self.dims.d_model, []
        for i in range(min(self.dims.seq_len, MAX_ROWS)):
            true = step.value.rows[i][0]
            if d > ALL_TERMS:
                lines.append(rf"{sym}_{{{i + 1}}} &= \tfrac{{1}}{{{d}}} \textstyle\sum_j \cdots "
                             + self.outcome(true, true, True))
                continue
            texts, shown = terms_of(i)
            line = rf"{sym}_{{{i + 1}}} &= \frac{{{texts[0]}}}{{{d}}}"
            for rel, t in texts[1:]:   # a second form (the deviations) on its own row when wide
                line += (r" \\ &" if d > 2 else " ") + rf"{rel} \frac{{{t}}}{{{d}}}"
            lines.append(line + " " + self.outcome(value_of(i, shown), true, all(s.exact for s in shown), aligned=True))
        return self.rows_block(lines)

    def work_mean(self, step: Step) -> list:
        x = self.value(step.inputs[0])

        def terms(i):
            shown = self.shows(list(x.rows[i]))
            return [" + ".join([shown[0].tex] + [s.op for s in shown[1:]])], shown
        return self.stat_rows(step, r"\mu", terms,
                              lambda i, shown: exact.total([s.value for s in shown]) / len(shown))

    def work_var(self, step: Step) -> list:
        src, mean = step.inputs
        x, mu = self.value(src), self.value(mean)

        def terms(i):
            m, *xs = self.shows([mu.rows[i][0]] + list(x.rows[i]))
            first = " + ".join(rf"({s.tex} - {m.op})^2" for s in xs)
            devs = [self.show(s.value - m.value, guard=1) for s in xs]
            rel = "=" if all(t.exact for t in devs) else r"\approx"
            texts = [first] + ([(rel, " + ".join(f"{t.base}^2" for t in devs))] if len(xs) <= 4 else [])
            return texts, [m] + xs
        return self.stat_rows(step, r"\sigma^2", terms, lambda i, shown: exact.total(
            [(s.value - shown[0].value) * (s.value - shown[0].value) for s in shown[1:]]) / (len(shown) - 1))

    def work_ms(self, step: Step) -> list:
        x = self.value(step.inputs[0])

        def terms(i):
            shown = self.shows(list(x.rows[i]))
            return [" + ".join(f"{s.base}^2" for s in shown)], shown
        return self.stat_rows(step, "m", terms,
                              lambda i, shown: exact.total([s.value * s.value for s in shown]) / len(shown))

    def root_rows(self, step: Step, sym: str, inner_sym: str) -> list:
        v = self.value(step.inputs[0])
        eps_val = exact.from_sympy(self.o.eps)
        eps_tex = "" if self.o.eps == 0 else " + " + number_tex(self.o.eps)
        lines = []
        for i in range(min(self.dims.seq_len, MAX_ROWS)):
            a = self.show(v.rows[i][0])
            lines.append(rf"{sym}_{{{i + 1}}} &= \sqrt{{{inner_sym}_{{{i + 1}}}{eps_tex}}} = \sqrt{{{a.tex}{eps_tex}}} "
                         + self.outcome(exact.sqrt(a.value + eps_val), step.value.rows[i][0], a.exact, aligned=True))
        return self.rows_block(lines)

    def work_std(self, step: Step) -> list:
        return self.root_rows(step, r"\sigma", r"\sigma^2")

    def work_rms(self, step: Step) -> list:
        return self.root_rows(step, "r", "m")

    def affine_parts(self, gamma, beta):
        """The printed γ and β of a norm, or None when γ = 1 and β = 0 (they change nothing)."""
        g = [self.show(e) for e in gamma.rows[0]]
        b = [self.show(e) for e in beta.rows[0]] if beta is not None else None
        trivial = all(s.exact and s.tex == "1" for s in g) and (b is None or all(s.exact and s.tex == "0" for s in b))
        return None if trivial else (g, b)

    def norm_rows(self, step: Step, entry, gamma, beta) -> list:
        """`i: (entry₁, …) ≈ (…)`; `entry(i, j)` gives (tex, value, operands exact)."""
        d = self.dims.d_model
        rows = range(min(self.dims.seq_len, MAX_ROWS)) if d <= 4 else range(1)
        affine = self.affine_parts(gamma, beta)
        cols = list(range(d)) if d <= ROW_ENTRIES else list(range(3)) + [None]
        lines = []
        for i in rows:
            parts, got, true, exact_in = [], [], [], True
            for j in cols:
                if j is None:
                    parts.append(r"\dots")
                    got.append(None)
                    true.append(None)
                    continue
                tex, val, ex = entry(i, j)
                if affine is not None:
                    g, b = affine
                    tex = rf"{tex} \cdot {g[j].op}" + (f" + {b[j].op}" if b is not None else "")
                    val = val * g[j].value + (b[j].value if b is not None else exact.ZERO)
                    ex = ex and g[j].exact and (b is None or b[j].exact)
                parts.append(tex)
                got.append(val)
                true.append(step.value.rows[i][j])
                exact_in = exact_in and ex
            lines.append(rf"i = {i + 1}:\ & " + self.split_tuple(parts, 2 if affine else 4)
                         + (r" \\ &" if len(parts) > 3 else "") + " "     # four results: a row of their own
                         + self.tuple_outcome(got, true, exact_in, aligned=True))
        return self.rows_block(lines)

    @staticmethod
    def split_tuple(parts: list[str], per_line: int) -> str:
        """`(a, b, …)` over aligned rows of `per_line` entries: a row of four `(x − μ)/σ · γ + β`
        fractions is wider than the page, and \\fitmath would shrink the whole block to fit it
        (so would four fractions and their four results on one row: the result gets its own)."""
        chunks = [parts[k:k + per_line] for k in range(0, len(parts), per_line)]
        rows = r", \right. \\ &\quad \left. ".join(", ".join(c) for c in chunks)
        return r"\left(" + rows + r"\right)"

    def work_layernorm(self, step: Step) -> list:
        src, mean, std, g, b = step.inputs
        x, mu, sd = self.value(src), self.value(mean), self.value(std)

        def entry(i, j):
            m, s, *vs = self.shows([mu.rows[i][0], sd.rows[i][0]] + list(x.rows[i]))
            v = vs[j]
            return (rf"\frac{{{v.tex} - {m.op}}}{{{s.tex}}}", (v.value - m.value) / s.value,
                    m.exact and s.exact and v.exact)
        return self.norm_rows(step, entry, self.trace.params[g], None if self.no_beta(step) else self.trace.params.get(b))

    def work_rmsnorm(self, step: Step) -> list:
        src, rms, g = step.inputs
        x, r = self.value(src), self.value(rms)

        def entry(i, j):
            s, *vs = self.shows([r.rows[i][0]] + list(x.rows[i]))
            v = vs[j]
            return rf"\frac{{{v.tex}}}{{{s.tex}}}", v.value / s.value, s.exact and v.exact
        return self.norm_rows(step, entry, self.trace.params[g], None)
