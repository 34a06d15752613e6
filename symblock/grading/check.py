"""Check hand-worked answers against the exact block, entry by entry: each step is correct, wrong,
carried (right from your own earlier answers) or missing, and a wrong step names the mistake that
reproduces it (sample variance, no 1/sqrt(d_k), softmax down columns, W transposed, ...).

ANSWERS is YAML or JSON: `{decimals: 3, steps: {STEP_NAME: [[...], ...], ...}}`. Entries may be
integers, decimals, fractions or exact expressions ("sqrt(2)/2", "E/(1+E)"). A decimal entry is
judged at max(decimals, the places it is written with); a step may override `decimals` with
`{decimals: 4, value: [[...]]}`. Exit 0 when nothing is wrong, 1 otherwise, 2 on bad input.
"""
from __future__ import annotations



# ---------------------------------------------------------------- views

def to_json(result) -> str:
    import json
    steps = [{"name": s.name, "status": s.status,
              "entries": [{k: v for k, v in vars(e).items() if v is not None} for e in s.entries],
              "diagnosis": s.diagnosis,
              **({"built_on": s.built_on} if s.built_on else {})}
             for s in result.steps]
    return json.dumps({"ok": result.ok, "first_break": result.first_break, "spec": result.spec_source,
                       "answers": result.answers_source, "decimals": result.decimals,
                       "steps": steps}, ensure_ascii=False, indent=1) + "\n"


MARK = {"correct": "✓", "wrong": "✗", "carried": "↪", "missing": "·", "given": "="}
NOTE = {"missing": "not answered", "given": "given in the spec"}


def text(result, trace=None, every_entry: bool = False) -> str:
    from symblock.grading.mistakes import EXPLANATIONS
    lines = [f"symblock check: {result.answers_source} against {result.spec_source}"]
    if trace is not None and trace.spec.title:
        lines[0] += f"  ({trace.spec.title})"
    if result.decimals is not None:
        lines.append(f"decimals: {result.decimals} (an entry written with more places is judged at its own)")
    lines.append("")
    width = max(len(s.name) for s in result.steps)
    runs = _missing_runs(result.steps)
    for k, s in enumerate(result.steps):
        if k in runs:
            if runs[k]:
                last, n = runs[k]
                lines.append(f"  {MARK['missing']} missing  {s.name} … {last}  ({n} steps not answered)")
            continue
        note = NOTE.get(s.status, "")
        if s.status == "carried":
            note = "right from your own " + ", ".join(s.built_on) + " (error carried forward)"
        if s.status == "wrong" and s.name == result.first_break:
            note = "← the chain first breaks here"
        lines.append(f"  {MARK[s.status]} {s.status:<8} {s.name:<{width}}  {note}".rstrip())
        shown = [e for e in s.entries if every_entry or not e.ok]
        for e in shown:
            exp = e.expected + (f" (= {e.exact})" if _worth_showing(e) else "")
            own = f"; from your own answers {e.own}" if e.own else ""
            tick = "ok" if e.ok else "wrong"
            lines.append(f"      [{e.row}][{e.col}]  given {e.given:<10} expected {exp}{own}  {tick}")
        for code in s.diagnosis:
            lines.append(f"      diagnosis: {code} — {EXPLANATIONS[code]}")
        if s.status == "wrong" and not s.diagnosis:
            lines.append("      diagnosis: none of the catalogued mistakes reproduces these numbers")
    lines.append("")
    counts = ", ".join(f"{result.count(st)} {st}" for st in ("correct", "wrong", "carried", "missing")
                       if result.count(st))
    if result.ok:
        lines.append(f"OK: nothing wrong ({counts}).")
    else:
        lines.append(f"NOT OK ({counts}). The chain first breaks at {result.first_break}.")
    return "\n".join(lines) + "\n"


def _worth_showing(e) -> bool:
    """The closed form beside the rounded truth, when it adds something (not for integers, −∞,
    or forms too long for a line)."""
    x = e.exact
    return bool(x) and x != e.expected and len(x) <= 24 and e.expected[:1] != "≈" \
        and x not in ("-oo", "oo") and not x.lstrip("-").isdigit()


def _missing_runs(steps, shortest: int = 3) -> dict[int, tuple | None]:
    """Runs of at least `shortest` consecutive missing steps, shown as one line: index of the
    run's first step -> (last name, length); the run's other indices -> None."""
    out: dict[int, tuple | None] = {}
    k = 0
    while k < len(steps):
        j = k
        while j < len(steps) and steps[j].status == "missing":
            j += 1
        if j - k >= shortest:
            out[k] = (steps[j - 1].name, j - k)
            out.update({i: None for i in range(k + 1, j)})
        k = max(j, k + 1)
    return out
