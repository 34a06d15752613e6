"""One exercise variant: its ID, spec, exact trace and exercise (asked and given steps, points and
the asked answers), built once by `build` and handed to the sheets, stress, the manifest, check and
grade, so that what a variant asks is decided in one place and never chosen again.

A variant is drawn from a spec and a seed (`draw`, `draw_set`, `rebuild` from an ID; IDs and reading
are variants.py); a set's manifest stores each variant's exercise as it was (`record`) and `build`
takes that record back instead of choosing, so a later generator cannot change how the set grades.
Whether the variant is one block or a tiny GPT (the decoder sheet) is decided here once (`rules`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Mapping

from symblock.engine import balls, exact
from symblock.engine.numbers import closed_tree
from symblock.errors import SpecError
from symblock.exercises import decoder, presets, variants
from symblock.exercises.presets import Exercise


@dataclass(frozen=True)
class Options:
    """What the command line chooses of an exercise; None: the spec's own `exercise:` section."""
    preset: str | None = None
    loss: str | None = None
    wrt: tuple[str, ...] | None = None

    @classmethod
    def of(cls, preset=None, loss=None, wrt=None) -> "Options":
        return cls(preset, loss, None if wrt is None else tuple(wrt))

    @classmethod
    def for_answers(cls, spec, data, loss=None, wrt=None, preset=None) -> "Options":
        """The exercise an answers mapping is checked against: `preset` (default: the spec's own),
        or the backprop exercise when the answers give `grad.*` steps (or --loss / --wrt)."""
        from symblock.engine import names
        steps = data.get("steps") if isinstance(data, dict) else None
        grads = isinstance(steps, dict) and any(names.parse(str(k)).grad for k in steps)
        if preset is None and (grads or loss is not None or wrt is not None) \
                and spec.exercise.get("preset") != "backprop":
            preset = "backprop"
        return cls.of(preset, loss, wrt)


@dataclass(frozen=True)
class Variant:
    ident: str
    spec: Any
    trace: Any
    exercise: Exercise
    answers: Mapping[str, Any]          # asked step -> its exact answer (a Mat), in asked order
    options: Options = field(default_factory=Options)

    @property
    def ask(self) -> tuple[str, ...]:
        return self.exercise.ask

    @property
    def given(self) -> tuple[str, ...]:
        return self.exercise.data_steps

    @property
    def points(self) -> dict:
        return self.exercise.points

    @property
    def model(self) -> bool:
        """A tiny GPT's decoding step (the decoder sheet), not one block."""
        return rules(self.spec) is MODEL

    @property
    def shapes(self) -> dict[str, tuple[int, int]]:
        return {name: value.shape for name, value in self.answers.items()}

    @cached_property
    def varied(self) -> dict:
        """The asked answers the set's variety guarantee holds to: a conceptual task (the same for
        all) and a categorical one (a token of the vocabulary) are left out."""
        out = {*self.exercise.extra, *self.exercise.categorical}
        return {n: v for n, v in self.answers.items() if n not in out}


def build(ident: str, trace, options: Options | None = None, stored: Mapping | None = None) -> Variant:
    """The variant of `trace` named `ident`: its exercise chosen once from the spec's `exercise:`
    section and `options`, or, given `stored` (a manifest's `record`), taken back as it was."""
    options = options or Options()
    if stored is not None:
        exercise, answers = restore(trace, stored)
    else:
        exercise = rules(trace.spec).choose(trace, options)
        answers = {name: exercise.answer(trace, name) for name in exercise.ask}
    return Variant(ident, trace.spec, trace, exercise, answers, options)


# ---------------------------------------------------------------- block or model, decided once

class _Block:
    @staticmethod
    def choose(trace, o: Options) -> Exercise:
        return presets.choose(trace, o.preset, o.loss, None if o.wrt is None else list(o.wrt))

    @staticmethod
    def unusable(spec) -> bool:
        return False

    @staticmethod
    def problem(trace) -> str | None:
        return presets.tiles_problem(trace)   # key tiles whose rescaling would leave no trace

    @staticmethod
    def key(spec) -> tuple:
        return tuple(sorted((k, tuple(v)) for k, v in spec.params.items())), tuple(spec.X or ())


class _Model:
    @staticmethod
    def choose(trace, o: Options) -> Exercise:
        return Exercise(**decoder.choose(trace, o.preset))

    @staticmethod
    def unusable(spec) -> bool:
        return decoder.prefilter(spec) is not None   # most seeds: turned down without an exact forward

    problem = staticmethod(decoder.problem)
    key = staticmethod(decoder.variant_key)


