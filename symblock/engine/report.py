"""Plain-text, JSON and LaTeX views of a Trace (what `forward` prints).

Readers only: values come from the Trace; nothing here recomputes the maths.
"""
from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterable, cast

from symblock.engine import exact, printed, tex_width
from symblock.engine.block import Step, Trace
from symblock.engine.matrix import Entry, Mat
from symblock.engine.model_spec import ModelSpec
from symblock.engine.spec import BlockSpec
from symblock.options import LATEX_LINE

JSON_CLOSED_FORM_SIZE = 400  # larger closed forms are `null` in --json (the value stays exact)
TEXT_WIDTH = 28              # longer closed forms are shown as their decimal in the table


def exact_str(e: Entry, max_size: int = JSON_CLOSED_FORM_SIZE, memo: dict | None = None) -> str | None:
    """The closed form as text that `sympy.sympify` parses back to the same value, or None when
    its tree is larger than `max_size`. Written from the graph: printing never imports SymPy."""
    return exact.text(e, max_size, memo)


def float_or_none(e: Entry) -> float | None:
    """JSON has no infinities: a masked (−∞) entry is null in `float` and "-oo" in `exact`."""
    v = float(e)
    return v if math.isfinite(v) else None


def to_json(steps: Iterable[Step], generated: dict | None = None) -> str:
    """{"steps": [...]} and, for a model that generates, {"generated": `generated(trace)`}."""
    memo: dict = {}  # steps share nodes (a softmax row's sum): write each once
    out = [{"name": s.name, "shape": list(s.value.shape), "latex": s.latex, "given": s.given,
            "exact": [[exact_str(e, memo=memo) for e in row] for row in s.value.rows],
            "float": [[float_or_none(e) for e in row] for row in s.value.rows]}
           for s in steps]
    body = ",\n ".join(json.dumps(s, ensure_ascii=False) for s in out)
    tail = f',\n "generated": {json.dumps(generated, ensure_ascii=False)}' if generated else ""
    return ('{"steps": [\n ' + body + "\n]" if out else '{"steps": []') + tail + "}"



def fmt_decimal(e: Entry, places: int) -> str:
    if e is exact.NEG_INF:
        return "-inf"
    d = exact.real(e).decimal(places)
    return f"{d:.{places}f}" if d != 0 else f"{0:.{places}f}"


def fmt_exact(e: Entry, width: int = TEXT_WIDTH) -> str:
    if e is exact.NEG_INF:
        return "-oo"
    s = exact_str(e, exact.CLOSED_FORM_SIZE if width <= TEXT_WIDTH else JSON_CLOSED_FORM_SIZE)
    if s is None or len(s) > width:
        return "≈"
    return s


def describe(trace: Trace) -> str:
    """One line saying what ran: a block's options or a model's."""
    return _DESCRIBE[trace.form](trace.spec)


def _block_line(spec: BlockSpec) -> str:
    """One line of a block's options (a model's: model_line)."""
    d, o = spec.dims, spec.options
    heads = f"{d.heads} head" + ("s" if d.heads > 1 else "")
    norm = "LayerNorm" if o.norm == "layernorm" else "RMSNorm"
    mask = " + ".join(m for m, on in (("causal", o.causal), ("padding mask", o.padding)) if on)
    bits = [f"seq_len {d.seq_len}", f"d_model {d.d_model}", f"d_ff {d.d_ff}", heads,
            "Pre-LN" + (" + final norm" if o.final_norm else "") if o.norm_position == "pre" else "Post-LN",
            f"{norm} (ε = {o.eps})", o.activation, mask or "no mask",
            "scale 1/√d_k" if o.attention_scale == "sqrt_dk" else "no scale"]
    if d.heads * d.d_k != d.d_model or d.d_k != d.d_v:
        bits.insert(4, f"d_k {d.d_k}, d_v {d.d_v} per head")
    if d.batch:
        bits.insert(0, f"batch of {d.batch}")
    if o.dropout:
        bits.append(f"dropout p = {spec.dropout_p} (fixed masks)")
    return " · ".join(bits)


