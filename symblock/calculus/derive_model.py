"""A model (a GPT, an encoder, an encoder–decoder) as general formulas in symbols: `symblock
derive` on a spec with a `model:` section.

Each stack's first layer is derived as derive.py derives a block (every layer works the same
formulas, each with weights of its own; `X` is the layer's input), and the model's own steps
are worked by the engine's code on symbols: the embedding rows (`w^{E}_{ij}`, row = token + 1),
the positions (learned `w^{P}_{ij}`, or the exact sinusoidal numbers), X = E + PE, BERT's norm of
the embeddings, the final norms (an encoder–decoder's encoder norm `enc.norm_final` is the
memory H^{enc} its decoder's cross-attention reads, `cross.k` and `cross.v` written in h^{enc}_{ij}), the
logits and the probabilities. The prompt pass only: a generation step works the same formulas
on its new row, and `next_token` is an argmax, not a formula. Step names are forward's.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any, Callable

from symblock.calculus import derive as derivemod
from symblock.calculus.derive import Derived
from symblock.errors import SpecError
from symblock.engine.cross import MEMORY_TEX
from symblock.engine.report import model_line


def derive_model(spec: Any, only: str | None = None) -> dict[str, Derived]:
    """The model's prompt pass, in forward order, as formulas over each step's own input."""
    steps: list = []
    over: dict[str, str] = {}

    def add(name: str, latex: str, value: Any, written_in: str) -> None:
        from symblock.engine.block import Step
        steps.append(Step(name, latex, (), value))
        over[name] = written_in

    def take(part: tuple[list, dict[str, str]], prefix: str) -> None:
        for st in part[0]:
            if st.name != "x":   # a layer's X is the model's step before it
                steps.append(replace(st, name=prefix + st.name))
                over[prefix + st.name] = part[1][st.name]

    if spec.kind == "encoder-decoder":
        n_src = len(spec.source_tokens)
        embeddings(spec, "enc.", n_src, spec.source_tokens, add)
        take(layer_steps(spec, spec.encoder[0], "model.source"), "enc.layer0.")
        take(norm_steps(spec.encoder[-1], spec.encoder_norm, n_src, "Y", MEMORY_TEX), "enc.")   # the memory
    n = len(spec.prompt)
    embeddings(spec, "", n, spec.prompt, add)
    if spec.embed_norm:   # BERT: LayerNorm(E + P) before the first layer
        take(norm_steps(spec.layers[0], spec.embed_norm, n, "X", "N_e", "norm_embed"), "")
    take(layer_steps(spec, spec.layers[0], "model.prompt"), "layer0.")
    if spec.final_norm:
        take(norm_steps(spec.layers[-1], spec.final_norm, n, "Y", "N_f"), "")
    if spec.head != "none":
        head(spec, n, add)
    return derivemod.finish(steps, over, spec.source, only)


def title(spec: Any) -> str:
    """The heading: what is derived, and what stands for the rest."""
    layers = "each stack's layer0 stands for every layer (own weights)" if len(spec.layers) > 1 or \
        len(spec.encoder) > 1 else "one layer per stack"
    gen = "; a generation step works the same formulas on its new row" if spec.generate else ""
    return f"{spec.title or model_line(spec)} in symbols: the prompt pass, {layers}{gen}"


def layer_steps(spec: Any, layer: Any, where: str) -> tuple[list, dict[str, str]]:
    """A stack's first layer traced in symbols (derive.py), its size refused under `where`."""
    try:
        s = derivemod.symbolic(layer)
    except SpecError as e:
        if e.where != "dims":
            raise
        d = layer.dims
        lim = derivemod.MAX_ENTRIES
        raise SpecError(spec.source, where, f"derive writes each layer in symbols, for seq_len·d_model <= {lim} "
                        f"and d_ff <= {lim} only (an entry grows with both); this layer has {d.seq_len} rows "
                        f"of d_model {d.d_model} (d_ff {d.d_ff}): use fewer tokens or smaller dims") from None
    return derivemod.trace(s)


def _symbol(base: str, i: int, j: int) -> Any:
    import sympy
    sub = f"{i}{j}" if i < 10 and j < 10 else f"{i},{j}"
    return sympy.Symbol(f"{base}_{{{sub}}}", real=True)


