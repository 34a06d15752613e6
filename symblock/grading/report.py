"""The printed reports of checking and grading: one place for each.

* `text` / `to_json`: what `check` prints for one answers file (statuses per step, the entries that
  are off, the mistake that reproduces them), in English or Chinese;
* the class views of `grade`: the Markdown task table and feedback (user text escaped by `md_text`,
  one line on the terminal by `one_line`), `summary.md` / `summary.html` (the most common
  mistakes, the flagged files, the points policy), and the PNG plots of totals and tasks when
  matplotlib is installed.
The gradebook CSVs are written in gradebook.py.
"""
from __future__ import annotations

import io
import re
from collections import Counter
from fractions import Fraction
from typing import TYPE_CHECKING

from symblock.grading.lang import (FEEDBACK, SUMMARY_TEXT, TABLE_TEXT, blanks, counted_from, describe, explanation,
                                   expected_text, flag_note, left_out, partly_blank, percent, why, words)

if TYPE_CHECKING:
    from symblock.engine.block import Trace
    from symblock.grading.marking import StepResult


# User text (names, file names, IDs, reasons) as plain text in the Markdown outputs of `grade`.


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~&$])")


def md_text(text) -> str:
    """User text as plain Markdown text inside a line: every character Markdown (emphasis, code,
    links, tables, headings) or HTML could read as markup is escaped; line breaks become spaces."""
    return " ".join(_MD_SPECIAL.sub(r"\\\1", str(text)).splitlines())


def one_line(text) -> str:
    """User text on one terminal line: line breaks and other control characters (an escape
    sequence that would repaint the terminal) become spaces."""
    return "".join(" " if (c < " " or c == "\x7f") else c for c in " ".join(str(text).splitlines()))


# The class's distributions as PNG: the totals, and each task's points in small panels.
#
# matplotlib is an optional extra (`pip install 'symblock[plot]'`): `available()` says whether it is
# there, and the summary says so and goes on without plots. The figures are drawn with the Agg backend
# on a Figure of its own (no pyplot state, no user style), at a fixed size, with no software name or
# date in the PNG, so the same class gives the same bytes on every run.


SIZE, DPI = (6.4, 3.2), 100
COLUMNS = 4        # task panels per row
BINS = 10          # bins of a task's points
PANEL, GAP = (2.4, 1.9), 0.55   # inches per task panel, and between panels
PNGS = ("totals.png", "tasks.png")
STYLE = {"font.family": "DejaVu Sans", "font.size": 9, "svg.hashsalt": "symblock", "path.simplify": False}


def available() -> bool:
    """Whether matplotlib is installed: found, not imported (`grade --jobs` draws in another process)."""
    from importlib.util import find_spec
    return find_spec("matplotlib") is not None


def pngs(cls) -> dict[str, bytes]:
    """{file name: PNG bytes}: totals.png and tasks.png (none when nothing was graded)."""
    return {name: png(plot_data(cls), name) for name in PNGS} if cls.graded else {}


def plot_data(cls) -> tuple:
    """What the plots show, small enough to send to the process that draws (`grade --jobs`): every
    graded file's total, as the mean total counts them, and each task's points over the files the task
    table counts (`Class.counted`: not another variant's or a blank template's)."""
    return ([float(g.total) for g in cls.graded], cls.max_total,
            {s: [float(g.scores[s]) for g in cls.counted] for s in cls.asked}, cls.points)


def warm() -> None:
    """Import what drawing takes (a third of a second), ahead of the data (`grade --jobs`)."""
    import matplotlib.backends.backend_agg, matplotlib.figure  # noqa: F401, E401


def png(data: tuple, name: str) -> bytes:
    """One of PNGS of `plot_data`, on matplotlib's defaults, not the user's matplotlibrc."""
    import matplotlib
    with matplotlib.rc_context():   # data: (totals, most points, each task's scores, its points)
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(STYLE)
        return _totals(*data[:2]) if name == "totals.png" else _tasks(*data[2:])