def generated_text(trace: Trace) -> str:
    """A model's prompt and the tokens it generated greedily, e.g. `the cat | sat on mat`; "" for a
    block or an encoder, which generate nothing."""
    g = generated(trace)
    return "generated: " + " ".join(g["prompt"]) + " | " + " ".join(g["tokens"]) if g else ""


def generated(trace: Trace) -> dict | None:
    """{"prompt": words, "tokens": the words generated greedily, "ids": theirs} of a model that
    generates (its `next_token` steps, in order); None for a block or an encoder."""
    return _GENERATED[trace.form](trace)


def _model_tokens(trace: Trace) -> dict | None:
    spec = cast(ModelSpec, trace.spec)   # _GENERATED calls it for a model's trace only
    if spec.kind == "encoder":           # it ends in hidden states and generates nothing
        return None
    names = ["next_token"] + [f"gen{t}.next_token" for t in range(1, spec.generate + 1)]
    ids = [_token(trace[n]) for n in names if n in trace]
    return {"prompt": [spec.vocab[t] for t in spec.prompt], "tokens": [spec.vocab[t] for t in ids], "ids": ids}


def _token(step: Step) -> int:
    """The token a `next_token` step holds (an exact whole number)."""
    q = exact.real(step.value[0, 0]).q
    assert q is not None, step.name
    return int(q.p)
_GENERATED = {"block": lambda trace: None, "model": _model_tokens}
def model_line(spec: ModelSpec) -> str:
    """One line of a model's kind, sizes, stacks and prompt (a block's is _block_line)."""
    d, o = spec.dims, spec.options

    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"
    places = sorted({s.options.norm_position for s in spec.layers + tuple(spec.encoder)})
    order = "/".join(("Pre-LN" if p == "pre" else "Post-LN") for p in places)
    if spec.kind == "encoder-decoder":
        stack = f"{len(spec.encoder)} encoder + {count(len(spec.layers), 'decoder layer')} ({order})"
    else:
        stack = f"{count(len(spec.layers), 'layer')} ({order})"
    what = {"decoder": "tiny GPT", "encoder": "tiny encoder"}.get(spec.kind, "tiny encoder-decoder")
    bits = [what, f"vocab {len(spec.vocab)}", f"d_model {d.d_model}", f"d_ff {d.d_ff}", count(d.heads, "head"),
            stack, {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}.get(o.norm, o.norm), o.activation,
            f"positions {spec.positions}", f"head {spec.head}"]
    if spec.kind == "encoder":
        return " · ".join(bits + [count(len(spec.prompt), "token")])
    if spec.kind == "encoder-decoder":
        bits.append(f"source {count(len(spec.source_tokens), 'token')}")
    return " · ".join(bits + [f"prompt {count(len(spec.prompt), 'token')}", f"generate {spec.generate}"
                              + (" with KV cache" if spec.kv_cache else "")])


_DESCRIBE: dict[str, Callable[[Any], str]] = {"block": _block_line, "model": model_line}


def _grid(cells: list[list[str]]) -> list[str]:
    widths = [max(len(r[j]) for r in cells) for j in range(len(cells[0]))]
    return ["[ " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) + " ]" for r in cells]


def heading(spec: BlockSpec | ModelSpec) -> str:
    """`Title  (file)`, or the file alone for an untitled spec (the next line says what it is)."""
    return f"{spec.title}  ({spec.source})" if spec.title else str(spec.source)


def table(trace: Trace, steps: Iterable[Step], places: int = 4, width: int = TEXT_WIDTH) -> str:
    """Every step: name and formula, then the exact matrix beside its decimals."""
    lines = [heading(trace.spec), describe(trace),
             f"exact values, then ≈ their decimals rounded to {places} places; an ≈ inside the exact "
             "values marks an entry whose closed form is too long to show (`--json` or `--step` for more)", ""]
    for s in steps:
        tag = "   (given)" if s.given else ""
        lines += [f"■ {s.name}   {s.latex}{tag}", *matrix_lines(s.value, places, width), ""]
    return "\n".join(lines).rstrip() + "\n"


