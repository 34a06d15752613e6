"""The encoder worksheet's builder: a BERT-like encoder model worked over its whole sentence (every
row, the padded ones too), from the token and position embeddings through their LayerNorm
(`norm_embed`) and the layers to the hidden states; no generation step, no next token.
The layers' steps are worked by the block's own work_* mixins, as the decoder sheet's are
(work_model.DecoderBuilder, whose dispatch this reuses); only the embeddings are worked here.
"""
from __future__ import annotations

from dataclasses import replace

from symblock.engine import names
from symblock.sheets.builder import Builder
from symblock.sheets.lang_counts import counted
from symblock.sheets.numbers import Safe, bmatrix, step_symbol
from symblock.sheets.work_model import DecoderBuilder, token_tex


class EncoderBuilder(DecoderBuilder):
    def __init__(self, trace, exercise, lang: str, places: int):
        Builder.__init__(self, trace, exercise, lang, places)
        from symblock.sheets.lang import MODEL_TEXTS, TEXTS
        self.T = {**TEXTS[lang], **MODEL_TEXTS[lang]}
        self.model = trace.spec
        self.m = len(self.model.prompt)

    def sentence(self) -> str:
        return "$" + r"\ ".join(token_tex(self.model.vocab[t]) for t in self.model.prompt) + "$"

    def describe(self) -> Safe:
        s, d = self.model, self.model.dims
        layers = self.t("m.layers_1") if len(s.layers) == 1 else self.t("m.layers_n", len(s.layers))
        heads = self.t("heads_1") if d.heads == 1 else self.t("heads_n", d.heads)
        order = self.t("post") if self.o.norm_position == "post" else self.t("pre")
        return self.t("e.describe", v=len(s.vocab), d=d.d_model, layers=layers, heads=heads, order=order,
                      prompt=self.sentence(), n=self.m, norm=self.t("e.norm") if s.embed_norm else "",
                      which="layer" if len(s.layers) == 1 else "layers")

    def conventions(self) -> list[Safe]:
        """The model's rows and embeddings, the embeddings' norm, then the layer's own conventions
        (without its rows line and its padding line, said here of the sentence's tokens)."""
        s = self.model
        pos = self.t("e.pos_learned") if s.positions == "learned" else self.t(f"m.pos_{s.positions}", self.base_tex())
        out = [self.t("e.conv_rows", self.m, s.dims.d_model, lin=self.linear_tex()), self.t("e.conv_embed", self.vocab_tex(), pos)]
        if s.embed_norm:
            out.append(self.t("e.conv_embed_norm" + ("_nobeta" if self.no_beta(self.trace["norm_embed"]) else "")))
        padded = [str(i + 1) for i, p in enumerate(s.key_padding_mask) if p]
        if padded:
            out.append(self.t(counted("e.conv_padding", len(padded), self.v1), ", ".join(padded)))
        pad_lines = tuple(self.T[k].split("{")[0] for k in ("conv_padding", "conv_padding_one", "conv_padding_many", "conv_padding_batch"))
        return out + [c for c in self.block_conventions()[1:] if not c.startswith(pad_lines)]

    def block_conventions(self) -> list[Safe]:
        keep = self.o
        self.o = replace(self.o, padding=False)   # the model's mask is one row, said above
        try:
            return Builder.conventions(self)
        finally:
            self.o = keep

    def task(self, i: int, name: str) -> dict:
        return Builder.task(self, i, name)

    def what(self, step) -> Safe:
        parsed = names.parse(step.name)
        if parsed.layer is not None:
            return Builder.what(self, replace(step, name=parsed.local))
        if parsed.norm and parsed.stat:
            return Builder.what(self, step)
        if parsed.base == "pos" and self.model.positions != "learned":
            return self.t("m.s.pos_table")
        nobeta = parsed.base == "norm_embed" and self.no_beta(step)   # bias: false: no β
        return self.t(f"e.s.{parsed.base}" + ("_nobeta" if nobeta else ""))

    def work(self, step) -> list:
        parsed = names.parse(step.name)
        if parsed.layer is not None:
            return super().work(step)
        if parsed.norm:      # norm_embed and its statistics: the block's LayerNorm working
            return Builder.work(self, step)
        return getattr(self, f"work_encoder_{parsed.base}")(step)

    def work_encoder_embed(self, step) -> list:
        looked = ", ".join(rf"${token_tex(self.model.vocab[t])} \to {t + 1}$" for t in self.model.prompt)
        rows = ", ".join(str(t + 1) for t in self.model.prompt)
        return [(self.t("e.w.embed", looked), None),
                (None, rf"{step_symbol(step)} = (W_E)_{{[{rows}]\cdot}} = {self.mat(step.value)}")]

    def work_encoder_pos(self, step) -> list:
        if self.model.positions != "learned":   # sinusoidal: the table row by row, in closed form
            return self.work_pe_table(step)
        return [(self.t("e.w.pos", self.m), None),
                (None, rf"{step_symbol(step)} = (W_P)_{{[1..{self.m}]\cdot}} = {self.mat(step.value)}")]

    def work_encoder_x(self, step) -> list:
        return self.work_add(step)

    def mat(self, value) -> str:
        return bmatrix([[self.show(e).tex for e in r] for r in value.rows])

