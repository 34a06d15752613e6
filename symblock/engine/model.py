"""A tiny GPT, forward, exactly: embeddings, stacked blocks, logits, greedy generation, KV cache.

    forward(ModelSpec) -> Trace   steps: embed, pos, x, layer0.<block step>, …, norm_final,
                                  logits, probs, next_token, then gen1.…, gen2.… (docs/reference/steps.md)

Each layer is the block itself (`block.forward` on the layer's BlockSpec, fed the previous layer's
exact output), so a stack inherits every block option and its step formulas. A generation step
without the cache recomputes the whole sequence; with `kv_cache: true` it works only the new row:
its q/k/v, the cache after appending (`cache.k`, `cache.v`), one row of scores and weights.
`prove_cache` shows exactly (equal expression graphs, not a float tolerance) that every cached
step equals the last row of the full recompute.
"""
from __future__ import annotations

import contextlib
import math
from fractions import Fraction
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from symblock.engine import block, exact, names, powers, rope, translate
from symblock.engine import cost as costmod
from symblock.engine.matrix import Entry, Mat
from symblock.engine.model_cost import refuse_cost, run_cost  # noqa: F401  (model.run_cost is public)
from symblock.engine.model_spec import ModelSpec, Spec, with_length
from symblock.engine.spec import BlockSpec
from symblock.engine.steps import Dims
from symblock.errors import SpecError, UndecidableError


def cost(spec: ModelSpec) -> int:
    """Exact operations of the whole run (engine/cost.py's units): the prompt pass, then every
    generation step, worked in full or, with the cache, as one row against m cached keys."""
    encoder = sum(block.cost(layer) for layer in spec.encoder)  # an encoder-decoder's, worked once
    return encoder + run_cost(spec.layers, len(spec.vocab), len(spec.prompt), spec.generate, spec.kv_cache)


def check_size(spec: ModelSpec) -> None:
    refuse_cost(cost(spec), spec.source)


def forward(spec: ModelSpec) -> block.Trace[ModelSpec]:
    """Run the model on its prompt, then `generate` greedy steps; record every step."""
    check_size(spec)
    run = _Run(spec)
    with costmod.acyclic():
        if spec.kind == "encoder-decoder":  # engine/translate.py, with this run's pieces
            translate.forward(run, spec)
        else:
            _generate(run, spec)
    return block.Trace(run.steps, MappingProxyType(run.params), spec)


def _generate(run: "_Run", spec: ModelSpec) -> None:
    """The prompt pass, then `generate` greedy steps (each from the cache, or recomputed)."""
    tokens = list(spec.prompt)
    nxt = run.full_pass(tokens, "")
    for t in range(1, spec.generate + 1):
        assert nxt is not None  # a decoder's head gives the next token
        tokens.append(nxt)
        prefix = f"gen{t}."
        nxt = run.cached_pass(tokens, prefix) if spec.kv_cache else run.full_pass(tokens, prefix)


def forward_any(spec: Spec) -> block.Trace[Spec]:
    """`symblock.forward`: a block or a model, whichever the spec is."""
    return FORWARDS[spec.form](spec)


FORWARDS: dict[str, Callable[[Any], block.Trace[Any]]] = {"block": block.forward, "model": forward}


