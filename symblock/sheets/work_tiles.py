"""Working of the online softmax over key tiles (engine/online_softmax.py), row by row: the running
maximum, the earlier sum and accumulator rescaled by e^(m_old − m_new) plus the tile's own terms,
and at the end accumulator / sum. A mixin of builder.Builder.

Each line computes from the numbers it prints (the scores, V and the earlier tile's answers as the
sheet gives them), so a key followed line by line gives what the checker carries forward; the
exponentials carry one guard digit, as the softmax's do."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import exact, names
from symblock.engine.online_softmax import running_max
from symblock.engine.steps import value_columns
from symblock.engine.tiles import key_blocks

if TYPE_CHECKING:
    from symblock.engine.block import Step

MAX_ROWS = 6   # rows written out; later rows are like them


class TileWork:
    def _tile_keys(self, step: Step) -> range:
        tile = names.parse(step.name).tile
        assert tile is not None, step.name
        return key_blocks(self.dims.seq_len, self.o.attention_tiles)[tile]

    def _tile_syms(self, step: Step) -> tuple[str, str, str, str]:
        """(scores, m_old, m_new, ℓ_old or a_old) symbols as the formula names them."""
        ins = step.inputs
        s = self.symbol(ins[-2] if names.parse(step.name).kind == "tile_acc" else ins[-1])
        if len(ins) <= 3:
            return s, "", self.symbol(ins[1]) if len(ins) > 1 else "", ""
        return s, self.symbol(ins[1]), self.symbol(ins[2]), self.symbol(ins[0])

    def _live(self, row, keys: range) -> list[int]:
        return [k for k in keys if row[k] is not exact.NEG_INF]

    def work_tile_max(self, step: Step, h: int) -> list:
        keys = self._tile_keys(step)
        ins = step.inputs
        s = self.value(ins[-1])
        prev = self.value(ins[0]) if len(ins) == 2 else None
        lines = []
        for i in range(min(self.dims.seq_len, MAX_ROWS)):
            shown = self.shows(([prev.rows[i][0]] if prev is not None else []) + [s.rows[i][k] for k in keys])
            got = running_max(_row_mat([x.value for x in shown[len(shown) - len(keys):]]), range(len(keys)),
                              None if prev is None else _row_mat([shown[0].value]))
            lines.append(rf"i = {i + 1}:\ & \max(" + ", ".join(x.tex for x in shown) + ") "
                         + self.outcome(got.rows[0][0], step.value.rows[i][0], all(x.exact for x in shown),
                                        aligned=True))
        return [(self.t("tile_max_first" if prev is None else "tile_max_text", _keys(keys)), None),
                (None, _aligned(lines))]

    def _rescale(self, i: int, prev_m, m_new, guard: bool = True):
        """The shown e^(m_old − m_new) of row i (None on the first tile or while m_old is −∞)."""
        if prev_m is None:
            return None, None
        old, new = self.shows([prev_m.rows[i][0], m_new.rows[i][0]])
        if old.value is exact.NEG_INF:
            return (old, new), self.show(exact.ZERO)
        return (old, new), self.show(exact.exp(old.value - new.value), guard=1, short=False)

    def _exps(self, row, keys: range, m) -> list:
        """The tile's shown e^(s − m) for its live keys (the maximum itself: e^0 = 1)."""
        if m.value is exact.NEG_INF:
            return []
        return [(k, self.show(exact.exp(row[k] - m.value), guard=1, short=False))
                for k in self._live(row, keys)]

    def _tile_row(self, i: int, s, m, keys: range, prev_m):
        """Row i's printed operands: the scores, m_new, the tile's e^(s − m_new) and the rescale
        e^(m_old − m_new) (None on the first tile), and whether an exponential is rounded."""
        row = self.shows([s.rows[i][k] for k in keys])
        mm = self.show(m.rows[i][0])
        exps = self._exps({k: x.value for k, x in zip(keys, row)}, keys, mm)
        pair, r = self._rescale(i, prev_m, m)
        rounded = any(not e.exact for _, e in exps) or (r is not None and not r.exact)
        return row, mm, exps, pair, r, rounded

    def work_tile_sum(self, step: Step, h: int) -> list:
        keys, ins = self._tile_keys(step), step.inputs
        first = len(ins) == 2
        s, m = self.value(ins[0] if first else ins[3]), self.value(ins[1] if first else ins[2])
        prev_l, prev_m = (None, None) if first else (self.value(ins[0]), self.value(ins[1]))
        lines = []
        for i in range(min(self.dims.seq_len, MAX_ROWS)):
            row, mm, exps, pair, r, rounded = self._tile_row(i, s, m, keys, prev_m)
            terms, parts = [e.value for _, e in exps], [e.tex for _, e in exps]
            live = dict(exps)
            args = [rf"e^{{{x.tex} - {mm.op}}}" for k, x in zip(keys, row) if k in live]
            exact_in = all(x.exact for x in row) and mm.exact and not rounded
            if r is not None:
                lo = self.show(prev_l.rows[i][0], short=not rounded)
                terms.insert(0, lo.value * r.value)
                parts.insert(0, rf"{lo.op} \cdot {r.op}")
                args.insert(0, rf"{lo.op} \cdot e^{{{pair[0].tex} - {pair[1].op}}}")
                exact_in = exact_in and lo.exact
            got = exact.total(terms) if terms else exact.ZERO
            line = rf"i = {i + 1}:\ & " + (" + ".join(args) or "0")
            if len(parts) > 1 or rounded:
                line += r" \\ & " + (r"\approx " if rounded else "= ") + " + ".join(parts)
            lines.append(line + " " + self.outcome(got, step.value.rows[i][0], exact_in, aligned=True))
        text = "tile_sum_first" if first else "tile_sum_text"
        return [(self.t(text, _keys(keys)), None), (None, _aligned(lines))]

    def work_tile_acc(self, step: Step, h: int) -> list:
        keys, ins = self._tile_keys(step), step.inputs
        first = len(ins) == 3
        s, m = self.value(ins[0] if first else ins[3]), self.value(ins[1] if first else ins[2])
        prev_a, prev_m = (None, None) if first else (self.value(ins[0]), self.value(ins[1]))
        v = self.value(ins[-1]).cols(*value_columns(step.name, self.dims))
        lines = []
        for i in range(min(self.dims.seq_len, MAX_ROWS)):
            row, mm, exps, pair, r, rounded = self._tile_row(i, s, m, keys, prev_m)
            terms = ([(r, prev_a.rows[i])] if r is not None else []) + [(e, v.rows[k]) for k, e in exps]
            vecs = [[self.show(x, short=not rounded) for x in vec] for _, vec in terms]
            got = [exact.total([w.value * vec[c].value for (w, _), vec in zip(terms, vecs)]) if terms
                   else exact.ZERO for c in range(v.shape[1])]
            exact_in = (all(x.exact for x in row) and mm.exact and not rounded
                        and all(x.exact for vec in vecs for x in vec))
            parts = [rf"{w.op} \cdot {_vec(vec)}" for (w, _), vec in zip(terms, vecs)]
            lines.append(rf"i = {i + 1}:\ & " + (" + ".join(parts) or "0") + " "
                         + self.tuple_outcome(got, list(step.value.rows[i]), exact_in, aligned=True))
        text = "tile_acc_first" if first else "tile_acc_text"
        return [(self.t(text, _keys(keys)), None), (None, _aligned(lines))]

    def work_tiled(self, step: Step, h: int) -> list:
        a, l = (self.value(n) for n in step.inputs)
        lines = []
        for i in range(min(self.dims.seq_len, MAX_ROWS)):
            shown = self.shows([*a.rows[i], l.rows[i][0]])
            *num, den = shown
            got = [x.value / den.value for x in num]
            lines.append(rf"i = {i + 1}:\ & {_vec(num)} / {den.op} "
                         + self.tuple_outcome(got, list(step.value.rows[i]), all(x.exact for x in shown),
                                              aligned=True))
        return [(self.t("tiled_text"), None), (None, _aligned(lines))]


def _row_mat(values: list):
    from symblock.engine.matrix import Mat
    return Mat([values])


def _keys(keys: range) -> str:
    """The tile's key columns counted from 1, as the sheets count entries: "$3, 4$"."""
    return "$" + ", ".join(str(k + 1) for k in keys) + "$"


def _vec(shown: list) -> str:
    return r"\left(" + ", ".join(x.tex for x in shown) + r"\right)"


def _aligned(lines: list[str]) -> str:
    return r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}"