def _figure(size, inches: tuple, rows: int = 1, columns: int = 1):
    """A figure with margins (left, right, bottom, top) and GAP between panels in inches, fixed:
    `tight_layout` drew every text once more only to measure it (a third of tasks.png's time)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=size, dpi=DPI)
    FigureCanvasAgg(fig)
    (w, h), (left, right, bottom, top) = size, inches   # room for y tick labels of up to four digits
    fig.subplots_adjust(left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h,
                        wspace=GAP / ((w - left - right + GAP) / columns - GAP),
                        hspace=GAP / ((h - bottom - top + GAP) / rows - GAP))
    return fig


def _png(fig) -> bytes:
    fig.savefig(out := io.BytesIO(), format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()


def _totals(totals: list[float], max_total: int) -> bytes:
    fig = _figure(SIZE, (0.75, 0.2, 0.55, 0.15))
    ax = fig.add_subplot()
    step = max(1, max_total // 20)
    edges = sorted({*range(0, max_total, step), max_total})   # the last bin holds the full marks
    ax.hist(totals, bins=edges, color="#4c72b0", edgecolor="white")
    ax.set(xlim=(0, max_total), xlabel=f"total (of {max_total})", ylabel="files")
    ax.yaxis.get_major_locator().set_params(integer=True)
    return _png(fig)


def _tasks(tasks: dict[str, list[float]], points: dict[str, int]) -> bytes:
    rows = -(-len(tasks) // COLUMNS)
    fig = _figure((PANEL[0] * COLUMNS, PANEL[1] * rows), (0.5, 0.25, 0.3, 0.25), rows, COLUMNS)
    for k, (step, got) in enumerate(tasks.items()):
        ax = fig.add_subplot(rows, COLUMNS, k + 1)
        top = points[step]
        ax.hist(got, bins=[top * b / BINS for b in range(BINS + 1)], color="#55a868", edgecolor="white")
        ax.set(title=step, xlim=(0, top), xticks=[top * q / 4 for q in range(5)])   # quarters of its points
        ax.title.set_fontsize(9)
        ax.yaxis.get_major_locator().set_params(integer=True)
    return _png(fig)


# The views of a graded class (gradebook.Class): the class summary (Markdown and a short text
# for the terminal) and one Markdown feedback file per student, in English or Chinese (the gradebook
# CSV is in gradebook.py). Each task's points are printed to 2 decimals, and a printed total is the sum of its
# printed task columns (so a gradebook row adds up); the exact sums stay in gradebook.Graded.


SHOWN_ENTRIES = 6   # docked entries (wrong, slip, rounded) listed per task in a feedback file


def pts(x: Fraction) -> str:
    from decimal import ROUND_HALF_UP, Decimal
    return str((Decimal(x.numerator) / Decimal(x.denominator)).quantize(Decimal("0.01"), ROUND_HALF_UP))


def shown_total(g, cls) -> str:
    """The total as printed: the sum of the task points as printed (each rounded to 2 decimals)."""
    from decimal import Decimal
    return str(sum((Decimal(pts(g.scores[s])) for s in cls.asked), Decimal("0.00")))


def _mean_line(cls, t) -> str:
    """The summary's first line: counts and the mean of the printed totals (none when nothing was graded)."""
    if not cls.graded:
        return t["graded_none"].format(r=len(cls.rejected), token=cls.manifest["spec_token"])
    mean = sum((Fraction(shown_total(g, cls)) for g in cls.graded), Fraction(0)) / len(cls.graded)
    return t["graded"].format(n=len(cls.graded), r=len(cls.rejected), token=cls.manifest["spec_token"],
                              mean=pts(mean), max=cls.max_total)


def task_table_md(cls, credit, lang: str = "en") -> str:
    t = TABLE_TEXT[lang]
    lines = [f"# {t['title']}", "", _mean_line(cls, t), "",
             f"| {t['task']} | {t['points']} | {t['mean']} | {t['wrong']} | {t['missing']} | {t['codes']} |",
             "|---|---|---|---|---|---|"]
    for r in cls.task_stats():
        codes = ", ".join(f"`{c}` ×{k}" for c, k in r["codes"]) or t["none"]
        shares = (pts(r["mean"]), percent(r["wrong"]), percent(r["missing"])) if cls.counted else (t["none"],) * 3
        lines.append(f"| `{r['step']}` | {r['points']} | {' | '.join(shares)} | {codes} |")
    lines += ["", md_text(left_out(cls, lang))] if left_out(cls, lang) else []
    if cls.rejected:
        lines += ["", f"## {t['rejected']}", ""]
        lines += [f"- {md_text(r.file)} ({md_text(r.name)}): {md_text(r.said(lang))}" for r in cls.rejected]
    lines += ["", f"## {t['policy']}", "", credit.statement(lang), ""]
    return "\n".join(lines)


