"""An encoder–decoder (torch's `nn.Transformer`, "Attention is all you need"), forward, exactly:
the source through the encoder stack and its final norm (the memory, worked once), then the
target prefix through the decoder stack (causal self-attention, cross-attention over the memory,
FFN) and its final norm, the head, and greedy generation: each step recomputes the target, or,
with `kv_cache: true`, works only the new row against the self-attention's cached K/V rows, the
cross-attention's K and V (worked once from the memory in the prompt pass) reused as they are;
engine/model.py's `prove_cache` shows both equal to the full recompute.

Steps: `enc.embed enc.pos enc.x`, `enc.layer0.<block step>`, …, `enc.norm_final` (the memory);
`embed pos x`, `layer0.<decoder layer step>` (its `cross.*` read `enc.norm_final`), …,
`norm_final`, `logits`, `probs`, `next_token`; then `gen1.…` for each generated token. Parameters:
`enc.layer0.W_Q`, …, `enc.ln_final.gamma`, and the decoder's `layer0.cross.W_Q`, … The model's run
(engine/model.py) hands itself in, so this module needs nothing from it.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Mapping

from symblock.engine import block, cost, cross, names, parameters
from symblock.engine.matrix import Mat
from symblock.engine.model_spec import ModelSpec, with_length

MEMORY = "enc.norm_final"


def forward(run: Any, spec: ModelSpec) -> None:  # run: a model._Run (model imports this module)
    """Record every step of the translation on `run` (engine/model.py's _Run)."""
    memory = encode(run, spec)
    tokens = list(spec.prompt)
    nxt = decode(run, spec, tokens, "", memory)
    for t in range(1, spec.generate + 1):
        tokens.append(nxt)
        nxt = (decode_cached if spec.kv_cache else decode)(run, spec, tokens, f"gen{t}.", memory)


def encode(run: Any, spec: ModelSpec) -> Mat:
    """The source through the encoder stack and its final norm: the memory."""
    src = list(spec.source_tokens)
    x_name = run.inputs(src, range(len(src)), "enc.")
    h = run.steps[-1].value
    for i, layer in enumerate(spec.encoder):
        params = {k: Mat.from_sympy(v) for k, v in layer.params.items()}
        run.params.update({f"enc.layer{i}.{k}": v for k, v in params.items()})
        with cost.limit(math.inf):  # the model was sized as a whole
            tr = block.forward(replace(with_length(layer, len(src)), X=h))
        _take(run, tr, f"enc.layer{i}.", f"enc.layer{i}.", params, {"X": x_name, "x": x_name})
        h, x_name = tr["output"].value, f"enc.layer{i}.output"
    for key, m in spec.encoder_norm.items():
        run.params[f"enc.ln_final.{key}"] = Mat.from_sympy(m)
    return run.final_norm(h, x_name, "enc.", "norm_final", spec.encoder_norm, "enc.ln_final", cross.MEMORY_TEX)


def decode(run: Any, spec: ModelSpec, tokens: list[int], prefix: str, memory: Mat) -> int:
    """One pass of the target prefix through the decoder stack and the head; the next token."""
    m = len(tokens)
    x_name = run.inputs(tokens, range(m), prefix)
    h = run.steps[-1].value
    run.caches, run.cache_names, run.cross = [], [], []
    for i, layer in enumerate(spec.layers):
        with cost.limit(math.inf):  # the model was sized as a whole
            tr = block.forward(replace(with_length(layer, m), X=h, memory=memory))
        ren = {"X": x_name, "x": x_name, "M": MEMORY, "memory": MEMORY}
        _take(run, tr, f"{prefix}layer{i}.", f"layer{i}.", run.layer_params[i], ren)
        run.caches.append((tr["attn.k"].value, tr["attn.v"].value))
        run.cache_names.append({p: f"{prefix}layer{i}.attn.{p}" for p in "kv"})
        run.cross.append({f"cross.{p}": tr[f"cross.{p}"].value for p in "kv"})
        h, x_name = tr["output"].value, f"{prefix}layer{i}.output"
    return run.head_out(h, x_name, prefix)


def decode_cached(run: Any, spec: ModelSpec, tokens: list[int], prefix: str, memory: Mat) -> int:
    """The new token's row through each decoder layer (engine/model.py's cached layer): its
    self-attention against the cached K/V rows, its cross-attention against the memory's K and V
    of the prompt pass, recorded as reused (their input is the prompt pass's step)."""
    m = len(tokens)
    x_name = run.inputs(tokens, range(m - 1, m), prefix)
    h = run.steps[-1].value
    for i in range(len(spec.layers)):
        start = len(run.steps)
        h = run.cached_layer(i, h, prefix, x_name, keep=run.cross[i], memory=memory)
        for j in range(start, len(run.steps)):
            st = run.steps[j]
            if st.name in (f"{prefix}layer{i}.cross.k", f"{prefix}layer{i}.cross.v"):
                run.steps[j] = replace(st, inputs=(f"layer{i}.{st.name.rsplit('.', 2)[-2]}.{st.name[-1]}",),
                                       given=False, latex=st.latex + r"\ \text{(worked once, reused)}")
        x_name = f"{prefix}layer{i}.output"
    return run.head_out(h, x_name, prefix)


def _take(run: Any, trace: block.Trace, step_prefix: str, param_prefix: str, params: Mapping[str, Mat],
          ren: dict) -> None:
    """A layer's steps recorded under the stack's names (its inputs and memory renamed)."""
    def name(n: str) -> str:
        if n in ren:
            return ren[n]
        return f"{param_prefix}{n}" if n in params else f"{step_prefix}{n}"
    for s in trace:
        if s.name not in ("x", "memory"):
            run.record(name(s.name), s.latex, tuple(name(n) for n in s.inputs), s.value, s.given)


# The block each step of the encoder stack is worked on (grading/recompute.py recomputes with it)

def encoder_frame(step: names.StepName, env: dict, spec: ModelSpec) -> tuple[str, dict, Any] | None:
    """(name, env, spec) of an encoder step as its block's step (the checker's recompute reads the
    model's values under the block's names); None for its embedding rows."""
    rows = len(spec.source_tokens)
    named = [(names.parse(k), v) for k, v in env.items()]
    if step.layer is not None:
        layer = step.layer
        out = {p.local: v for p, v in named if p.encoder and p.layer == layer and not p.grad}
        out["x"] = env["enc." + (names.name_of("x") if layer == 0 else names.name_of("output", layer=layer - 1))]
        block = spec.encoder[layer]
        return step.local, out, replace(block, dims=replace(block.dims, seq_len=rows))
    if step.norm == "norm_final":
        out = {p.local: v for p, v in named if p.encoder and p.layer is None and (p.section == "ln_final" or
                                                                                   p.norm == "norm_final")}
        out["resid2"] = env["enc." + names.name_of("output", layer=len(spec.encoder) - 1)]
        block = spec.encoder[-1]
        opts = replace(block.options, norm_position="pre", final_norm=True)
        return step.local, out, replace(block, dims=replace(block.dims, seq_len=rows), options=opts)
    return None


# BERT's LayerNorm of the embeddings (norm_embed): worked by the engine as a final norm
# (model.py), so the checker reads it in that frame and gets the block's norm slips
def embed_env(env: dict, t: int) -> dict:
    """The embeddings' norm under a final norm's names: γ, β of ln_embed as ln_final's, the
    embedding sum x as the residual it reads, its own statistics as norm_final's."""
    named = [(names.parse(k), k, v) for k, v in env.items()]
    out = {f"ln_final.{parameters.parse(k).kind}": v for _, k, v in named
           if parameters.parse(k).norm == "ln_embed"}
    out.update({"norm_final" + (f".{p.stat}" if p.stat else ""): v for p, _, v in named
                if p.norm == "norm_embed" and p.gen == t and p.layer is None})
    if (x := names.name_of("x", gen=t)) in env:
        out["resid2"] = out["resid3"] = env[x]
    return out


def source_rows(step: names.StepName, env: dict, spec: ModelSpec, rows_at: Callable[..., Mat]) -> Mat:
    """An encoder's embedding (the source tokens' rows of W_E) or positions (0 … n−1, by `rows_at`)."""
    if step.kind == "pos":
        return rows_at(spec, env, range(len(spec.source_tokens)))
    return Mat([env["W_E_src" if "W_E_src" in env else "W_E"].rows[k] for k in spec.source_tokens])
