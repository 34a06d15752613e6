"""Check hand-worked answers against the exact block, entry by entry: each step is correct, wrong,
carried (right from your own earlier answers), rounded, a rounding slip, or missing, and a wrong
step names the mistake that reproduces it (sample variance, no 1/sqrt(d_k), softmax down columns,
W transposed, ...).

The argparse glue over `symblock.grading`.
"""
from __future__ import annotations

import sys

EXAMPLES = """\
examples:
  symblock check seed-post-ln answers.yaml       # against a built-in block
  symblock check answers.yaml                    # its id: names the variant
  symblock check class.yaml answers.yaml         # the id of a spec file's set
  symblock check set/students/h4k2q9x7a.3/answers.yaml   # in a set: its manifest gives spec and preset
  symblock check class.yaml set/students/h4k2q9x7a.3/answers.yaml   # the same (SPEC: the set's)
  symblock check answers.yaml --preset norm --all
  symblock check answers.yaml --json --lang zh
  (answers.yaml: `decimals: 3` and `steps: {norm1.mean: [[1.5], [1.628],
  [2.146]], ...}`; `null` is a blank; see README.md)"""  # the --help epilog

import argparse

from symblock.grading.report import one_line, text, to_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.usage = ("%(prog)s [-h] [SPEC] ANSWERS [--id ID] [--preset P] [--json] [--all]\n"
               "                      [--lang zh] [--loss L] [--wrt NAMES] [--max-cost N]")  # not `SPEC [ANSWERS]`
    from symblock.commands.arguments import add_spec_argument
    add_spec_argument(p, None, "the block: ", "may be left out when ANSWERS carries an example's id:, or "
                                              "sits in the set folder whose manifest.yaml names it")
    p.add_argument("answers", metavar="ANSWERS", nargs="?", help="the hand-worked answers (YAML, JSON or CSV)")
    p.add_argument("--id", metavar="ID", help="the worksheet ID the answers are for (default: the file's id:)")
    from symblock.exercises.presets import PRESETS
    p.add_argument("--preset", choices=PRESETS, help="the steps the sheet asked (default: the spec's "
                                                     "exercise section, else full); only they count as missing")
    p.add_argument("--loss", choices=("sum", "mse"), help="backprop answers (grad.*): the loss (default: "
                                                          "the spec's exercise.loss, else mse against "
                                                          "the target drawn from the seed, as the "
                                                          "worksheet's)")
    p.add_argument("--wrt", metavar="NAMES", help="backprop answers: comma-separated parameters "
                                                  "(default: the spec's exercise.wrt, else W_2,W_1)")
    p.add_argument("--json", action="store_true", help="print {ok, first_break, steps: [...]} as JSON")
    p.add_argument("--all", action="store_true", help="list every entry, not only the wrong ones")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the report (default en)")
    from symblock.commands.arguments import nonneg
    p.add_argument("--max-cost", type=nonneg, metavar="N", help="raise the exact engine's size limit")


def run(args) -> int:
    from symblock.errors import SpecError
    try:
        result, marker, fit = mark(args)
    except SpecError as e:   # what is wrong with a file, in the report's language
        from symblock.grading.lang import input_error
        raise SpecError(e.source, e.where, input_error(e.message, args.lang)) from None
    print(to_json(result) if args.json else text(result, marker.trace, every_entry=args.all, lang=args.lang),
          end="")
    if fit is not None:   # grade's flag, in its words: the file was marked against its own id all the same
        from symblock.grading.lang import describe, words
        print(one_line(words(args.lang)["wrong_id"].format(answers=result.answers_source, ident=result.ident,
                                                           why=describe(fit, args.lang))), file=sys.stderr)
    return 0 if result.ok else 1