class _Run:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.steps: list[block.Step] = []
        self.params: dict[str, Mat] = {}
        for name in ("W_E", "W_E_src", "W_P", "W_U"):
            if getattr(spec, name) is not None:
                self.params[name] = Mat.from_sympy(getattr(spec, name))
        for key, m in spec.final_norm.items():
            self.params[f"ln_final.{key}"] = Mat.from_sympy(m)
        for key, m in spec.embed_norm.items():
            self.params[f"ln_embed.{key}"] = Mat.from_sympy(m)
        self.layer_params: list[dict[str, Mat]] = []
        for i, layer in enumerate(spec.layers):
            mats = {k: Mat.from_sympy(v) for k, v in layer.params.items()}
            self.layer_params.append(mats)
            self.params.update({f"layer{i}.{k}": v for k, v in mats.items()})
        self.caches: list[tuple[Mat, Mat]] = []
        self.cache_names: list[dict[str, str]] = []

    def symbol(self, name: str) -> str:
        """The symbol of the step last recorded as `name` (`Y` of the last layer's output)."""
        return next(st for st in reversed(self.steps) if st.name == name).symbol

    def read_symbol(self, name: str) -> str:
        """The symbol a step reading `name` writes: a layer's output `Y = H_3` copies its norm,
        and a key shows H_3, never the copy, so the reader is written in H_3."""
        st = next(st for st in reversed(self.steps) if st.name == name)
        if names.parse(name).kind == "output" and len(st.inputs) == 1 \
                and any(s.name == st.inputs[0] for s in self.steps):
            return self.read_symbol(st.inputs[0])
        return st.symbol

    def record(self, name: str, latex: str, inputs: tuple, value: Mat, given: bool = False) -> Mat:
        self.steps.append(block.Step(name, latex, tuple(inputs), value, given))
        return value

    # ---- the pieces every pass shares
    def inputs(self, tokens: list[int], rows: range, prefix: str) -> str:
        """embed, pos and x for the token positions `rows`; returns the name of x."""
        s = self.spec
        table = "W_E_src" if prefix == "enc." and "W_E_src" in self.params else "W_E"  # a source's own table
        emb = self.record(f"{prefix}embed", r"E = %s[\text{tokens}]" % table.replace("_src", "^{src}"), (table,),
                          Mat([self.params[table].rows[tokens[r]] for r in rows]))
        if s.positions in ("none", "rope"):  # RoPE turns q and k in each layer instead
            return self.record_x(prefix, "X = E", (f"{prefix}embed",), emb)
        if s.positions == "learned":
            pos = Mat([self.params["W_P"].rows[r] for r in rows])
            latex = r"\mathrm{PE} = W_P[%d{:}%d]" % (rows.start, rows.stop)
            ins: tuple[str, ...] = ("W_P",)
        else:
            pos = Mat([sinusoidal_row(r, s.dims.d_model, s.pe_base) for r in rows])
            n = block.number_latex(s.pe_base)
            n = n if s.pe_base.denominator == 1 else rf"\left({n}\right)"
            latex = r"\mathrm{PE} = \bigl[\mathrm{PE}_{p,2i},\ \mathrm{PE}_{p,2i+1}\bigr] = \bigl[\sin(p / %s^{2i/d}),\ \cos(p / %s^{2i/d})\bigr]" % (n, n)
            ins = ()
        self.record(f"{prefix}pos", latex, ins, pos)
        return self.record_x(prefix, r"X = E + \mathrm{PE}", (f"{prefix}embed", f"{prefix}pos"), emb + pos)

    def record_x(self, prefix: str, latex: str, inputs: tuple[str, ...], value: Mat) -> str:
        self.record(f"{prefix}x", latex, inputs, value)
        return f"{prefix}x"

    def rename(self, i: int, prefix: str, x_name: str) -> Callable[[str], str]:
        params = self.layer_params[i]
        return lambda n: x_name if n in ("X", "x") else (f"layer{i}.{n}" if n in params
                                                         else f"{prefix}layer{i}.{n}")

    def take(self, trace_steps: Iterable[block.Step], i: int, prefix: str, x_name: str,
             skip: tuple[str, ...] = ("x",)) -> None:
        ren = self.rename(i, prefix, x_name)
        for s in trace_steps:
            if s.name not in skip:
                self.record(ren(s.name), s.latex, tuple(ren(n) for n in s.inputs), s.value, s.given)

    def head_out(self, h: Mat, h_name: str, prefix: str) -> int | None:
        """norm_final, logits, probs and next_token from the last layer's output; the next token
        (None for an encoder without a head: its hidden states are the last layer's output). The
        token's formula names the row of ℓ it reads from 1, as the entries are numbered (ℓ_j
        when ℓ is the one new row of a cached step)."""
        s = self.spec
        if s.final_norm:
            h, h_name = self.final_norm(h, h_name, prefix), f"{prefix}norm_final"
        if s.head == "none":
            return None
        src = self.read_symbol(h_name)   # the rows the head reads, by their own symbol (N_f, or the last layer's)
        if s.head == "tied":
            logits, latex, w = h @ self.params["W_E"].T, rf"\ell = {src} W_E^{{\top}}", "W_E"
        else:
            logits, latex, w = h @ self.params["W_U"], rf"\ell = {src} W_U", "W_U"
        self.record(f"{prefix}logits", latex, (h_name, w), logits)
        self.record(f"{prefix}probs", r"p = \mathrm{softmax}(\ell)\ \text{(each row)}", (f"{prefix}logits",),
                    logits.map_rows(block.softmax))
        tok = self.argmax(logits.rows[-1], f"{prefix}next_token")
        row = "j" if len(logits.rows) == 1 else f"{len(logits.rows)},j"
        self.record(f"{prefix}next_token", r"\hat t = \arg\max_j \ell_{%s} = %d\ (\text{%s})"
                    % (row, tok, _tex_token(s.vocab[tok])), (f"{prefix}logits",),
                    Mat([[exact.real(tok)]]))
        return tok

    def final_norm(self, h: Mat, h_name: str, prefix: str, step: str = "norm_final", table: Mapping | None = None,
                   ln: str | None = None, tex: str | None = None) -> Mat:
        """The final norm (or, `step="norm_embed"`, BERT's norm of the embeddings; or another
        `table` of γ, β named `ln`, written `tex`) of rows h, worked as a Pre-LN block's final
        norm, recorded under `step`."""
        layer = self.spec.layers[-1]
        opts = replace(layer.options, norm_position="pre", final_norm=True)
        ln0, tex0 = ("ln_final", "N_f") if step == "norm_final" else ("ln_embed", "N_e")
        tex = tex or tex0
        src = self.read_symbol(h_name)
        ln = ln or ln0
        if table is None:
            table = self.spec.final_norm if ln == "ln_final" else self.spec.embed_norm
        params = {f"ln_final.{k}": v for k, v in table.items()}
        absent = frozenset({"ln_final.beta"}) if f"{ln}.beta" in self.spec.no_beta else frozenset()  # bias: false
        t = block.Tracer(replace(with_length(layer, len(h.rows)), options=opts, X=h, no_beta=absent,
                                 params=MappingProxyType(params), given=MappingProxyType({})))
        out = block.norm(t, "norm_final", h, src, "ln_final", tex)
        read = t.steps[-1].inputs[0]   # the residual the norm reads: resid2, or a decoder layer's resid3
        ren = {read: h_name}

        def name(n: str) -> str:
            if n.startswith("ln_final"):
                return ln + n[len("ln_final"):]
            return ren.get(n) or prefix + step + n[len("norm_final"):]
        for st in t.steps:
            self.record(name(st.name), st.latex, tuple(name(n) for n in st.inputs), st.value)
        return out

    def argmax(self, row: Sequence[Entry], where: str) -> int:
        """The largest logit's index, certified; a tie is an error naming the tied tokens."""
        best = 0
        for j in range(1, len(row)):
            if _sign(row[j] - row[best]) > 0:
                best = j
        tied = [j for j in range(len(row)) if j != best and _sign(row[j] - row[best]) == 0]
        if tied:
            names = ", ".join(repr(self.spec.vocab[j]) for j in [best, *tied])
            raise SpecError(self.spec.source, where, f"the largest logits tie between tokens {names}, so "
                            "greedy decoding has no single next token; change the weights or the prompt")
        return best

    # ---- passes
    def full_pass(self, tokens: list[int], prefix: str) -> int | None:
        m = len(tokens)
        x_name = self.inputs(tokens, range(m), prefix)
        h = self.steps[-1].value
        if self.spec.embed_norm:  # BERT: LayerNorm(E + P) before the first layer
            h, x_name = self.final_norm(h, x_name, prefix, "norm_embed"), f"{prefix}norm_embed"
        self.caches, self.cache_names = [], []
        for i, layer in enumerate(self.spec.layers):
            with _in_layer(self.spec, f"{prefix}layer{i}."), costmod.limit(math.inf):  # sized as a whole
                # the first layer's formulas name what it reads (N_e after BERT's embedding norm);
                # a later layer's input is its X, as every layer's is by convention
                tr = block.forward(replace(with_length(layer, m), X=h, x_symbol=self.symbol(x_name) if i == 0 else "X"))
            self.take(tr, i, prefix, x_name)
            k = "attn.k_rot" if layer.options.rope else "attn.k"   # the cache holds rotated keys
            self.caches.append((tr[k].value, tr["attn.v"].value))
            self.cache_names.append({"k": f"{prefix}layer{i}.{k}", "v": f"{prefix}layer{i}.attn.v"})
            h, x_name = tr["output"].value, f"{prefix}layer{i}.output"
        return self.head_out(h, x_name, prefix)

    def cached_pass(self, tokens: list[int], prefix: str) -> int | None:
        m = len(tokens)
        x_name = self.inputs(tokens, range(m - 1, m), prefix)
        h = self.steps[-1].value
        for i in range(len(self.spec.layers)):
            with _in_layer(self.spec, f"{prefix}layer{i}."):
                h = self.cached_layer(i, h, prefix, x_name)
            x_name = f"{prefix}layer{i}.output"
        return self.head_out(h, x_name, prefix)

    def cached_layer(self, i: int, h: Mat, prefix: str, x_name: str, keep: Mapping[str, Mat] | None = None,
                     memory: Mat | None = None) -> Mat:
        """One new row through layer i, attending to the cached K/V rows plus its own. A decoder
        layer (engine/translate.py) also takes its `memory` and, in `keep`, its cross-attention's
        K and V, worked once from the memory and reused as they are."""
        layer = self.spec.layers[i]
        o = layer.options
        one = replace(with_length(layer, 1), options=replace(o, causal=False), X=h, given=MappingProxyType({}),
                      positions=(len(self.caches[i][0].rows),))  # the new row's own position
        t = block.Tracer(one)
        pre = o.norm_position == "pre"
        src, src_tex = (block.norm(t, "norm1", h, "X", "ln1", "N_1"), "N_1") if pre else (h, "X")
        proj = {}
        for p in "QKV":
            bias = f" + b^{{{p}}}" if f"b_{p}" in t.params else ""
            proj[p] = t.step(f"attn.{p.lower()}", f"{p.lower()} = {src_tex} W^{{{p}}}{bias}\\ \\text{{(new row)}}",
                             lambda p=p: t.linear(src, f"W_{p}", f"b_{p}"))
        q, k = rope.queries_and_keys(t, proj["Q"], proj["K"])
        (old_k, old_v), before = self.caches[i], self.cache_names[i]
        K, V = Mat([*old_k.rows, *k.rows]), Mat([*old_v.rows, *proj["V"].rows])
        self.caches[i] = (K, V)
        self.cache_names[i] = {p: f"{prefix}layer{i}.cache.{p}" for p in "kv"}
        new = {"k": "attn.k_rot" if o.rope else "attn.k", "v": "attn.v"}
        for name, cache in (("k", K), ("v", V)):
            t.steps.append(block.Step(f"cache.{name}", f"{name.upper()}_{{\\text{{cache}}}} = [{name.upper()}_{{\\text{{cache}}}};\\ "
                                      f"{name}{chr(39) if o.rope and name == 'k' else ''}]\\ "
                                      f"\\text{{(rows reused, one appended)}}{_cache_shape(layer.dims, cache)}",
                                      (before[name], new[name]), cache))
        dk, dv = layer.dims.d_k, layer.dims.d_v
        outs = [block.head(t, j, q, K, V, (j * dk, (j + 1) * dk), block.kv_columns(t, j, dv),
                           block.kv_columns(t, j, dk)) for j in range(layer.dims.heads)]
        cat = t.step("attn.concat", r"O = [O_0, \dots, O_{%d}]" % (len(outs) - 1),
                     lambda: Mat.hstack(outs)) if len(outs) > 1 else outs[0]
        cat_tex = "O" if len(outs) > 1 else "O_0"
        if o.out_proj:
            bias = " + b^{O}" if "b_O" in t.params else ""
            a = t.step("attn.out", f"A = {cat_tex} W^{{O}}{bias}", lambda: t.linear(cat, "W_O", "b_O"))
        else:
            a = t.step("attn.out", f"A = {cat_tex}", lambda: cat)
        for st in t.steps:  # the heads read the cache, not the new row's k/v alone
            if st.name.endswith(".scores") or st.name.endswith(".out") and st.name.startswith("attn.h"):
                ins = tuple({"attn.k": "cache.k", "attn.k_rot": "cache.k", "attn.v": "cache.v"}.get(n, n)
                            for n in st.inputs)
                t.steps[t.steps.index(st)] = replace(st, inputs=ins)
        ren = self.rename(i, prefix, x_name)
        for st in t.steps:
            ins = tuple(n if n.startswith(("layer", "gen")) else ren(n) for n in st.inputs)
            self.record(ren(st.name), st.latex, ins, st.value)
        mem: dict[str, Any] = {} if memory is None else {"memory": memory}
        with costmod.limit(math.inf):  # the model was sized as a whole
            rest = block.forward(replace(one, given=MappingProxyType({"attn.out": a, **(keep or {})}), **mem))
        self.take(rest, i, prefix, x_name, skip=("x", "attn.out"))
        return rest["output"].value


