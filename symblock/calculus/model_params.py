"""Exact parameter counts of a whole GPT-style model: token embedding, learned positions, the
stacked blocks (calculus/params.py counts one), the final norm and the head (tied or not).

    >>> count_model(vocab=50257, d_model=768, heads=12, layers=12, context=1024).total
    124439808                                   # GPT-2 small, tied head, biases and LayerNorm β
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from symblock.calculus.params import Counts, count


@dataclass(frozen=True)
class ModelCounts:
    block: Counts           # one layer (without a final norm)
    layers: int
    vocab: int
    context: int            # rows of the learned position table (0: sinusoidal or none)
    tied: bool
    final_norm: int         # the final norm's parameters
    embed_norm: int = 0     # an encoder's (BERT's) norm after the embeddings
    head_kind: str = "tied"  # tied | untied | none (an encoder's hidden states)
    extra: int = 0          # bias vectors and β given in some layers only, with block.bias false

    @property
    def kv_cache(self):
        """What one token adds to the KV cache over all layers (calculus/kv_cache.py)."""
        from symblock.calculus.kv_cache import per_token
        b = self.block
        return per_token(b.kv_heads or b.heads, b.d_head, b.d_v or b.d_head, self.layers)

    @property
    def embedding(self) -> int:
        return self.vocab * self.block.d_model

    @property
    def positions(self) -> int:
        return self.context * self.block.d_model

    @property
    def head(self) -> int:
        return 0 if self.tied else self.block.d_model * self.vocab

    @property
    def stack(self) -> int:
        return self.layers * self.block.total

    @property
    def total(self) -> int:
        return (self.embedding + self.positions + self.embed_norm + self.stack + self.extra + self.final_norm
                + self.head)

    def block_command(self) -> str:
        """The `symblock params` command that counts one of these blocks alone (the same total)."""
        b = self.block
        flags = [f"--d-model {b.d_model}", f"--heads {b.heads}", f"--d-ff {b.d_ff}"]
        if b.d_k is not None:
            flags += [f"--d-k {b.d_k}", f"--d-v {b.d_v}"]
        if b.kv_heads is not None:
            flags.append(f"--kv-heads {b.kv_heads}")
        flags += (["--no-bias"] if not b.bias else []) + ([f"--norm {b.norm_type}"] if b.norm_type != "layernorm" else [])
        flags += [f"--activation {b.activation}"] if b.activation != "relu" else []
        return "symblock params " + " ".join(flags)

    def rows(self) -> list[tuple[str, str, int]]:
        d, v, n, L = self.block.d_model, self.vocab, self.context, self.layers
        out = [("token embedding W_E", f"vocab·d = {v}·{d}", self.embedding)]
        if self.context:
            out.append(("positions W_P", f"context·d = {n}·{d}", self.positions))
        if self.embed_norm:
            out.append(("embedding norm", "2·d (γ, β)" if self.embed_norm == 2 * d else "d (γ)", self.embed_norm))
        no_o = "" if self.block.out_proj else ", no W_O"   # block.out_proj: false
        out.append((f"{L} block{'' if L == 1 else 's'}{no_o}", f"{L} · {self.block.total:,} ({self.block_command()})",
                    self.stack))
        if self.extra:
            out.append(("biases given", "in some layers only (block.bias: false)", self.extra))
        if self.final_norm:
            out.append(("final norm", "2·d (γ, β)" if self.final_norm == 2 * d else "d (γ)", self.final_norm))
        head = {"none": "none: the hidden states (an encoder)", "tied": "tied to W_E (no parameters)"}
        out.append(("head", head.get(self.head_kind, f"d·vocab = {d}·{v}"), self.head))
        return out

    def table(self) -> str:
        b, L = self.block, self.layers
        what = "Encoder model (BERT-like)" if self.head_kind == "none" else "Decoder model (GPT-like)"
        return titled_table(f"{what}: vocab = {self.vocab}, {L} layer{'s' * (L != 1)}, {b.shape_line()}",
                            self.rows(), self.total)

    def latex(self) -> str:
        """An align* block for notes (amsmath only): one line per component and the total."""
        def n(x: int) -> str:
            return f"{x:,}".replace(",", "{,}")

        def label(name: str) -> str:
            text, _, symbol = name.partition(" W_")
            return r"\text{%s}" % (text + (" " if symbol else "")) + (f"W_{symbol}" if symbol else "")
        lines = [f"{label(a)} &= {n(c)}" for a, _, c in self.rows()] + [rf"\text{{total}} &= {n(self.total)}"]
        return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}"

    def to_dict(self) -> dict:
        return {"total": self.total, "embedding": self.embedding, "positions": self.positions,
                "blocks": self.stack, "per_block": self.block.total, "extra": self.extra, "final_norm": self.final_norm,
                "embed_norm": self.embed_norm, "head": self.head, "layers": self.layers, "vocab": self.vocab, "context": self.context,
                "tied": self.tied, "out_proj": self.block.out_proj, "kv_cache": self.kv_cache.to_dict()}


def count_model(vocab: int, d_model: int, heads: int, layers: int, d_ff: int | None = None,
                context: int = 0, tied: bool = True, bias: bool = True, norm: str = "layernorm",
                activation: str = "relu", final_norm: bool = True, kv_heads: int | None = None,
                encoder: bool = False, extra: Iterable[str] = (), out_proj: bool = True,
                d_k: int | None = None, d_v: int | None = None) -> ModelCounts:
    """Count a model exactly; ValueError (one line) for a non-positive size. `encoder`: a
    BERT-like encoder (model.kind encoder, embed_norm): a norm after the embeddings, no final
    norm, and no head of its own (its hidden states; a tied MLM head adds no parameters). `extra`:
    the bias vectors and β every layer has although `bias` is False (`count`'s). `out_proj=False`:
    the blocks have no output projection W_O, b_O (`block.out_proj: false`). `d_k`, `d_v`: the
    per-head widths when they are not d_model/heads (`count`'s)."""
    for name, value in (("vocab", vocab), ("layers", layers)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ValueError(f"context must be a whole number >= 0, got {context!r}")
    block = count(d_model, heads, d_ff, bias=bias, norm=norm, activation=activation, kv_heads=kv_heads,
                  extra=extra, out_proj=out_proj, d_k=d_k, d_v=d_v)
    per_norm = 2 * d_model if norm == "layernorm" and bias else d_model
    if encoder:
        return ModelCounts(block, layers, vocab, context, True, 0, per_norm, "none")
    return ModelCounts(block, layers, vocab, context, tied, per_norm if final_norm else 0, 0,
                       "tied" if tied else "untied")


def titled_table(title: str, rows: list[tuple[str, str, int]], total: int) -> str:
    """A model's count as `params` prints a block's: the title line, column titles over rules,
    one row per component (its formula, count and share of the total), the total."""
    cells = [("parameters", "formula", "count", "share"), *((a, f, f"{c:,}", f"{c / total:.2%}") for a, f, c in rows),
             ("total", "", f"{total:,}", "100.00%")]
    widths = [max(len(row[i]) for row in cells) for i in range(4)]
    lines = ["  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
             for row in cells]
    return "\n".join([title, "", lines[0], "  ".join("-" * w for w in widths), *lines[1:]])
