"""How marks become points: the credit of each entry mark, and a task's points.

A task (an asked step) is worth `exercise.points` (default 1), shared equally by its entries. An
entry earns its share times the credit of its mark:

    correct 1 · carried (right from the person's own wrong earlier answer) 1 by default, or what
    --carried gives · rounded (right, but to fewer places than asked) 1 − 1/10 · slip (one unit
    off in the last place) 1/2 · wrong 0 · blank 0

so a blank, an empty cell or a missing row scores 0 for its entries only, and a mistake carried
forward is charged once, where it was made (full credit for what follows from it).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Credit:
    carried: Fraction = Fraction(1)
    rounded: Fraction = Fraction(9, 10)
    slip: Fraction = Fraction(1, 2)

    def of(self, mark: str) -> Fraction:
        return {"correct": Fraction(1), "carried": self.carried, "rounded": self.rounded,
                "slip": self.slip}.get(mark, Fraction(0))

    def task(self, step, points: int) -> Fraction:
        """Points earned on one task from its StepResult (None or no entries: 0)."""
        if step is None or not step.entries:
            return Fraction(0)
        return points * sum((self.of(e.mark) for e in step.entries), Fraction(0)) / len(step.entries)

    def statement(self, lang: str = "en") -> str:
        c, r, s = (_pct(x) for x in (self.carried, self.rounded, self.slip))
        if lang == "zh":
            return (f"每题的分数平均分给它的每个数。正确得全分；由自己前面的错误答案推得正确（误差传递）得 {c}；"
                    f"位数少于要求但正确得 {r}；末位差一个单位（舍入失误）得 {s}；错误或空白得 0。"
                    "错误只在出错的那一步扣分。")
        return (f"Each task's points are shared equally by its entries. A correct entry earns its full share; "
                f"one right from the student's own wrong earlier answer (error carried forward) earns {c}; "
                f"one right but rounded to fewer places than asked {r}; a rounding slip (one unit in the last "
                f"place) {s}; a wrong or blank entry 0. A mistake is charged once, where it was made.")


def _pct(x: Fraction) -> str:
    v = x * 100
    return f"{int(v)}%" if v.denominator == 1 else f"{float(v):.1f}%"


def parse_credit(text: str, flag: str) -> Fraction:
    """A credit from the command line: a number 0..1 (0.5, 1/2) or a percentage (50%)."""
    from symblock.errors import UsageError
    import re
    t = text.strip()
    v = None
    exponent = re.search(r"[eE]\s*([+-]?\d+)", t)
    if len(t) <= 20 and not (exponent and abs(int(exponent.group(1))) > 20):   # 1e999999999: no huge power
        try:
            v = Fraction(t[:-1]) / 100 if t.endswith("%") else Fraction(t)
        except (ValueError, ZeroDivisionError):
            v = None
    if v is None or not 0 <= v <= 1:
        raise UsageError(f"{flag}: expected a credit between 0 and 1 (e.g. 0.5, 1/2 or 50%), got {text!r}")
    return v