def _cache_shape(dims: Dims, cache: Mat) -> str:
    """Grouped K/V heads: the formula says the cache holds kv_heads heads, not heads."""
    if dims.kv_heads == dims.heads:
        return ""
    r, c = cache.shape
    kv = f"{dims.kv_heads} \\text{{ K/V head{'s' if dims.kv_heads > 1 else ''} for }}"
    return rf"\ ({r} \times {c}:\ {kv} {dims.heads} \text{{ query heads}})"


@contextlib.contextmanager
def _in_layer(spec: ModelSpec, prefix: str) -> Iterator[None]:
    """A block's error about one of its steps (a zero-variance row) names the layer's step."""
    try:
        yield
    except SpecError as e:
        if e.source == spec.source and e.where and not e.where.startswith(("dims", "weights", "block")):
            raise SpecError(e.source, prefix + e.where, e.message) from None
        raise


def _sign(v: Entry) -> int:
    try:
        return exact.sign(v)
    except UndecidableError:
        return 0  # equal to thousands of digits and no closed form proves otherwise: a tie


_TEX = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
        "^": r"\^{}", "_": r"\_", "%": r"\%", "~": r"\~{}"}


def _tex_token(tok: str) -> str:
    """A token as LaTeX text (tokens are the user's strings)."""
    return "".join(_TEX.get(c, c) if c.isprintable() else "?" for c in tok)


