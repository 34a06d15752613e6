"""The views of a graded class (gradebook.Class): the class summary (Markdown and a short text
for the terminal) and one Markdown feedback file per student, in English or Chinese (the gradebook
CSV is lms.py). Each task's points are printed to 2 decimals, and a printed total is the sum of its
printed task columns (so a gradebook row adds up); the exact sums stay in gradebook.Graded."""
from __future__ import annotations

from collections import Counter
from fractions import Fraction

from symblock.grading.escape import md_text, one_line
from symblock.grading.lang import blanks, explanation, why, words

SHOWN_ENTRIES = 6   # wrong entries listed per task in a feedback file


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


def task_stats(cls) -> list[dict]:
    """Per asked step: mean points, share of students wrong / missing, most frequent diagnoses."""
    rows = []
    for s in cls.asked:
        steps = [next(x for x in g.result.steps if x.name == s) for g in cls.graded]
        n = len(steps) or 1
        codes = Counter(c for x in steps if x.status == "wrong" for c in x.diagnosis)
        rows.append({"step": s, "points": cls.points[s],
                     "mean": sum((g.scores[s] for g in cls.graded), Fraction(0)) / n,
                     "wrong": sum(x.status == "wrong" for x in steps) / n,
                     "missing": sum(x.status == "missing" for x in steps) / n,
                     "codes": codes.most_common(3)})
    return rows


TEXT = {
    "en": {"title": "Class summary", "graded": "{n} graded, {r} not graded · set {token} · mean total "
           "{mean} of {max}", "graded_none": "no file graded, {r} not graded · set {token}", "task": "task", "points": "points", "mean": "mean", "wrong": "wrong",
           "missing": "blank", "codes": "most frequent diagnoses", "rejected": "Not graded",
           "policy": "Scoring", "none": "—"},
    "zh": {"title": "全班小结", "graded": "已批改 {n} 份，未批改 {r} 份 · 题组 {token} · 平均总分 {mean}/{max}",
           "graded_none": "没有批改任何文件，未批改 {r} 份 · 题组 {token}",
           "task": "题目", "points": "分值", "mean": "平均得分", "wrong": "错误比例", "missing": "未答比例",
           "codes": "最常见的诊断", "rejected": "未批改的文件", "policy": "计分规则", "none": "—"},
}


def summary_md(cls, credit, lang: str = "en") -> str:
    t = TEXT[lang]
    lines = [f"# {t['title']}", "", _mean_line(cls, t), "",
             f"| {t['task']} | {t['points']} | {t['mean']} | {t['wrong']} | {t['missing']} | {t['codes']} |",
             "|---|---|---|---|---|---|"]
    for r in task_stats(cls):
        codes = ", ".join(f"`{c}` ×{k}" for c, k in r["codes"]) or t["none"]
        shares = (pts(r["mean"]), f"{r['wrong']:.0%}", f"{r['missing']:.0%}") if cls.graded else (t["none"],) * 3
        lines.append(f"| `{r['step']}` | {r['points']} | {' | '.join(shares)} | {codes} |")
    if cls.rejected:
        lines += ["", f"## {t['rejected']}", ""]
        lines += [f"- {md_text(r.file)} ({md_text(r.name)}): {md_text(r.reason)}" for r in cls.rejected]
    lines += ["", f"## {t['policy']}", "", credit.statement(lang), ""]
    return "\n".join(lines)


def summary_text(cls) -> str:
    """A few lines for the terminal: counts, the tasks most often wrong, the files not graded."""
    lines = [_mean_line(cls, TEXT["en"])]
    worst = sorted((r for r in task_stats(cls) if r["wrong"]), key=lambda r: -r["wrong"])[:5]
    for r in worst:
        codes = ", ".join(f"{c} ×{k}" for c, k in r["codes"])
        lines.append(f"  {r['step']:<18} wrong {r['wrong']:.0%}" + (f"  ({codes})" if codes else ""))
    for r in cls.rejected:
        lines.append(one_line(f"not graded: {r.file} ({r.name}): {r.reason}"))
    return "\n".join(lines) + "\n"


def _status(step, w) -> str:
    """A task's status word, with "partly blank" when some (not all) of its entries are blank."""
    word = w["status"][step.status]
    return word + w["sep"] + w["partly_blank"] if blanks(step, w) else word


FEEDBACK = {
    "en": {"title": "Feedback for {name}", "sheet": "Worksheet {ident} · {total} of {max} points",
           "task": "task", "status": "status", "points": "points"},
    "zh": {"title": "{name} 的批改反馈", "sheet": "练习 {ident} · 得分 {total}/{max}",
           "task": "题目", "status": "结果", "points": "得分"},
}


def feedback_md(g, cls, credit, lang: str = "en") -> str:
    f, w = FEEDBACK[lang], words(lang)
    lines = [f"# {f['title'].format(name=md_text(g.name))}", "",
             f["sheet"].format(ident=md_text(g.ident), total=shown_total(g, cls), max=cls.max_total), "",
             f"| {f['task']} | {f['status']} | {f['points']} |", "|---|---|---|"]
    steps = {s.name: s for s in g.result.steps}
    for s in cls.asked:
        lines.append(f"| `{s}` | {_status(steps[s], w)} | {pts(g.scores[s])} / {cls.points[s]} |")
    lines.append("")
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
        if st.status == "wrong" and not st.diagnosis:
            lines.append(f"- {w['no_diagnosis']}")
        if st.status == "rounded":
            lines.append(f"- {w['rounded']}")
        shown = [e for e in st.entries if e.mark in ("wrong", "slip")][:SHOWN_ENTRIES]
        for e in shown:
            own = w["own"].format(own=e.own) if e.own else ""
            lines.append("- " + w["entry"].format(row=e.row + 1, col=e.col + 1, given=e.given, expected=e.expected,
                                                  own=own, mark=w["mark"][e.mark]).replace("  ", " ")
                         + why(e, lang).replace("  ", " "))
        lines.append("")
    lines += [credit.statement(lang), ""]
    return "\n".join(lines)
