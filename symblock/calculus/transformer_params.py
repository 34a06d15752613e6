"""Exact parameter count of the original encoder–decoder Transformer, as `torch.nn.Transformer`
builds it: an encoder stack of blocks with its final norm, a decoder stack of decoder layers
(self-attention, cross-attention, FFN; three norms each) with its final norm. nn.Transformer has
no embeddings and no head; with `vocab` they are counted as a translation model around it has
them: one embedding table shared by source and target (with `separate`, the source's own second
table, as `model.embeddings: separate`), learned positions (`context` rows), and the head tied to
the target's table (no parameters) or its own d × vocab matrix.

    >>> count_transformer().total   # nn.Transformer() with its defaults
    44140544
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from symblock.calculus.params import BadArgument, Counts, count

if TYPE_CHECKING:
    from symblock.calculus.model_params import Row


@dataclass(frozen=True)
class TransformerCounts:
    """The counts of one encoder layer and one decoder layer, the stacks' depths and their final
    norms: total = L_e·encoder + L_d·decoder + 2 final norms (the encoder's alone with
    `decoder_norm` False: a spec's `model.final_norm: false` drops the decoder's)."""
    encoder: Counts
    decoder: Counts
    encoder_layers: int
    decoder_layers: int
    final_norms: int
    vocab: int = 0          # 0: nn.Transformer alone (no embeddings, no head)
    context: int = 0        # rows of a learned position table
    tied: bool = True
    separate: bool = False  # model.embeddings: separate: the source has its own vocab × d table W_E_src
    extra: int = 0          # bias vectors and β given in some layers only, with block.bias false
    decoder_norm: bool = True  # False: the decoder stack has no final norm (model.final_norm: false)

    @property
    def embedding(self) -> int:
        return (self.vocab * (1 + self.separate) + self.context) * self.encoder.d_model

    @property
    def head(self) -> int:
        return 0 if self.tied else self.vocab * self.encoder.d_model

    @property
    def total(self) -> int:
        return (self.encoder_layers * self.encoder.total + self.decoder_layers * self.decoder.total
                + self.extra + self.final_norms + self.embedding + self.head)

    def rows(self) -> list[Row]:
        from symblock.calculus.model_params import BIASES_GIVEN, Row, head_row, norm_row
        d, v, le, ld = self.encoder.d_model, self.vocab, self.encoder_layers, self.decoder_layers
        table = rf"\text{{vocab}} \cdot d = {v} \cdot {d}"
        out = []
        if self.vocab and self.separate:
            out += [Row("source embedding", f"vocab·d = {v}·{d}", v * d, table, symbol="W_E_src"),
                    Row("target embedding", f"vocab·d = {v}·{d}", v * d, table, symbol="W_E")]
        elif self.vocab:
            out.append(Row("token embedding", f"vocab·d = {v}·{d} (source and target)", v * d, table,
                           r"\text{(source and target)}", "W_E"))
        if self.context:
            out.append(Row("positions", f"context·d = {self.context}·{d}", self.context * d,
                           rf"\text{{context}} \cdot d = {self.context} \cdot {d}", symbol="W_P"))
        no_o = "" if self.encoder.out_proj else ", no"   # block.out_proj: false: no W_O
        for what, n, layer in (("encoder", le, self.encoder), ("decoder", ld, self.decoder)):
            f = layer.formula()
            out.append(Row(f"{n} {what} layer{'s' * (n != 1)}{no_o}", f"{n} · ({f})", n * layer.total,
                           rf"{n} \cdot ({f.latex()})", symbol="W_O" if no_o else ""))
        if self.extra:
            out.append(BIASES_GIVEN._replace(count=self.extra))
        if self.decoder_norm:
            k = self.final_norms // d
            out.append(Row("2 final norms", f"{k}·d (encoder, decoder)", self.final_norms,
                           rf"{k} d = {k} \cdot {d}", r"\text{(encoder, decoder)}"))
        else:   # the encoder's alone: the decoder's is dropped
            out.append(norm_row("encoder final norm", self.final_norms, d))
        if self.vocab:
            out.append(head_row("tied" if self.tied else "untied", d, v, self.head))
        return out

    def title(self) -> str:
        le, ld = self.encoder_layers, self.decoder_layers
        vocab = f"vocab = {self.vocab}, " if self.vocab else ""
        return (f"Encoder-decoder (nn.Transformer): {vocab}{le} encoder layer{'s' * (le != 1)} and "
                f"{ld} decoder layer{'s' * (ld != 1)}, {self.encoder.shape_line()}")

    def table(self) -> str:
        from symblock.calculus.model_params import titled_table
        return titled_table(self.title(), self.rows(), self.total)

    def latex(self) -> str:
        """An align* block for notes (amsmath only): each component with its formula, the numbers
        put in and the count, then the total."""
        from symblock.calculus.model_params import latex_table
        return latex_table(self.title(), self.rows(), self.total, [])

    def to_dict(self) -> dict:
        return {"total": self.total, "encoder_layers": self.encoder_layers, "decoder_layers": self.decoder_layers,
                "per_encoder_layer": self.encoder.total, "per_decoder_layer": self.decoder.total,
                "final_norms": self.final_norms, "embedding": self.embedding, "head": self.head,
                "vocab": self.vocab, "context": self.context, "tied": self.tied, "separate": self.separate,
                "extra": self.extra, "decoder_norm": self.decoder_norm, "out_proj": self.encoder.out_proj}

    def formula(self) -> str:
        """The total as text: `6·(…) + 6·(…) + 4·d` (the final norms' d's)."""
        return (f"{self.encoder_layers}·({self.encoder.formula()}) + "
                f"{self.decoder_layers}·({self.decoder.formula()}) + {self.final_norms // self.encoder.d_model}·d")


def count_transformer(d_model: int = 512, heads: int = 8, d_ff: int = 2048, encoder_layers: int = 6,
                      decoder_layers: int = 6, bias: bool = True, norm: str = "layernorm",
                      activation: str = "relu", vocab: int = 0, context: int = 0,
                      tied: bool = True, separate: bool = False, extra_encoder: Iterable[str] = (),
                      extra_decoder: Iterable[str] = (), decoder_norm: bool = True,
                      out_proj: bool = True, d_k: int | None = None,
                      d_v: int | None = None) -> TransformerCounts:
    """nn.Transformer's parameters (its defaults are the article's: d 512, 8 heads, d_ff 2048,
    6 + 6 layers), with `vocab` its embeddings and head too; ValueError with a one-line message
    for a bad dimension or layer count. `separate`: the source has its own embedding table (a
    second vocab × d); `extra_encoder`, `extra_decoder`: the bias vectors and β every layer of that
    stack has although `bias` is False (`count`'s `extra`). `decoder_norm=False`: no decoder final
    norm (the encoder's is kept); `out_proj=False`: no W_O, b_O, cross.W_O, cross.b_O in any layer;
    `d_k`, `d_v`: the per-head widths when they are not d_model/heads (`count`'s)."""
    for name, n in (("encoder_layers", encoder_layers), ("decoder_layers", decoder_layers),
                    ("vocab", vocab), ("context", context)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise BadArgument(name, f"must be a whole number >= 0, got {n!r}")
    enc = count(d_model, heads, d_ff, bias=bias, norm=norm, activation=activation, extra=extra_encoder,
                out_proj=out_proj, d_k=d_k, d_v=d_v)
    dec = count(d_model, heads, d_ff, bias=bias, norm=norm, activation=activation, cross_attention=True,
                extra=extra_decoder, out_proj=out_proj, d_k=d_k, d_v=d_v)
    per_norm = d_model * (2 if norm == "layernorm" and bias else 1)
    return TransformerCounts(enc, dec, encoder_layers, decoder_layers, (1 + bool(decoder_norm)) * per_norm, vocab,
                             context, tied, separate and vocab > 0, decoder_norm=bool(decoder_norm))
