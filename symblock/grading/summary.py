"""The class summary as an instructor reads it after `grade`: summary.md and summary.html.

Both show the same things: the task table of classreport.summary_md, the most common diagnosed
mistakes of each task with how many students made them, the flagged files (identity.py: an ID
another variant fits better, a repeated ID, name or set of answers), and the distributions of the
totals and of each task's points as PNG plots (plots.py) when matplotlib is installed. User text
(names, file names) goes through `md_text` in Markdown and Jinja's autoescape in HTML.
"""
from __future__ import annotations


from symblock.grading.escape import md_text  # noqa: F401  (summary's writers and its callers)
from symblock.grading.lang import explanation

PLOTS = "plots"   # the folder of the PNGs, beside summary.md
SHOWN = 3         # mistakes listed per task

TEXT = {
    "en": {"mistakes": "Most common mistakes", "students": "{k} of {n} students", "flagged": "Flagged files",
           "flagged_note": "graded against their own ID, but a person should look:", "none": "none",
           "plots": "Distributions", "totals": "totals", "tasks": "points per task",
           "no_plots": "No plots: matplotlib is not installed (pip install 'symblock[plot]')."},
    "zh": {"mistakes": "最常见的错误", "students": "{n} 名学生中有 {k} 名", "flagged": "需要核对的文件",
           "flagged_note": "已按各自的 ID 批改，但请人工核对：", "none": "无",
           "plots": "分布", "totals": "总分", "tasks": "各题得分",
           "no_plots": "没有图：未安装 matplotlib（pip install 'symblock[plot]'）。"},
}

def mistakes(cls, lang: str = "en") -> list[dict]:
    """Per asked step with a diagnosed mistake: [{step, codes: [(code, explanation, students)]}]."""
    from symblock.grading.classreport import task_stats
    rows = []
    for r in task_stats(cls):
        codes = [(c, explanation(c, lang), k) for c, k in r["codes"][:SHOWN]]
        if codes:
            rows.append({"step": r["step"], "codes": codes})
    return rows


def flagged(cls, lang: str = "en") -> list[tuple[str, str, list[str]]]:
    """(file, name, [what is in doubt]) of every flagged file."""
    from symblock.grading.identity import describe
    return [(g.file, g.name, [describe(f, lang) for f in g.flags]) for g in cls.graded if g.flags]


def summary_md(cls, credit, lang: str = "en", plots: bool = True) -> str:
    from symblock.grading.classreport import summary_md as table
    t = TEXT[lang]
    lines = [table(cls, credit, lang).rstrip("\n"), "", f"## {t['mistakes']}", ""]
    n = len(cls.graded)
    for row in mistakes(cls, lang):
        lines.append(f"- `{row['step']}`: " + "; ".join(f"`{c}` ({e}): {t['students'].format(k=k, n=n)}"
                                                        for c, e, k in row["codes"]))
    lines += [] if mistakes(cls, lang) else [t["none"]]
    lines += ["", f"## {t['flagged']}", ""]
    lines += [t["flagged_note"], ""] if flagged(cls, lang) else [t["none"]]
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
    from fractions import Fraction

    from symblock.grading import classreport
    mean = sum((g.total for g in cls.graded), Fraction(0)) / (len(cls.graded) or 1)
    t = classreport.TEXT[lang]
    head = t["graded"].format(n=len(cls.graded), r=len(cls.rejected), token=cls.manifest["spec_token"],
                              mean=classreport.pts(mean), max=cls.max_total)
    tasks = [{**r, "mean": classreport.pts(r["mean"]), "wrong": f"{r['wrong']:.0%}", "missing": f"{r['missing']:.0%}"}
             for r in classreport.task_stats(cls)]
    return dict(lang=lang, t=t, s=TEXT[lang], head=head, tasks=tasks, mistakes=mistakes(cls, lang),
                n=len(cls.graded), flagged=flagged(cls, lang), rejected=cls.rejected, policy=credit.statement(lang),
                plots=PLOTS if plots and cls.graded else None, no_plots=not plots)
