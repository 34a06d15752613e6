"""A set remembers itself: `worksheet --variants N` writes SET/manifest.yaml and, per variant, a
blank answers file (SET/<ID>/answers.yaml and .csv) that `symblock grade` reads back.

The manifest holds everything needed to rebuild and mark each variant without the original spec
file: the parsed spec (as read, decimals kept exact) and its token, the `random:` flags given on the
command line, the preset and flags, the seeds, the asked steps, their points and each variant's ID:

    symblock_set: 1
    spec_token: he4t2yklb          # the <spec> part of every ID (variants.token_of, or the example's name)
    spec_source: my-block.yaml
    spec: {...}                    # the parsed spec
    random_flags: {}               # --difficulty, --range, ... as `random:` keys
    preset: null                   # --preset (null: the spec's exercise section)
    loss: null
    wrt: null
    decimals: 3                    # the key's places; the default for answers that state none
    lang: en
    seeds: {first: 1, last: 30}
    asked: [resid1, norm1.mean, ...]
    points: {resid1: 1, ...}
    variants: [{id: he4t2yklb.1, seed: 1, dir: he4t2yklb.1}, ...]
"""
from __future__ import annotations

from decimal import Decimal

import yaml

FORMAT = 1
NAME = "manifest.yaml"
ANSWERS = ("answers.yaml", "answers.csv")


class _Dumper(yaml.SafeDumper):
    """YAML that keeps a spec's decimals as written (read back as Decimal by the spec loader)."""


def _decimal(dumper, d: Decimal):
    return dumper.represent_scalar("tag:yaml.org,2002:float", str(d))


_Dumper.add_representer(Decimal, _decimal)


def dump(data) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def set_files(sets, spec_arg: str, *, overrides: dict | None = None, preset=None, loss=None,
              wrt=None, decimals: int = 3, lang: str = "en") -> dict[str, str]:
    """{file name: text} of a set's manifest and blank answers files. `sets`: the (ID, trace) of
    each variant written (worksheet --variants), `spec_arg` the SPEC given."""
    from symblock.exercises import presets, variants
    data, source = variants.read(spec_arg)
    token = variants.spec_token(spec_arg)
    files, entries, first = {}, [], None
    for ident, trace in sets:
        ex = presets.choose(trace, preset, loss=loss, wrt=wrt)
        first = first or ex
        seed = int(ident.rsplit(".", 1)[1])
        entries.append({"id": ident, "seed": seed, "dir": ident})
        shapes = {name: _shape(trace, ex, name) for name in ex.ask}
        files[f"{ident}/answers.yaml"] = blank_yaml(ident, shapes, decimals)
        files[f"{ident}/answers.csv"] = blank_csv(ident, shapes, decimals)
    manifest = {"symblock_set": FORMAT, "spec_token": token, "spec_source": source, "spec": data,
                "random_flags": dict(overrides or {}), "preset": preset, "loss": loss, "wrt": wrt,
                "decimals": decimals, "lang": lang,
                "seeds": {"first": entries[0]["seed"], "last": entries[-1]["seed"]},
                "asked": list(first.ask), "points": dict(first.points), "variants": entries}
    files[NAME] = ("# symblock set: read by `symblock grade SET_DIR ANSWERS_DIR`; do not edit.\n"
                   + dump(manifest))
    return files


def _shape(trace, ex, name: str) -> tuple[int, int]:
    return asked_value(trace, ex, name).shape


def asked_value(trace, ex, name: str):
    """The exact answer (a Mat) of the asked step `name`: a forward step, the decoder's conceptual
    task or a gradient of the backprop exercise."""
    if name in trace:
        return trace[name].value
    if name in ex.extra:   # the decoder's conceptual task
        return ex.extra[name]
    back = ex.backward
    g = next((g for g in back.steps if g.name == name), None) or next(g for g in back.wrt.values() if g.name == name)
    return g.value


def blank_yaml(ident: str, shapes: dict, decimals: int) -> str:
    """The asked steps as `null` grids of the right shapes, with id and an empty name to fill."""
    lines = [f"# Answers to worksheet {ident}. Replace each null by your number (a decimal, a",
             "# fraction such as \"1/3\", or an expression such as \"sqrt(2)/2\"); leave null what you",
             "# did not answer. Rows and columns as on the sheet.",
             f"id: {ident}", "name: \"\"", f"decimals: {decimals}", "steps:"]
    for name, (r, c) in shapes.items():
        row = "[" + ", ".join(["null"] * c) + "]"
        lines.append(f"  {name}: [" + ", ".join([row] * r) + "]")
    return "\n".join(lines) + "\n"


def blank_csv(ident: str, shapes: dict, decimals: int) -> str:
    """The same as a spreadsheet: step,row,col,value with the value left empty (rows from 0)."""
    lines = ["step,row,col,value", f"id,,,{ident}", "name,,,", f"decimals,,,{decimals}"]
    for name, (r, c) in shapes.items():
        lines += [f"{name},{i},{j}," for i in range(r) for j in range(c)]
    return "\r\n".join(lines) + "\r\n"


def read(set_dir) -> dict:
    """The manifest of a set directory, validated enough to rebuild its variants."""
    from pathlib import Path
    from symblock.engine.spec import read_mapping
    from symblock.errors import SpecError, UsageError
    path = Path(set_dir) / NAME
    if path.is_symlink():   # a link planted in the set could make `grade` quote any file
        raise SpecError(str(path), "", "is a symbolic link; expected the set's own manifest (not read)")
    if not path.is_file():
        raise UsageError(f"{set_dir}: no {NAME} (expected a folder written by `symblock worksheet "
                         "--variants N`)")
    data, source = read_mapping(path)
    if data.get("symblock_set") != FORMAT:
        raise SpecError(source, "symblock_set", f"expected {FORMAT} (a set written by this symblock)")
    for key in ("spec_token", "spec", "asked", "points", "variants"):
        if key not in data:
            raise SpecError(source, key, "missing (the manifest was edited or is damaged)")
    if not isinstance(data["variants"], list) or not all(isinstance(v, dict) and "id" in v and "seed" in v
                                                         for v in data["variants"]):
        raise SpecError(source, "variants", "expected a list of {id, seed, dir}")
    return data
