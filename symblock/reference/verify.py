"""Compare the exact trace, step by step, with the independent float64 paths (NumPy, torch).

The exact values are rounded to the nearest double (certified) and compared entry by entry;
−∞ (masked) entries must be −∞ in the backend too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from symblock.engine import block
from symblock.engine.spec import BlockSpec


@dataclass
class BackendResult:
    available: bool
    steps: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    note: str = ""

    @property
    def max_abs_diff(self) -> float:
        return max(self.steps.values(), default=0.0)


@dataclass
class VerifyResult:
    tol: float
    steps: list[str]
    backends: dict[str, BackendResult]
    problems: list[str]
    cache: list[tuple[str, str]] = field(default_factory=list)  # a model's (cached step, verdict)
    tiles: list[tuple[str, str]] = field(default_factory=list)  # a block's (tiled step, verdict)

    @property
    def ok(self) -> bool:
        return not self.problems


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a − b|; equal infinities count as 0, anything else non-finite as inf."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return float("inf")
    same = (a == b)
    with np.errstate(invalid="ignore"):
        d = np.where(same, 0.0, np.abs(a - b))
    d = np.where(np.isnan(d), np.inf, d)
    return float(d.max()) if d.size else 0.0


def exact_floats(trace: block.Trace) -> dict[str, np.ndarray]:
    return {s.name: np.array(s.value.floats(), dtype=float) for s in trace}


def compare(exact: dict[str, np.ndarray], other: dict[str, np.ndarray], name: str,
            tol: float, problems: list[str]) -> BackendResult:
    res = BackendResult(available=True)
    for step, want in exact.items():
        if step not in other:
            problems.append(f"{name} has no step {step}")
            continue
        res.steps[step] = d = max_abs_diff(want, other[step])
        if not d <= tol:
            problems.append(f"{name} differs at {step} by {d:.3g}")
    return res


def skipped() -> BackendResult:
    return BackendResult(available=False, reason="--no-torch")


def run(spec: BlockSpec, tol: float = 1e-9, require_torch: bool = False,
        max_cost: int | None = None, use_torch: bool = True) -> VerifyResult:
    """`use_torch=False` compares with NumPy alone: importing torch takes 2–3 s, the rest well under 1 s."""
    from symblock.engine.model_spec import ModelSpec
    if isinstance(spec, ModelSpec):
        return run_model(spec, tol, require_torch, max_cost, use_torch)
    if spec.options.cross_attention:
        return run_decoder_layer(spec, tol, require_torch, max_cost, use_torch)
    from symblock.reference import numeric
    trace = block.forward(spec, max_cost=max_cost)
    want = exact_floats(trace)
    problems: list[str] = []
    backends = {"numpy": compare(want, numeric.forward(spec), "numpy", tol, problems)}
    tiles = tiles_proved(trace, problems)
    if not use_torch:
        return VerifyResult(tol=tol, steps=trace.names(), backends={**backends, "torch": skipped()},
                            problems=problems, tiles=tiles)
    try:
        from symblock.reference import torch_ref
        got = torch_ref.forward(spec)
    except ImportError as e:
        backends["torch"] = BackendResult(available=False, reason=str(e) or "torch is not installed")
        if require_torch:
            problems.append("torch is required (--require-torch) but not installed: "
                            "pip install 'symblock[torch]'")
    except AssertionError as e:  # torch_ref.ModuleMismatch: nn.MultiheadAttention disagrees
        backends["torch"] = BackendResult(available=False, reason=f"torch modules disagree: {e}")
        problems.append(f"torch: {e}")
    else:
        res = backends["torch"] = compare(want, got, "torch", tol, problems)
        if spec.options.rope:
            from symblock.reference import torch_rope
            res.note = f"RoPE rotated by {torch_rope.source()}"
        layer = torch_ref.encoder_layer_output(spec)
        if layer is not None:
            from symblock.engine.steps import batch_prefixes
            ours = [want[f"{p}output"] for p in batch_prefixes(spec.dims)]
            d = max_abs_diff(np.stack(ours) if spec.dims.batch else ours[0], layer)
            res.note = f"nn.TransformerEncoderLayer output differs by {d:.3g}"
            if not d <= tol:
                problems.append(f"nn.TransformerEncoderLayer output differs by {d:.3g}")
    return VerifyResult(tol=tol, steps=trace.names(), backends=backends, problems=problems, tiles=tiles)


def tiles_proved(trace: block.Trace, problems: list[str]) -> list[tuple[str, str]]:
    """Each head's online softmax over key tiles against its softmax·V (engine/online_softmax.py)."""
    from symblock.engine import online_softmax
    tiles = online_softmax.prove(trace)
    bad = [name for name, verdict in tiles if verdict == "differs"]
    if bad:
        problems.append(f"tiled results differ from softmax·V: {', '.join(bad[:5])}")
    return tiles


