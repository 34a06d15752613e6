"""Variants drawn from a seed, and worksheet IDs.

Worksheet IDs: `<spec>` or `<spec>.<seed>`, where `<spec>` is a built-in example's name or, for a
spec file, `h` + the first 8 characters of the lower-case base32 SHA-256 of the *canonical parsed
spec* (`canonical`: the mapping as sorted-key JSON, without `random.seed`), so comments, key order,
quoting, YAML vs JSON and the file's name do not change it; `<seed>` is the `random.seed` that drew
the variant. `symblock worksheet [SPEC] --id ID` loads the same spec (a file must be given again and
must give the same token), re-draws with that seed and so regenerates the same files, given the
same options (--preset, --lang, --decimals).
"""
from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from typing import TYPE_CHECKING

from symblock.errors import SpecError, excerpt

if TYPE_CHECKING:
    from symblock.engine.model_spec import Spec

MAX_TRIES = 50  # seeds tried per wanted variant before giving up


def spec_token(spec_arg: str) -> str:
    """The `<spec>` part of an ID: an example name, `preset-D`, or `h` + a hash of the canonical parsed spec."""
    from symblock.exercises.spec_arg import difficulty_of, example_of
    if example_of(spec_arg) is not None:
        return example_of(spec_arg)
    if difficulty_of(spec_arg):
        return f"preset-{difficulty_of(spec_arg)}"
    return token_of(read(spec_arg)[0])


