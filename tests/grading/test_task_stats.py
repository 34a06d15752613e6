"""The class's task table: worked once for the flags as they stand, and worked again when a flag
that leaves a file out of the shares is added (the summaries, plots and terminal lines each read it)."""
from fractions import Fraction
from types import SimpleNamespace

from symblock.grading.gradebook import Class, Graded
from symblock.grading.students import Flag


def _file(name: str, status: str, points: int) -> Graded:
    step = SimpleNamespace(name="attn.q", status=status, diagnosis=["no_scale"] if status == "wrong" else [],
                           entries=[])
    return Graded(f"{name}.yaml", name, "v.1", SimpleNamespace(steps=[step]), {"attn.q": Fraction(points)})


def test_task_shares_follow_a_flag_added_after_they_were_first_read():
    ana, ben, eli = _file("ana", "correct", 2), _file("ben", "wrong", 0), _file("eli", "wrong", 0)
    cls = Class({"asked": ["attn.q"], "points": {"attn.q": 2}}, [ana, ben, eli], [])
    first = cls.task_stats()[0]
    assert (first["mean"], first["wrong"], first["codes"]) == (Fraction(2, 3), Fraction(2, 3), [("no_scale", 2)])
    assert cls.task_stats() is cls.task_stats()          # read again: the same rows, not worked again
    eli.flags.append(Flag("fits", "v.2"))                # another variant fits Eli's file better: left out
    again = cls.task_stats()[0]
    assert (again["mean"], again["wrong"], again["codes"]) == (Fraction(1), Fraction(1, 2), [("no_scale", 1)])
    ben.flags.append(Flag("same_name", "ana.yaml"))      # a flag that keeps the file in the shares
    assert cls.task_stats()[0]["wrong"] == Fraction(1, 2)
