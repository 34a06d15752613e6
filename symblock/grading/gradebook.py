"""Grade a class: every answers file of a folder, each against its own variant of a set.

`grade(manifest, files)` reads each file's `id:`, finds the variant the manifest lists, builds that
variant's exact forward once (a Marker), marks the file and scores its asked tasks (policy.py). A
file that cannot be graded (no id, an id of another spec or of no variant of the set, a malformed
file or entry) is kept as a `Rejected` with the reason, never marked against another block. A graded
file whose ID, name or answers are in doubt (identity.py) carries flags for a person to look at.
The views (gradebook CSV, class summary, feedback) are in classreport.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from symblock.errors import SpecError, UsageError

SUFFIXES = (".yaml", ".yml", ".json", ".csv")


@dataclass
class Graded:
    file: str
    name: str
    ident: str
    result: object                         # marking.CheckResult
    scores: dict[str, Fraction] = field(default_factory=dict)   # asked step -> points earned
    student: dict[str, str] = field(default_factory=dict)      # student_id, email, section (roster.py)
    flags: list = field(default_factory=list)                   # identity.Flag: a person should look

    @property
    def total(self) -> Fraction:
        return sum(self.scores.values(), Fraction(0))


@dataclass
class Rejected:
    file: str
    name: str
    ident: str | None
    reason: str
    student: dict[str, str] = field(default_factory=dict)      # as Graded.student: the LMS still finds the row


@dataclass
class Class:
    manifest: dict
    graded: list[Graded]
    rejected: list[Rejected]

    @property
    def asked(self) -> list[str]:
        return list(self.manifest["asked"])

    @property
    def points(self) -> dict[str, int]:
        return {s: int(self.manifest["points"].get(s, 1)) for s in self.asked}

    @property
    def max_total(self) -> int:
        return sum(self.points.values())


def answer_files(folder: Path, skip: Path | None = None) -> list[Path]:
    """The answers files directly inside `folder` (YAML, JSON, CSV), sorted by name. Symbolic links
    and other files that are not regular are listed too, so that `grade` names them as refused."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a directory (expected a folder of answers files)")
    return sorted(p for p in folder.iterdir() if (p.is_symlink() or not p.is_dir()) and p.suffix.lower() in SUFFIXES
                  and p.name != "manifest.yaml" and (skip is None or p.resolve() != skip.resolve()))


class Variants:
    """The set's variants by ID, each rebuilt (forward, exercise, Marker) the first time it is needed."""

    def __init__(self, manifest: dict, max_cost: int | None = None):
        from symblock.exercises import variants
        self.manifest, self.max_cost = manifest, max_cost
        self.token = str(manifest["spec_token"])
        self.seeds = {str(v["id"]): int(v["seed"]) for v in manifest["variants"]}
        if self.token.startswith("h") and variants.token_of(manifest["spec"]) != self.token:
            raise SpecError("manifest.yaml", "spec", f"does not give the spec token {self.token} of its IDs "
                            "(the manifest was edited)")
        self._markers: dict[str, object] = {}

    def problem(self, ident: str | None) -> str | None:
        """Why `ident` names no variant of this set (None: it does)."""
        if not ident:
            return "no id: (the worksheet ID printed on the sheet) in the file"
        if ident in self.seeds:
            return None
        token = ident.rsplit(".", 1)[0]
        if token != self.token:
            return f"id {ident} was made from another spec ({token!r}; this set's spec is {self.token!r})"
        ids = list(self.seeds)
        return f"id {ident} is not a variant of this set ({len(ids)} variants, {ids[0]} … {ids[-1]})"

    def marker(self, ident: str):
        if ident not in self._markers:
            from symblock.exercises import presets, variants
            from symblock.exercises.generate import merge_random
            from symblock.grading.marker import Marker
            m = self.manifest
            data = merge_random(m["spec"], m.get("random_flags") or None)
            got = variants.draw_variant(data, str(m.get("spec_source", "manifest")), self.seeds[ident], self.max_cost)
            if got is None:
                raise SpecError("manifest.yaml", "variants", f"{ident}: its seed no longer gives a usable block")
            ex = presets.choose(got[1], m.get("preset"), loss=m.get("loss"), wrt=m.get("wrt"))
            if list(ex.ask) != list(m["asked"]):
                raise SpecError("manifest.yaml", "asked", f"{ident} asks {', '.join(ex.ask)} today")
            self._markers[ident] = Marker(got[1], ex)
        return self._markers[ident]


def grade(manifest: dict, files: list[Path], credit, max_cost: int | None = None, roster: dict | None = None) -> Class:
    """Mark every file against its own variant and score it, then flag the files whose identity is
    in doubt (identity.py); see the module docstring. `roster`: roster.read's mapping."""
    from symblock.grading import answers as answers_mod
    from symblock.grading import identity, roster as roster_mod
    from symblock.grading.answers import Policy
    pool = Variants(manifest, max_cost)
    default = Policy(decimals=manifest.get("decimals"))
    points = {s: int(manifest["points"].get(s, 1)) for s in manifest["asked"]}
    graded, rejected, read_as = [], [], {}
    for path in files:
        file, name, ident, own = shown(path.name), shown(path.stem), None, {}
        try:
            if file != path.name:
                raise SpecError(file, "", "the file name is not UTF-8 text; rename the file")
            data, source = answers_mod.read(path)
            own = roster_mod.take(data)
            name = _name(data.get("name")) or name
            ident = _name(data.get("id"))
            why = pool.problem(ident)
            if why:
                rejected.append(Rejected(file, name, ident, why, roster_mod.student(roster, file, name, own)))
                continue
            marker = pool.marker(ident)
            read_as[file] = answers = marker.answers(data, file, default)
            result = marker.mark_answers(answers, forms=False)
        except Exception as e:   # this file's failure, named; the others are still graded
            rejected.append(Rejected(file, name, ident, _why(e), roster_mod.student(roster, file, name, own)))
            continue
        by_name = {s.name: s for s in result.steps}
        g = Graded(file, name, ident, result, student=roster_mod.student(roster, file, name, own))
        g.scores = {s: credit.task(by_name.get(s), n) for s, n in points.items()}
        graded.append(g)
    identity.flag(graded, read_as, pool)
    return Class(manifest, graded, rejected)


def _why(e: Exception) -> str:
    """The reason a file is not graded: its input's error as it is, anything else named as an
    internal error (a bug in symblock, not the student's fault), never a traceback."""
    from symblock.errors import excerpt
    if isinstance(e, (SpecError, UsageError)):
        return shown(str(e))
    return shown(f"internal error while grading this file ({type(e).__name__}: {excerpt(str(e))}); "
                 "please report it")


def shown(text: str) -> str:
    """Text that can be written to a UTF-8 file: a lone surrogate (from a file name that is not
    UTF-8, or a YAML escape) becomes its escape \\udcff instead of failing the whole write."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _name(v) -> str | None:
    return shown(str(v)).strip() or None if v is not None and not isinstance(v, (dict, list)) else None


def slug(name: str, taken: set[str]) -> str:
    """A file name for `name`'s feedback: letters, digits (any script), - and _; unique in `taken`."""
    base = re.sub(r"[^\w-]+", "-", name, flags=re.UNICODE).strip("-_")[:60] or "student"
    out, k = base, 2
    while out.lower() in taken:
        out, k = f"{base}-{k}", k + 1
    taken.add(out.lower())
    return out
