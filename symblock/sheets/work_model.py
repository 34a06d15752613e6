"""The decoder worksheet's builder: one generation step of a tiny GPT with the KV cache
(exercises/decoder.py says what is asked; sheets/sheet.py builds the block's sheet dict from it).
A subclass of builder.Builder: a layer's steps (`gen1.layer0.attn.q`, …) are worked by the block's
own work_* mixins on the layer's dims for one row, so every line of working is the block key's; the
model's own steps (embedding, position, cache, logits, probabilities, next token) and the
conceptual task are worked here.
"""
from __future__ import annotations

import re
from dataclasses import replace

from symblock.engine import names
from symblock.exercises.decoder import token_index
from symblock.sheets.builder import Builder
from symblock.sheets.lang import MODEL_TEXTS, TEXTS
from symblock.sheets.numbers import (Safe, bmatrix, cells, dec_tex, grid, is_plain, matrix_value, param_symbol,
                                     shape_tex, step_symbol)

_SAFE_TOKEN = re.compile(r"[^A-Za-z0-9 .,'!?:;()\[\]+=/-]")


def token_tex(tok: str) -> str:
    """A token of the user's vocabulary as math (`\\text{cat}`), characters outside a plain set
    shown as ?, so that it is the same trusted text in LaTeX and Markdown (`[PAD]` keeps its
    brackets: inside math they are no Markdown link). The angle brackets of
    special tokens (`<s>`, `</s>`) are math's ⟨ ⟩, never a raw `<` a Markdown reader takes for HTML."""
    body = "".join(r"}\langle\text{" if part == "<" else r"}\rangle\text{" if part == ">"
                   else _SAFE_TOKEN.sub("?", part) for part in re.split(r"([<>])", tok))
    return r"\text{“" + (body or "?") + "”}"


def model_symbol(name: str, layers: int) -> str:
    """A model parameter's symbol: W_E, W_P, W_U; a layer's W^{Q} (with the layer as a superscript
    in brackets when the model has more than one layer); γ, β of its norms."""
    step = names.parse(name)
    if step.layer is None:
        return param_symbol(name)
    sym = param_symbol(step.local)
    return sym if layers == 1 else rf"{{{sym}}}^{{[{step.layer}]}}"