BLOCK, MODEL = _Block, _Model


def rules(spec):
    """What differs between a block's variant and a model's: how its exercise is chosen, which
    draws are usable, and which numbers tell two variants apart."""
    return {"block": BLOCK, "model": MODEL}[spec.form]


# ---------------------------------------------------------------- drawing

def draw(data: dict, source: str, seed: int):
    """One draw: (spec, trace) for `seed`, or None when it is unusable (e.g. a row with zero
    variance and ε = 0, or a model whose decoding step is no hand exercise)."""
    from symblock.engine.model import forward_any as forward
    spec, trace = variants.drawn_with_seed(data, source, seed)   # the generator's trace, when it worked one
    family = rules(spec)
    if family.unusable(spec):
        return None
    try:
        trace = trace if trace is not None else forward(spec)
    except SpecError as e:
        if e.where.startswith(("dims", "random")):  # random.*: a constraint no draw can meet
            raise
        return None
    if family.problem(trace):
        return None
    return spec, trace


def key(spec) -> tuple:
    """The drawn numbers of a variant (equal keys: the same exercise)."""
    return rules(spec).key(spec)


def rebuild(ident: str, spec_arg: str | None, options: Options | None = None, flag: str = "--id",
            overrides: dict | None = None) -> Variant:
    """The variant a worksheet ID names (`spec_arg`: the spec file, needed for a file's ID); the
    same draw as `worksheet --variants` made, with the same `overrides` (random-section flags)."""
    return build(ident, redraw(ident, spec_arg, flag, overrides), options)


def is_built_in_id(text: str) -> bool:
    """Whether SPEC is no file but the ID of a variant of a built-in example or difficulty preset
    (preset-medium-v2.7): `forward`, `verify` and `symblock.load` take one as they take a spec."""
    from pathlib import Path
    from symblock.errors import UsageError
    if variants.split_id(text)[1] is None or Path(text).exists():
        return False
    try:
        variants.parse_id(text, None, "SPEC")   # the one reader of IDs: built-in tokens, generator versions
    except UsageError:
        return False
    return True


def spec_of_id(ident: str):
    """The spec of the variant a built-in ID names, its draws made (`redraw` without the forward)."""
    spec_arg, seed = variants.parse_id(ident, None, "SPEC")
    data, source = variants.read(spec_arg, variants.id_flags(ident, spec_arg, None))
    if seed is None:
        from symblock.exercises.generate import from_mapping
        return from_mapping(data, source)
    return variants.drawn_with_seed(data, source, seed)[0]


def redraw(ident: str, spec_arg: str | None, flag: str = "--id", overrides: dict | None = None):
    """The trace of the variant a worksheet ID names (`rebuild` without the exercise, for a caller
    that reads the exercise options from the spec: `check`)."""
    from symblock.engine.model import forward_any as forward
    spec_arg, seed = variants.parse_id(ident, spec_arg, flag)
    overrides = variants.id_flags(ident, spec_arg, overrides)
    if seed is None:
        from symblock.exercises.generate import from_mapping
        return forward(from_mapping(*variants.read(spec_arg, overrides)))
    # an ID names its variant: a set's usability rules (`draw`) only chose which seeds to hand out,
    # and `worksheet SPEC` prints its own seed's ID without them
    spec, trace = variants.drawn_with_seed(*variants.read(spec_arg, overrides), seed)
    return trace if trace is not None else forward(spec)


MAX_TRIES = variants.MAX_TRIES
SAME_DRAWS = 40  # usable draws that all repeat the first: no variety (chance ~3^-40 for one drawn entry)


