"""One variant prepared for marking, once: its exact trace, what its exercise asks (and the
points), the items the checker walks and the shapes an answers file may use. `check` makes one
per run; `grade` makes one per variant of a set and marks every answers file of it."""
from __future__ import annotations

from symblock.engine import names
from symblock.grading import answers as answers_mod
from symblock.grading import plan
from symblock.grading.marking import check


class Marker:
    def __init__(self, trace, exercise):
        self.trace, self.spec, self.exercise = trace, trace.spec, exercise
        self.items = plan.items(trace, exercise)   # a block's or a model's (plan: by the spec's form)
        self.shapes = plan.shapes(trace, self.items)
        self.computed = {i.name for i in self.items}
        self.memo: dict = {}   # the truth's printed forms, shared by every file of this variant

    @classmethod
    def for_answers(cls, trace, data, loss: str | None = None, wrt: list[str] | None = None,
                    preset: str | None = None) -> "Marker":
        """The exercise `preset` asks (default: the spec's own), or its backprop exercise when the
        answers give `grad.*` steps."""
        from symblock.exercises import presets
        steps = data.get("steps") if isinstance(data, dict) else None
        grads = isinstance(steps, dict) and any(names.parse(str(k)).grad for k in steps)
        backprop = grads or loss is not None or wrt is not None
        if preset is None and backprop and trace.spec.exercise.get("preset") != "backprop":
            preset = "backprop"
        return cls(trace, presets.choose(trace, preset, loss=loss, wrt=wrt))

    def mark(self, data: dict, source: str, default: answers_mod.Policy | None = None, forms: bool = True):
        """A CheckResult for one answers mapping (answers.read); only asked steps count as missing.
        `forms=False` leaves out the closed forms of right entries (grade's feedback shows none)."""
        return self.mark_answers(self.answers(data, source, default), forms)

    def mark_answers(self, answers: answers_mod.Answers, forms: bool = True):
        """A CheckResult for answers already read against this variant (`answers`)."""
        result = check(self.spec, self.trace, answers, asked=set(self.exercise.ask), items=self.items,
                       memo=self.memo, forms=forms)
        result.student = dict(answers.student)   # student_id, email, ...: for the gradebook
        return result

    def answers(self, data: dict, source: str, default: answers_mod.Policy | None = None) -> answers_mod.Answers:
        """The answers mapping read against this variant's shapes (a model's names normalised)."""
        data = plan.normalise(data, self.spec)
        return answers_mod.from_mapping(data, source, self.shapes, self.computed, default)