class DecoderBuilder(Builder):
    reading: int | None = None   # the layer of the step being worked (None: a model step)

    def __init__(self, trace, exercise, lang: str, places: int):
        super().__init__(trace, exercise, lang, places)
        self.T = {**TEXTS[lang], **MODEL_TEXTS[lang]}
        self.model = trace.spec
        self.m = len(self.model.prompt)            # the prompt's tokens; the new token is number m + 1
        self.token = token_index(trace["next_token"].value) if "next_token" in trace else None  # an encoder: none

    @property
    def positions_only(self) -> bool:
        """The positions preset: the sinusoidal table asked alone, no weights given."""
        return all(names.parse(n).kind == "pos" for n in self.ex.ask)

    def base_tex(self) -> str:
        n = self.model.pe_base
        return str(n.numerator) if n.denominator == 1 else rf"\left(\tfrac{{{n.numerator}}}{{{n.denominator}}}\right)"

    def symbol(self, name: str, reader: str | None = None) -> str:
        """A step's or parameter's symbol, as the formula of the step `reader` writes it: a later
        layer reads an earlier one's rows as its own input X, and a final norm or the head reads
        a layer's output `Y` (a copy of its last step, which no task asks) as that step (H_3)."""
        if name not in self.trace:
            return model_symbol(name, len(self.model.layers))
        st, p = self.trace[name], names.parse(name)
        r = self.reading   # the reader's layer (its step is worked under its local name)
        if reader is not None and r is not None and p.layer is not None and r != p.layer:
            return "X"   # a later layer's formulas name the rows they read X (engine/model.py)
        if reader is not None and r is None and p.kind == "output" and p.layer is not None \
                and len(st.inputs) == 1 and st.inputs[0] in self.trace:
            return self.symbol(st.inputs[0], reader)
        return step_symbol(st)

    def vocab_tex(self) -> str:
        return ", ".join(f"${token_tex(t)}$" for t in self.model.vocab)

    # -- sections
    def describe(self) -> Safe:
        s, d = self.model, self.model.dims
        if self.positions_only:
            last = max(self.trace[n].value.shape[0] - 1 if self.trace[n].value.shape[0] > 1
                       else self.position(self.trace[n]) for n in self.ex.ask)
            return self.t("m.describe_pe", last=last, d=d.d_model, n=self.base_tex())
        prompt = "$" + r"\ ".join(token_tex(s.vocab[t]) for t in s.prompt) + "$"
        layers = self.t("m.layers_1") if len(s.layers) == 1 else self.t("m.layers_n", len(s.layers))
        heads = self.t("heads_1") if d.heads == 1 else self.t("heads_n", d.heads)
        order = self.t("post") if self.o.norm_position == "post" else self.t("pre")
        if s.kind == "encoder-decoder":
            source = "$" + r"\ ".join(token_tex(s.vocab[t]) for t in s.source_tokens) + "$"
            enc, dec = len(s.encoder), len(s.layers)
            stacks = (f"one encoder and one decoder layer" if enc == dec == 1 else
                      f"{enc} encoder layer{'s' * (enc != 1)} and {dec} decoder layer{'s' * (dec != 1)}")
            return self.t("m.describe_translate", v=len(s.vocab), d=d.d_model, enc=enc, dec=dec, stacks=stacks,
                          heads=heads, order=order, head=self.t(f"m.{s.head}", self.trace["logits"].latex),
                          source=source, n=len(s.source_tokens), prompt=prompt, m=self.m,
                          tokens="token" if self.m == 1 else "tokens", token=f"${token_tex(s.vocab[self.token])}$")
        return self.t("m.describe", v=len(s.vocab), d=d.d_model, layers=layers, heads=heads, order=order,
                      head=self.t(f"m.{s.head}", self.trace["logits"].latex), prompt=prompt, m=self.m,
                      tokens="token" if self.m == 1 else "tokens", token=f"${token_tex(s.vocab[self.token])}$")

    def conventions(self) -> list[Safe]:
        s = self.model
        if self.positions_only:
            return [self.t("m.conv_pe", self.base_tex()), self.t("conv_round", self.places)]
        block = super().conventions()[1:]          # the block's, after its rows line
        return [self.t("m.conv_rows", s.dims.d_model, lin=self.linear_tex()),
                self.t("m.conv_embed", self.vocab_tex(), self.t(f"m.pos_{s.positions}", self.base_tex()),
                       self.trace["x"].latex),
                self.t("m.conv_cache"), *block, self.t("m.conv_head", f"${self.trace['logits'].latex}$")]

    def data(self) -> list[dict]:
        """W_E (with its vocabulary), W_P, the layers' weights, then the prompt's cached K and V."""
        params = [self.data_item(p, self.symbol(p), self.trace.params[p], "param", False)
                  for p in self.ex.data_params if p not in self.model.no_beta]   # bias: false: no β to give
        steps = [self.data_item(n, self.cache_symbol(n), self.trace[n].value, "step", False)
                 for n in self.ex.data_steps]
        return params + self.rope_data() + steps

    def rope_positions(self) -> tuple[int, ...]:
        """The asked rotation's rows: the new token's position (from 0), or the prompt's."""
        gens = [names.parse(n).gen for n in self.ex.ask if names.parse(n).kind in ("q_rot", "k_rot")]
        t = gens[0] if gens else 0
        return (self.m + t - 1,) if t and self.model.kv_cache else tuple(range(self.m + t))

    def cache_symbol(self, name: str) -> str:
        step = names.parse(name)
        if step.layer is not None and step.base in ("attn.k", "attn.v", "attn.k_rot"):
            return f"{step.kind[0].upper()}{chr(39) * (step.base == 'attn.k_rot')}_{{\\text{{cache}}}}"
        return self.symbol(name)

    # -- tasks
    def task(self, i: int, name: str) -> dict:
        if name in self.ex.extra:
            return self.reused_task(i, name)
        out = super().task(i, name)
        step = names.parse(name)
        if step.kind == "pos" and step.gen and self.model.positions == "learned":  # the row is the task
            out["formula"] = Safe(r"%s = W_P[\text{%s}]" % (step_symbol(self.trace[name]), self.t("m.position")))
        if step.kind == "next_token":   # the engine's formula names the token: not on a sheet
            out["formula"] = Safe(r"\hat t = \arg\max_j \ell_j")
            tok = self.model.vocab[token_index(self.trace[name].value)]
            out["answer"] = Safe(out["answer"] + rf"\quad ({token_tex(tok)})")
        return out

    def reused_task(self, i: int, name: str) -> dict:
        value = self.ex.extra[name]
        n = value.shape[1]
        return {"n": i, "name": name, "heading": self.t("task", i), "what": self.t("m.s.reused"),
                "points": self.points(name), "rows": 1,
                "formula": Safe(r"K_{\text{cache}} = \left[%s\right]" % r";\ ".join(
                    [r"K_{%d\cdot}" % k for k in range(1, n + 1)] if n <= 3 else [r"K_{1\cdot}", r"\dots", r"K_{%d\cdot}" % n])),
                "shape": Safe(shape_tex(1, n)), "grid": Safe(f"\\text{{reused}} = {grid(1, n, 0)}"),
                "work": [{"text": self.t("m.w.reused_one" if n == 2 else "m.w.reused", self._first_rows(n - 1), n),
                          "math": None}],
                "answer": Safe(r"\text{reused} " + matrix_value(value, self.places)),
                "cells": cells(value, self.places)}

    def _first_rows(self, k: int) -> str:
        """Rows 1 … k as prose: "$1$ and $2$", "$1, 2, 3$", "$1, \\dots, k$"."""
        return self.t("m.w.rows_two") if k == 2 else "$1, 2, 3$" if k == 3 else rf"$1, \dots, {k}$"

    def local(self, name: str):
        """The layer spec a layer's step is worked with (its rows: the one new row, or the prompt)."""
        spec = self.model.layers[names.parse(name).layer]
        rows = self.trace[name].value.shape[0]
        opts = spec.options if not names.parse(name).gen else replace(spec.options, causal=False)
        return replace(spec.dims, seq_len=rows), opts

    def what(self, step) -> Safe:
        parsed = names.parse(step.name)
        if parsed.layer is not None:
            if parsed.section == "cache":
                return self.t(f"m.s.{parsed.local}")
            if parsed.kind == "scores" and parsed.gen:
                return self.t("m.s.scores", h=parsed.head)
            self.reading = parsed.layer
            try:
                return super().what(replace(step, name=parsed.local))
            finally:
                self.reading = None
        if parsed.norm == "norm_final" and parsed.stat:
            return super().what(replace(step, name=parsed.base))
        if parsed.base == "pos" and not parsed.gen:   # the prompt's (or the source's) rows: the positions preset
            return self.t("m.s.pos_table_src" if parsed.encoder else "m.s.pos_table")
        return self.t(f"m.s.{parsed.base}")

    def work(self, step) -> list:
        parsed = names.parse(step.name)
        if parsed.layer is not None:
            if parsed.section == "cache":
                return self.work_cache(step)
            keep = self.dims, self.o
            self.dims, self.o = self.local(step.name)
            self.reading = parsed.layer
            try:
                return super().work(replace(step, name=parsed.local))
            finally:
                self.dims, self.o = keep
                self.reading = None
        base = parsed.base
        if parsed.norm == "norm_final":
            keep = self.dims
            self.dims = replace(self.dims, seq_len=step.value.shape[0])
            try:
                return super().work(replace(step, name=base))
            finally:
                self.dims = keep
        return getattr(self, f"work_model_{base}")(step)

    # -- the model's own steps
    def work_model_embed(self, step) -> list:
        tok = self.token_of(step)
        row = bmatrix([[self.show(e).tex for e in step.value.rows[0]]])
        return [(self.t("m.w.embed", f"${token_tex(self.model.vocab[tok])}$", tok + 1), None),
                (None, rf"{step_symbol(step)} = (W_E)_{{{tok + 1}\cdot}} = {row}")]

    def token_of(self, step) -> int:
        t = names.parse(step.name).gen
        if not t:
            return self.model.prompt[0]
        prev = names.name_of("next_token", gen=t - 1)
        return token_index(self.trace[prev].value)

    def work_model_pos(self, step) -> list:
        p = self.position(step)
        row = bmatrix([[self.show(e).tex for e in step.value.rows[0]]])
        if self.model.positions == "learned":
            return [(self.t("m.w.pos", p + 1), None), (None, rf"{step_symbol(step)} = (W_P)_{{{p + 1}\cdot}} = {row}")]
        if step.value.shape[0] == 1:
            return [(self.t("m.w.pos_sin", p), None), (None, self.pe_row(p, step.value.rows[0], step_symbol(step)))]
        return self.work_pe_table(step)

    def work_pe_table(self, step) -> list:
        """A table of sinusoidal positions (rows 0, 1, …), row by row."""
        return [line for p, cells in enumerate(step.value.rows)
                for line in ((self.t("m.w.pos_sin", p), None), (None, self.pe_row(p, cells, rf"{step_symbol(step)}_{{{p},\cdot}}")))]

    def pe_row(self, p: int, cells, lhs: str) -> str:
        """Position p's sinusoids: each entry's exact closed form (sin and cos of a rational angle,
        never a decimal after `=`), then the row rounded."""
        from fractions import Fraction

        from symblock.engine import exact, powers
        d = self.model.dims.d_model
        freqs = [powers.power(self.model.pe_base, -Fraction(j - j % 2, d)) for j in range(d)]
        closed = [self.show(e).tex if p == 0 else r"\%s\left(%s\right)" % (
            ("sin", "cos")[j % 2], self.angle_tex(p, exact.real(p) * f, Fraction(j - j % 2, d)))
            for j, (e, f) in enumerate(zip(cells, freqs))]
        line = f"{lhs} = " + bmatrix([closed])
        if not all(is_plain(e) for e in cells):
            line += r" \approx " + bmatrix([[dec_tex(e, self.places) for e in cells]])
        return line

    def angle_tex(self, p: int, angle, e) -> str:
        """p / n^(2i/d): a rational angle as its number, any other as that quotient (never a
        decimal, never a surd such as √10/50), so one column has one form in every row."""
        shown = self.show(angle)
        if angle.q is not None and shown.exact:
            return shown.tex
        return rf"{p} / {self.base_tex()}^{{{e.numerator}/{e.denominator}}}"

    def position(self, step) -> int:
        t = names.parse(step.name).gen
        return self.m + t - 1 if t else 0

    def work_model_x(self, step) -> list:
        return self.work_add(step) if len(step.inputs) == 2 else [(self.t("copy_embed"), None)]

    def work_cache(self, step) -> list:
        old, new = step.inputs
        n = step.value.shape[0]
        stacked = bmatrix([[self.show(e).tex for e in r] for r in step.value.rows])
        return [(self.t("m.w.cache_one" if n == 2 else "m.w.cache", n - 1, n), None),
                (None, rf"{step_symbol(step)} = \begin{{bmatrix}} {self.cache_symbol(old)} \\ "
                       rf"{self.symbol(new)} \end{{bmatrix}} = {stacked}")]

    def work_model_logits(self, step) -> list:
        h, w = step.inputs
        H, W = self.value(h), self.value(w)
        cols = W.rows if self.model.head == "tied" else W.T.rows   # ℓ_j = h · (row j of W_E)
        pos = [(0, j) for j in range(min(len(cols), 3))]
        return [(self.t("first_entries"), None)] + self.dot_entries(step, H.rows, cols, pos)

    def work_model_probs(self, step) -> list:
        s = self.value(step.inputs[0])
        lines = self.softmax_row(0, s.rows[0], step.value.rows[0], step_symbol(step))
        return [(self.t("softmax_max"), None),
                (None, r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}")]

    def work_model_next_token(self, step) -> list:
        row = self.value(step.inputs[0]).rows[-1]
        j = token_index(step.value)
        shown = ", ".join(self.show(e).tex for e in row)
        return [(self.t("m.w.next_token", j, f"${token_tex(self.model.vocab[j])}$"), None),
                (None, rf"\ell = \left({shown}\right),\quad \arg\max_j \ell_j = {j}")]