def matrix_lines(value: Mat, places: int = 4, width: int = TEXT_WIDTH) -> list[str]:
    """A matrix as its exact entries beside their decimals; one entry a line when a wide view
    (`width` > TEXT_WIDTH) has closed forms too long for a grid."""
    if width > TEXT_WIDTH and any(len(fmt_exact(e, width)) > TEXT_WIDTH for r in value.rows for e in r):
        return [f"    ({i + 1},{j + 1}) = {fmt_exact(e, width)}  ≈ {fmt_decimal(e, places)}"   # from 1, as the sheets
                for i, row in enumerate(value.rows) for j, e in enumerate(row)]
    ex = _grid([[fmt_exact(e, width) for e in row] for row in value.rows])
    dec = _grid([[fmt_decimal(e, places) for e in row] for row in value.rows])
    w = max(len(x) for x in ex)
    return [f"    {a.ljust(w)}{' ≈ ' if i == len(ex) // 2 else '   '}{b}"
            for i, (a, b) in enumerate(zip(ex, dec))]


# ---------------------------------------------------------------- LaTeX snippets for notes

LATEX_EXACT = 60   # longer closed forms are left to the decimal matrix
LATEX_MATRIX_COLS = 10   # amsmath's MaxMatrixCols: wider matrices are arrays
LATEX_FORMULA = 90       # a longer formula is broken into lines (formula_lines)


def latex_matrix(cells: list[list[str]]) -> str:
    body = r" \\ ".join(" & ".join(r) for r in cells)
    cols = max(len(r) for r in cells)
    if cols <= LATEX_MATRIX_COLS:
        return r"\begin{bmatrix} " + body + r" \end{bmatrix}"
    return r"\left[\begin{array}{" + "c" * cols + "} " + body + r" \end{array}\right]"


def terminating(e: Entry, places: int = printed.MAX_EXACT_PLACES) -> str | None:
    """The exact decimal text of a rational entry that terminates within `places` places."""
    q = printed.fraction(e)
    return None if q is None else printed.terminating(q, places)


def latex_entry(e: Entry) -> str | None:
    """The exact entry in LaTeX when its closed form is short, else None."""
    if e is exact.NEG_INF:
        return r"-\infty"
    if e.is_rational and terminating(e):
        return terminating(e)
    form = exact.to_sympy(e)
    if form is None:
        return None
    import sympy
    tex = sympy.latex(form)
    return tex if len(tex) <= LATEX_EXACT else None


def _display(lines: list[str]) -> list[str]:
    """One displayed line as equation*, more as gather* (amsmath), one line each."""
    if len(lines) == 1:
        return [r"\begin{equation*}", lines[0], r"\end{equation*}"]
    return [r"\begin{gather*}", " \\\\\n".join(lines), r"\end{gather*}"]


def formula_lines(formula: str) -> list[str]:
    """A formula wider than a line (LATEX_LINE) broken after its top-level `:\\ ` and `,\\ `, and
    before a top-level remark `\\ (…)` or `\\ \\text{(…)}` (outside any bracket), so that a display
    fits a page: RoPE's rule, its angle and its pairs; a KV cache's rows and its shape."""
    if tex_width.width(formula) <= LATEX_LINE:
        return [formula]
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(formula):
        depth += (ch in "({[") - (ch in ")}]")
        if depth == 0 and formula.startswith("\\ ", i) and i > start and (
                formula[i - 1] in ",:" or formula.startswith(("(", "\\text{("), i + 2)):
            pieces.append(formula[start:i].strip())
            start = i + 2
    lines = [pieces[0]] if pieces else []
    for piece in pieces[1:] + [formula[start:].strip()]:   # as many pieces a line as fit
        if lines and len(lines[-1]) + len(piece) < LATEX_FORMULA:
            lines[-1] += "\\ " + piece
        else:
            lines.append(piece)
    return lines


