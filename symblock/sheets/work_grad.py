"""Backprop tasks (preset backprop): the builder for gradient steps."""
from __future__ import annotations

from symblock.sheets.builder import Builder
from symblock.sheets.numbers import (Safe, grid, is_plain, matrix_value, num, operand, param_symbol, rel,
                                      result, shape_tex)


class GradBuilder(Builder):
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
                        "shape": Safe(shape_tex(*t.shape)), "math": Safe(f"T {matrix_value(t, self.places)}")})
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
                "formula": Safe(formula), "shape": Safe(shape_tex(r, c)),
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
            sub = self.substitute(lhs, parts)
            if sub:
                out.append(sub)
            pos = self.positions(*g.value.shape, inner)
            out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
            return out + self.dot_entries(step, a_rows, b_cols, pos, lhs=lhs, value=g.value)
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