def summary_text(cls) -> str:
    """A few lines for the terminal: counts, the tasks most often wrong, the files not graded."""
    lines = [_mean_line(cls, TABLE_TEXT["en"])]
    worst = sorted((r for r in cls.task_stats() if r["wrong"]), key=lambda r: -r["wrong"])[:5]
    for r in worst:
        codes = ", ".join(f"{c} ×{k}" for c, k in r["codes"])
        lines.append(f"  {r['step']:<18} wrong {percent(r['wrong'])}" + (f"  ({codes})" if codes else ""))
    if k := len(cls.graded) - len(cls.counted):   # as the summaries' note (lang.left_out)
        lines.append(f"  (not counted in these shares: {k} flagged file{'s' * (k != 1)}: another variant fits better, "
                     "or nothing answered)")
    for r in cls.rejected:
        lines.append(one_line(f"not graded: {r.file} ({r.name}): {r.reason}"))
    return "\n".join(lines) + "\n"


def _status(step: StepResult, w) -> str:
    """A task's status word, with "partly blank" when some (not all) of its entries are blank."""
    word = w["status"][step.status]
    return word + w["sep"] + w["partly_blank"] if blanks(step, w) else word


def feedback_md(g, cls, credit, lang: str = "en") -> str:
    f, w = FEEDBACK[lang], words(lang)
    lines = [f"# {f['title'].format(name=md_text(g.name))}", "",
             f["sheet"].format(ident=md_text(g.ident), total=shown_total(g, cls), max=cls.max_total), "",
             *(line for fl in g.flags if fl.kind == "fits"   # an ID in doubt (other students' flags stay private)
               for line in (f["fits"].format(why=describe(fl, lang), ident=md_text(g.ident)), "")),
             f"| {f['task']} | {f['status']} | {f['points']} |", "|---|---|---|"]
    steps = {s.name: s for s in g.result.steps}
    for s in cls.asked:
        lines.append(f"| `{s}` | {_status(steps[s], w)} | {pts(g.scores[s])} / {cls.points[s]} |")
    lines.append("")
    if g.result.overruled:
        lines += [w["overruled"].format(n=cls.manifest["decimals"], keys=", ".join(f"`{k}`" for k in g.result.overruled)), ""]
    cited = False   # whether a line names an entry by its row and column
    for s in cls.asked:
        st = steps[s]
        gaps = blanks(st, w)
        if st.status not in ("wrong", "slip", "rounded", "carried") and not gaps:
            continue
        lines.append(f"**`{s}`** — {_status(st, w)}")
        if gaps:
            lines.append(f"- {gaps}")
        if st.status == "carried":
            lines.append(f"- {w['carried'].format(names=', '.join(st.built_on))}")
        elif st.built_on and any(e.mark == "carried" for e in st.entries):
            lines.append(f"- {w['rests'].format(names=', '.join(st.built_on))}")
        for code in st.diagnosis:
            lines.append(f"- {w['diagnosis'].format(code=code, explanation=explanation(code, lang))}")
        if st.status == "wrong" and not st.diagnosis and any(e.mark == "wrong" and e.reason is None for e in st.entries):
            lines.append(f"- {w['no_diagnosis']}")   # numbers no mistake gives (not text that is no number)
        if st.status == "rounded":
            lines.append(f"- {w['rounded']}")
        reshaped = _reshaped(st)
        if reshaped is not None:
            lines.append("- " + md_text(w["reason"]["shape"].format(text=reshaped.given)))
        docked = [e for e in st.entries if e.mark in ("wrong", "slip")] + [e for e in st.entries if e.mark == "rounded"]
        shown = [] if reshaped is not None else docked[:SHOWN_ENTRIES]   # a rounded one never hides a wrong one
        cited = cited or bool(shown or gaps)
        for e in shown:
            own = w["own"].format(own=e.own) if e.own else ""
            lines.append("- " + w["entry"].format(row=e.row + 1, col=e.col + 1, given=md_text(e.given),
                                                  expected=md_text(expected_text(e, w, _worth_showing(e))), own=own, mark=w["mark"][e.mark]).replace("  ", " ")
                         + md_text(why(e, lang)).replace("  ", " "))
        lines.append("")
    lines += [*counted_from(g.result.indexed, cited, w, ""), credit.statement(lang), ""]
    return "\n".join(lines)


# What `check` prints for one answers file: JSON, or text in English or Chinese.