def _chunks(widths: list[float], room: float) -> list[list[int]]:
    """Consecutive columns packed into lines of at most `room` (a column wider than that alone)."""
    out: list[list[int]] = [[]]
    used = 0.0
    for j, w in enumerate(widths):
        if out[-1] and used + w > room:
            out.append([])
            used = 0.0
        out[-1].append(j)
        used += w
    return out


def _pieces(lead: str, cells: list[list[str]]) -> list[str]:
    """The matrix after `lead` (`Q' =`): one piece when the line fits LATEX_LINE, else its columns
    over as few lines as fit, as evenly as they go (4 columns: 2 and 2), opened on the first
    (`\\left[ … \\right.`) and closed on the last; a continuation starts a \\quad in."""
    widths = tex_width.column_widths(cells)
    room = LATEX_LINE - tex_width.width(lead) - 1
    if sum(widths) <= room:
        return [latex_matrix(cells)]
    lines = len(_chunks(widths, room - 2))
    cap = max(max(widths), sum(widths) / lines)
    while len(chunks := _chunks(widths, cap)) > lines:
        cap += 0.5
    out = []
    for k, cols in enumerate(chunks):
        body = r" \\ ".join(" & ".join(r[j] for j in cols) for r in cells)
        env = ("matrix", "") if len(cols) <= LATEX_MATRIX_COLS else ("array", "{" + "c" * len(cols) + "}")
        out.append(r"\left" + ("[" if k == 0 else ".") + rf"\begin{{{env[0]}}}{env[1]} {body} \end{{{env[0]}}}"
                   + r"\right" + ("]" if k == len(chunks) - 1 else "."))
    return out


def _value_display(items: list[tuple[str, str, list[list[str]]]]) -> list[str]:
    """The value's lines (lhs, relation, cells): equation* or gather* when each matrix fits a
    line, else align* with the wide ones' columns over lines (`Q' &= \\left[…\\right.`)."""
    pieces = [_pieces(f"{lhs} {rel}", cells) for lhs, rel, cells in items]
    if all(len(p) == 1 for p in pieces):
        return _display([f"{lhs} {rel} {p[0]}" for (lhs, rel, _), p in zip(items, pieces)])
    lines = []
    for (lhs, rel, _), p in zip(items, pieces):
        lines += [f"{lhs} &{rel} {p[0]}"] + [rf"&\quad {x}" for x in p[1:]]
    return [r"\begin{align*}", " \\\\\n".join(lines), r"\end{align*}"]


def latex(steps: Iterable[Step], places: int = 4) -> str:
    """Each step as a snippet that compiles in a bare `article` with amsmath: its formula (marked
    given for a pinned step; none for a bare symbol such as the input X; a long one on several
    lines), then its value: the exact matrix when every entry is short, and the decimals, on a
    line of their own beside an exact matrix that is not all decimals; a matrix wider than a
    line has its columns over lines."""
    out = [r"% symblock forward: needs only \usepackage{amsmath}"]
    for s in steps:
        rows = s.value.rows
        lhs = s.latex.split(" = ")[0].strip()
        exact_cells = [[latex_entry(e) for e in r] for r in rows]
        dec = [[r"-\infty" if e is exact.NEG_INF else (e.is_rational and terminating(e, places)) or fmt_decimal(e, places)
                for e in r] for r in rows]  # an exact 0 or 1 stays 0 or 1
        if all(c is not None for r in exact_cells for c in r):
            value = [(lhs, "=", cast("list[list[str]]", exact_cells))]  # all short: the test above
            if not all(e is exact.NEG_INF or (e.is_rational and terminating(e)) for r in rows for e in r):
                value.append((lhs, r"\approx", dec))
        else:
            value = [(lhs, r"\approx", dec)]
        formula = s.latex + (r"\ \text{(given)}" if s.given else "")   # pinned: not worked from the formula
        out += [f"% {s.name}"] + (_display(formula_lines(formula)) if lhs != s.latex or s.given
                                  else [])   # a bare symbol (X) is said by its value's equation
        out += _value_display(value)
    return "\n".join(out) + "\n"
