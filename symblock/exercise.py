"""What a worksheet asks: presets and the spec's `exercise:` section, variants drawn from a seed,
and worksheet IDs.

An exercise is the list of steps a student computes (`ask`, in forward order) and the data
printed for them: every parameter an asked step reads, and every step an asked step reads that is
not itself asked (printed as given). Spec section:

    exercise:
      preset: full            # full | attention | norm | ffn (default full)
      ask: [resid1, norm1]    # step names or preset names; replaces the preset
      give: [norm1.mean]      # steps printed as data instead of asked

Worksheet IDs: `<spec>` or `<spec>.<seed>`, where `<spec>` is a built-in example's name or, for a
spec file, `h` + the first 8 characters of the lower-case base32 SHA-256 of the file's bytes, and
`<seed>` is the `random.seed` that drew the variant. `symblock worksheet [SPEC] --id ID` loads the
same spec (a file must be given again and must hash to the same token), re-draws with that seed
and so regenerates the same files, given the same options (--preset, --lang, --decimals).
"""
from __future__ import annotations

import base64
import copy
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

PRESETS = ("full", "attention", "norm", "ffn")
EXERCISE_KEYS = ("preset", "ask", "give")
MAX_TRIES = 50  # seeds tried per wanted variant before giving up


@dataclass(frozen=True)
class Exercise:
    ask: tuple[str, ...]         # steps the student computes, forward order
    data_steps: tuple[str, ...]  # steps printed as given data, forward order
    data_params: tuple[str, ...] # parameters printed as given data (X first)


def SpecError(source: str, where: str, message: str):  # noqa: N802 - keeps `symblock --help` light
    from .spec import SpecError as _SpecError
    return _SpecError(source, where, message)


def preset_steps(preset: str, names: list[str]) -> list[str]:
    """The steps a preset asks, among the computed step names (forward order)."""
    if preset == "full":
        return [n for n in names if n not in ("x", "output")]
    prefix = {"attention": "attn.", "norm": "norm", "ffn": "ffn."}[preset]
    return [n for n in names if n.startswith(prefix)]


def choose(trace, preset: str | None = None) -> Exercise:
    """Validate the spec's `exercise:` section and decide what is asked and given.
    A `preset` from the command line replaces the section's `preset` and `ask`."""
    spec = trace.spec
    src, ex = spec.source, dict(spec.exercise)
    for key in ex:
        if key not in EXERCISE_KEYS:
            raise SpecError(src, f"exercise.{key}", f"unknown key; expected one of {', '.join(EXERCISE_KEYS)}")
    computed = [s.name for s in trace if not s.given]
    all_names = trace.names()

    def names_list(key: str) -> list[str]:
        value = ex.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise SpecError(src, f"exercise.{key}", "expected a list of step names")
        return value

    give = names_list("give")
    for i, name in enumerate(give):
        if name not in all_names:
            raise SpecError(src, f"exercise.give[{i}]", f"no step {name!r} in this block; expected one of "
                            + ", ".join(all_names))
    if preset is None:
        preset = ex.get("preset", "full")
        if preset not in PRESETS:
            raise SpecError(src, "exercise.preset", f"expected one of {', '.join(PRESETS)}, got {preset!r}")
        asked_raw = names_list("ask")
    else:
        asked_raw = []
    if asked_raw:
        asked: list[str] = []
        for i, name in enumerate(asked_raw):
            if not isinstance(name, str):
                raise SpecError(src, f"exercise.ask[{i}]", "expected a step name")
            if name in PRESETS:
                asked += preset_steps(name, computed)
            elif name in trace and trace[name].given:
                raise SpecError(src, f"exercise.ask[{i}]", f"{name} is given in the spec (`given:`), "
                                "so it cannot be asked")
            elif name not in computed:
                raise SpecError(src, f"exercise.ask[{i}]", f"no computed step {name!r} in this block; "
                                "expected a preset (" + ", ".join(PRESETS) + ") or one of " + ", ".join(computed))
            else:
                asked.append(name)
    else:
        asked = preset_steps(preset, computed)
    ask = [n for n in computed if n in set(asked) and n not in give]
    if not ask:
        where = "exercise.ask" if asked_raw else "exercise"
        raise SpecError(src, where, f"nothing to ask: preset {preset!r} with these `give` steps leaves no "
                                    "computed step (this block computes " + ", ".join(computed) + ")")
    reads = set(give)
    for name in ask:
        reads.update(trace[name].inputs)
    data_steps = tuple(n for n in all_names if n in reads and n not in ask)
    data_params = tuple(p for p in trace.params if p in reads or (p == "X" and "x" in reads))
    data_params = tuple(p for p in data_params if not (p == "X" and "x" in data_steps))
    return Exercise(tuple(ask), data_steps, data_params)


# ---------------------------------------------------------------- IDs and variants

