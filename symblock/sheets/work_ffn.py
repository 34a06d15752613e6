"""Working of the FFN's activation (gated or not), entry by entry. A mixin of builder.Builder."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.sheets.numbers import step_symbol

if TYPE_CHECKING:
    from symblock.engine.block import Step

ROW_ENTRIES = 4   # entries of the first row written out (else the first two and …)


class FfnWork:
    def work_act(self, step: Step) -> list:
        from symblock.engine.block import ACTIVATIONS
        act = self.o.activation
        base = {"swiglu": "silu", "geglu": "gelu"}.get(act, act)
        fn, name = ACTIVATIONS[act]
        out = [(self.t(f"act_{base}") + (" " + self.t("gated") if self.o.gated else ""), None)]
        z = self.value(step.inputs[0]).rows[0]
        g = self.value(step.inputs[1]).rows[0] if self.o.gated else None
        cols = list(range(len(z))) if len(z) <= ROW_ENTRIES else [0, 1, None]
        shown = self.shows([z[j] for j in cols if j is not None] + ([g[j] for j in cols if j is not None] if g else []))
        k = len([j for j in cols if j is not None])
        sz = dict(zip([j for j in cols if j is not None], shown[:k]))
        sg = dict(zip([j for j in cols if j is not None], shown[k:]))
        terms, got, true, exact_in = [], [], [], True
        for j in cols:
            if j is None:
                terms.append(r"\dots")
                got.append(None)
                true.append(None)
                continue
            a = sz[j]
            tex, val, ex = rf"\mathrm{{{name}}}({a.tex})", fn(a.value), a.exact
            if g is not None:
                b = sg[j]
                tex, val, ex = rf"{tex} \cdot {b.op}", val * b.value, ex and b.exact
            terms.append(tex)
            got.append(val)
            true.append(step.value.rows[0][j])
            exact_in = exact_in and ex
        # aligned, so that a "(from exact values …)" note, and the results of four terms, take a
        # row of their own instead of \fitmath shrinking one line past the page to fit
        out.append((None, rf"\begin{{aligned}} ({step_symbol(step)})_{{1\cdot}} &= \left(" + ", ".join(terms)
                    + r"\right) " + (r"\\ &" if len(terms) > 3 else "") + " "
                    + self.tuple_outcome(got, true, exact_in, aligned=True) + r" \end{aligned}"))
        return out
