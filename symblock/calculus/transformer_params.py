"""Exact parameter count of the original encoder–decoder Transformer, as `torch.nn.Transformer`
builds it: an encoder stack of blocks with its final norm, a decoder stack of decoder layers
(self-attention, cross-attention, FFN; three norms each) with its final norm. Embeddings and the
output head are not counted (nn.Transformer has none).

    >>> count_transformer().total   # nn.Transformer() with its defaults
    44140544
"""
from __future__ import annotations

from dataclasses import dataclass

from symblock.calculus.params import Counts, count


@dataclass(frozen=True)
class TransformerCounts:
    """The counts of one encoder layer and one decoder layer, the stacks' depths and their final
    norms: total = L_e·encoder + L_d·decoder + 2 final norms."""
    encoder: Counts
    decoder: Counts
    encoder_layers: int
    decoder_layers: int
    final_norms: int

    @property
    def total(self) -> int:
        return (self.encoder_layers * self.encoder.total + self.decoder_layers * self.decoder.total
                + self.final_norms)

    def formula(self) -> str:
        """The total as text: `6·(…) + 6·(…) + 4·d`."""
        per = 2 if self.encoder.norm_type == "layernorm" and self.encoder.bias else 1
        return (f"{self.encoder_layers}·({self.encoder.formula()}) + "
                f"{self.decoder_layers}·({self.decoder.formula()}) + {2 * per}·d")


def count_transformer(d_model: int = 512, heads: int = 8, d_ff: int = 2048, encoder_layers: int = 6,
                      decoder_layers: int = 6, bias: bool = True, norm: str = "layernorm",
                      activation: str = "relu") -> TransformerCounts:
    """nn.Transformer's parameters (its defaults are the article's: d 512, 8 heads, d_ff 2048,
    6 + 6 layers); ValueError with a one-line message for a bad dimension or layer count."""
    for name, n in (("encoder_layers", encoder_layers), ("decoder_layers", decoder_layers)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be a whole number >= 0, got {n!r}")
    enc = count(d_model, heads, d_ff, bias=bias, norm=norm, activation=activation)
    dec = count(d_model, heads, d_ff, bias=bias, norm=norm, activation=activation, cross_attention=True)
    per_norm = d_model * (2 if norm == "layernorm" and bias else 1)
    return TransformerCounts(enc, dec, encoder_layers, decoder_layers, 2 * per_norm)
