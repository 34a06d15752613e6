"""Exact parameter counts of a whole GPT-style model: token embedding, learned positions, the
stacked blocks (calculus/params.py counts one), the final norm and the head (tied or not).

    >>> count_model(vocab=50257, d_model=768, heads=12, layers=12, context=1024).total
    124439808                                   # GPT-2 small, tied head, biases and LayerNorm β
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple

from symblock.calculus.params import BadArgument, Counts, count, group


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

    def rows(self) -> list[Row]:
        d, v, n, L = self.block.d_model, self.vocab, self.context, self.layers
        out = [Row("token embedding", f"vocab·d = {v}·{d}", self.embedding, rf"\text{{vocab}} \cdot d = {v} \cdot {d}",
                   symbol="W_E")]
        if self.context:
            out.append(Row("positions", f"context·d = {n}·{d}", self.positions,
                           rf"\text{{context}} \cdot d = {n} \cdot {d}", symbol="W_P"))
        if self.embed_norm:
            out.append(norm_row("embedding norm", self.embed_norm, d))
        no_o = "" if self.block.out_proj else ", no"   # block.out_proj: false: no W_O
        out.append(Row(f"{L} block{'' if L == 1 else 's'}{no_o}", f"{L} · {self.block.total:,} ({self.block_command()})",
                       self.stack, rf"{L} \cdot {group(self.block.total)}", symbol="W_O" if no_o else ""))
        if self.extra:
            out.append(BIASES_GIVEN._replace(count=self.extra))
        if self.final_norm:
            out.append(norm_row("final norm", self.final_norm, d))
        out.append(head_row(self.head_kind, d, v, self.head))
        return out

    def table(self) -> str:
        return titled_table(self.title(), self.rows(), self.total)

    def title(self) -> str:
        what = "Encoder model (BERT-like)" if self.head_kind == "none" else "Decoder model (GPT-like)"
        return f"{what}: vocab = {self.vocab}, {self.layers} layer{'s' * (self.layers != 1)}, {self.block.shape_line()}"

    def latex(self) -> str:
        """An align* block for notes (amsmath only): each component with its formula, the numbers
        put in and the count, then the total; the command counting one block in a comment."""
        return latex_table(self.title(), self.rows(), self.total, [f"one block: {self.block_command()}"])

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
            raise BadArgument(name, f"must be a positive integer, got {value!r}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise BadArgument("context", f"must be a whole number >= 0, got {context!r}")
    block = count(d_model, heads, d_ff, bias=bias, norm=norm, activation=activation, kv_heads=kv_heads,
                  extra=extra, out_proj=out_proj, d_k=d_k, d_v=d_v)
    per_norm = 2 * d_model if norm == "layernorm" and bias else d_model
    if encoder:
        return ModelCounts(block, layers, vocab, context, True, 0, per_norm, "none")
    return ModelCounts(block, layers, vocab, context, tied, per_norm if final_norm else 0, 0,
                       "tied" if tied else "untied")


class Row(NamedTuple):
    """One component of a model's count: its words and symbol (`token embedding`, `W_E`), formula
    (text) and count, and the formula in LaTeX (`\\text{vocab} \\cdot d = 5 \\cdot 4`; empty when
    it is no formula) and a remark."""
    words: str
    formula: str
    count: int
    tex: str = ""
    note: str = ""
    symbol: str = ""

    @property
    def name(self) -> str:
        return f"{self.words} {self.symbol}" if self.symbol else self.words

    @property
    def label(self) -> str:
        """The name in LaTeX: its words as text, its symbol in math (W_E_src: W_{E,\\text{src}})."""
        if not self.symbol:
            return rf"\text{{{self.words}}}"
        return rf"\text{{{self.words} }}" + SYMBOL_TEX.get(self.symbol, self.symbol)


SYMBOL_TEX = {"W_E_src": r"W_{E,\text{src}}"}


BIASES_GIVEN = Row("biases given", "in some layers only (block.bias: false)", 0, "",
                   r"\text{(in some layers only: \texttt{block.bias: false})}")


def norm_row(name: str, count: int, d: int) -> Row:
    """A norm of the model's own (final, embedding): γ and β, or γ alone."""
    if count == 2 * d:
        return Row(name, "2·d (γ, β)", count, rf"2 d = 2 \cdot {d}", r"(\gamma, \beta)")
    return Row(name, "d (γ)", count, "d", r"(\gamma)")


def head_row(kind: str, d: int, vocab: int, count: int) -> Row:
    if kind == "none":
        return Row("head", "none: the hidden states (an encoder)", count, "", r"\text{(none: the hidden states, an encoder)}")
    if kind == "tied":
        return Row("head", "tied to W_E (no parameters)", count, "", r"\text{(tied to $W_E$: no parameters)}")
    return Row("head", f"d·vocab = {d}·{vocab}", count, rf"d \cdot \text{{vocab}} = {d} \cdot {vocab}")


def latex_table(title: str, rows: list[Row], total: int, comments: list[str]) -> str:
    """The rows as `params --format latex` prints them: `\\text{name} &= formula = count`, a
    remark after a \\quad (or under, on a line too wide for it), the total last; the title and
    `comments` as LaTeX comments above."""
    from symblock.engine.tex_width import width
    from symblock.options import LATEX_LINE
    lines = []
    for r in rows:
        value = (f"{r.tex} = " if r.tex and r.tex != str(r.count) else "") + group(r.count)
        line = f"{r.label} &= {value}"
        if r.note:   # a remark after the count, or under it when the line would be too wide
            line += (r" \quad " if width(line + r.note) + 2 <= LATEX_LINE else r" \\ &\quad ") + r.note
        lines.append(line)
    lines.append(rf"\text{{total}} &= {group(total)}")
    head = [f"% symblock params: {title}; needs \\usepackage{{amsmath}}", *(f"% {c}" for c in comments)]
    return "\n".join(head + [r"\begin{align*}", " \\\\\n".join(lines), r"\end{align*}"])


def titled_table(title: str, rows: list[Row], total: int) -> str:
    """A model's count as `params` prints a block's: the title line, column titles over rules,
    one row per component (its formula, count and share of the total), the total."""
    cells = [("parameters", "formula", "count", "share"), *((r.name, r.formula, f"{r.count:,}", f"{r.count / total:.2%}") for r in rows),
             ("total", "", f"{total:,}", "100.00%")]
    widths = [max(len(row[i]) for row in cells) for i in range(4)]
    lines = ["  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
             for row in cells]
    return "\n".join([title, "", lines[0], "  ".join("-" * w for w in widths), *lines[1:]])
