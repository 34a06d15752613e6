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


def run(spec: BlockSpec, tol: float = 1e-9, require_torch: bool = False,
        max_cost: int | None = None) -> VerifyResult:
    from symblock.reference import numeric
    trace = block.forward(spec, max_cost=max_cost)
    want = exact_floats(trace)
    problems: list[str] = []
    backends = {"numpy": compare(want, numeric.forward(spec), "numpy", tol, problems)}
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
        layer = torch_ref.encoder_layer_output(spec)
        if layer is not None:
            from symblock.engine.steps import batch_prefixes
            ours = [want[f"{p}output"] for p in batch_prefixes(spec.dims)]
            d = max_abs_diff(np.stack(ours) if spec.dims.batch else ours[0], layer)
            res.note = f"nn.TransformerEncoderLayer output differs by {d:.3g}"
            if not d <= tol:
                problems.append(f"nn.TransformerEncoderLayer output differs by {d:.3g}")
    return VerifyResult(tol=tol, steps=trace.names(), backends=backends, problems=problems)