def mark(args, data: dict | None = None, source: str = "<answers>"):
    """(CheckResult, Marker, the Flag of a variant that fits the answers clearly better than their
    id, or None) of the answers the arguments name; `data`: an answers mapping given in memory
    instead of a file (the Python API's `symblock.check`), never looked up in a set."""
    from symblock.engine.model import forward_any as forward   # a block, or a model (decoder sheets)
    from symblock.exercises import variant
    from symblock.exercises.generate import load
    from symblock.grading import answers as answers_mod
    from symblock.grading.marking import Marker
    from symblock.exercises.spec_arg import difficulty_of, example_of
    from symblock.errors import UsageError
    from symblock.grading.lang import words
    if data is not None:
        spec_arg, answers_path = args.spec, "-"
    else:
        spec_arg, answers_path = _arguments(args, example_of, difficulty_of)
        data, source = answers_mod.read(answers_path)
    ident = args.id or (str(data["id"]) if data.get("id") not in (None, "") else None)
    if args.id and str(data.get("id") or "") != args.id:   # the report names the variant it marked
        if data.get("id") not in (None, ""):
            print(one_line(words(args.lang)["other_id"].format(ident=args.id, answers=source, theirs=data["id"])),
                  file=sys.stderr)
        data = {**data, "id": args.id}
    # a set's answers file: its manifest knows the spec, preset, loss and places
    found = _from_set(args, answers_path, ident, spec_arg)
    if found is not None:
        marker, default, pool = found
    else:
        wrt = None if args.wrt is None else [w.strip() for w in args.wrt.split(",") if w.strip()]
        if ident is not None:
            flag = "--id" if args.id else f"{source}: id"
            _spec_at_hand(ident, spec_arg, flag, answers_path, args.lang)
            trace = variant.redraw(ident, spec_arg, flag)
            one = variant.build(ident, trace, variant.Options.for_answers(trace.spec, data, args.loss, wrt, args.preset))
            pool = Nearby(one, spec_arg, flag)
            if answers_path != "-" and not args.json:
                print(one_line(words(args.lang)["no_set"].format(answers=answers_path, ident=ident)), file=sys.stderr)
        elif spec_arg is None:
            raise UsageError(f"check: give SPEC, or an `id:` in {source} (a worksheet ID)")
        else:
            spec = load(spec_arg, allow_model=True)
            trace = forward(spec)
            one, pool = variant.build("", trace, variant.Options.for_answers(trace.spec, data, args.loss, wrt, args.preset)), None
        marker, default = Marker.of(one), None
    answers = marker.answers(data, source, default)   # a near miss of a format key is refused here
    from symblock.grading.students import unknown_key_note, unknown_keys
    for key, near in unknown_keys(data, answers_mod.TOP_KEYS):   # what is kept as student data, said
        print(one_line(unknown_key_note(source, key, near, answers_mod.TOP_KEYS, args.lang)), file=sys.stderr)
    return marker.mark_answers(answers), marker, better_fit(ident, answers, pool)


def _spec_at_hand(ident: str, spec_arg: str | None, flag: str, answers_path: str, lang: str) -> None:
    """Refuse, plainly, an ID of a spec file given without that file (nor a set around the answers):
    a spec of the person's own, or a private one whose numbers a `random.secret` draws, which only
    its instructor holds (the ID's hash cannot tell which)."""
    from symblock.errors import UsageError
    from symblock.exercises.variants import names_spec_file
    from symblock.grading.lang import words
    if spec_arg is None and names_spec_file(ident):
        raise UsageError(words(lang)["private_id"].format(
            where=flag, ident=ident, answers="ANSWERS" if answers_path == "-" else answers_path))


def better_fit(ident: str | None, answers, pool):
    """grade's identity check (students.best_fit) of one file: the Flag of the variant of its set, or
    with no set of an ID a slip of the pen makes of its own (`Nearby`), that fits it clearly better
    than its own id; None when none does (or the file has no id)."""
    if pool is None or not ident:
        return None
    from symblock.grading.students import Truths, answered_entries, best_fit
    return best_fit(ident, answered_entries(answers), pool, Truths(pool))


class Nearby:
    """What students.best_fit reads of a set (`seeds`, `variant`), for a file in no set: the variant
    checked and those of the IDs a slip of the pen makes of its ID (students.neighbours), each
    drawn only when an entry is compared with it."""

    def __init__(self, one, spec_arg: str | None, flag: str):
        from symblock.grading.students import neighbours
        self.seeds = dict.fromkeys([one.ident, *neighbours(one.ident)])
        self.built, self.spec_arg, self.flag = {one.ident: one}, spec_arg, flag

    def rounded(self, ident: str, step: str, i: int, j: int, places: int):
        from symblock.grading.students import variant_rounded
        return variant_rounded(self.variant(ident), step, i, j, places)

    def variant(self, ident: str):
        """The variant `ident` names; one it draws no usable block for (a tie of the next token's
        logits, say) stands in with no answers: it fits no entry."""
        if ident not in self.built:
            from types import SimpleNamespace
            from symblock.errors import SpecError, UsageError
            from symblock.exercises import variant
            one = self.built[next(iter(self.seeds))]
            try:
                self.built[ident] = variant.build(ident, variant.redraw(ident, self.spec_arg, self.flag), one.options)
            except (SpecError, UsageError, ArithmeticError):
                self.built[ident] = SimpleNamespace(answers={}, trace=())
        return self.built[ident]