def to_json(result) -> str:
    """`check --json`: {ok, first_break, steps: [{name, status, entries, diagnosis}]},
    plus spec, answers, decimals, id, name and, per step, asked, blank (and built_on). A step's
    status is the one `check` marks it with: `partly_blank` (◐) for an answered step with blank
    entries that is not wrong (its entries' marks say how the answered ones fare)."""
    import json
    steps = [{"name": s.name, "status": "partly_blank" if _shown(s) == "partly" else s.status,
              "entries": [{k: v for k, v in vars(e).items() if v is not None} for e in s.entries],
              "diagnosis": s.diagnosis, "asked": s.asked, "blank": s.blank,
              **({"built_on": s.built_on} if s.built_on else {})}
             for s in result.steps]
    return json.dumps({"ok": result.ok, "first_break": result.first_break, "spec": result.spec_source,
                       "answers": result.answers_source, "decimals": result.decimals,
                       "id": result.ident, "name": result.name,
                       "steps": steps}, ensure_ascii=False, indent=1) + "\n"


MARK = {"correct": "✓", "wrong": "✗", "carried": "↪", "missing": "·", "given": "=", "rounded": "≈",
        "slip": "~", "partly": "◐"}
COUNTED = ("correct", "rounded", "slip", "wrong", "carried", "partly", "missing")


def _shown(s) -> str:
    """A step's status as `check` marks and counts it: "partly" (◐, never ✓) for an answered step with
    blank entries that is not wrong (a wrong one stays ✗, its note saying how many are answered)."""
    return "partly" if s.status != "wrong" and partly_blank(s) else s.status


def text(result, trace: Trace | None=None, every_entry: bool = False, lang: str = "en") -> str:
    w = words(lang)
    who = ", ".join(x for x in (result.name, result.ident) if x)
    answers = f"{result.answers_source} ({who})" if who else result.answers_source
    lines = [w["header"].format(answers=answers, spec=result.spec_source)]
    if trace is not None and trace.spec.title:
        lines[0] += f"  ({trace.spec.title})"
    if result.decimals is not None:
        lines.append(w["decimals"].format(n=result.decimals))
    if result.overruled:
        lines.append(w["overruled"].format(n=result.decimals, keys=", ".join(result.overruled)))
    lines.append("")
    steps = [s for s in result.steps if s.asked or s.entries or s.status == "given"]
    width = max(len(s.name) for s in steps)
    label = max(len(v) for v in w["status"].values())
    runs = _missing_runs(steps)
    cited = False   # whether a line names an entry by its row and column
    for k, s in enumerate(steps):
        status = w["status"][s.status]
        if k in runs:
            if runs[k]:
                last, n = runs[k]
                lines.append(f"  {MARK['missing']} {status:<{label + 1}} " + w["run"].format(first=s.name, last=last, n=n))
            continue
        note = _note(s, result, w)
        lines.append(f"  {MARK[_shown(s)]} {status:<{label + 1}} {s.name:<{width}}  {note}".rstrip())
        reshaped = _reshaped(s)
        if reshaped is not None:
            lines.append("      " + w["reason"]["shape"].format(text=reshaped.given))
        for e in s.entries:
            if e.mark == "blank" or reshaped is not None:
                continue
            if every_entry or e.mark not in ("correct", "carried"):
                exp = expected_text(e, w, _worth_showing(e))
                own = w["own"].format(own=e.own) if e.own else ""
                lines.append("      " + w["entry"].format(row=e.row + 1, col=e.col + 1, given=e.given, expected=exp,
                                                          own=own, mark=w["mark"][e.mark]) + why(e, lang))
                cited = True
        gaps = blanks(s, w)
        if gaps:
            lines.append("      " + gaps)
            cited = True
        fills = [e.given for e in s.entries if e.note == "mask_fill"]
        if fills:
            lines.append("      " + w["mask_fill" if len(fills) == 1 else "mask_fills"].format(given=fills[0], n=len(fills)))
        for code in s.diagnosis:
            lines.append("      " + w["diagnosis"].format(code=code, explanation=explanation(code, lang)))
        if s.status == "wrong" and not s.diagnosis and any(e.mark == "wrong" and e.reason is None for e in s.entries):
            lines.append("      " + w["no_diagnosis"])
    lines += [*counted_from(result.indexed, cited, w), ""]
    shown = Counter(_shown(s) for s in result.steps if s.asked or s.status != "missing")   # as result.count
    counts = w["sep"].join(w["count"].format(n=shown[st], status=w["status"].get(st, w["partly_blank"]))
                           for st in COUNTED if shown[st])
    if not result.answered:
        lines.append(w["blank"].format(counts=counts))
    elif result.first_break is None:   # nothing wrong; an asked step still missing, or an answered one with blank entries, is not "OK" yet
        gaps = sum(s.blank for s in steps if s.status != "missing")
        key = "ok_so_far" if result.count("missing") else "ok_blank" if gaps == 1 else "ok_blanks" if gaps else "ok"
        lines.append(w[key].format(counts=counts, n=gaps))
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


