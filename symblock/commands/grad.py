"""Exact gradients of a loss of the block's output, backwards step by step.

The command's glue: arguments, the target matrix, the text and JSON views. The maths is
`symblock/calculus/grad.py`, imported only when the command runs so that `symblock --help` stays light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symblock.engine.matrix import ExactMatrix
    from symblock.engine.spec import BlockSpec

EXAMPLES = """\
examples:
  symblock grad rmsnorm-swiglu --wrt W_2,W_1      # L = sum of the output
  symblock grad pre-ln-causal-gelu --loss mse --wrt W_2 \\
                --target "[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]"
  symblock grad rmsnorm-swiglu --wrt W_1,ln1.gamma --json
(a block that ends in a LayerNorm gives 0 for L = sum and for mse against zeros: give a --target)"""  # the --help epilog

LOSSES = ("sum", "mse")  # grad.LOSSES, repeated here so that --help does not load the engine


def to_json(b) -> str:
    import json
    from symblock.engine.report import exact_str, float_or_none

    def entry(g) -> dict:
        return {"name": g.name, "of": g.of, "shape": list(g.value.shape), "latex": g.latex,
                "rule": g.rule,
                "exact": [[exact_str(e) for e in r] for r in g.value.rows],
                "float": [[float_or_none(e) for e in r] for r in g.value.rows]}

    data = {"loss": b.loss, "latex": b.loss_latex,
            "value": {"exact": exact_str(b.loss_value), "float": float(b.loss_value)},
            "steps": [entry(g) for g in b.steps], "wrt": [entry(g) for g in b.wrt.values()]}
    return json.dumps(data, ensure_ascii=False, indent=1)


def table(b, places: int = 4) -> str:
    from symblock.engine.report import describe, fmt_decimal, fmt_exact, heading, matrix_lines
    spec = b.trace.spec
    closed = fmt_exact(b.loss_value, 60)  # "≈" alone when the closed form is too long
    value = (f"= {closed}  " if closed != "≈" else "") + f"≈ {fmt_decimal(b.loss_value, places)}"
    lines = [heading(spec), describe(b.trace),
             f"loss: {b.loss}   {b.loss_latex}   {value}",
             "backwards from the output: dL/d each step that depends on "
             + ", ".join(b.wrt) + "; ≈ marks an entry too long to show exactly", ""]

    def block(g, rule: bool) -> None:
        lines.append(f"■ {g.name}   {g.latex}")
        if rule and g.rule:
            lines.append(f"    rule: {g.rule}")
        lines.extend([*matrix_lines(g.value, places), ""])

    for g in b.steps:
        block(g, True)
    lines.append("gradients with respect to " + ", ".join(b.wrt) + ":")
    lines.append("")
    for g in b.wrt.values():
        block(g, False)
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------- command

def add_arguments(p) -> None:
    from symblock.commands.arguments import decimals, nonneg
    from symblock.options import MAX_DECIMALS
    from symblock.commands.arguments import add_spec_argument
    add_spec_argument(p)
    p.add_argument("--loss", choices=LOSSES, default="sum",
                   help="sum: L = Σ Y_ij; mse: L = mean of (Y_ij − T_ij)² over all entries (default sum)")
    p.add_argument("--wrt", default="X", metavar="NAMES",
                   help="comma-separated parameters or steps, e.g. W_2,W_1,X or ln2.gamma (default X)")
    p.add_argument("--target", metavar="MATRIX|FILE",
                   help="mse target T: a matrix like '[[1,0],[0,1],[1,1]]' or a YAML/JSON file "
                        "holding one (default: zeros)")
    p.add_argument("--json", action="store_true",
                   help="print {loss, latex, value, steps, wrt} as JSON (a model: {loss, value, wrt})")
    p.add_argument("--decimals", type=decimals, default=4, metavar="N",
                   help=f"decimal places (default 4, at most {MAX_DECIMALS})")
    p.add_argument("--max-cost", type=nonneg, metavar="N", help="raise the exact engine's size limit")


def _target(text: str | None, spec: BlockSpec) -> ExactMatrix | None:
    """The --target matrix: written inline, or in a YAML/JSON file (read as specs are: bounded,
    exact decimals, a clear error for a directory, a binary file or an oversized number)."""
    if text is None:
        return None
    import os
    from symblock.engine import files, spec as specmod
    from symblock.errors import excerpt
    # written inline, the matrix is named as the option of this spec's run ("SPEC: --target[0][1]: …");
    # in a file, as that file's `target` ("t.yaml: target[0][1]: …"): each said once
    source, field, raw = spec.source, "--target", text
    if os.path.exists(text):
        source, field = text, "target"
        raw = files.read_text(text, "a YAML or JSON file holding the target matrix")
    elif text.lower().endswith((".yaml", ".yml", ".json")):
        raise specmod.SpecError(spec.source, "--target", f"no file {excerpt(text)}; expected a matrix "
                                "like [[1, 0], [0, 1]] or a YAML/JSON file holding one")
    try:
        data = files.parse(raw, source, json_syntax=text.lower().endswith(".json"))
    except specmod.SpecError as e:
        if field == "target":   # a file: its own error (file, line) says it
            raise
        where = f" ({e.where})" if e.where else ""
        raise specmod.SpecError(source, field, f"expected a matrix like [[1, 0], [0, 1]] or a file "
                                f"holding one: {e.message}{where}") from None
    if isinstance(data, dict) and "target" in data:
        data = data["target"]
    n, d = spec.dims.seq_len * max(spec.dims.batch, 1), spec.dims.d_model  # a batch: outputs stacked
    return specmod.parse_matrix(data, (n, d), source, field)


def run(args) -> int:
    from symblock.exercises.generate import load
    s = load(args.spec, allow_model=True)
    return RUNS[s.form](args, s)


def _run_block(args, s) -> int:
    """One block: dL/d the chosen inputs and parameters for a loss of its output."""
    from symblock.engine import spec as specmod
    from symblock.calculus.grad import backward
    if args.target is not None and args.loss != "mse":
        raise specmod.SpecError(s.source, "--target", "a target only goes with --loss mse")
    wrt = [w.strip() for w in args.wrt.split(",") if w.strip()]
    b = backward(s, args.loss, wrt, target=_target(args.target, s))
    print(to_json(b) if args.json else table(b, args.decimals), end="" if not args.json else "\n")
    if not args.json and all(getattr(e, "q", None) == 0 for g in b.wrt.values() for r in g.value.rows for e in r):
        print(_all_zero(s, args))
    return 0


def _all_zero(s, args) -> str:
    """Why every gradient asked for is exactly 0, when the block's shape says why: a block that
    ends in a LayerNorm gives rows of a fixed sum, and of a fixed sum of squares when β = 0, so
    both default losses stand still (a reader's first `symblock grad` meets exactly this)."""
    o = s.options
    if o.norm != "layernorm" or not (o.norm_position == "post" or o.final_norm):
        return "note: every gradient is exactly 0: the loss does not depend on these inputs in this block"
    if s.dims.d_model == 2:
        why = "with d_model 2 a LayerNorm maps every row to ±1 (times γ, plus β) whatever its input"
    else:
        why = ("the block ends in a LayerNorm, whose rows have a fixed sum, and with β = 0 a fixed sum of "
               "squares, so L = sum and mse against zeros do not move with anything before it")
    hint = "" if args.target is not None or s.dims.d_model == 2 else "; give --loss mse a --target"
    return f"note: every gradient is exactly 0: {why}{hint}"


def _run_model(args, s) -> int:
    """A model (a GPT, an encoder, an encoder-decoder): dL/d each named parameter for a loss of
    the prompt pass's logits (an encoder without a head: its hidden states)."""
    import json
    from symblock.calculus import model_grad
    from symblock.engine.report import describe, exact_str, float_or_none, fmt_decimal, heading, matrix_lines
    from symblock.errors import SpecError, did_you_mean
    if args.target is not None:
        raise SpecError(s.source, "--target", "a model's mse loss is against zeros (no --target yet)")
    b = model_grad.backward(s, args.loss)
    wrt = [w.strip() for w in args.wrt.split(",") if w.strip()]
    wrt = list(b.grads) if wrt == ["X"] else wrt  # the block default: every parameter instead
    if getattr(s, "W_E_src", None) is not None:  # separate embeddings: the target's table, named W_E
        wrt = ["W_E" if w == "W_E_tgt" else w for w in wrt]
    bad = [w for w in wrt if w not in b.grads]
    if bad:
        raise SpecError(s.source, "--wrt", f"no parameter {bad[0]!r} in this model; "
                        + did_you_mean(bad[0], b.grads) + "expected one of " + ", ".join(b.grads))
    if args.json:
        print(json.dumps({"loss": b.loss, "value": {"exact": exact_str(b.loss_value), "float": float(b.loss_value)},
                          "wrt": [{"name": f"grad.{w}", "shape": list(b.grads[w].shape),
                                   "exact": [[exact_str(e) for e in r] for r in b.grads[w].rows],
                                   "float": [[float_or_none(e) for e in r] for r in b.grads[w].rows]}
                                  for w in wrt]}, ensure_ascii=False, indent=1))
        return 0
    from symblock.engine.block import Trace
    lines = [heading(s), describe(Trace([], {}, s)),
             f"loss: {b.loss} of the prompt pass's {'hidden states' if s.head == 'none' else 'logits'} "
             f"≈ {fmt_decimal(b.loss_value, args.decimals)}", ""]
    for w in wrt:
        lines += [f"■ grad.{w}   \\partial L / \\partial {w}", *matrix_lines(b.grads[w], args.decimals), ""]
    print("\n".join(lines).rstrip())
    return 0


RUNS = {"block": _run_block, "model": _run_model}