def draw_set(spec_arg: str, n: int, seed: int, options: Options | None = None,
             overrides: dict | None = None, judge=None, keep=None) -> list[Variant]:
    """`n` distinct usable variants with seeds seed, seed+1, ... (unusable or repeated draws are
    skipped, deterministically, and so are those `judge(variant)` turns down when the spec asks for
    random.distinct_mistakes, and those `keep(variant)` does not keep: stress.spread)."""
    data, source = variants.read(spec_arg, overrides)
    token = variants.set_token(spec_arg, overrides)
    if judge is not None and not wants_judge(data, source):
        judge = None
    out, seen, alike, usable_repeats = [], set(), 0, 0
    for s in range(seed, seed + n * MAX_TRIES):
        got = draw(data, source, s)
        if got is None:
            continue
        spec, trace = got
        drawn = key(spec)
        if drawn in seen:   # a repeat is skipped before its exercise is chosen; a judge turns it down no later
            usable_repeats += judge is None or not judge(build(variants.make_id(token, s), trace, options))
            if len(seen) == 1 and usable_repeats >= SAME_DRAWS:
                raise SpecError(source, "random", f"{SAME_DRAWS + 1} draws in a row gave the same "
                                "variant: nothing is left for `random` to draw (every weight and input "
                                "is given, or low = high); leave weights or inputs out, or widen the range")
            continue
        v = build(variants.make_id(token, s), trace, options)
        if judge is not None and judge(v):
            continue
        if keep is not None and not keep(v):
            alike += 1
            continue
        seen.add(drawn)
        out.append(v)
        if len(out) == n:
            return out
    why = (f" ({alike} more were turned down: each repeated an answer already shared by as many variants as a "
           f"set of {n} may share; --allow-repeats keeps them)") if alike else ""
    raise SpecError(source, "random", f"found only {len(out)} distinct usable variants in seeds {seed}.."
                    f"{seed + n * MAX_TRIES - 1}{why}; leave more weights or inputs out for `random` to draw, or "
                    "widen random.ranges")


def wants_judge(data: dict, source: str) -> bool:
    """Whether the spec (with its difficulty preset) asks for random.distinct_mistakes."""
    from symblock.exercises.generate import constraints_of
    rnd = data.get("random")
    return isinstance(rnd, dict) and constraints_of(data, source).distinct_mistakes


# ---------------------------------------------------------------- the stored exercise

DIGITS = 40      # significant digits stored of an answer whose closed form is too long to store
MAX_TEXT = 120   # characters of a stored closed form (longer ones: a decimal of DIGITS digits)


def entry_text(e) -> str:
    """An answer's entry as the manifest stores it: its exact closed form (`7/4`, `sqrt(5)/2`, `-oo`)
    when short, else its certified decimal to DIGITS significant digits (the only form with a `.`)."""
    from symblock.engine import exact
    if e is exact.NEG_INF or e.is_rational or e.size <= exact.CLOSED_FORM_SIZE:
        text = exact.text(e, exact.CLOSED_FORM_SIZE)
        if len(text) <= MAX_TEXT and (e.is_rational or e is exact.NEG_INF or _readable(text)):
            return text
    return e.digits(DIGITS)


def _readable(text: str) -> bool:
    """Whether the bounded parser takes `text` (its size guard is conservative: it refuses some
    closed forms of softmax weights, which are then stored as decimals)."""
    try:
        check_entry(text, SOURCE, "answers")
    except SpecError:
        return False
    return True


def check_entry(text: str, source: str, where: str) -> tuple:
    """A stored entry's text passes the bounded parser's guard (names, length, size, syntax; no SymPy):
    (its stripped text, its value when rational). Each text is guarded once (`_guarded`): a set's
    manifest is validated, then read back, and its entries repeat across variants."""
    from symblock.engine.numbers import guard
    try:
        return _guarded(text)
    except SpecError:
        return guard(text, source, where)   # the same refusal, naming its field


@functools.lru_cache(maxsize=1 << 16)   # a set of 300 variants holds about 17,000 distinct entries
def _guarded(text: str) -> tuple:
    from symblock.engine.numbers import guard
    return guard(text, SOURCE, "answers")


UNDECIDED = object()   # stored_rounded: the stored text alone does not decide the rounding


def stored_rounded(text: str, places: int, where: str):
    """A stored answer's entry rounded half away from zero at `places`, read without drawing its
    variant: a rational exactly, a closed form by its certified ball (engine/numbers.closed_tree), a
    decimal of DIGITS digits within `_answer`'s tolerance; None for −∞; UNDECIDED where the ball
    straddles a rounding boundary or the form is outside the fast subset (the drawn variant decides)."""
    text, q = check_entry(text, SOURCE, where)
    if q is not None and "." not in text:
        return exact.real(q).decimal(places)
    if q is not None:
        tol = Fraction(1, 10 ** (DIGITS - 3)) * max(1, abs(q))
        lo, hi = exact.real(q - tol).decimal(places), exact.real(q + tol).decimal(places)
    else:
        ball = _stored_ball(text)
        if ball is None:
            return None   # −∞
        if ball is UNDECIDED or not ball.is_finite():
            return UNDECIDED
        lo, hi = balls.round_ends(ball, places)
    return lo if lo == hi else UNDECIDED


@functools.lru_cache(maxsize=1 << 16)   # as `_guarded`: a set's entries repeat across variants and files
def _stored_ball(text: str):
    """A guarded closed form's certified ball; None for −∞; UNDECIDED outside the fast subset."""
    tree = closed_tree(text)
    return UNDECIDED if tree is None else balls.tree_ball(tree)


