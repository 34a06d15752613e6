"""Check hand-worked answers against the exact block, entry by entry: each step is correct, wrong,
carried (right from your own earlier answers) or missing, and a wrong step names the mistake that
reproduces it (sample variance, no 1/sqrt(d_k), softmax down columns, W transposed, ...).

ANSWERS is YAML, JSON or CSV (grading/answers.py): `{id, name, decimals: 3, steps: {STEP_NAME:
[[...], ...], ...}}`. Entries may be integers, decimals, fractions or exact expressions
("sqrt(2)/2", "E/(1+E)"), or blank. A decimal entry is judged at max(decimals, the places it is
written with); a step may override `decimals` with `{decimals: 4, value: [[...]]}`. Exit 0 when
nothing is wrong, 1 otherwise, 2 on bad input.
"""
from __future__ import annotations



# ---------------------------------------------------------------- views

def to_json(result) -> str:
    """DESIGN.md's `check --json`: {ok, first_break, steps: [{name, status, entries, diagnosis}]},
    plus spec, answers, decimals, id, name and, per step, asked, blank (and built_on)."""
    import json
    steps = [{"name": s.name, "status": s.status,
              "entries": [{k: v for k, v in vars(e).items() if v is not None} for e in s.entries],
              "diagnosis": s.diagnosis, "asked": s.asked, "blank": s.blank,
              **({"built_on": s.built_on} if s.built_on else {})}
             for s in result.steps]
    return json.dumps({"ok": result.ok, "first_break": result.first_break, "spec": result.spec_source,
                       "answers": result.answers_source, "decimals": result.decimals,
                       "id": result.ident, "name": result.name,
                       "steps": steps}, ensure_ascii=False, indent=1) + "\n"


MARK = {"correct": "✓", "wrong": "✗", "carried": "↪", "missing": "·", "given": "=", "rounded": "≈",
        "slip": "~"}
COUNTED = ("correct", "rounded", "slip", "wrong", "carried", "missing")


def text(result, trace=None, every_entry: bool = False, lang: str = "en") -> str:
    from symblock.grading.lang import blanks, explanation, why, words
    w = words(lang)
    who = ", ".join(x for x in (result.name, result.ident) if x)
    answers = f"{result.answers_source} ({who})" if who else result.answers_source
    lines = [w["header"].format(answers=answers, spec=result.spec_source)]
    if trace is not None and trace.spec.title:
        lines[0] += f"  ({trace.spec.title})"
    if result.decimals is not None:
        lines.append(w["decimals"].format(n=result.decimals))
    lines.append("")
    steps = [s for s in result.steps if s.asked or s.entries or s.status == "given"]
    width = max(len(s.name) for s in steps)
    label = max(len(v) for v in w["status"].values())
    runs = _missing_runs(steps)
    for k, s in enumerate(steps):
        status = w["status"][s.status]
        if k in runs:
            if runs[k]:
                last, n = runs[k]
                lines.append(f"  {MARK['missing']} {status:<{label + 1}} " + w["run"].format(first=s.name, last=last, n=n))
            continue
        note = _note(s, result, w)
        lines.append(f"  {MARK[s.status]} {status:<{label + 1}} {s.name:<{width}}  {note}".rstrip())
        for e in s.entries:
            if e.mark == "blank":
                continue
            if every_entry or e.mark not in ("correct", "carried"):
                exp = e.expected + (f" (= {e.exact})" if _worth_showing(e) else "")
                own = w["own"].format(own=e.own) if e.own else ""
                lines.append("      " + w["entry"].format(row=e.row + 1, col=e.col + 1, given=e.given, expected=exp,
                                                          own=own, mark=w["mark"][e.mark]) + why(e, lang))
        gaps = blanks(s, w)
        if gaps:
            lines.append("      " + gaps)
        for code in s.diagnosis:
            lines.append("      " + w["diagnosis"].format(code=code, explanation=explanation(code, lang)))
        if s.status == "wrong" and not s.diagnosis:
            lines.append("      " + w["no_diagnosis"])
    lines.append("")
    counts = w["sep"].join(w["count"].format(n=result.count(st), status=w["status"][st]) for st in COUNTED
                           if result.count(st))
    if not result.answered:
        lines.append(w["blank"].format(counts=counts))
    elif result.ok:
        lines.append(w["ok"].format(counts=counts))
    else:
        lines.append(w["not_ok"].format(counts=counts, step=result.first_break))
    return "\n".join(lines) + "\n"


def _note(s, result, w) -> str:
    note = {"missing": w["missing"], "given": w["given"], "rounded": w["rounded"], "slip": w["slip"]}.get(s.status, "")
    if s.status == "carried":
        note = w["carried"].format(names=", ".join(s.built_on))
    if s.status == "wrong" and s.name == result.first_break:
        note = w["first_break"]
    if s.status != "carried" and s.built_on and any(e.mark == "carried" for e in s.entries):
        note = " ".join(x for x in (note, w["rests"].format(names=", ".join(s.built_on))) if x)
    if s.blank and s.status != "missing":
        part = w["partial"].format(n=len(s.entries) - s.blank, total=len(s.entries))
        note = f"{note}  ({part})" if note else part
    return note


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
