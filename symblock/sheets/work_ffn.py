"""Working of the FFN's activation (gated or not), entry by entry. A mixin of builder.Builder."""
from __future__ import annotations

from symblock.sheets.numbers import dec_tex, exact_tex, is_plain, num, operand, rel, step_symbol


class FfnWork:

    def work_act(self, step) -> list:
        act = self.o.activation
        base = {"swiglu": "silu", "geglu": "gelu"}.get(act, act)
        z = self.value("ffn.hidden")
        out = [(self.t(f"act_{base}") + (" " + self.t("gated") if self.o.gated else ""), None)]
        from symblock.engine.block import ACTIVATIONS
        fn = ACTIVATIONS[act][1]
        row = z.rows[0]
        ops = [num(e, self.places) for e in row]
        approx = any(a for _, a in ops)
        if self.o.gated:
            g = self.value("ffn.gate").rows[0]
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


