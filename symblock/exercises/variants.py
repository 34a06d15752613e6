"""Worksheet IDs, and the spec a variant is drawn from (drawing and the Variant: variant.py).

Worksheet IDs: `<spec>` or `<spec>.<seed>`, where `<spec>` is a built-in example's name or, for a
spec file, `h` + the first 8 characters of the lower-case base32 SHA-256 of the *canonical parsed
spec* (`canonical`: the mapping as sorted-key JSON, without `random.seed` and `random.generator`), so comments, key order,
quoting, YAML vs JSON and the file's name do not change it; `<seed>` is the `random.seed` that drew
the variant. `symblock worksheet [SPEC] --id ID` loads the same spec (a file must be given again and
must give the same token), re-draws with that seed and so regenerates the same files, given the
same options (--preset, --lang, --decimals).

A spec whose variants the constraint generator draws (a `random:` section with constraints, or
preset:D) is drawn by a generator version (`random.generator`, exercises/constraints.py): a new
worksheet or set uses the newest (GENERATOR_NEW) unless the spec or its flags name one, and its
ID says so with `-v<N>` after `<spec>` (`preset-medium-v2.7`, `h2kq7fz3a-v2.7`); an ID without it
is version 1 and rebuilds exactly the sheets it always did. The version stays out of the hash (as
the seed does): the ID carries it.
"""
from __future__ import annotations

import base64
import copy
import hashlib
import json
import re

from symblock.errors import SpecError, excerpt

MAX_TRIES = 50  # seeds tried per wanted variant before giving up


def spec_token(spec_arg: str) -> str:
    """The `<spec>` part of an ID: an example name, `preset-D`, or `h` + a hash of the canonical parsed spec."""
    from symblock.exercises.spec_arg import difficulty_of, example_of
    if example_of(spec_arg) is not None:
        return example_of(spec_arg)
    if difficulty_of(spec_arg):
        return f"preset-{difficulty_of(spec_arg)}"
    return token_of(read(spec_arg)[0])


def versioned(token: str, generator: int | None) -> str:
    """`<spec>` with its generator version: `-v<N>` for a version after 1."""
    return token if not generator or generator == 1 else f"{token}-v{generator}"


def split_version(token: str) -> tuple[str, int]:
    """`versioned`'s inverse: ("preset-medium", 2) of "preset-medium-v2", (token, 1) of a token
    without a known version."""
    from symblock.exercises.constraints import GENERATORS
    m = re.fullmatch(r"(.+)-v([0-9]{1,3})", token)
    if m and int(m.group(2)) in GENERATORS and int(m.group(2)) > 1:
        return m.group(1), int(m.group(2))
    return token, 1


def drawn_random(data, overrides: dict | None) -> dict | None:
    """The `random:` section with the flags applied, when the constraint generator draws the spec."""
    from symblock.exercises.constraints import has_constraints
    rnd = data.get("random") if isinstance(data, dict) else None
    rnd = {**(rnd if isinstance(rnd, dict) else {}), **(overrides or {})}
    return rnd if has_constraints(rnd) else None


def new_flags(spec_arg: str, overrides: dict | None) -> dict:
    """The random-section flags of a new worksheet or set: `overrides` with the newest generator
    version added when the generator draws the spec and neither the spec nor a flag names one."""
    from symblock.exercises.constraints import GENERATOR_NEW
    rnd = drawn_random(read(spec_arg)[0], overrides)
    if rnd is None or "generator" in rnd:
        return dict(overrides or {})
    return {**(overrides or {}), "generator": GENERATOR_NEW}


def set_token(spec_arg: str, overrides: dict | None) -> str:
    """The `<spec>` part of the IDs drawn from `spec_arg` with these flags: spec_token, versioned."""
    rnd = drawn_random(read(spec_arg)[0], overrides)
    return versioned(spec_token(spec_arg), None if rnd is None else rnd.get("generator", 1))


def id_seed(spec_arg: str, overrides: dict | None, seed: int | None) -> int | None:
    """The `<seed>` of the ID of a spec drawn with `seed`: that seed, or, when `random.secret` made
    the draws' seed from it (engine/random_section.py), the `random.seed` the spec gives."""
    rnd = read(spec_arg, overrides)[0].get("random")
    if isinstance(rnd, dict) and "secret" in rnd:
        return rnd.get("seed", 0)
    return seed


def id_flags(ident: str, spec_arg: str, overrides: dict | None) -> dict:
    """The flags that rebuild `ident`: `overrides` with the generator version the ID names (none:
    version 1), when the generator draws the spec."""
    g = split_version(split_id(ident)[0])[1]
    if drawn_random(read(spec_arg)[0], overrides) is None:
        return dict(overrides or {})
    return {**(overrides or {}), "generator": g}


