"""`symblock stress`'s printed report: a step's range rounds as the sheets do (half away from
zero: 81/16 = 5.0625 is 5.063, not a float's 5.062) and an estimate of one length reads "43 min"."""
from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

from symblock.engine import exact
from symblock.exercises.stress import Report, StepStats, text


def _report(entries, minutes=(43, 43)) -> Report:
    stats = StepStats("norm1.var")
    stats.add(SimpleNamespace(rows=[[exact.real(Fraction(e)) for e in entries]]))
    return Report(source="spec.yaml", first_seed=1, n=1, steps={"norm1.var": stats}, minutes=minutes)


def _row(printed: str) -> list[str]:
    return next(line for line in printed.splitlines() if line.startswith("norm1.var ")).split()


def test_a_tie_rounds_half_away_from_zero_as_on_the_sheets():
    # worked by hand: -81/16 = -5.0625 -> -5.063; 81/16 -> 5.063; 1/3 -> 0.3333; 12345/2 -> 6173 (6172.5)
    assert _row(text(_report(["-81/16", "81/16"])))[2:4] == ["-5.063", "5.063"]
    assert _row(text(_report(["1/3", "12345/2"])))[2:4] == ["0.3333", "6173"]


def test_an_estimate_of_one_length_is_printed_once():
    assert "time by hand (presets.estimate): 43 min;" in text(_report(["1"]))
    assert "time by hand (presets.estimate): 40–43 min;" in text(_report(["1"], (40, 43)))