def _reshaped(step):
    """The first entry of a step written as a matrix of another shape (every entry is wrong for it,
    and one line says so), else None."""
    first = step.entries[0] if step.entries else None
    return first if first is not None and getattr(first, "reason", None) == "shape" else None


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


# The class summary as an instructor reads it after `grade`: summary.md and summary.html.
#
# Both show the same things: the task table of task_table_md, the most common diagnosed
# mistakes of each task with how many students made them, the flagged files (students.flag: an ID
# another variant fits better, a repeated ID, name or set of answers), and the distributions of the
# totals and of each task's points as PNG plots (above) when matplotlib is installed. User text
# (names, file names) goes through `md_text` in Markdown and Jinja's autoescape in HTML.


PLOTS = "plots"   # the folder of the PNGs, beside summary.md
SHOWN = 3         # mistakes listed per task


def mistakes(cls, lang: str = "en") -> list[dict]:
    """Per asked step with a diagnosed mistake: [{step, codes: [(code, explanation, students)]}]."""
    rows = []
    for r in cls.task_stats():
        codes = [(c, explanation(c, lang), k) for c, k in r["codes"][:SHOWN]]
        if codes:
            rows.append({"step": r["step"], "codes": codes})
    return rows


def flagged(cls, lang: str = "en") -> list[tuple[str, str, list[str]]]:
    """(file, name, [what is in doubt]) of every flagged file: the graded, then those not graded."""
    return [(g.file, g.name, [describe(f, lang) for f in g.flags]) for g in [*cls.graded, *cls.rejected] if g.flags]


def summary_md(cls, credit, lang: str = "en", plots: bool = True) -> str:
    t = SUMMARY_TEXT[lang]
    lines = [task_table_md(cls, credit, lang).rstrip("\n"), "", f"## {t['mistakes']}", ""]
    n = len(cls.counted)
    for row in mistakes(cls, lang):
        lines.append(f"- `{row['step']}`: " + "; ".join(f"`{c}` ({e}): {t['students'].format(k=k, n=n)}"
                                                        for c, e, k in row["codes"]))
    lines += [] if mistakes(cls, lang) else [t["none"]]
    lines += ["", f"## {t['flagged']}", ""]
    lines += [t[flag_note(cls)], ""] if flagged(cls, lang) else [t["none"]]
    lines += [f"- {md_text(f)} ({md_text(name)}): " + "; ".join(md_text(w) for w in why)
              for f, name, why in flagged(cls, lang)]
    lines += ["", f"## {t['plots']}", ""]
    if not plots:
        lines.append(t["no_plots"])
    elif cls.graded:
        lines += [f"![{t['totals']}]({PLOTS}/totals.png)", "", f"![{t['tasks']}]({PLOTS}/tasks.png)"]
    return "\n".join(lines) + "\n"


def html_context(cls, credit, lang: str = "en", plots: bool = True) -> dict:
    """What templates/summary.html.j2 shows: the same summary as one HTML page (rendered with
    autoescape by the caller, sheets.render's environment: no user text becomes markup)."""
    t = TABLE_TEXT[lang]
    head = _mean_line(cls, t)   # the Markdown summary's line: the mean of the printed totals
    tasks = [{**r, **({"mean": pts(r["mean"]), "wrong": percent(r["wrong"]), "missing": percent(r["missing"])}
                      if cls.counted else dict.fromkeys(("mean", "wrong", "missing"), t["none"]))}   # as task_table_md
             for r in cls.task_stats()]
    return dict(lang=lang, t=t, s=SUMMARY_TEXT[lang], head=head, tasks=tasks, mistakes=mistakes(cls, lang),
                n=len(cls.counted), left_out=left_out(cls, lang), flagged=flagged(cls, lang), rejected=cls.rejected,
                policy=credit.statement(lang), plots=PLOTS if plots and cls.graded else None, no_plots=not plots,
                flag_note=SUMMARY_TEXT[lang][flag_note(cls)])