def run_decoder_layer(spec: BlockSpec, tol: float = 1e-9, require_torch: bool = False,
                      max_cost: int | None = None, use_torch: bool = True) -> VerifyResult:
    """A decoder layer with cross-attention: every step against NumPy (numeric_cross.py), and
    the steps a real nn.TransformerDecoderLayer exposes (torch_cross.py) against it."""
    from symblock.reference import numeric_cross, torch_cross
    trace = block.forward(spec, max_cost=max_cost)
    want = exact_floats(trace)
    problems: list[str] = []
    backends = {"numpy": compare(want, numeric_cross.forward(spec), "numpy", tol, problems),
                "torch": skipped()}
    why = torch_cross.unsupported(spec)
    if use_torch and why is not None:
        backends["torch"] = BackendResult(available=False, reason=f"nn.TransformerDecoderLayer: {why}")
    elif use_torch:
        try:
            got = torch_cross.forward(spec)
        except ImportError:
            backends["torch"] = BackendResult(available=False, reason="torch is not installed")
            if require_torch:
                problems.append("torch is required (--require-torch) but not installed: "
                                "pip install 'symblock[torch]'")
        else:
            res = backends["torch"] = compare({k: want[k] for k in got}, got, "torch", tol, problems)
            res.note = f"nn.TransformerDecoderLayer: {len(got)} steps it exposes compared"
    return VerifyResult(tol=tol, steps=trace.names(), backends=backends, problems=problems)


def run_model(spec, tol: float = 1e-9, require_torch: bool = False,
              max_cost: int | None = None, use_torch: bool = True) -> VerifyResult:
    """A tiny GPT: every step against NumPy and torch (each recomputing without a cache), the
    prompt pass against a stack of real nn.TransformerEncoderLayers where torch has the layer,
    and every cached step proved equal to the full recompute (engine/model.py)."""
    from symblock.engine import model
    from symblock.reference import numeric_model
    trace = model.forward(spec, max_cost=max_cost)
    want = exact_floats(trace)
    problems: list[str] = []
    backends = {"numpy": compare(want, numeric_model.forward(spec), "numpy", tol, problems),
                "torch": torch_model_result(spec, want, tol, require_torch, problems) if use_torch else skipped()}
    cache = model.prove_cache(spec, max_cost)
    bad = [name for name, verdict in cache if verdict == "differs"]
    if bad:
        problems.append(f"cached steps differ from the full recompute: {', '.join(bad[:5])}")
    return VerifyResult(tol=tol, steps=trace.names(), backends=backends, problems=problems, cache=cache)


def torch_model_result(spec, want: dict, tol: float, require_torch: bool, problems: list[str]) -> BackendResult:
    """A tiny GPT against torch: every step, and the prompt pass against stacked encoder layers."""
    try:
        import torch  # noqa: F401
    except ImportError:
        if require_torch:
            problems.append("torch is required (--require-torch) but not installed: "
                            "pip install 'symblock[torch]'")
        return BackendResult(available=False, reason="torch is not installed")
    if spec.kind == "encoder-decoder":
        return translation_result(spec, want, tol, problems)
    from symblock.reference import torch_model
    res = compare(want, torch_model.forward(spec), "torch", tol, problems)
    stack = torch_model.encoder_stack_output(spec)
    if stack is not None:
        last = f"layer{len(spec.layers) - 1}.output"
        d = max_abs_diff(want[last], stack)
        res.note = f"{len(spec.layers)} stacked nn.TransformerEncoderLayer differ by {d:.3g}"
        if not d <= tol:
            problems.append(f"the nn.TransformerEncoderLayer stack differs by {d:.3g}")
    return res


def translation_result(spec, want: dict, tol: float, problems: list[str]) -> BackendResult:
    """An encoder-decoder against a real nn.Transformer in a greedy loop (torch_translate.py)."""
    from symblock.reference import torch_translate
    why = torch_translate.unsupported(spec)
    if why is not None:
        return BackendResult(available=False, reason=f"nn.Transformer: {why}")
    got = torch_translate.outputs(spec)
    res = compare({k: want[k] for k in got}, got, "torch", tol, problems)
    res.note = f"nn.Transformer in a greedy loop: memory, outputs, logits and tokens of {spec.generate + 1} passes"
    return res