def spec_token(spec_arg: str) -> str:
    """The `<spec>` part of an ID: an example name, or `h` + a hash of the spec file's bytes."""
    from .spec import example_names
    if spec_arg in example_names() and not Path(spec_arg).exists():
        return spec_arg
    path = Path(spec_arg)
    if not path.is_file():
        raise SpecError(str(path), "", "no such file (give a spec path or a built-in example name; "
                                       "`symblock examples` lists them)")
    digest = hashlib.sha256(path.read_bytes()).digest()
    return "h" + base64.b32encode(digest).decode("ascii")[:8].lower()


def make_id(token: str, seed: int | None) -> str:
    return token if seed is None else f"{token}.{seed}"


_ID = re.compile(r"^([A-Za-z0-9_-]+?)(?:\.(\d{1,18}))?$")


def parse_id(ident: str, spec_arg: str | None) -> tuple[str, int | None]:
    """The spec to load and the seed for a worksheet ID; `spec_arg` is the SPEC the user gave."""
    from .cli import UsageError
    from .spec import example_names
    m = _ID.match(ident or "")
    if not m:
        raise UsageError(f"--id: {ident!r} is not a worksheet ID (expected NAME or NAME.SEED, "
                         "as printed on a sheet, e.g. pre-ln-causal-gelu.7)")
    token, seed = m.group(1), m.group(2)
    seed = int(seed) if seed is not None else None
    if spec_arg is None:
        if token not in example_names():
            hint = " (a spec file's ID: give the file too, `symblock worksheet FILE --id ID`)" \
                if re.fullmatch(r"h[a-z2-7]{8}", token) else ""
            raise UsageError(f"--id: no built-in example {token!r}{hint}")
        return token, seed
    have = spec_token(spec_arg)
    if have != token:
        raise UsageError(f"--id: {ident} was made from spec {token!r}, but {spec_arg} is {have!r} "
                         "(the file changed, or it is another spec)")
    return spec_arg, seed


def read(spec_arg: str, overrides: dict | None = None) -> tuple[dict, str]:
    """The raw mapping of a spec (example name or file) and its source name; `overrides` (from the
    command line's random-section flags) replace keys of its `random:` section."""
    from .spec import example_names, example_text, read_mapping
    if spec_arg in example_names() and not Path(spec_arg).exists():
        data, _ = read_mapping(f"{spec_arg}.yaml", example_text(spec_arg))
        source = f"example:{spec_arg}"
    else:
        data, source = read_mapping(spec_arg)
    if overrides:
        rnd = data.get("random") if isinstance(data.get("random"), dict) else {"seed": 1}
        data = {**data, "random": {**rnd, **overrides}}
    return data, source


def with_seed(data: dict, source: str, seed: int):
    """The spec with its `random.seed` replaced: missing weights/inputs are drawn again."""
    from .spec import from_mapping
    rnd = data.get("random")
    if not isinstance(rnd, dict):
        raise SpecError(source, "random", "variants need a `random:` section (e.g. `random: {seed: 1, "
                                          "low: -2, high: 2}`) and weights or inputs left out for it to draw")
    data = copy.deepcopy(data)
    data["random"] = {**rnd, "seed": seed}
    return from_mapping(data, source)


def draw_variant(data: dict, source: str, seed: int, max_cost: int | None = None):
    """One variant: (spec, trace) for `seed`, or None when that draw is unusable (e.g. a row with
    zero variance and ε = 0). The single place where generation constraints plug in (issue 5)."""
    from .block import forward
    from .spec import SpecError as _SpecError
    spec = with_seed(data, source, seed)
    try:
        return spec, forward(spec, max_cost=max_cost)
    except _SpecError as e:
        if e.where.startswith(("dims", "random")):  # random.*: a constraint no draw can meet
            raise
        return None


def draw_variants(spec_arg: str, n: int, seed: int, max_cost: int | None = None,
                  overrides: dict | None = None) -> list:
    """`n` distinct usable variants with seeds seed, seed+1, ... (unusable or repeated draws are
    skipped, deterministically): a list of (id, spec, trace)."""
    data, source = read(spec_arg, overrides)
    token = spec_token(spec_arg)
    out, seen = [], set()
    for s in range(seed, seed + n * MAX_TRIES):
        got = draw_variant(data, source, s, max_cost)
        if got is None:
            continue
        spec, trace = got
        key = (tuple(sorted((k, tuple(v)) for k, v in spec.params.items())), tuple(spec.X or ()))
        if key in seen:
            continue
        seen.add(key)
        out.append((make_id(token, s), spec, trace))
        if len(out) == n:
            return out
    raise SpecError(source, "random", f"found only {len(out)} distinct usable variants in seeds {seed}.."
                    f"{seed + n * MAX_TRIES - 1}; leave more weights or inputs out for `random` to draw, or "
                    "widen random.low/high")