def _table(base: str, rows: Any, d: int) -> Any:
    """Rows of a weight table in symbols (`w^{E}_{ij}`, i the table's own row, from 1)."""
    from symblock.engine.matrix import Mat
    return Mat([[_symbol(base, r + 1, j + 1) for j in range(d)] for r in rows])


def embeddings(spec: Any, prefix: str, n: int, tokens: Any, add: Callable) -> None:
    """embed, pos and x (as engine/model.py's inputs) in symbols: E's rows of W_E by token, P's
    rows of W_P (learned) or the exact sinusoidal numbers, X = E + PE."""
    from symblock.engine import block, exact, model
    from symblock.engine.matrix import Mat
    d = spec.dims.d_model
    src = prefix == "enc." and spec.W_E_src is not None   # a source embedding of its own
    table = "W_E^{src}" if src else "W_E"
    add(f"{prefix}embed", r"E = %s[\text{tokens}]" % table, _table("w^{E,src}" if src else "w^{E}", tokens, d),
        table)
    e = derivemod.symbols("e", n, d)
    if spec.positions in ("none", "rope"):   # RoPE turns q and k in each layer instead
        add(f"{prefix}x", "X = E", e, "E")
        return
    if spec.positions == "learned":
        add(f"{prefix}pos", r"\mathrm{PE} = W_P[0{:}%d]" % n, _table("w^{P}", range(n), d), "W_P")
    else:
        b = block.number_latex(spec.pe_base)
        b = b if spec.pe_base.denominator == 1 else rf"\left({b}\right)"
        rows = Mat([[exact.to_sympy(v) for v in model.sinusoidal_row(p, d, spec.pe_base)] for p in range(n)])
        add(f"{prefix}pos", r"\mathrm{PE} = \bigl[\mathrm{PE}_{p,2i},\ \mathrm{PE}_{p,2i+1}\bigr] = \bigl[\sin(p / %s^{2i/d}),\ \cos(p / %s^{2i/d})\bigr]" % (b, b), rows,
            f"p = 0, …, {n - 1}")
    add(f"{prefix}x", r"X = E + \mathrm{PE}", e + derivemod.symbols("p", n, d), "E, PE")


def norm_steps(layer: Any, table: Any, n: int, src: str, out: str, step: str = "norm_final") \
        -> tuple[list, dict[str, str]]:
    """A final norm (or BERT's norm of the embeddings, `step`) of n rows of symbols, worked by the
    engine as a Pre-LN block's final norm (as engine/model.py works it) with the model's γ, β."""
    import sympy
    from symblock.engine import block
    d = layer.dims.d_model
    x = derivemod.symbols(src.lower(), n, d)
    opts = replace(layer.options, norm_position="pre", final_norm=True)
    params = {f"ln_final.{k}": v for k, v in table.items()}
    t = block.Tracer(replace(layer, dims=replace(layer.dims, seq_len=n), options=opts, X=sympy.ImmutableMatrix(x.tolist()),
                             params=MappingProxyType(params), given=MappingProxyType({})))
    block.norm(t, "norm_final", x, src, "ln_final", out)
    steps = [replace(st, name=step + st.name[len("norm_final"):]) for st in t.steps]
    return steps, {st.name: src for st in steps}


def head(spec: Any, n: int, add: Callable) -> None:
    """logits (tied: N_f W_Eᵀ, else N_f W_U; Y without a final norm) and probs (the engine's softmax of each row)."""
    from symblock.engine import block
    d, vocab = spec.dims.d_model, len(spec.vocab)
    src = "N_f" if spec.final_norm else "Y"
    h = derivemod.symbols(derivemod.INPUT_SYMBOLS.get(src, "h"), n, d)
    if spec.head == "tied":
        add("logits", rf"\ell = {src} W_E^{{\top}}", h @ _table("w^{E}", range(vocab), d).T, src)
    else:
        add("logits", rf"\ell = {src} W_U", h @ _table("w^{U}", range(d), vocab), src)
    add("probs", r"p = \mathrm{softmax}(\ell)\ \text{(each row)}",
        derivemod.symbols(r"\ell", n, vocab).map_rows(block.softmax), r"\ell")
