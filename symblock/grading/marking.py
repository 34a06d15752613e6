"""Mark a person's answers against the exact Trace: per entry, per step, with error carried
forward and mistake diagnosis. Pure data out (`CheckResult`); report.py prints it.

Walk the items in order (plan.py: the forward steps, then any gradient steps backwards), keeping
the person's *chain*: their own answer for every item they gave (blanks filled from the chain),
else the item recomputed from the chain (so a skipped step passes their numbers on), else the
truth. Each answered entry is

* `correct`: it matches the truth (rounding rule: answers.py), or what the item gives from a chain
  built only on right answers (honest rounding carried forward is never wrong);
* `carried`: it matches what the item gives from the person's chain, which rests on a wrong answer:
  the chain as written, or as they may have kept it unrounded (each right entry its exact value, a
  wrong one the simplest rational its digits allow: −1.667 as −5/3, a slipped or shorter one as
  written), so a person who works on with full precision after a mistake or a rounding slip is
  charged once, as one who rounds every step is;
* `rounded`: written with fewer places (or significant digits) than asked, at least 1, and right
  at the places written ("correct, rounded to 2 places");
* `slip`: off by at most one unit in the last place written: a rounding slip;
* a masked score written as a large finite value (−1e9, −1e4: what tutorials' `masked_fill`
  writes), where the truth is −∞, is `correct` with a note (`MASK_FILL`): its softmax weight is 0
  to far below any printed place, as −∞'s is, and the chain carries −∞ on;
* `wrong`, or `blank` (null, "", a missing row: unanswered).

A step is `wrong` when an entry is wrong (or a catalogued mistake reproduces its numbers), else
`slip` when an entry is a slip, else `carried` / `rounded` / `correct`; a step with no answered
entry is `missing` (or `given` when the spec pins it). A `wrong` or partly blank step (answered, some
entries blank) makes `ok` false, a `missing` one does not. Whatever the status, a step whose entries
rest on an earlier wrong answer (an entry right only from the person's chain, or a blank filled from
it) lists that answer in `built_on` and passes it on, so a slip beside carried entries never lets
later entries built on the wrong answer pass as correct. `asked` (the exercise's steps) decides
which unanswered steps count as missing.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from symblock.engine import exact
from symblock.engine.matrix import Mat
from symblock.grading import answers as answers_mod, plan
from symblock.grading.lang import EntryStyle, closed_form, show
from symblock.grading.points import fewer_places, is_slip, matches, other_rounding
from symblock.grading.mistakes import diagnose
from symblock.grading.recompute import equivalents


CORRECT, WRONG, CARRIED, MISSING, GIVEN = "correct", "wrong", "carried", "missing", "given"
ROUNDED, SLIP, BLANK = "rounded", "slip", "blank"
ROUNDING_CODE = "rounding"
MASK_FILL = "mask_fill"          # an entry's note: a large finite value read as −∞ (answers.is_fill)


@dataclass
class EntryResult:
    row: int
    col: int
    given: str | None            # None: blank
    expected: str                # the truth, at the entry's places (or exact)
    ok: bool
    own: str | None = None       # what the person's own earlier answers give, when that differs
    exact: str | None = None     # the truth's closed form, when short
    mark: str = "correct"        # correct | carried | rounded | slip | wrong | blank
    reason: str | None = None    # why an unreadable entry is wrong (answers.Entry.reason)
    note: str | None = None      # MASK_FILL: a large finite value accepted as −∞
    tie: str | None = None       # the truth's other rounding, when it is exactly halfway at the entry's places


@dataclass
class StepResult:
    name: str
    status: str
    entries: list[EntryResult] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)
    built_on: list[str] = field(default_factory=list)   # earlier wrong answers its numbers rest on
    asked: bool = True

    @property
    def blank(self) -> int:
        return sum(e.mark == BLANK for e in self.entries)


@dataclass
class CheckResult:
    steps: list[StepResult]
    spec_source: str
    answers_source: str
    decimals: int | None
    ident: str | None = None
    name: str | None = None
    student: dict = field(default_factory=dict)   # the file's student data (answers.Answers.student)
    overruled: tuple = ()   # the file's policy keys that asked for less than the set's places (not used)
    indexed: bool = False   # the file placed entries by row and col, counted from 0 (answers.Answers.indexed)

    @property
    def answered(self) -> bool:
        """Whether the file answers anything at all: a blank file is not "nothing wrong"."""
        return any(s.status not in (MISSING, GIVEN) for s in self.steps)

    @property
    def ok(self) -> bool:
        return self.answered and not any(s.status == WRONG or (s.blank and s.status != MISSING) for s in self.steps)

    @property
    def first_break(self) -> str | None:
        return next((s.name for s in self.steps if s.status == WRONG), None)

    def count(self, status: str) -> int:
        return sum(s.status == status and (s.asked or status != MISSING) for s in self.steps)


# ---------------------------------------------------------------- one entry

def judge(entry, truth, honest, own, kept=None, slipped=None) -> tuple[str, bool, object]:
    """(mark, whether it needed the person's own chain with its wrong answers, the value it
    matched): tried against the truth, then `honest` (the item from their chain with each wrong
    entry put right: their honest rounding), then `kept` (from their chain as they may have kept
    it, unrounded), `slipped` (that chain with their slips and shorter entries as written) and
    `own` (from their chain as written); carried is decided by the step."""
    for mark, test in ((CORRECT, matches), (ROUNDED, fewer_places), (SLIP, is_slip)):
        for value, via_own in ((truth, False), (honest, False), (kept, True), (slipped, True), (own, True)):
            if value is not None and test(entry, value):
                return mark, via_own, value
    return WRONG, False, None


def lenient(entry, value) -> bool:
    """What reproduces a number for the mistake catalogue: a match, or one at fewer places."""
    return matches(entry, value) or fewer_places(entry, value)


def _equivalent(answer, name, chain, spec) -> bool:
    """Whether every entry matches another right value of the step (recompute.equivalents)."""
    try:
        alts = equivalents(name, chain, spec)
    except (ArithmeticError, ValueError, KeyError):
        return False
    return any(all(matches(e, v) for er, vr in zip(answer.entries, alt.rows)
                   for e, v in zip(er, vr) if e is not None)
               for alt in alts)


# ---------------------------------------------------------------- the walk

def check(spec, trace, answers, asked=None, backward=None, items=None, memo: dict | None = None,
          forms: bool = True, shown=()) -> CheckResult:
    """Mark `answers` against the trace (and a backprop exercise's `backward`). `asked`: the steps
    the exercise asks (None: every step; an unasked, unanswered step is no `missing`); `shown`: those
    the sheet prints as data, read as printed (plan.as_printed); `memo`: a dict kept beside the trace
    (Marker), the truth's printed forms made once; `forms=False`: closed forms only beside wrong entries."""
    if items is None:
        items = plan.forward_items(trace, spec) + (plan.backward_items(backward, spec) if backward else [])
    truth = dict(trace.params)
    truth.update({it.name: it.value for it in items})
    chain = dict(trace.params)       # the person's chain: name -> Mat
    fixed = dict(trace.params)       # the chain with each wrong or carried entry put right
    kept = dict(trace.params)        # the chain as they may have kept it: unrounded (kept_value)
    slips = dict(trace.params)       # kept, with each slip or shorter entry as written (carried on so)
    shaped = dict(trace.params)      # the chain with an answer of another shape as written (below)
    bad: dict[str, list[str]] = {}   # name -> the wrong/carried answers its chain value rests on
    results = []
    for it in items:
        name = it.name
        deps = [i for i in it.inputs if i in truth and i not in trace.params]
        built_on = sorted({b for i in deps for b in bad.get(i, [])})
        own = it.from_chain(chain, deps, truth)
        honest = own if all(fixed[i] is chain[i] for i in deps) else it.from_chain(fixed, deps, truth)
        unrounded = own if all(kept[i] is chain[i] for i in deps) else it.from_chain(kept, deps, truth)
        slipped = unrounded if all(slips[i] is kept[i] for i in deps) else it.from_chain(slips, deps, truth)
        as_shaped = own if all(shaped[i] is chain[i] for i in deps) else it.from_chain(shaped, deps, truth)
        answer = answers.steps.get(name)
        is_asked = asked is None or name in asked
        if answer is None or not answer.answered:
            results.append(StepResult(name, GIVEN if it.given else MISSING, built_on=built_on, asked=is_asked))
            chain[name] = own if own is not None else it.value
            fixed[name] = chain[name] if honest is own else (honest if honest is not None else it.value)
            kept[name] = unrounded if unrounded is not None else it.value
            slips[name] = kept[name] if slipped is unrounded or slipped is None else slipped
            shaped[name], bad[name] = chain[name] if as_shaped is own or as_shaped is None else as_shaped, built_on
            if name in shown:   # read off the sheet: the printed truth, resting on nothing of theirs
                chain[name] = fixed[name] = shaped[name] = plan.as_printed(it.value, answers.printed)
                bad[name] = []
            continue
        result, kept[name] = mark_step(it, answer, own, honest, built_on, spec, chain, truth,
                                       {} if memo is None else memo, forms, unrounded, slipped)
        if result.status in (WRONG, SLIP) and as_shaped is not own:   # it rests on an answer of another shape
            result = _carried_as_written(it, answer.written or answer, as_shaped, built_on) or result
        result.asked = is_asked
        results.append(result)
        chain[name] = _read_fills(answer.values(own if own is not None else it.value), result)
        fixed[name] = _put_right(chain[name], result, honest if honest is not None else it.value)
        slips[name] = _with_slips(kept[name], result, answer, None if slipped is unrounded else slipped)
        w = answer.written   # as written where each entry reads (a K of the decoder's 2 rows)
        shaped[name] = w.values() if w is not None and all(e.reason is None for r in w.entries for e in r) \
            else chain[name]
        bad[name] = sorted({name, *result.built_on}) if result.status == WRONG else result.built_on
    return CheckResult(results, spec.source, answers.source, answers.decimals,
                       getattr(answers, "ident", None), getattr(answers, "name", None), indexed=answers.indexed)


def _carried_as_written(it, w, as_shaped, built_on: list[str]):
    """Answer `w`, right from an earlier answer of another shape as written (scores from the decoder's 2 key
    rows where the memory has 3, their softmax, P·V): carried, not charged again; else None."""
    if as_shaped is None or not built_on or as_shaped.shape != w.shape or w.answered < w.shape[0] * w.shape[1]:
        return None
    entries = []
    for i, row in enumerate(w.entries):
        for j, e in enumerate(row):
            v = as_shaped.rows[i][j]
            mark = CARRIED if matches(e, v) or fewer_places(e, v) else SLIP if is_slip(e, v) else None
            if mark is None:
                return None
            entries.append(EntryResult(i, j, e.text, show(v, e.places, EntryStyle(e)), mark == CARRIED, mark=mark))
    slips = any(er.mark == SLIP for er in entries)   # their own numbers rounded one unit off: a rounding slip
    return StepResult(it.name, SLIP if slips else CARRIED, entries, [ROUNDING_CODE] if slips else [], built_on=built_on)


def _with_slips(kept, result, answer, slipped):
    """The kept value of a step (`kept`) with each slip or shorter entry as written, and each other
    entry that the step worked from such entries (`slipped`) gives, that value: the chain of a person
    who keeps every number unrounded but carries their rounding slip on (the same object: none)."""
    rows = [list(row) for row in kept.rows]
    for er in result.entries:
        e = answer.entries[er.row][er.col]
        if er.mark in (SLIP, ROUNDED):
            rows[er.row][er.col] = e.value
        elif slipped is not None and (er.mark == BLANK or er.mark != WRONG and lenient(e, slipped.rows[er.row][er.col])):
            rows[er.row][er.col] = slipped.rows[er.row][er.col]
    if all(v is k for row, krow in zip(rows, kept.rows) for v, k in zip(row, krow)):
        return kept
    return Mat(rows)


def _read_fills(mine, result):
    """`mine` with each entry accepted as −∞ (MASK_FILL) made −∞: later steps rest on −∞."""
    fills = {(e.row, e.col) for e in result.entries if e.note == MASK_FILL}
    return Mat([[exact.NEG_INF if (i, j) in fills else v for j, v in enumerate(row)]
                for i, row in enumerate(mine.rows)]) if fills else mine


def _put_right(mine, result, right, marks=(WRONG, CARRIED, BLANK)):
    """`mine` with the entries of those `marks` (wrong, carried, blank) taken from `right` (the same
    object when nothing changes, so later items know nothing needs recomputing)."""
    bad = {(e.row, e.col) for e in result.entries if e.mark in marks}
    if not bad:
        return mine
    return Mat([[right.rows[i][j] if (i, j) in bad else v for j, v in enumerate(row)]
                for i, row in enumerate(mine.rows)])


def mark_step(it, answer, own, honest, built_on: list[str], spec, chain, truth, memo: dict,
              forms: bool = True, unrounded=None, slipped=None):
    """(the step's StepResult, its value in the kept chain: each entry's matched value, a wrong
    one's kept_value, a blank from `unrounded` or the truth; the truth itself when all match it)."""
    result, matched = _mark_step(it, answer, own, honest, built_on, spec, chain, truth, memo, forms, unrounded, slipped)
    fill = unrounded if unrounded is not None else it.value
    rows = [[fill.rows[i][j] for j in range(len(row))] for i, row in enumerate(it.value.rows)]
    for er in result.entries:
        e = answer.entries[er.row][er.col]
        if er.mark == WRONG:
            v = e.unrounded()
            rows[er.row][er.col] = v if v is not None else rows[er.row][er.col]
        elif er.mark != BLANK:   # right: the value it matched (the truth when marked right as an equivalent order)
            v = matched.get((er.row, er.col))
            rows[er.row][er.col] = v if v is not None else it.value.rows[er.row][er.col]
    if all(v is t for row, trow in zip(rows, it.value.rows) for v, t in zip(row, trow)):
        return result, it.value
    return result, Mat(rows)


def _mark_step(it, answer, own, honest, built_on, spec, chain, truth, memo, forms, unrounded, slipped):
    entries, needed_own, matched = [], False, {}

    def known(fn, t, *key):   # the truth's printed forms, once per trace
        k = (fn.__name__, id(t), *key)
        if k not in memo:
            memo[k] = fn(t, *key)
        return memo[k]
    for i, row in enumerate(answer.entries):
        for j, e in enumerate(row):
            t = it.value.rows[i][j]
            o = own.rows[i][j] if own is not None else None
            if e is None:
                entries.append(EntryResult(i, j, None, known(show, t, answer.decimals), False, mark=BLANK))
                continue
            k = unrounded.rows[i][j] if unrounded is not None and unrounded is not own else None
            s = slipped.rows[i][j] if slipped is not None and slipped is not unrounded and slipped is not own else None
            mark, via_own, matched[i, j] = judge(e, t, honest.rows[i][j] if honest is not None else None, o, k, s)
            needed_own = needed_own or via_own
            if via_own:
                o = matched[i, j]   # what their own answers give (unrounded, or with their slips)
            if via_own and mark == CORRECT and built_on:
                mark = CARRIED
            right, style = mark in (CORRECT, CARRIED, ROUNDED), EntryStyle(e)
            er = EntryResult(i, j, e.text, known(show, t, e.places, style), right,
                             exact=known(closed_form, t) if forms or not right else None, mark=mark,
                             reason=getattr(e, "reason", None),
                             note=MASK_FILL if t is exact.NEG_INF and e.value is not t and right else None,
                             tie=known(_tie, t, e.places, style) if t.is_rational else None)   # a tie is rational
            if o is not None and show(o, e.places, style) != er.expected:
                er.own = show(o, e.places, style)
            entries.append(er)
    marks = {er.mark for er in entries}
    rests = _rests_on(built_on, needed_own, own, entries)
    if marks & {WRONG, SLIP} and _equivalent(answer, it.name, chain, spec):
        for er in entries:  # an order also marked correct (mask, then scale)
            if er.mark != BLANK:
                er.mark, er.ok = CORRECT, True
        marks = {er.mark for er in entries}
    if marks & {WRONG, SLIP}:
        diagnosis = []
        if it.diagnosable:
            envs = [chain, truth]   # a slip reads steps its answer does not (K/V from the decoder's rows)
            diagnosis = it.diagnoser(answer, envs, lenient) if it.diagnoser else \
                diagnose(it.name, spec, answer, envs, lenient)
        if diagnosis or WRONG in marks:
            for er in entries:
                if er.mark == SLIP and diagnosis:
                    er.mark = WRONG
            return StepResult(it.name, WRONG, entries, diagnosis, built_on=rests), matched
        return StepResult(it.name, SLIP, entries, [ROUNDING_CODE], built_on=rests), matched
    if needed_own and built_on:
        return StepResult(it.name, CARRIED, entries, built_on=built_on), matched
    return StepResult(it.name, ROUNDED if ROUNDED in marks else CORRECT, entries, built_on=rests), matched


def _tie(truth, places: int | None, style: EntryStyle) -> str | None:
    """The truth's other rounding when it is exactly halfway at `places` (a decimal entry), printed as
    `show` prints the truth: 1.562 beside 1.563 for 25/16 at 3 places; None off a tie."""
    plain = places is not None and style.tol is None and style.sig_figs is None
    other = other_rounding(truth, places) if plain else None
    return None if other is None else show(exact.real(other), places)


def _rests_on(built_on: list[str], needed_own: bool, own, entries) -> list[str]:
    """The earlier wrong answers this step's numbers rest on, whatever its summary status: an entry
    right only from the person's own chain, or a blank filled from that chain (what later steps are
    recomputed from), passes `built_on` on; a step answered right from the truth passes nothing."""
    if needed_own or own is not None and any(e.mark == BLANK for e in entries):
        return built_on
    return []


# One variant prepared for marking, once: its exact trace, what its exercise asks (and the
# points), the items the checker walks and the shapes an answers file may use. `check` makes one
# per run; `grade` makes one per variant of a set and marks every answers file of it.


class Marker:
    def __init__(self, trace, exercise, answers=None):
        """`answers` ({asked step: Mat}, a Variant's): the truth of the asked steps, when it is not
        the trace's own (a set's manifest stores it); the trace still recomputes and diagnoses."""
        self.trace, self.spec, self.exercise = trace, trace.spec, exercise
        self.items = plan.items(trace, exercise)   # a block's or a model's (plan: by the spec's form)
        if answers:
            self.items = [replace(it, value=answers[it.name]) if it.name in answers else it for it in self.items]
        self.shapes = plan.shapes(trace, self.items)
        self.computed = {i.name for i in self.items}
        self.memo: dict = {}   # the truth's printed forms, shared by every file of this variant

    @classmethod
    def of(cls, variant) -> "Marker":
        """The marker of a Variant (exercises/variant.py): its exercise and asked answers."""
        return cls(variant.trace, variant.exercise, variant.answers)

    def mark(self, data: dict, source: str, default: answers_mod.Policy | None = None, forms: bool = True):
        """A CheckResult for one answers mapping (answers.read); only asked steps count as missing.
        `forms=False` leaves out the closed forms of right entries (grade's feedback shows none)."""
        return self.mark_answers(self.answers(data, source, default), forms)

    def mark_answers(self, answers: answers_mod.Answers, forms: bool = True):
        """A CheckResult for answers already read against this variant (`answers`)."""
        result = check(self.spec, self.trace, answers, asked=set(self.exercise.ask), items=self.items,
                       memo=self.memo, forms=forms, shown=set(self.exercise.data_steps))
        result.student = dict(answers.student)   # student_id, email, ...: for the gradebook
        result.overruled = answers.overruled
        return result

    def answers(self, data: dict, source: str, default: answers_mod.Policy | None = None) -> answers_mod.Answers:
        """The answers mapping read against this variant's shapes (a model's names normalised)."""
        data = plan.normalise(data, self.spec)
        return answers_mod.from_mapping(data, source, self.shapes, self.computed, default)
