"""Compare the exact trace, step by step, with the independent float64 paths (NumPy, torch).

The exact values are rounded to the nearest double (certified) and compared entry by entry;
−∞ (masked) entries must be −∞ in the backend too.

Where float64 itself cannot reach the tolerance (a LayerNorm row whose entries agree with their
mean to more digits than a double holds, at ε = 0: x − μ keeps only the digits left), the exact
trace says so (`float_limits`): differences from that step on are reported as float64's, not
counted as failures, and a float path that finds the row's variance 0 is reported as not run.
The NumPy path is also run on inputs nudged in their last bits (`float_noise`): a step that
moves by more than a quarter of the tolerance is beyond float64 too (norms under a small σ,
chained through the layers, make float64 drift with no single row flat to many digits).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from symblock.engine import block
from symblock.engine.names import parse

if TYPE_CHECKING:
    from symblock.engine.model_spec import ModelSpec, Spec
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
    limits: dict[str, str] = field(default_factory=dict)  # step -> why float64 cannot check it
    cache: list[tuple[str, str]] = field(default_factory=list)  # a model's (cached step, verdict)
    tiles: list[tuple[str, str]] = field(default_factory=list)  # a block's (tiled step, verdict)

    @property
    def ok(self) -> bool:
        return not self.problems and any(b.available for b in self.backends.values())


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


def scaled_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a − b| / max(1, |a|): the tolerance is absolute for entries up to 1 and relative
    above (float64 holds ~16 significant digits, so 1e10 agrees to ~1e-6, not 1e-9)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return float("inf")
    with np.errstate(invalid="ignore"):
        d = np.where(a == b, 0.0, np.abs(a - b) / np.maximum(1.0, np.abs(a)))
    d = np.where(np.isnan(d), np.inf, d)  # an infinity against a number
    return float(d.max()) if d.size else 0.0


def exact_floats(trace: block.Trace) -> dict[str, np.ndarray]:
    return {s.name: np.array(s.value.floats(), dtype=float) for s in trace}


ROUNDING = 2.0**-52 * 16  # a double's relative rounding, with room for the rounding upstream


def float_limits(trace: block.Trace, tol: float) -> dict[str, str]:
    """Each step float64 cannot be held to `tol` at -> why: a LayerNorm row whose mean is κ times
    its σ loses log10 κ digits in x − μ (the entries' own rounding, ~1e-16 of |μ|, becomes κ·1e-16
    of the normalised row), so from the first norm with ROUNDING·κ > tol every later step carries
    that error. Empty when float64 can check everything (any ε ≥ 1e-5 on rows of moderate size)."""
    names = trace.names()
    for at, name in enumerate(names):
        parsed = parse(name)
        if parsed.stat != "std" or parsed.sibling(f"{parsed.norm}.mean") not in trace:
            continue
        base = parsed.sibling(parsed.norm)
        mu, sd = (trace[parsed.sibling(f"{parsed.norm}.{s}")].value.floats() for s in ("mean", "std"))
        kappa = [abs(m[0]) / s[0] if s[0] else float("inf") for m, s in zip(mu, sd)]
        row = max(range(len(kappa)), key=kappa.__getitem__)
        if ROUNDING * kappa[row] <= tol:
            continue
        sigma = trace[name].value.rows[row][0]
        why = (f"{base} row {row + 1}: its entries agree with their mean μ ≈ {mu[row][0]:.6g} to "
               f"{_digits(kappa[row])} digits (σ ≈ {sigma.digits(3)}), more than float64 keeps, so "
               f"float64 cannot follow from there on")
        var = parsed.sibling(f"{parsed.norm}.var")
        first = names.index(var) if var in trace else at  # x − μ enters here
        return {n: why for n in names[first:]}
    return {}


def _digits(kappa: float) -> str:
    return "all" if kappa == float("inf") else f"about {max(0, round(np.log10(kappa)))}"


def compare(exact: dict[str, np.ndarray], other: dict[str, np.ndarray], name: str,
            tol: float, problems: list[str], limits: dict[str, str] | None = None) -> BackendResult:
    """Each step's largest difference; one beyond `tol` is a problem unless float64 cannot reach
    `tol` there (`limits`: float_limits)."""
    res = BackendResult(available=True)
    for step, want in exact.items():
        if step not in other:
            problems.append(f"{name} has no step {step}")
            continue
        res.steps[step] = d = max_abs_diff(want, other[step])
        if not scaled_diff(want, other[step]) <= tol and step not in (limits or {}):
            problems.append(f"{name} differs at {step} by {d:.3g}")
    return res


NOISE_SHARE = 4   # a step float64 itself moves by more than tol / NOISE_SHARE is beyond it


def float_noise(run, got: dict, want: dict, tol: float) -> dict[str, str]:
    """Each step float64's own rounding cannot be held to `tol` at -> why, measured: the path run
    again on inputs moved by four units in their last place (numeric.nudged). A norm divides its
    input's error by σ, so rows near their mean under a small ε, layer after layer, can make
    float64 drift past the tolerance where no single norm's κ (float_limits) says so."""
    from symblock.reference import numeric
    try:
        with numeric.nudged():
            again = run()
    except ZeroDivisionError:   # a nudged row found flat: float_limits speaks for that norm
        return {}
    out, smallest = {}, None
    for n, v in want.items():
        if n in got and n in again and NOISE_SHARE * (moved := scaled_diff(got[n], again[n])) > tol:
            hint = f"; the smallest σ before it is {smallest[1]:.3g} ({smallest[0]})" if smallest else ""
            out[n] = (f"{n}: float64's own value moves by {moved:.2g} when every input moves by four units "
                      f"in its last place, too much to hold it to {tol:g}{hint}")
        if parse(n).stat in ("std", "rms") and v.size and (smallest is None or v.min() < smallest[1]):
            smallest = (n, float(v.min()))
    return out


