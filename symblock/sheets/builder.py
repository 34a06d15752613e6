"""The sheet builder: the sections of a worksheet (conventions, description, given data) and one
task per asked step, with the working of each kind of step from its mixin (work_*.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import kinds, names, parameters, report
from symblock.engine.tex_width import width
from symblock.engine.tiles import SIDE_KINDS
from symblock.options import KEY_LINE
from symblock.sheets.lang import MATH_TEXT, TEXTS
from symblock.sheets.lang_counts import counted
from symblock.sheets.numbers import (Safe, dec_tex, exact_tex, grid, is_plain, matrix_value, number_tex, outcome, power_tex,
                                     param_symbol, shape_tex, show, step_symbol)
from symblock.sheets.work_attention import AttentionWork
from symblock.sheets.work_cross import CrossWork
from symblock.sheets.work_ffn import FfnWork
from symblock.sheets.work_linear import LinearWork
from symblock.sheets.work_norm import NormWork
from symblock.sheets.work_rope import RopeWork
from symblock.sheets.work_tiles import TileWork

if TYPE_CHECKING:
    from symblock.engine.block import Step, Trace
    from symblock.exercises.presets import Exercise


_PARAM_PARTS = ("attn", "ffn")   # grad.W_1: a weight's or a bias's gradient works its sub-layer
DATA_WIDTH = 60     # characters of matrix entries printed side by side on one line
DATA_PER_LINE = 3


def _norm_param(name: str) -> bool:
    return parameters.parse(name).norm is not None


def _gamma_beta(first: str, then: str) -> bool:
    """`first` is the γ of the norm whose β is `then` (printed on one line)."""
    g, b = parameters.parse(first), parameters.parse(then)
    return (g.kind, b.kind) == ("gamma", "beta") and (g.prefix, g.norm) == (b.prefix, b.norm)


class Builder(LinearWork, AttentionWork, CrossWork, NormWork, FfnWork, TileWork, RopeWork):
    def __init__(self, trace: Trace, exercise: Exercise, lang: str, places: int) -> None:
        self.trace, self.ex, self.places = trace, exercise, places
        self.spec, self.o, self.dims = trace.spec, trace.spec.options, trace.spec.dims
        self.T, self.lang = TEXTS[lang], lang
        self.v1 = bool(getattr(self.spec, "v1_words", False))   # version 1: its words kept

    def math(self, tex: str) -> Safe:
        """A formula of the engine or of grad.py with its `\\text{...}` words in the sheet's language."""
        for en, local in MATH_TEXT.get(self.lang, {}).items():
            tex = tex.replace(rf"\text{{{en}}}", rf"\text{{{local}}}")
        return Safe(tex)

    def points(self, name: str) -> Safe | None:
        pts = self.ex.points.get(name) if self.spec.exercise.get("points") else None
        if pts is None:
            return None
        return self.t("points" if pts == 1 else "points_n", f"{pts:g}")

    def t(self, key: str, *args, **kw) -> Safe:
        return Safe(self.T[key].format(*args, **kw))

    def show(self, e, guard: int = 0, short: bool = True):
        return show(e, self.places, guard, short)

    def shows(self, values: list) -> list:
        """The operands of one line: all exact when each has a short exact form, else every
        non-plain one as its decimal, so that the line computes what the rounded chain of earlier
        answers gives (the checker's carry-forward) and never a mix of the two."""
        out = [None if v is None else self.show(v) for v in values]
        if all(s is None or s.exact for s in out):
            return out
        return [None if v is None else self.show(v, short=False) for v in values]

    def fits(self, line: str) -> bool:
        """Whether a worked line (up to its first row break) fits a key's line (options.KEY_LINE);
        version 1's keys keep their lines as they were."""
        return self.v1 or width(line.split(r"\\")[0]) <= KEY_LINE

    def note(self, aligned: bool) -> str:
        """The "(from exact values …)" note; in an aligned block on a row of its own."""
        return (r"\\ &\quad " if aligned else "") + self.T["from_exact"]

    def outcome(self, computed, true, exact_in: bool, aligned: bool = False) -> str:
        return outcome(computed, true, exact_in, self.places, self.note(aligned))

    def tuple_outcome(self, computed: list, true: list, exact_in: bool, aligned: bool = False) -> str:
        """`= (…)` / `≈ (…)` for a row of results (None: an entry left out, printed as …)."""
        def tup(cells):
            return r"\left(" + ", ".join(r"\dots" if c is None else c for c in cells) + r"\right)"
        kept = [(c, t) for c, t in zip(computed, true) if t is not None]
        if exact_in:
            plain = all(is_plain(t) for _, t in kept)
            cells = [None if t is None else exact_tex(t) if is_plain(t) else dec_tex(t, self.places) for t in true]
            return ("= " if plain else r"\approx ") + tup(cells)
        cells = [None if c is None else dec_tex(c, self.places) for c in computed]
        out = r"\approx " + tup(cells)
        if any(dec_tex(c, self.places) != dec_tex(t, self.places) for c, t in kept):
            out += " " + self.note(aligned).format(
                tup([None if t is None else dec_tex(t, self.places) for t in true]))
        return out

    def value(self, name: str):
        return self.trace[name].value if name in self.trace else self.trace.params[name]

    def symbol(self, name: str, reader: str | None = None) -> str:
        """The symbol of a step or parameter, as the formula of the step `reader` writes it
        (a model's sheets: work_model.py)."""
        if name in self.trace:
            return step_symbol(self.trace[name])
        return param_symbol(name)

    def no_beta(self, step: Step | None = None) -> bool:
        """The block has no LayerNorm β (`bias: false`): none at all, or none in the norm `step`."""
        absent = getattr(self.spec, "no_beta", frozenset())
        if step is None:
            betas = [n for n in self.trace.params if parameters.parse(n).kind == "beta"]
            return bool(betas) and all(n in absent for n in betas)
        return step.inputs[-1] in absent

    # -- sections
    def linear_tex(self) -> Safe:
        """A linear layer as the conventions write it: with its bias, or without where the block has none."""
        return self.t("conv_linear" if self.o.bias else "conv_linear_nobias")

    def epsilon_tex(self) -> str:
        """ε as the sheet writes it: 10^{-5} for 1/100000 (version 1 wrote the fraction)."""
        return (None if self.v1 else power_tex(self.o.eps)) or number_tex(self.o.eps)

    def conventions(self) -> list[Safe]:
        d, o = self.dims, self.o
        eps = self.epsilon_tex()
        scale = self.t("conv_scale", d.d_head) if o.attention_scale == "sqrt_dk" else self.t("conv_noscale")
        cols = r"1, \dots, d" if d.heads == 1 else r"h d_k + 1, \dots, (h + 1) d_k"
        if d.heads * d.d_k != d.d_model or d.d_k != d.d_v:  # other projection widths
            cols = rf"h d_k + 1, \dots, (h + 1) d_k\ (d_k = {d.d_k};\ V\!: d_v = {d.d_v})"
        uses = self.uses()
        out = [self.t("conv_rows", d.seq_len, d.d_model, lin=self.linear_tex())]
        if "attn" in uses:
            out.append(self.t("conv_attn", scale, cols))
            if o.causal:
                out.append(self.t("conv_mask"))
            out += self.rope_conventions()   # RoPE's angles, grouped K/V heads
            if o.padding:  # the key padding mask, shown like the causal one
                rows = self.spec.key_padding_mask
                keys = [", ".join(str(j + 1) for j, p in enumerate(r) if p) or "—" for r in rows]
                key = "conv_padding_batch" if len(rows) > 1 else counted("conv_padding", sum(rows[0]), False)
                out.append(self.t("conv_padding" if self.v1 else key,
                                  keys[0] if len(rows) == 1 else "; ".join(f"b{b}: {k}" for b, k in enumerate(keys))))
        out += self.cross_conventions(uses)
        if o.attention_tiles and any(kinds.of(n).name in SIDE_KINDS for n in self.ex.ask if n in self.trace):
            out.append(self.t("conv_tiles", o.attention_tiles))
        if o.dropout and "dropout" in uses:
            out.append(self.t("conv_dropout", number_tex(self.spec.dropout_p)))
        if "norm" in uses:
            v1 = "_v1" if self.v1 else ""   # version 1: μ without its row i
            out.append(self.t(f"conv_{o.norm}" + ("_nobeta" if self.no_beta() else "") + v1, eps))
        if "order" in uses:
            if o.cross_attention:
                out.append(self.cross_order())
            elif o.norm_position == "post":
                out.append(self.t("conv_post"))
            else:
                out.append(self.t("conv_pre", self.t("conv_final") if o.final_norm else ""))
        if "ffn" in uses:
            out.append(self.t("conv_ffn", self.ffn_formula()))
        out.append(self.t("conv_round", self.places))
        return out

    def uses(self) -> set[str]:
        """The parts of the block the asked tasks work (attn, norm, ffn, dropout), and `order`
        when they cross a residual connection or more than one part: the conventions box states
        only these, so a norm-only sheet says nothing of attention."""
        kinds = set()
        for name in self.ex.ask:
            step = names.parse(name)
            kind = step.sublayer
            if kind is None and parameters.parse(name).sublayer in _PARAM_PARTS:
                kind = parameters.parse(name).sublayer
            if kind:
                kinds.add(kind)
            if step.dropped:
                kinds.add("dropout")
        if kinds & {"resid", "output"} or len(kinds & {"attn", "cross", "norm", "ffn"}) > 1:
            kinds.add("order")
        return kinds

    def ffn_formula(self) -> str:
        """The FFN line, its biases those of the block (or of a model's first layer: layer0.b_1)."""
        from symblock.engine.block import ACTIVATIONS
        act = ACTIVATIONS[self.o.activation][1]
        own = [parameters.parse(n) for n in self.trace.params]
        p = {q.base for q in own if q.layer in (None, 0) and not q.encoder}
        b = lambda n: f" + b_{n}" if f"b_{n}" in p else ""  # noqa: E731
        inner = rf"\mathrm{{{act}}}(x W_1{b(1)})"
        if self.o.gated:
            inner = rf"\left({inner} \odot (x W_3{b(3)})\right)"
        return rf"{inner} W_2{b(2)}"

    def describe(self) -> Safe:
        d, o = self.dims, self.o
        from symblock.engine.block import ACTIVATIONS
        heads = self.t("heads_1") if d.heads == 1 else self.t("heads_n", d.heads)
        order = self.t("post") if o.norm_position == "post" else self.t("pre_final" if o.final_norm else "pre")
        norm = "LayerNorm" if o.norm == "layernorm" else "RMSNorm"
        act = "$\\mathrm{" + ACTIVATIONS[o.activation][1] + "}$" + (self.T["gated_tag"] if o.gated else "")
        text = self.t("describe", n=d.seq_len, d=d.d_model, f=d.d_ff, heads=heads, order=order,
                      norm=norm, act=act, mask=self.t("mask_on" if o.causal else "mask_pad" if o.padding
                                                      else "mask_off"))
        causal = o.causal and not self.v1   # whose mask it is (version 1: unsaid)
        return Safe(text + self.t("describe_cross_causal" if causal else "describe_cross", d.mem_len)) if o.cross_attention else text

    def data(self) -> list[dict]:
        """The given matrices: the input X first, then parameters, then given steps."""
        item = self.data_item
        steps = [self.trace[n] for n in self.ex.data_steps]
        inputs = {s.name: self.input_symbol(s) for s in steps if self.is_input(s)}
        first = [item(s.name, inputs[s.name], s.value, "step", s.given) for s in steps if s.name in inputs]
        params = [item(p, param_symbol(p), self.trace.params[p], "param", False) for p in self.ex.data_params
                  if p not in getattr(self.spec, "no_beta", ())]   # bias: false: no β to give
        rest = [item(s.name, step_symbol(s), s.value, "step", s.given) for s in steps if s.name not in inputs]
        from symblock.engine.matrix import Mat
        masks = [item(f"dropout.masks.{n}", rf"D_{{\mathrm{{{n}}}}}", Mat.from_sympy(m), "param", False)
                 for n, m in self.spec.dropout_masks.items()]  # the fixed dropout masks, given
        return first + params + masks + self.rope_data() + rest

    def is_input(self, step: Step) -> bool:
        """The input X, or (but in version 1's sheets) a batch's b0.x, b1.x, …: given first."""
        return step.name == "x" or (not self.v1 and names.parse(step.name).base == "x")

    def input_symbol(self, step: Step) -> str:
        """X; a batch's inputs X^{(b0)}, X^{(b1)}, … (as `derive` names them), told apart where they
        are given side by side (version 1's sheets: X)."""
        batch = names.parse(step.name).batch
        if batch is None or self.v1:
            return step_symbol(step)
        return param_symbol(f"b{batch}.X")

    def data_item(self, name, symbol, mat, kind, given) -> dict:
        return {"symbol": Safe(symbol), "name": name, "kind": kind, "given": given,
                "shape": Safe(shape_tex(*mat.shape)), "rows": mat.shape[0],
                "width": sum(max(len(self.show(e).tex) for e in col) + 2 for col in mat.T.rows),
                "math": Safe(f"{symbol} {matrix_value(mat, self.places)}")}

    def data_rows(self, items: list[dict]) -> list[dict]:
        """The given data packed for print: a norm's γ and β on one line, small matrices side by
        side (up to DATA_WIDTH characters of entries), each line with its items' labels."""
        rows: list[list[dict]] = []
        for item in items:
            last = rows[-1] if rows else None
            pair = last is not None and _gamma_beta(last[-1]["name"], item["name"])
            fits = last is not None and len(last) < DATA_PER_LINE and \
                sum(x["width"] + len(x["symbol"]) for x in last) + item["width"] + len(item["symbol"]) <= DATA_WIDTH
            is_norm = _norm_param(item["name"])
            if pair or (fits and not is_norm and not any(_norm_param(x["name"]) for x in last)):
                last.append(item)
            else:
                rows.append([item])
        return [{"members": r, "rows": max(x["rows"] for x in r),
                 "math": Safe(r" ,\qquad ".join(x["math"] for x in r))} for r in rows]

    def task(self, i: int, name: str) -> dict:
        step = self.trace[name]
        r, c = step.value.shape
        return {"n": i, "name": name, "heading": self.t("task", i), "what": self.what(step),
                "points": self.points(name), "rows": r,
                "formula": self.formula(step), "shape": Safe(shape_tex(r, c)),
                "grid": Safe(f"{step_symbol(step)} = {grid(r, c, self.places)}"),
                "work": [{"text": Safe(t) if t else None, "math": Safe(m) if m else None}
                         for t, m in self.work(step)],
                "answer": Safe(f"{step_symbol(step)} {matrix_value(step.value, self.places)}")}

    def formula(self, step: Step) -> Safe:
        """The step's formula; a norm's row statistic with its row, μ_i = ¼ Σ_j X_ij; one wider than
        a line over lines (RoPE's rule, its angle and pairs), as `forward --format latex` breaks
        it, rather than scaled down to fit (version 1: as it was)."""
        tex = self.math(step.latex)
        if self.v1:
            return Safe(tex)
        lines = report.formula_lines(self.row_statistic(step, tex))
        return Safe(lines[0] if len(lines) == 1 else r"\begin{gathered} " + r" \\ ".join(lines) + r" \end{gathered}")

    # -- prose: what is computed
    def what(self, step: Step) -> Safe:
        parsed = names.parse(step.name)   # a batch's b1.attn.q reads as attn.q
        name = parsed.base
        if (cross := self.what_cross(step, parsed)) is not None:
            return cross
        if parsed.dropped:
            return self.t("s.dropped", src=self.symbol(step.inputs[0], step.name))
        if parsed.tile is not None or parsed.kind == "tiled":
            return self.t(f"s.{parsed.kind}", h=parsed.head, j=parsed.tile)
        if parsed.head is not None:
            part = parsed.part
            pad = "_pad" if part == "masked" and self.o.padding and not self.o.causal else ""
            return self.t(f"s.{part}{pad}", h=parsed.head)
        if parsed.norm:
            src = self.symbol(step.inputs[0], step.name)
            norm = "LayerNorm" if self.o.norm == "layernorm" else "RMSNorm"
            key = f"s.{parsed.stat}" if parsed.stat else f"s.{self.o.norm}" + ("_nobeta" if self.no_beta(step) else "")
            return self.t(key, src=src, norm=norm)
        if parsed.kind in ("hidden", "gate"):
            src, w, b = step.inputs   # the step graph's input, weight and bias
            return self.t(f"s.{name}", src=self.symbol(src, step.name), w=w,
                          b=f" + {param_symbol(b)}" if b in self.trace.params else "")   # layer0.b_1: b_1
        if name == "attn.out" and not self.o.out_proj:
            return self.t("s.attn.out_noproj")
        return self.t(f"s.{name}")

    # -- work shown: a list of (prose or None, display math or None)
    def work(self, step: Step) -> list[tuple[str | None, str | None]]:
        """The working of a step: the `work_<name>` its kind names (a head's also gets the head)."""
        parsed = names.parse(step.name)
        how = "dropped" if parsed.dropped else kinds.of(step.name).work_for(self.o)
        if how is None:
            return []
        method = getattr(self, f"work_{how}")
        return method(step) if parsed.head is None or parsed.dropped else method(step, parsed.head)

    def work_dropped(self, step: Step) -> list:
        return [(self.t("dropped_text"), None)]

    def work_concat(self, step: Step) -> list:
        """Each head's output and the columns it fills, in order."""
        if self.v1:
            return [(self.t("concat_v1"), None)]
        parts, col = [], 1
        for name in step.inputs:
            width = self.value(name).shape[1]
            parts.append(self.t("concat_part", self.symbol(name), col, col + width - 1))
            col += width
        return [(self.t("concat", self.T["concat_sep"].join(parts)), None)]

    def work_copy(self, step: Step) -> list:
        return [(self.t("copy"), None)]