def canonical(data) -> str:
    """The parsed spec as one canonical text: sorted keys, decimals by value (1.50 = 1.5), and
    without `random.seed` (the ID carries the seed). Two files with the same meaning give the same text."""
    from decimal import Decimal

    def norm(v):
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if isinstance(v, Decimal):
            return {"decimal": str(v.normalize()) if v.is_finite() else str(v)}
        return v
    data = dict(data)
    if isinstance(data.get("random"), dict):
        data["random"] = {k: v for k, v in data["random"].items() if k != "seed"}
    return json.dumps(norm(data), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def token_of(data) -> str:
    """`h` + the first 8 characters of the lower-case base32 SHA-256 of `canonical(data)`."""
    digest = hashlib.sha256(canonical(data).encode("utf-8", "surrogatepass")).digest()  # a bad title is refused later, by name
    return "h" + base64.b32encode(digest).decode("ascii")[:8].lower()


def make_id(token: str, seed: int | None) -> str:
    return token if seed is None else f"{token}.{seed}"


# ASCII only, whole string (no trailing newline, no fullwidth or Arabic digits): an ID prints as typed
_ID = re.compile(r"([A-Za-z0-9_-]+?)(?:\.([0-9]{1,100}))?")  # a seed as long as --seed takes


def split_id(ident: str) -> tuple[str, int | None]:
    """`make_id`'s inverse: ("pre-ln", 7) of "pre-ln.7", (token, None) of a spec's own ID. A text
    that is no ID splits at its last dot, with no seed, so that a message can quote its token
    (`parse_id` is the check of an ID a user gives)."""
    if (m := _ID.fullmatch(ident)):
        return m.group(1), None if m.group(2) is None else int(m.group(2))
    head, dot, _ = ident.rpartition(".")
    return (head if dot else ident), None


def parse_id(ident: str, spec_arg: str | None, flag: str = "--id") -> tuple[str, int | None]:
    """The spec to load and the seed for a worksheet ID; `spec_arg` is the SPEC the user gave;
    `flag` names where the ID came from in messages."""
    from symblock.errors import UsageError
    from symblock.engine.spec import example_names
    from symblock.exercises.spec_arg import difficulty_of
    m = _ID.fullmatch(ident or "")
    if not m:
        raise UsageError(f"{flag}: {excerpt(ident)} is not a worksheet ID (expected NAME or NAME.SEED, "
                         "as printed on a sheet, e.g. pre-ln-causal-gelu.7)")
    token, seed = m.group(1), m.group(2)
    seed = int(seed) if seed is not None else None
    if spec_arg is None:
        if difficulty_of(token, "-"):
            return f"preset:{difficulty_of(token, '-')}", seed
        if token not in example_names():
            hint = (" (a spec file's ID: give the file too, `symblock worksheet FILE --id ID` or `symblock check FILE "
                    "ANSWERS`; an answers file inside its set folder needs none)") \
                if re.fullmatch(r"h[a-z2-7]{8}", token) else ""
            raise UsageError(f"{flag}: no built-in example {excerpt(token)}{hint}")
        return token, seed
    have = spec_token(spec_arg)
    if have != token:
        raise UsageError(f"{flag}: {excerpt(ident)} was made from spec {excerpt(token)}, but {spec_arg} is {excerpt(have)} "
                         "(the file changed, or it is another spec)")
    return spec_arg, seed


def rebuild(ident: str, spec_arg: str | None, flag: str = "--id"):
    """(spec, trace) of the variant a worksheet ID names (`spec_arg`: the spec file, needed for
    a file's ID); the same draw as `worksheet --variants` made."""
    from symblock.errors import UsageError
    from symblock.engine.model import forward_any as forward  # a block or a model (decoder sheets)
    spec_arg, seed = parse_id(ident, spec_arg, flag)
    data, source = read(spec_arg)
    if seed is None:
        from symblock.exercises.generate import from_mapping
        spec = from_mapping(data, source)
        return spec, forward(spec)
    got = draw_variant(data, source, seed)
    if got is None:
        raise UsageError(f"{flag} {ident}: seed {seed} does not give a usable block")
    return got


def read(spec_arg: str, overrides: dict | None = None) -> tuple[dict, str]:
    """The raw mapping of a SPEC (spec_arg.py: a file, an example, preset:D) and its source name;
    `overrides` (from the command line's random-section flags) replace keys of its `random:` section."""
    from symblock.exercises import spec_arg as spec_arg_mod
    data, source = spec_arg_mod.read(spec_arg)
    if overrides:
        rnd = data.get("random") if isinstance(data.get("random"), dict) else {"seed": 1}
        data = {**data, "random": {**rnd, **overrides}}
    return data, source


def with_seed(data: dict, source: str, seed: int):
    """The spec with its `random.seed` replaced: missing weights/inputs are drawn again."""
    from symblock.exercises.generate import from_mapping
    rnd = data.get("random")
    if not isinstance(rnd, dict):
        raise SpecError(source, "random", "variants need a `random:` section (e.g. `random: {seed: 1, "
                                          "low: -2, high: 2}`) and weights or inputs left out for it to draw")
    data = copy.deepcopy(data)
    data["random"] = {**rnd, "seed": seed}
    return from_mapping(data, source)


def draw_variant(data: dict, source: str, seed: int):
    """One variant: (spec, trace) for `seed`, or None when that draw is unusable (e.g. a row with
    zero variance and ε = 0). The single place where generation constraints plug in (issue 5).
    A model's variant is also unusable when its decoding step is no hand exercise (decoder.problem)."""
    from symblock.engine.model import forward_any as forward
    from symblock.exercises import decoder
    spec = with_seed(data, source, seed)
    if decoder.is_model(spec) and decoder.prefilter(spec):   # most seeds: no exact forward
        return None
    try:
        trace = forward(spec)
    except SpecError as e:
        if e.where.startswith(("dims", "random")):  # random.*: a constraint no draw can meet
            raise
        return None
    if decoder.is_model(spec) and decoder.problem(trace):
        return None
    return spec, trace


SAME_DRAWS = 40  # usable draws that all repeat the first: no variety (chance ~3^-40 for one drawn entry)


def draw_variants(spec_arg: str, n: int, seed: int,
                  overrides: dict | None = None, judge=None, keep=None) -> list:
    """`n` distinct usable variants with seeds seed, seed+1, ... (unusable or repeated draws are
    skipped, deterministically, and so are those `judge(trace)` turns down when the spec asks for
    random.distinct_mistakes, and those `keep(trace)` does not keep: stress.spread): a list of
    (id, spec, trace)."""
    data, source = read(spec_arg, overrides)
    token = spec_token(spec_arg)
    if judge is not None and not wants_judge(data, source):
        judge = None
    out, seen, alike, usable_repeats = [], set(), 0, 0
    for s in range(seed, seed + n * MAX_TRIES):
        got = draw_variant(data, source, s)
        if got is None or (judge is not None and judge(got[1])):
            continue
        spec, trace = got
        key = variant_key(spec)
        if key in seen:
            usable_repeats += 1
            if len(seen) == 1 and usable_repeats >= SAME_DRAWS:
                raise SpecError(source, "random", f"{SAME_DRAWS + 1} draws in a row gave the same "
                                "variant: nothing is left for `random` to draw (every weight and input "
                                "is given, or low = high); leave weights or inputs out, or widen the range")
            continue
        if keep is not None and not keep(trace):
            alike += 1
            continue
        seen.add(key)
        out.append((make_id(token, s), spec, trace))
        if len(out) == n:
            return out
    why = (f" ({alike} more were turned down: each repeated an answer already shared by as many variants as a "
           f"set of {n} may share; --allow-repeats keeps them)") if alike else ""
    raise SpecError(source, "random", f"found only {len(out)} distinct usable variants in seeds {seed}.."
                    f"{seed + n * MAX_TRIES - 1}{why}; leave more weights or inputs out for `random` to draw, or "
                    "widen random.ranges")


def variant_key(spec: Spec) -> tuple:
    """The drawn numbers of a variant (equal keys: the same exercise)."""
    from symblock.exercises import decoder
    if decoder.is_model(spec):
        return decoder.variant_key(spec)
    return tuple(sorted((k, tuple(v)) for k, v in spec.params.items())), tuple(spec.X or ())


def wants_judge(data: dict, source: str) -> bool:
    """Whether the spec (with its difficulty) asks for random.distinct_mistakes."""
    from symblock.exercises.generate import constraints_of
    rnd = data.get("random")
    return isinstance(rnd, dict) and constraints_of(data, source).distinct_mistakes
