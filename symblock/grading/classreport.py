"""The views of a graded class (gradebook.Class): the CSV gradebook, the class summary (Markdown
and a short text for the terminal) and one Markdown feedback file per student, in English or
Chinese. Points are printed to 2 decimals (the sums are exact until then)."""
from __future__ import annotations

import csv
import io
from collections import Counter
from fractions import Fraction

from symblock.grading.lang import explanation, why, words

SHOWN_ENTRIES = 6   # wrong entries listed per task in a feedback file


def pts(x: Fraction) -> str:
    from decimal import ROUND_HALF_UP, Decimal
    return str((Decimal(x.numerator) / Decimal(x.denominator)).quantize(Decimal("0.01"), ROUND_HALF_UP))


def gradebook_csv(cls) -> str:
    """name, id, file, status, total, max, then the points of each asked step."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(["name", "id", "file", "status", "total", "max", *cls.asked])
    for g in cls.graded:
        w.writerow([g.name, g.ident, g.file, "graded", pts(g.total), cls.max_total,
                    *(pts(g.scores[s]) for s in cls.asked)])
    for r in cls.rejected:
        w.writerow([r.name, r.ident or "", r.file, "not graded: " + r.reason, "", cls.max_total,
                    *([""] * len(cls.asked))])
    return out.getvalue()


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
           "{mean} of {max}", "task": "task", "points": "points", "mean": "mean", "wrong": "wrong",
           "missing": "blank", "codes": "most frequent diagnoses", "rejected": "Not graded",
           "policy": "Scoring", "none": "—"},
    "zh": {"title": "全班小结", "graded": "已批改 {n} 份，未批改 {r} 份 · 题组 {token} · 平均总分 {mean}/{max}",
           "task": "题目", "points": "分值", "mean": "平均得分", "wrong": "错误比例", "missing": "未答比例",
           "codes": "最常见的诊断", "rejected": "未批改的文件", "policy": "计分规则", "none": "—"},
}


def summary_md(cls, credit, lang: str = "en") -> str:
    t = TEXT[lang]
    mean = sum((g.total for g in cls.graded), Fraction(0)) / (len(cls.graded) or 1)
    lines = [f"# {t['title']}", "", t["graded"].format(n=len(cls.graded), r=len(cls.rejected),
                                                          token=cls.manifest["spec_token"], mean=pts(mean),
                                                          max=cls.max_total), "",
             f"| {t['task']} | {t['points']} | {t['mean']} | {t['wrong']} | {t['missing']} | {t['codes']} |",
             "|---|---|---|---|---|---|"]
    for r in task_stats(cls):
        codes = ", ".join(f"`{c}` ×{k}" for c, k in r["codes"]) or t["none"]
        lines.append(f"| `{r['step']}` | {r['points']} | {pts(r['mean'])} | {r['wrong']:.0%} | "
                     f"{r['missing']:.0%} | {codes} |")
    if cls.rejected:
        lines += ["", f"## {t['rejected']}", ""]
        lines += [f"- `{r.file}` ({r.name}): {r.reason}" for r in cls.rejected]
    lines += ["", f"## {t['policy']}", "", credit.statement(lang), ""]
    return "\n".join(lines)


def summary_text(cls) -> str:
    """A few lines for the terminal: counts, the tasks most often wrong, the files not graded."""
    t = TEXT["en"]
    mean = sum((g.total for g in cls.graded), Fraction(0)) / (len(cls.graded) or 1)
    lines = [t["graded"].format(n=len(cls.graded), r=len(cls.rejected), token=cls.manifest["spec_token"],
                                mean=pts(mean), max=cls.max_total)]
    worst = sorted((r for r in task_stats(cls) if r["wrong"]), key=lambda r: -r["wrong"])[:5]
    for r in worst:
        codes = ", ".join(f"{c} ×{k}" for c, k in r["codes"])
        lines.append(f"  {r['step']:<18} wrong {r['wrong']:.0%}" + (f"  ({codes})" if codes else ""))
    for r in cls.rejected:
        lines.append(f"not graded: {r.file} ({r.name}): {r.reason}")
    return "\n".join(lines) + "\n"


FEEDBACK = {
    "en": {"title": "Feedback for {name}", "sheet": "Worksheet {ident} · {total} of {max} points",
           "task": "task", "status": "status", "points": "points"},
    "zh": {"title": "{name} 的批改反馈", "sheet": "练习 {ident} · 得分 {total}/{max}",
           "task": "题目", "status": "结果", "points": "得分"},
}


def feedback_md(g, cls, credit, lang: str = "en") -> str:
    f, w = FEEDBACK[lang], words(lang)
    lines = [f"# {f['title'].format(name=g.name)}", "",
             f["sheet"].format(ident=g.ident, total=pts(g.total), max=cls.max_total), "",
             f"| {f['task']} | {f['status']} | {f['points']} |", "|---|---|---|"]
    steps = {s.name: s for s in g.result.steps}
    for s in cls.asked:
        lines.append(f"| `{s}` | {w['status'][steps[s].status]} | {pts(g.scores[s])} / {cls.points[s]} |")
    lines.append("")
    for s in cls.asked:
        st = steps[s]
        if st.status not in ("wrong", "slip", "rounded", "carried"):
            continue
        lines.append(f"**`{s}`** — {w['status'][st.status]}")
        if st.status == "carried":
            lines.append(f"- {w['carried'].format(names=', '.join(st.built_on))}")
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