def float_path(name: str, run, want: dict, tol: float, problems: list[str], limits: dict[str, str],
               noise: bool = False) -> BackendResult:
    """`run()`'s steps against the exact ones; a float path that finds a row's variance 0 where
    the exact one is not (within float_limits) is reported as not run, for that reason. `noise`
    (the NumPy path, run first): `limits` gains the steps float_noise finds, for every path."""
    try:
        got = run()
    except ZeroDivisionError as e:
        return not_run(e, limits)
    if noise:
        limits.update({n: why for n, why in float_noise(run, got, want, tol).items() if n not in limits})
    return compare(want, got, name, tol, problems, limits)


def not_run(e: ZeroDivisionError, limits: dict[str, str]) -> BackendResult:
    """A float path that found a row's variance 0: not run, where float_limits explains it (the
    exact variance is not 0); anywhere else it is a bug, raised as it is."""
    if not limits:
        raise e
    return BackendResult(available=False, reason=f"{e}, where the exact variance is not")


def skipped() -> BackendResult:
    return BackendResult(available=False, reason="--no-torch")


def run(spec: Spec, tol: float = 1e-9, require_torch: bool = False,
        use_torch: bool = True) -> VerifyResult:
    """A block or a model (`spec.form`), every step against the independent paths. `use_torch=False`
    compares with NumPy alone: importing torch takes 2–3 s, the rest well under 1 s."""
    return RUNS[spec.form](spec, tol, require_torch, use_torch)


def run_block(spec: BlockSpec, tol: float = 1e-9, require_torch: bool = False,
              use_torch: bool = True) -> VerifyResult:
    """One block: every step against NumPy, then torch's own modules."""
    if spec.options.cross_attention:
        return run_decoder_layer(spec, tol, require_torch, use_torch)
    from symblock.reference import numeric
    trace = block.forward(spec)
    want = exact_floats(trace)
    problems: list[str] = []
    limits = float_limits(trace, tol)
    backends = {"numpy": float_path("numpy", lambda: numeric.forward(spec), want, tol, problems, limits,
                                    noise=True)}
    tiles = tiles_proved(trace, problems)
    if not use_torch:
        return VerifyResult(tol=tol, steps=trace.names(), backends={**backends, "torch": skipped()},
                            problems=problems, tiles=tiles, limits=limits)
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
    except ZeroDivisionError as e:
        backends["torch"] = not_run(e, limits)
    else:
        res = backends["torch"] = compare(want, got, "torch", tol, problems, limits)
        if spec.options.rope:
            from symblock.reference import torch_rope
            res.note = f"RoPE rotated by {torch_rope.source()}"
        layer = torch_ref.encoder_layer_output(spec)
        if layer is not None:
            from symblock.engine.steps import batch_prefixes
            ours = [want[f"{p}output"] for p in batch_prefixes(spec.dims)]
            ours = np.stack(ours) if spec.dims.batch else ours[0]
            d = max_abs_diff(ours, layer)
            res.note = f"nn.TransformerEncoderLayer output differs by {d:.3g}"
            if not scaled_diff(ours, layer) <= tol and not limits:
                problems.append(f"nn.TransformerEncoderLayer output differs by {d:.3g}")
    return VerifyResult(tol=tol, steps=trace.names(), backends=backends, problems=problems, tiles=tiles,
                        limits=limits)


