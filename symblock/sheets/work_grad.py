"""Backprop tasks (preset backprop): the builder for gradient steps."""
from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from symblock.engine import exact
from symblock.sheets.builder import Builder
from symblock.sheets.numbers import Safe, grid, matrix_value, param_symbol, rel, shape_tex

if TYPE_CHECKING:
    from symblock.engine.block import Step, Trace
    from symblock.exercises.presets import Exercise

ROW_ENTRIES = 6   # entries of a row written out (else the first three and …)


class GradBuilder(Builder):
    """Backprop tasks (preset backprop): each asked `grad.<name>` is a task whose value is the
    grad.Backward's; the key shows the rule grad.py applies and the numbers going in."""

    def __init__(self, trace: Trace, exercise: Exercise, lang: str, places: int) -> None:
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
            out.append(self.data_item("target", "T", t, "target", False))
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
                work.append((self.t("g.through", self.math(s.latex)), None))
                if len(cons) == 1:
                    work += self.work_back(s, g)
        return {"n": i, "name": name, "heading": self.t("task", i), "what": what,
                "points": self.points(name), "rows": r,
                "formula": self.math(formula), "shape": Safe(shape_tex(r, c)),
                "grid": Safe(f"{sym} = {grid(r, c, self.places)}"),
                "work": [{"text": Safe(t) if t else None, "math": Safe(m) if m else None} for t, m in work],
                "answer": Safe(f"{sym} {matrix_value(g.value, self.places)}")}

    def work_loss(self, g) -> list:
        n, d = g.value.shape
        if self.back.loss == "sum":
            return [(None, r"\partial L / \partial Y_{ij} = 1")]
        y, t = self.shows([self.value("output").rows[0][0], self.ex.target.rows[0][0]])
        computed = (y.value - t.value) * exact.real(Fraction(2, n * d))
        return [(None, rf"\partial L / \partial Y_{{ij}} = \tfrac{{2}}{{{n * d}}} (Y_{{ij}} - T_{{ij}})"),
                (None, rf"(\partial L / \partial Y)_{{11}} = \tfrac{{2}}{{{n * d}}} ({y.tex} - {t.op}) "
                 + self.outcome(computed, g.value.rows[0][0], y.exact and t.exact))]

    def work_back(self, step: Step, g) -> list:
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
            sub = self.substitute(lhs, parts)
            if sub:
                out.append(sub)
            pos = self.positions(*g.value.shape, inner)
            out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
            return out + self.dot_entries(step, a_rows, b_cols, pos, lhs=lhs, value=g.value)
        if kind in ("activation", "gated"):
            return self.work_act_back(step, g)
        return []

    def work_act_back(self, step: Step, g) -> list:
        """U = act(Z) (⊙ G): dZ = dU ⊙ act'(Z) (⊙ G), dG = dU ⊙ act(Z); every row, each local
        derivative from the printed z with one guard digit, each product from printed numbers."""
        from symblock.calculus.grad import act_derivative
        from symblock.engine.block import ACTIVATIONS
        act, gated = self.o.activation, self.o.gated
        base = {"swiglu": "silu", "geglu": "gelu"}.get(act, act)
        fn, name = ACTIVATIONS[act]
        wrt_z = g.of == step.inputs[0]
        local, local_tex = (act_derivative(act), rf"\mathrm{{{name}}}'") if wrt_z else (fn, rf"\mathrm{{{name}}}")
        Z, up = self.value(step.inputs[0]), self.grads["grad." + step.name].value
        G = self.value(step.inputs[1]) if gated and wrt_z else None
        n, d = g.value.shape
        cols = list(range(d)) if d <= ROW_ENTRIES else [0, 1, 2, None]
        lines = []
        for i in range(n):
            k = len(cols)
            row = self.shows([None if j is None else Z.rows[i][j] for j in cols]
                             + [None if j is None else up.rows[i][j] for j in cols]
                             + [None if j is None or G is None else G.rows[i][j] for j in cols])
            zs, us, gs = row[:k], row[k:2 * k], row[2 * k:]
            ders = [None if z is None else self.show(local(z.value), guard=1, short=False) for z in zs]
            lines.append(rf"{local_tex}(Z_{{{i + 1}\cdot}}) &= \left("
                         + ", ".join(r"\dots" if z is None else rf"{local_tex}({z.tex})" for z in zs) + r"\right) "
                         + rel(not all(x is None or x.exact for x in ders)) + r" \left("
                         + ", ".join(r"\dots" if x is None else x.tex for x in ders) + r"\right)")
            parts, got, true, exact_in = [], [], [], True
            for j, z, der, u, gg in zip(cols, zs, ders, us, gs):
                if j is None:
                    parts.append(r"\dots")
                    got.append(None)
                    true.append(None)
                    continue
                tex, val, ex = rf"{u.op} \cdot {der.op}", u.value * local(z.value), u.exact and z.exact
                if G is not None:
                    tex, val, ex = rf"{tex} \cdot {gg.op}", val * gg.value, ex and gg.exact
                parts.append(tex)
                got.append(val)
                true.append(g.value.rows[i][j])
                exact_in = exact_in and ex
            lines.append(rf"({g.latex})_{{{i + 1}\cdot}} &= \left(" + ", ".join(parts) + r"\right) \\ &"
                         + self.tuple_outcome(got, true, exact_in, aligned=True))
        key = f"g.act_{base}" if wrt_z else "g.act_value"
        return [(self.t(key), None), (self.t("g.rows"), None),
                (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]