def _arguments(args, example_of, difficulty_of) -> tuple[str | None, str]:
    """(SPEC or None, the answers file) of `check [SPEC] ANSWERS`."""
    from pathlib import Path
    from symblock.errors import UsageError
    if args.spec is None:
        raise UsageError("check: give the ANSWERS file (after SPEC, unless its id: names a built-in example)")
    spec_arg, answers_path = (args.spec, args.answers) if args.answers is not None else (None, args.spec)
    if args.answers is None and (example_of(args.spec) or difficulty_of(args.spec)):
        raise UsageError("check: give the ANSWERS file after SPEC")
    from symblock.grading.manifest import is_manifest
    if spec_arg is not None and is_manifest(spec_arg):
        raise UsageError(f"{spec_arg}: this is a set's manifest, not a spec; leave SPEC out (`symblock check "
                         f"ANSWERS` finds the set an answers file sits in) or give the spec the set was drawn from")
    if answers_path != "-" and not Path(answers_path).exists():   # not the spec reader's "give a spec path"
        swapped = spec_arg is not None and Path(spec_arg).is_file() and bool(
            example_of(answers_path) or difficulty_of(answers_path))   # `check answers.yaml seed-post-ln`
        raise UsageError(f"{answers_path}: no such answers file " + (
            f"(SPEC comes first: symblock check {answers_path} {spec_arg})" if swapped else
            "(the hand-worked answers: YAML, JSON or CSV; a set's blank ones are SET/students/<ID>/answers.yaml)"))
    return spec_arg, answers_path

def _from_set(args, answers_path: str, ident: str | None, spec_arg: str | None):
    """(Marker, default Policy, the set's Variants) when the answers file sits in a set `worksheet --variants N` wrote
    (SET/students/<ID>/answers.yaml, or a copy in SET/, SET/students/ or SET/instructor/) and its ID is one of the set's: the manifest then
    rebuilds the variant with the set's preset, flags, loss and decimals, so a student needs no
    --preset, and no spec file (a SPEC given must be the set's: the same spec token). None
    otherwise, or when a flag asks for something else."""
    from pathlib import Path
    from symblock.errors import UsageError
    from symblock.exercises import variants
    from symblock.grading import manifest
    from symblock.grading.answers import set_policy
    from symblock.grading.gradebook import Variants
    if ident is None or args.preset or args.loss or args.wrt or answers_path == "-":
        return None
    here = Path(answers_path).resolve().parent
    for folder in (here, here.parent, here.parent.parent):  # SET/students/<ID>/answers.yaml too
        path = manifest.find(folder)
        if path is not None:   # a variant's stored entries are checked when it is built
            man = manifest.read(folder, entries=False)
            pool = Variants(man, str(path))
            if pool.problem(ident) is not None:
                continue
            if spec_arg is not None and variants.spec_token(spec_arg) != variants.split_version(pool.token)[0]:
                raise UsageError(
                    f"check: {answers_path} is an answers file of the set in {_shown(folder)} (made from "
                    f"{man.get('spec_source', 'its spec')}, spec {pool.token!r}), but SPEC {spec_arg} is "
                    f"spec {variants.spec_token(spec_arg)!r}; leave SPEC out to mark it against its set")
            return pool.marker(ident), set_policy(man), pool
    return None


def _shown(folder) -> str:
    """A folder as the user would type it: relative to the working directory (at most one level up)."""
    import os
    try:
        rel = os.path.relpath(folder)
    except ValueError:   # another drive
        return str(folder)
    return folder.as_posix() if rel.startswith(("../..", "..\\..")) else rel + os.sep