def entry(text: str, source: str, where: str):
    """A stored entry read back exactly (engine/numbers' bounded parser: never evaluated as code)."""
    from symblock.engine import exact
    from symblock.engine.numbers import parse_exact
    return exact.from_sympy(parse_exact(text, source, where, allow_inf=True))


def record(v: Variant) -> dict:
    """The variant's exercise as a set's manifest stores it: asked and given steps, parameters
    given, points, each asked answer (`matrix_text`: entries that `sympify` reads back) with its
    shape, the asked tasks that are no engine step (`extra`) or a token (`categorical`), and a
    backprop exercise's loss, wrt and target."""
    ex = v.exercise
    back = None
    if ex.backward is not None:
        back = {"loss": ex.backward.loss, "wrt": list(ex.backward.wrt),
                "target": None if ex.target is None else matrix_text(ex.target)}
    return {"ask": list(ex.ask), "given": list(ex.data_steps), "params": list(ex.data_params),
            "points": dict(ex.points), "shapes": {n: list(m.shape) for n, m in v.answers.items()},
            "answers": {n: matrix_text(m) for n, m in v.answers.items()},
            "backward": back, "extra": list(ex.extra), "categorical": list(ex.categorical)}


def matrix_text(m) -> str:
    """A matrix as one line: entries (`entry_text`) joined by ", ", rows by "; " (a closed form
    holds neither: its functions take one argument)."""
    return "; ".join(", ".join(entry_text(e) for e in row) for row in m.rows)


def matrix_entries(text: str) -> list[list[str]]:
    """`matrix_text` read back into rows of entry texts."""
    return [[e.strip() for e in row.split(",")] for row in text.split(";")]


def restore(trace, stored: Mapping) -> tuple[Exercise, dict]:
    """(exercise, answers) from a `record` (validated by the manifest's reader). The exact answers
    stored are the truth; an entry stored as a decimal is the trace's exact value, which must agree
    with it. A backprop exercise's backward pass is worked again from the trace (the checker
    recomputes through it)."""
    back = target = None
    if stored.get("backward") is not None:
        from symblock.calculus import grad
        b = stored["backward"]
        sym = None if b["target"] is None else _exact(matrix_entries(b["target"]), "backward.target")
        back = grad.backward(trace.spec, b["loss"], list(b["wrt"]),
                             target=None if sym is None else sym.to_sympy(), trace=trace)
        if b["loss"] == "mse":
            target = sym if sym is not None else grad.zeros(*trace["output"].value.shape)
    extra = {n: _exact(matrix_entries(stored["answers"][n]), f"answers.{n}") for n in stored["extra"]}
    ex = Exercise(tuple(stored["ask"]), tuple(stored["given"]), tuple(stored["params"]), backward=back,
                  target=target, points=dict(stored["points"]), extra=extra,
                  categorical=tuple(stored["categorical"]))
    return ex, {n: _answer(trace, ex, n, matrix_entries(text)) for n, text in stored["answers"].items()}


SOURCE = "manifest.yaml"


def _exact(rows: list, where: str):
    from symblock.engine.matrix import Mat
    return Mat([[entry(e, SOURCE, f"{where}[{i}][{j}]") for j, e in enumerate(r)] for i, r in enumerate(rows)])


def _answer(trace, ex: Exercise, name: str, rows: list):
    """An asked answer as stored: exact, but for an entry stored as a decimal (too long a closed
    form), which is the trace's exact value once it agrees with the stored digits. An irrational
    closed form the trace writes the same way is taken from the trace (no SymPy needed)."""
    from symblock.engine import exact
    from symblock.engine.matrix import Mat
    value, out, memo = None, [], {}
    for i, row in enumerate(rows):
        out.append([])
        for j, e in enumerate(row):
            where = f"answers.{name}[{i}][{j}]"
            text, q = check_entry(e, SOURCE, where)
            if q is not None and "." not in text:
                out[-1].append(exact.real(q))
                continue
            value = ex.answer(trace, name) if value is None else value
            x = value.rows[i][j]
            if "." in text and q is not None:
                if abs(float(x) - float(q)) > 10.0 ** (3 - DIGITS) * max(1.0, abs(float(q))):
                    raise SpecError(SOURCE, where, f"the set stored {e}, but this symblock works "
                                    f"{x.digits(12)}…: grade the set with the symblock that wrote it")
                out[-1].append(x)
            else:
                out[-1].append(x if exact.text(x, exact.CLOSED_FORM_SIZE, memo) == text else entry(e, SOURCE, where))
    return Mat(out)
