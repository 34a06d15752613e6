"""A decoder layer's cross-attention on sheets and keys: its prose, its conventions and the working
of the steps whose operands differ from the self-attention's. A mixin of builder.Builder.

The queries come from the decoder's rows and the keys and values from the memory H^{enc} (mem_len rows,
the encoder's output); only padded memory rows are masked, never causally. The scores, scaling,
softmax and projections are worked as the self-attention's are (the kind table names them)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import names
from symblock.sheets.lang_counts import counted
from symblock.sheets.numbers import Safe, step_symbol

if TYPE_CHECKING:
    from symblock.engine.block import Step

_PARTS = ("cross", "memory")   # the sections this mixin tells of


class CrossWork:
    def what_cross(self, step: Step, parsed: names.StepName) -> Safe | None:
        """The prose of a cross-attention step, or of a decoder layer's residual; None otherwise."""
        if not self.o.cross_attention:
            return None
        if parsed.kind == "resid":
            return self.t(f"s.dec.{parsed.base}")
        if parsed.section not in _PARTS:
            return None
        if parsed.head is not None:
            return self.t(f"s.{parsed.kind}", h=parsed.head)
        if parsed.base == "cross.q":
            return self.t("s.cross.q", src=self.symbol(step.inputs[0]))
        if parsed.base == "cross.out" and not self.o.out_proj:
            return self.t("s.cross.out_noproj")
        return self.t(f"s.{parsed.base}")

    def cross_conventions(self, uses: set[str]) -> list[Safe]:
        """The cross-attention's convention line, when the asked tasks work it."""
        if not self.o.cross_attention or "cross" not in uses:
            return []
        d = self.dims
        scale = self.t("conv_scale", d.d_head) if self.o.attention_scale == "sqrt_dk" else self.t("conv_noscale")
        # a decoder layer's memory padding, or an encoder-decoder's padded source (its memory's rows)
        padded = [str(j + 1) for j, p in enumerate(self.memory_padding()) if p]
        pad = counted("conv_cross_pad", len(padded), self.v1)
        return [self.t("conv_cross", scale, self.memory_rows(), self.t(pad, ", ".join(padded)) if padded else "")]

    def memory_padding(self) -> tuple:
        """The memory's padding flags: a decoder layer's memory_padding_mask, an encoder-decoder's source's."""
        return getattr(self.spec, "memory_padding_mask", ()) or getattr(self.spec, "source_padding_mask", ())

    def memory_rows(self) -> int:
        """The memory's rows: a decoder layer's mem_len, an encoder-decoder's source length."""
        return self.dims.mem_len or len(getattr(self.spec, "source_tokens", ()))

    def cross_order(self) -> Safe:
        """A decoder layer's order of sub-layers (three residuals, three norms)."""
        if self.o.norm_position == "post":
            return self.t("conv_post_cross")
        return self.t("conv_pre_cross", self.t("conv_final_cross") if self.o.final_norm else "")

    def work_cross_scores(self, step: Step, h: int) -> list:
        lo, hi = h * self.dims.d_head, (h + 1) * self.dims.d_head
        q, k = (self.value(n).cols(lo, hi) for n in step.inputs)
        out = []
        sub = self.substitute(step_symbol(step), [(f"Q^{{c}}_{h}", q), (rf"(K^{{c}}_{h})^{{\top}}", k.T)])
        if sub:
            out.append(sub)
        pos = self.positions(*step.value.shape, hi - lo)
        out.append((self.t("first_entries" if len(pos) > 1 else "first_entry"), None))
        return out + self.dot_entries(step, q.rows, k.rows, pos)

    def work_cross_masked(self, step: Step, h: int) -> list:
        return [(self.t("cross_mask_text"), None)]

    def work_cross_out(self, step: Step, h: int) -> list:
        lo, hi = h * self.dims.d_v, (h + 1) * self.dims.d_v
        p, v = self.value(step.inputs[0]), self.value(step.inputs[1]).cols(lo, hi)
        out = []
        sub = self.substitute(step_symbol(step), [(self.symbol(step.inputs[0]), p), (f"V^{{c}}_{h}", v)])
        if sub:
            out.append(sub)
        m = self.memory_rows()   # each row mixes every memory row (none is masked causally)
        pos = self.positions(*step.value.shape, m, row=step.value.shape[0] - 1)
        padded = sum(map(bool, self.memory_padding()))
        key = "cross_rows_padded" if padded else "cross_rows"
        if step.value.shape[0] > 1 and not self.v1:   # version 1 kept "The row"
            key += "_entries" if len(pos) > 1 else "_entry"   # which row's entries: the last
        out.append((self.t(key, m, padded), None))
        return out + self.dot_entries(step, p.rows, v.T.rows, pos)
