"""Working of RoPE's rotated queries and keys, and what a sheet says of RoPE and grouped K/V heads.
A mixin of builder.Builder.

The rotation needs cos and sin of every angle m·θ^(−2i/d_k): no pencil gives them, so the sheet
prints them as given data (the matrices cos Φ and sin Φ, one row per position, one column per
pair), exact closed forms beside their decimals; the key then turns each pair from those numbers."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import names, rope
from symblock.engine.matrix import Mat
from symblock.engine.steps import kv_head
from symblock.sheets.lang_counts import counted
from symblock.sheets.numbers import Safe, step_symbol

if TYPE_CHECKING:
    from symblock.engine.block import Step

ROTATED = ("q_rot", "k_rot")
COS, SIN = r"\cos\Phi", r"\sin\Phi"
PAIRS_SHOWN = 2   # pairs of one head written out in the key (each gives two entries)


class RopeWork:
    def rope_asked(self) -> bool:
        """Whether a task works a rotation (then cos Φ and sin Φ are given data)."""
        return any(names.parse(n).kind in ROTATED for n in self.ex.ask)

    def rope_positions(self) -> tuple[int, ...]:
        """The positions of the rows the rotations turn (a decoder sheet: its new row's)."""
        return self.spec.position_list()

    def rope_angles(self) -> Mat:
        """Φ: m_r·θ^(−2i/d_k), exact (what cos Φ and sin Φ are of, when their closed forms are long)."""
        d_k = self.dims.d_k
        freqs = [rope.frequency(self.o.rope.theta, i, d_k) for i in range(d_k // 2)]
        from symblock.engine import exact
        return Mat([[exact.real(m) * f for f in freqs] for m in self.rope_positions()])

    def rope_table(self) -> tuple[Mat, Mat]:
        """cos Φ and sin Φ: row r at position m_r, column i the pair i's angle m_r·θ^(−2i/d_k)."""
        trig = rope.table(self.o.rope, self.dims.d_k, self.rope_positions())
        return Mat([[c for c, _ in row] for row in trig]), Mat([[s for _, s in row] for row in trig])

    def rope_data(self) -> list[dict]:
        if not (self.o.rope and self.rope_asked()):
            return []
        c, s = self.rope_table()
        return [self.data_item("rope.angles", r"\Phi", self.rope_angles(), "param", False),
                self.data_item("rope.cos", COS, c, "param", False),
                self.data_item("rope.sin", SIN, s, "param", False)]

    def rope_conventions(self) -> list:
        """The lines of the conventions box on RoPE and on grouped K/V heads."""
        d, out = self.dims, []
        if self.o.rope:
            r = self.o.rope
            pairs = r"(i,\ i + d_k/2)" if r.style == "half" else r"(2i,\ 2i + 1)"
            pos = ", ".join(str(m) for m in self.rope_positions())
            from0 = "" if self.v1 else self.T["rope_from0"]   # version 1: unsaid
            out.append(self.t("conv_rope", theta=rope._theta_tex(r.theta), pairs=pairs, pos=pos,
                              half=d.d_k // 2, from0=from0))
        if d.kv_heads != d.heads:
            reads = ", ".join(f"{h} \\to {kv_head(h, d)}" for h in range(d.heads))
            key = counted("conv_groups", d.kv_heads, self.v1)
            out.append(self.t(key, kv=d.kv_heads, group=d.group, reads=reads))
        return out

    def work_rotate(self, step: Step) -> list:
        """A row at a position other than 0 (position 0 turns by nothing), the first pairs of the
        first head, each entry from the printed cos Φ and sin Φ."""
        src = self.value(step.inputs[0])
        rows = self.rope_positions()
        r = next((i for i, m in enumerate(rows) if m), 0)
        cos, sin = self.rope_table()
        lhs, sym = step_symbol(step), self.symbol(step.inputs[0])
        lines = []
        for i, (a, b) in enumerate(self.o.rope.pairs(self.dims.d_k)[:PAIRS_SHOWN]):
            xa, xb, c, s = self.shows([src.rows[r][a], src.rows[r][b], cos.rows[r][i], sin.rows[r][i]])
            ok = all(v.exact for v in (xa, xb, c, s))
            cs = rf"({COS})_{{{r + 1}{i + 1}}}", rf"({SIN})_{{{r + 1}{i + 1}}}"
            for (p, q, sign), true in (((a, b, "-"), step.value.rows[r][a]), ((b, a, "+"), step.value.rows[r][b])):
                x, y = (xa, xb) if p == a else (xb, xa)
                got = x.value * c.value - y.value * s.value if sign == "-" else x.value * c.value + y.value * s.value
                lines.append(rf"({lhs})_{{{r + 1}{p + 1}}} &= {sym}_{{{r + 1}{p + 1}}} {cs[0]} {sign} "
                             rf"{sym}_{{{r + 1}{q + 1}}} {cs[1]} = {x.op} \cdot {c.op} {sign} {y.op} \cdot {s.op} "
                             + self.outcome(got, true, ok, aligned=True))
        text = self.t("rope_work", row=r + 1, m=rows[r], pairs=self.rope_pair_list())
        return [(text, None), (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]

    def rope_pair_list(self) -> str:
        return ", ".join(f"({a + 1}, {b + 1})" for a, b in self.o.rope.pairs(self.dims.d_k))

    def rope_reads(self, h: int) -> Safe | None:
        """"Query head h reads K/V head g" (grouped heads only)."""
        if self.dims.kv_heads == self.dims.heads:
            return None
        return self.t("group_reads", h=h, g=kv_head(h, self.dims))