def sinusoidal_row(p: int, d: int, base: int | Fraction = 10000) -> list[Entry]:
    """Positions of "Attention is all you need", exactly: sin/cos of p / base^(2i/d) for an even d
    and a rational base; the frequency is a rational, a square root or a rational power
    (10000^(2i/16) = 10^(i/2)), each a closed form with a certified ball."""
    from fractions import Fraction
    row: list[Entry] = []
    for j in range(d):
        freq = powers.power(base, -Fraction(j - j % 2, d))  # base^(−2i/d)
        arg = exact.real(p) * freq
        row.append(exact.sin(arg) if j % 2 == 0 else exact.cos(arg))
    return row


# ---------------------------------------------------------------- the KV cache, proved

def prove_cache(spec: ModelSpec) -> list[tuple[str, str]]:
    """(step, verdict) for every step of every cached generation step: "exact" when its value is
    the same expression graph as the last row of the full recompute (so equal, exactly), else
    "numeric" (equal to 16384 bits) or "differs". Empty unless the spec uses the cache."""
    if not spec.kv_cache or not spec.generate:
        return []
    cached = forward(spec)
    full = forward(replace(spec, kv_cache=False))
    canon = Canonical()
    out = []
    for st in cached:
        if not st.name.startswith("gen"):
            continue
        gen, rest = st.name.split(".", 1)
        if rest.endswith(("cache.k", "cache.v")):
            src = f"{gen}.{rest[:-len('cache.k')]}attn.{rest[-1]}"
            want = full[src + "_rot" if src + "_rot" in full else src].value.rows
        elif rest.endswith(("cross.k", "cross.v")):  # worked once from the memory: every row
            want = full[st.name].value.rows
        else:
            want = full[st.name].value.rows[-1:]
        out.append((st.name, _verdict(st.value.rows, want, canon)))
    return out


