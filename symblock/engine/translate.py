"""An encoder–decoder (torch's `nn.Transformer`, "Attention is all you need"), forward, exactly:
the source through the encoder stack and its final norm (the memory, worked once), then the
target prefix through the decoder stack (causal self-attention, cross-attention over the memory,
FFN) and its final norm, the head, and greedy generation, each step recomputing the target.

Steps: `enc.embed enc.pos enc.x`, `enc.layer0.<block step>`, …, `enc.norm_final` (the memory);
`embed pos x`, `layer0.<decoder layer step>` (its `cross.*` read `enc.norm_final`), …,
`norm_final`, `logits`, `probs`, `next_token`; then `gen1.…` for each generated token. Parameters:
`enc.layer0.W_Q`, …, `enc.ln_final.gamma`, and the decoder's `layer0.cross.W_Q`, … The model's run
(engine/model.py) hands itself in, so this module needs nothing from it.
"""
from __future__ import annotations

import math
from dataclasses import replace

from symblock.engine import block
from symblock.engine.matrix import Mat
from symblock.engine.model_spec import with_length

MEMORY = "enc.norm_final"


def forward(run, spec) -> None:
    """Record every step of the translation on `run` (engine/model.py's _Run)."""
    memory = encode(run, spec)
    tokens = list(spec.prompt)
    nxt = decode(run, spec, tokens, "", memory)
    for t in range(1, spec.generate + 1):
        tokens.append(nxt)
        nxt = decode(run, spec, tokens, f"gen{t}.", memory)


def encode(run, spec) -> Mat:
    """The source through the encoder stack and its final norm: the memory."""
    src = list(spec.source_tokens)
    x_name = run.inputs(src, range(len(src)), "enc.")
    h = run.steps[-1].value
    for i, layer in enumerate(spec.encoder):
        params = {k: Mat.from_sympy(v) for k, v in layer.params.items()}
        run.params.update({f"enc.layer{i}.{k}": v for k, v in params.items()})
        tr = block.forward(replace(with_length(layer, len(src)), X=h), max_cost=math.inf)
        _take(run, tr, f"enc.layer{i}.", f"enc.layer{i}.", params, {"X": x_name, "x": x_name})
        h, x_name = tr["output"].value, f"enc.layer{i}.output"
    for key, m in spec.encoder_norm.items():
        run.params[f"enc.ln_final.{key}"] = Mat.from_sympy(m)
    return run.final_norm(h, x_name, "enc.", "norm_final", spec.encoder_norm, "enc.ln_final")


def decode(run, spec, tokens: list[int], prefix: str, memory: Mat) -> int:
    """One pass of the target prefix through the decoder stack and the head; the next token."""
    m = len(tokens)
    x_name = run.inputs(tokens, range(m), prefix)
    h = run.steps[-1].value
    for i, layer in enumerate(spec.layers):
        tr = block.forward(replace(with_length(layer, m), X=h, memory=memory), max_cost=math.inf)
        ren = {"X": x_name, "x": x_name, "M": MEMORY, "memory": MEMORY}
        _take(run, tr, f"{prefix}layer{i}.", f"layer{i}.", run.layer_params[i], ren)
        h, x_name = tr["output"].value, f"{prefix}layer{i}.output"
    return run.head_out(h, x_name, prefix, m - 1)


def _take(run, trace, step_prefix: str, param_prefix: str, params, ren: dict) -> None:
    """A layer's steps recorded under the stack's names (its inputs and memory renamed)."""
    def name(n: str) -> str:
        if n in ren:
            return ren[n]
        return f"{param_prefix}{n}" if n in params else f"{step_prefix}{n}"
    for s in trace:
        if s.name not in ("x", "memory"):
            run.record(name(s.name), s.latex, tuple(name(n) for n in s.inputs), s.value, s.given)