def tiles_proved(trace: block.Trace, problems: list[str]) -> list[tuple[str, str]]:
    """Each head's online softmax over key tiles against its softmax·V (engine/online_softmax.py)."""
    from symblock.engine import online_softmax
    tiles = online_softmax.prove(trace)
    bad = [name for name, verdict in tiles if verdict == "differs"]
    if bad:
        problems.append(f"tiled results differ from softmax·V: {', '.join(bad[:5])}")
    return tiles


def run_decoder_layer(spec: BlockSpec, tol: float = 1e-9, require_torch: bool = False,
                      use_torch: bool = True) -> VerifyResult:
    """A decoder layer with cross-attention: every step against NumPy (numeric_cross.py), and
    the steps a real nn.TransformerDecoderLayer exposes (torch_cross.py) against it."""
    from symblock.reference import numeric_cross, torch_cross
    trace = block.forward(spec)
    want = exact_floats(trace)
    problems: list[str] = []
    limits = float_limits(trace, tol)
    backends = {"numpy": float_path("numpy", lambda: numeric_cross.forward(spec), want, tol, problems, limits,
                                    noise=True),
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
            res = backends["torch"] = compare({k: want[k] for k in got}, got, "torch", tol, problems, limits)
            res.note = f"nn.TransformerDecoderLayer: {len(got)} steps it exposes compared"
    return VerifyResult(tol=tol, steps=trace.names(), backends=backends, problems=problems, limits=limits)


def run_model(spec, tol: float = 1e-9, require_torch: bool = False,
              use_torch: bool = True) -> VerifyResult:
    """A tiny GPT: every step against NumPy and torch (each recomputing without a cache), the
    prompt pass against a stack of real nn.TransformerEncoderLayers where torch has the layer,
    and every cached step proved equal to the full recompute (engine/model.py)."""
    from symblock.engine import model
    from symblock.reference import numeric_model
    trace = model.forward(spec)
    want = exact_floats(trace)
    problems: list[str] = []
    limits = float_limits(trace, tol)
    backends = {"numpy": float_path("numpy", lambda: numeric_model.forward(spec), want, tol, problems, limits,
                                    noise=True),
                "torch": torch_model_result(spec, want, tol, require_torch, problems, limits) if use_torch
                else skipped()}
    cache = model.prove_cache(spec)
    bad = [name for name, verdict in cache if verdict == "differs"]
    if bad:
        problems.append(f"cached steps differ from the full recompute: {', '.join(bad[:5])}")
    return VerifyResult(tol=tol, steps=trace.names(), backends=backends, problems=problems, cache=cache,
                        limits=limits)


def torch_model_result(spec: ModelSpec, want: dict, tol: float, require_torch: bool,
                       problems: list[str], limits: dict[str, str] | None = None) -> BackendResult:
    """A tiny GPT against torch: every step, and the prompt pass against stacked encoder layers."""
    try:
        import torch  # noqa: F401
    except ImportError:
        if require_torch:
            problems.append("torch is required (--require-torch) but not installed: "
                            "pip install 'symblock[torch]'")
        return BackendResult(available=False, reason="torch is not installed")
    if spec.kind == "encoder-decoder":
        return translation_result(spec, want, tol, problems, limits)
    from symblock.reference import torch_model
    res = float_path("torch", lambda: torch_model.forward(spec), want, tol, problems, limits or {})
    if not res.available:
        return res
    stack = torch_model.encoder_stack_output(spec)
    if stack is not None:
        last = f"layer{len(spec.layers) - 1}.output"
        d = max_abs_diff(want[last], stack)
        res.note = f"{len(spec.layers)} stacked nn.TransformerEncoderLayer differ by {d:.3g}" + (
            " (beyond float64: not counted)" if last in (limits or {}) else "")
        if not scaled_diff(want[last], stack) <= tol and last not in (limits or {}):
            problems.append(f"the nn.TransformerEncoderLayer stack differs by {d:.3g}")
    return res


def translation_result(spec: ModelSpec, want: dict, tol: float, problems: list[str],
                       limits: dict[str, str] | None = None) -> BackendResult:
    """An encoder-decoder against a real nn.Transformer in a greedy loop (torch_translate.py)."""
    from symblock.reference import torch_translate
    why = torch_translate.unsupported(spec)
    if why is not None:
        return BackendResult(available=False, reason=f"nn.Transformer: {why}")
    got = torch_translate.outputs(spec)
    res = compare({k: want[k] for k in got}, got, "torch", tol, problems, limits)
    res.note = f"nn.Transformer in a greedy loop: memory, outputs, logits and tokens of {spec.generate + 1} passes"
    return res


RUNS = {"block": run_block, "model": run_model}


# ---------------------------------------------------------------- what verify prints

def table(result: VerifyResult) -> str:
    """What `verify` prints: each step's largest difference per backend run, then a verdict."""
    names = list(result.steps)
    backends = [b for b, res in result.backends.items() if res.available]  # a column per backend run
    head = ["step"] + [f"{b} max |Δ|" for b in backends] + (["float64"] if result.limits else [])
    rows = [[n] + [_diff(result.backends[b], n) for b in backends]
            + (["beyond: not counted" if n in result.limits else "checked"] if result.limits else []) for n in names]
    w = [max(len(r[j]) for r in [head] + rows) for j in range(len(head))]
    out = ["  ".join(c.ljust(w[j]) for j, c in enumerate(head)), "  ".join("-" * x for x in w)]
    out += ["  ".join(c.ljust(w[j]) for j, c in enumerate(r)) for r in rows]
    out.append("")
    for b, res in result.backends.items():
        if not res.available:
            out.append(f"{b}: not run ({res.reason})")
        else:
            extra = f"; {res.note}" if res.note else ""
            checked = {n: d for n, d in res.steps.items() if n not in result.limits}
            beyond = f" checked, {len(res.steps) - len(checked)} more beyond float64" if len(checked) < len(res.steps) else ""
            out.append(f"{b}: largest difference {max(checked.values(), default=0.0):.3g} over {len(checked)} steps"
                       f"{beyond} (tolerance {result.tol:g}, relative above 1){extra}")
    if result.cache:
        out.append(_proofs(f"KV cache: {len(result.cache)} cached steps vs the full recompute",
                           result.cache, "the same expression"))
    if result.tiles:
        heads = f"{len(result.tiles)} tiled head{'s' if len(result.tiles) != 1 else ''}"
        out.append(_proofs(f"Online softmax: {heads} vs softmax·V", result.tiles, "by algebra"))
    if result.limits:
        first = next(n for n in names if n in result.limits)
        out.append(f"Beyond float64 at {len(result.limits)} of {len(names)} steps, the first {first} (their "
                   f"differences are float64's, not counted): {result.limits[first]}")
    if not any(b.available for b in result.backends.values()):
        out.append("NOT CHECKED: no float path could run this example")
    elif not result.ok:
        out.append("FAILED: " + "; ".join(result.problems))
    else:
        out.append("OK: every step agrees" if not result.limits else
                   f"OK: the {len(names) - len(result.limits)} steps float64 can check agree; the exact values of the "
                   f"other {len(result.limits)} rest on exact arithmetic alone")
    return "\n".join(out)


def _proofs(what: str, verdicts: list[tuple[str, str]], how: str) -> str:
    """One line counting the verdicts of proved equalities (exact, numeric, differs)."""
    n = {v: sum(1 for _, w in verdicts if w == v) for v in ("exact", "numeric", "differs")}
    return (f"{what}: {n['exact']} equal exactly ({how}), {n['numeric']} equal to 16384 bits, "
            f"{n['differs']} differ")


def _diff(res, name: str) -> str:
    if not res.available:
        return "–"
    v = res.steps.get(name)
    return "–" if v is None else f"{v:.2e}"


def to_json(result: VerifyResult) -> str:
    backends = {}
    for b, res in result.backends.items():
        if res.available:
            backends[b] = {"available": True, "max_abs_diff": res.max_abs_diff, "steps": res.steps}
            if res.note:
                backends[b]["note"] = res.note
        else:
            backends[b] = {"available": False, "reason": res.reason}
    extra = {"cache": dict(result.cache)} if result.cache else {}
    if result.tiles:
        extra["tiles"] = dict(result.tiles)
    if result.limits:
        first = next(n for n in result.steps if n in result.limits)
        extra["beyond_float64"] = {"from": first, "why": result.limits[first],
                                   "steps": [n for n in result.steps if n in result.limits]}
    return json.dumps({"ok": result.ok, "tol": result.tol, "backends": backends,
                       "problems": result.problems, **extra}, indent=1)