def _verdict(got: Sequence[Sequence[Entry]], want: Sequence[Sequence[Entry]], canon: Canonical) -> str:
    if len(got) != len(want) or any(len(a) != len(b) for a, b in zip(got, want)):
        return "differs"
    pairs = [(exact.real(a), exact.real(b)) for ra, rb in zip(got, want) for a, b in zip(ra, rb)]
    if all(canon(a) == canon(b) for a, b in pairs):
        return "exact"
    if all(_sign(a - b) == 0 for a, b in pairs):
        return "numeric"
    return "differs"


class Canonical:
    """Structural identity of exact values: one id per expression graph, sums and products
    compared as multisets. Equal ids mean the same expression, hence the same number (a proof
    that needs no numerics); unequal ids prove nothing."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.memo: dict[int, tuple[object, int]] = {}

    def __call__(self, r: exact.Real) -> int:
        hit = self.memo.get(id(r))
        if hit is not None and hit[0] is r:
            return hit[1]
        if r.q is not None:
            key: tuple = ("q", int(r.q.p), int(r.q.q))
        elif r.op == "sum":
            c0, terms = r.args
            key = ("sum", int(c0.p), int(c0.q),
                   tuple(sorted((int(c.p), int(c.q), tuple(sorted(self(f) for f in fs))) for c, fs in terms)))
        elif r.op in ("const", "neginf"):
            key = (r.op, *r.args)
        elif r.op == "pow":
            key = ("pow", self(r.args[0]), int(r.args[1].p), int(r.args[1].q))
        else:
            key = (r.op, self(r.args[0]))
        n = self.ids.setdefault(key, len(self.ids))
        self.memo[id(r)] = (r, n)
        return n