def canonical(data) -> str:
    """The parsed spec as one canonical text: sorted keys, decimals by value (1.50 = 1.5), and
    without `random.seed` and `random.generator` (the ID carries both). Two files with the same
    meaning give the same text."""
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
        data["random"] = {k: v for k, v in data["random"].items() if k not in ("seed", "generator")}
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


SPEC_FILE_TOKEN = re.compile(r"h[a-z2-7]{8}")   # token_of's form


def names_spec_file(ident: str) -> bool:
    """Whether `ident` is a well-formed ID whose `<spec>` is a spec file's hash (`token_of`), not a
    built-in example's name: only that file draws it again. The hash covers the whole canonical spec,
    `random.secret` included, so the ID cannot tell a spec of one's own from a private one."""
    from symblock.engine.spec import example_names
    m = _ID.fullmatch(ident or "")
    token = split_version(m.group(1))[0] if m else ""
    return bool(SPEC_FILE_TOKEN.fullmatch(token)) and token not in example_names()


def parse_id(ident: str, spec_arg: str | None, flag: str = "--id") -> tuple[str, int | None]:
    """The spec to load and the seed for a worksheet ID; `spec_arg` is the SPEC the user gave;
    `flag` names where the ID came from in messages (its generator version: id_flags)."""
    from symblock.errors import UsageError
    from symblock.engine.spec import example_names
    from symblock.exercises.spec_arg import difficulty_of
    m = _ID.fullmatch(ident or "")
    if not m:
        raise UsageError(f"{flag}: {excerpt(ident)} is not a worksheet ID (expected NAME or NAME.SEED, "
                         "as printed on a sheet, e.g. pre-ln-causal-gelu.7)")
    from symblock.exercises.constraints import GENERATORS
    if (v := re.fullmatch(r".+-v([0-9]{1,3})", m.group(1))) and int(v.group(1)) not in GENERATORS:
        raise UsageError(f"{flag}: {excerpt(ident)} names generator version {v.group(1)}; this symblock draws "
                         f"versions {', '.join(map(str, GENERATORS))} (a newer symblock made the sheet)")
    token, seed = split_version(m.group(1))[0], m.group(2)
    seed = int(seed) if seed is not None else None
    if spec_arg is None:
        if difficulty_of(token, "-"):
            return f"preset:{difficulty_of(token, '-')}", seed
        if token not in example_names():
            hint = (" (a spec file's ID: give the file too, `symblock worksheet FILE --id ID` or `symblock check FILE "
                    "ANSWERS`; an answers file inside its set folder needs none)") \
                if SPEC_FILE_TOKEN.fullmatch(token) else ""
            raise UsageError(f"{flag}: no built-in example {excerpt(token)}{hint or _near_name(token)}")
        return token, seed
    have = spec_token(spec_arg)
    if have != token and not SPEC_FILE_TOKEN.fullmatch(token) and token not in example_names() \
            and not difficulty_of(token, "-"):   # a misspelt name, no spec's token at all
        raise UsageError(f"{flag}: {excerpt(ident)} names no spec: {excerpt(token)} is no built-in example"
                         f"{_near_name(token)} and no spec file's token (h…)")
    if have != token:
        raise UsageError(f"{flag}: {excerpt(ident)} was made from spec {excerpt(token)}, but {spec_arg} is {excerpt(have)} "
                         "(the file changed, or it is another spec)")
    return spec_arg, seed


def _near_name(token: str) -> str:
    """" (did you mean NAME?)" of an ID's `<spec>` near a built-in example's or a difficulty's name."""
    from symblock.engine.spec import example_names
    from symblock.errors import close_matches
    from symblock.exercises.spec_arg import DIFFICULTY_TITLES
    close = close_matches(token, [*example_names(), *(f"preset-{d}" for d in DIFFICULTY_TITLES)])
    return f" (did you mean {close[0]}?)" if close else ""


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
    return drawn_with_seed(data, source, seed)[0]


def drawn_with_seed(data: dict, source: str, seed: int):
    """`with_seed`'s spec and, when the constraint generator drew it, the trace it worked
    (generate.drawn), else None."""
    from symblock.exercises.generate import drawn
    rnd = data.get("random")
    if not isinstance(rnd, dict):
        raise SpecError(source, "random", "variants need a `random:` section (e.g. `random: {seed: 1, "
                                          "low: -2, high: 2}`) and weights or inputs left out for it to draw")
    data = copy.deepcopy(data)
    data["random"] = {**rnd, "seed": seed}
    return drawn(data, source)
