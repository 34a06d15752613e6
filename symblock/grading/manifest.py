"""A set remembers itself: `worksheet --variants N` writes SET/instructor/manifest.yaml and, per variant, a
blank answers file (SET/students/<ID>/answers.yaml and .csv) that `symblock grade` reads back.

The manifest holds everything needed to rebuild and mark each variant without the original spec
file: the parsed spec (as read, decimals kept exact) and its token, the `random:` flags given on the
command line, the preset and flags, the seeds, the asked steps, their points, and each variant's ID,
seed and exercise as it was chosen (exercises/variant.record): `grade` marks from that, so a later
generator cannot change how the set grades (it draws the trace again only to recompute and diagnose):

    symblock_set: 2
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
    variants:
    - id: he4t2yklb.1
      seed: 1
      dir: he4t2yklb.1
      exercise:
        ask: [resid1, norm1.mean, ...]       # asked steps, forward order (gradients backwards)
        given: [x, ...]                      # steps printed as data
        params: [X, W_Q, ...]                # parameters printed as data
        points: {resid1: 1, ...}
        shapes: {resid1: [3, 4], ...}
        answers: {resid1: "1/2, -3/4; 0, 1", ...}   # entries by ", ", rows by "; ": exact ("7/4",
                                             #   "sqrt(5)/2", "-oo"), or a 40-digit decimal where
                                             #   the closed form is too long
        backward: null                       # backprop: {loss, wrt, target}
        extra: []                            # asked tasks that are no engine step (cache.reused)
        categorical: []                      # asked tokens (outside the variety guarantee)
    content_sha256: 3f…            # SHA-256 of the rest (`digest`): an edited manifest is refused

`read` validates every field as the spec loader does (a clear error naming the field, exit 2) and
refuses a manifest whose content no longer matches its hash, or that has none (an older set:
writing it again with the same command gives the same variants, with the hash).
"""
from __future__ import annotations

import hashlib
import json
from decimal import Decimal

import yaml

FORMAT = 2   # 2: each variant's exercise stored (1: chosen again when graded)
NAME = "manifest.yaml"
ANSWERS = ("answers.yaml", "answers.csv")


class _Dumper(yaml.SafeDumper):
    """YAML that keeps a spec's decimals as written (read back as Decimal by the spec loader)."""


def _decimal(dumper, d: Decimal):
    return dumper.represent_scalar("tag:yaml.org,2002:float", str(d))


_Dumper.add_representer(Decimal, _decimal)
_Writer: type = _Dumper
if getattr(yaml, "__with_libyaml__", False):   # libyaml's emitter: the same text, four times faster
    class _CDumper(yaml.CSafeDumper):
        """_Dumper on libyaml's emitter."""

    _CDumper.add_representer(Decimal, _decimal)
    _Writer = _CDumper


def dump(data) -> str:
    return yaml.dump(data, Dumper=_Writer, sort_keys=False, allow_unicode=True, width=100)


def digest(manifest: dict) -> str:
    """SHA-256 of a manifest's content but its hash, over a canonical text (`canonical`: sorted
    keys, every value with its type), so that the same content read back gives the same digest."""
    return hashlib.sha256(canonical(manifest).encode("utf-8", "surrogatepass")).hexdigest()


def canonical(data) -> str:
    """`data` as sorted-key JSON in which no two values of different types print alike (a key 1 and
    a key "1", a decimal 1.5 and a text "1.5"): a hundred times faster than a YAML dump."""
    def norm(v):
        if isinstance(v, dict):
            return {k if isinstance(k, str) else f"\0{type(k).__name__}:{k}": norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if v is None or isinstance(v, (str, bool, int)):
            return v
        return {"\0" + type(v).__name__: str(v)}   # Decimal, float, a date: tagged
    return json.dumps(norm(data), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def yaml_digest(manifest: dict) -> str:
    """The digest that sets written before `canonical` carry (a canonical YAML dump): still accepted."""
    text = yaml.dump(manifest, Dumper=_Dumper, sort_keys=True, allow_unicode=True, width=100)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stamped(manifest: dict) -> dict:
    """`manifest` with its `content_sha256`, taken over the manifest as `read` will see it (the
    spec loader's YAML: decimals as Decimal, `.inf` as text), so that the hash written is the hash
    read back whatever types the values had. The variants' exercises hold only text, whole numbers,
    lists and mappings, which read back as written: they skip the round trip (most of a set's size)."""
    from symblock.engine import files
    entries = manifest.get("variants") or []
    plain = {**manifest, "variants": [{k: v for k, v in e.items() if k != "exercise"} for e in entries]} \
        if entries else manifest
    back = files.parse(dump(plain), NAME, json_syntax=False)
    if entries:
        back["variants"] = [{**b, "exercise": e["exercise"]} if "exercise" in e else b
                            for b, e in zip(back["variants"], entries)]
    return {**manifest, "content_sha256": digest(back)}


def set_files(sets, spec_arg: str, *, overrides: dict | None = None, decimals: int = 3,
              lang: str = "en") -> dict[str, str]:
    """{file name: text} of a set's manifest and blank answers files. `sets`: the Variants written
    (worksheet --variants, exercises/variant.py), `spec_arg` the SPEC given."""
    from symblock.exercises import variant, variants
    data, source = variants.read(spec_arg)
    overrides = variants.new_flags(spec_arg, overrides)   # as worksheet drew the set
    token = variants.set_token(spec_arg, overrides)
    files, entries, first = {}, [], sets[0]
    for v in sets:
        entries.append({"id": v.ident, "seed": variants.split_id(v.ident)[1], "dir": v.ident,
                        "exercise": variant.record(v)})
        files[f"{v.ident}/answers.yaml"] = blank_yaml(v.ident, v.shapes, decimals)
        files[f"{v.ident}/answers.csv"] = blank_csv(v.ident, v.shapes, decimals)
    o = first.options
    manifest = {"symblock_set": FORMAT, "spec_token": token, "spec_source": source, "spec": data,
                "random_flags": dict(overrides or {}), "preset": o.preset, "loss": o.loss,
                "wrt": None if o.wrt is None else list(o.wrt), "decimals": decimals, "lang": lang,
                "seeds": {"first": entries[0]["seed"], "last": entries[-1]["seed"]},
                "asked": list(first.ask), "points": dict(first.points), "variants": entries}
    manifest = stamped(manifest)
    files[NAME] = ("# symblock set: read by `symblock grade SET_DIR ANSWERS_DIR`; do not edit.\n"
                   + dump(manifest))
    return files


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


def find(folder):
    """The manifest of the set in `folder`: folder/manifest.yaml, or the set's own folder's
    instructor/manifest.yaml (so `grade SET` and `grade SET/instructor` both work); None if neither."""
    from symblock.errors import SpecError
    for path in (folder / NAME, folder / "instructor" / NAME):
        if path.is_symlink():   # a link planted in the set could make `grade` quote any file
            raise SpecError(str(path), "", "is a symbolic link; expected the set's own manifest (not read)")
        if path.is_file():
            return path
    return None


def is_manifest(path) -> bool:
    """Whether a file given as a SPEC is a set's manifest (named so, with its variants and their spec
    token), which `worksheet` and `check` then say, or read, as such, never as a spec."""
    from pathlib import Path
    if Path(path).name != NAME or not Path(path).is_file():
        return False
    try:   # its top-level keys, read off the head: a 300-variant manifest takes seconds to parse whole
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 14).splitlines()
    except OSError:
        return False   # not readable as one: the spec reader says what is wrong with it
    keys = {line.split(":", 1)[0] for line in head if line[:1].isalpha()}
    return "symblock_set" in keys and "spec_token" in keys


def locate(set_dir):
    """The manifest file of a set directory (`find`), or a UsageError saying what SET_DIR is instead."""
    from pathlib import Path
    from symblock.errors import UsageError
    path = find(Path(set_dir))
    if path is None and Path(set_dir).is_file():   # the manifest itself, or another file, for the set's folder
        folder = Path(set_dir).parent
        set_of = (folder.parent if folder.name == "instructor" else folder) if Path(set_dir).name == NAME else None
        raise UsageError(f"{set_dir}: a file; expected the set's folder" + (f" ({set_of})" if set_of else "")
                         + ", written by `symblock worksheet --variants N`")
    if path is None:
        raise UsageError(f"{set_dir}: no {NAME} (expected a folder written by `symblock worksheet "
                         "--variants N`)")
    return path


def read(set_dir, entries: bool = True) -> dict:
    """The manifest of a set directory, validated (every field `grade` and `check` use) and
    unedited (its content hash holds). `entries=False`: the stored answers' entries are left to
    `check_entries` (`grade --jobs`: each process checks its share of the variants)."""
    from symblock.engine.spec import read_mapping
    path = locate(set_dir)
    data, source = read_mapping(path)
    _validate(data, source)
    _check_digest(data, source)
    if entries:
        check_entries(data, source)
    return data


def check_entries(data: dict, source: str, ids=None) -> None:
    """Every entry of the stored answers (of the variants `ids`, default all) passes the bounded
    parser's guard (one that passes it and still does not read is named when graded); their
    shapes were checked by `read`."""
    from symblock.exercises.variant import check_entry, matrix_entries
    for k, v in enumerate(data["variants"]):
        if ids is not None and v["id"] not in ids:
            continue
        ex, where = v["exercise"], f"variants[{k}].exercise"
        named = [(f"answers.{n}", t) for n, t in ex["answers"].items()]
        if ex["backward"] is not None and ex["backward"]["target"] is not None:
            named.append(("backward.target", ex["backward"]["target"]))
        for field, text in named:
            for i, row in enumerate(matrix_entries(text)):
                for j, e in enumerate(row):
                    check_entry(e, source, f"{where}.{field}[{i}][{j}]")


def _check_digest(data: dict, source: str) -> None:
    from symblock.errors import SpecError
    given = data.pop("content_sha256", None)
    if given is None:
        raise SpecError(source, "content_sha256", "missing: this manifest was written by an older "
                        "symblock (or edited); write the set again with the same `symblock worksheet "
                        "--variants` command (the variants come out the same) and grade against that")
    if given != digest(data) and given != yaml_digest(data):
        raise SpecError(source, "content_sha256", "does not match the manifest's content: the manifest "
                        "was edited after `symblock worksheet --variants` wrote it; write the set again "
                        "instead of editing it")


def _validate(data: dict, source: str) -> None:
    """Every field as `worksheet --variants` writes it, so that a damaged or edited manifest is an
    error naming the field, never a crash further on."""
    from symblock.engine.fields import int_field, kind_of
    from symblock.errors import SpecError
    from symblock.options import MAX_DECIMALS
    if data.get("symblock_set") == 1:
        raise SpecError(source, "symblock_set", "1: this set was written by an older symblock, which did not "
                        "store each variant's exercise; write the set again with the same `symblock worksheet "
                        "--variants` command (the variants come out the same) and grade against that")
    if data.get("symblock_set") != FORMAT:
        raise SpecError(source, "symblock_set", f"expected {FORMAT} (a set written by this symblock)")
    for key in ("spec_token", "spec", "asked", "points", "variants"):
        if key not in data:
            raise SpecError(source, key, "missing (the manifest was edited or is damaged)")
    _expect(isinstance(data["spec_token"], str), source, "spec_token", "text", data["spec_token"])
    _expect(isinstance(data["spec"], dict), source, "spec", "a mapping (the set's spec)", data["spec"])
    for key in ("random_flags",):
        _expect(isinstance(data.get(key) or {}, dict), source, key, "a mapping", data.get(key))
    for key in ("spec_source", "preset", "loss", "lang"):
        _expect(data.get(key) is None or isinstance(data[key], str), source, key, "text", data.get(key))
    wrt = data.get("wrt")
    _expect(wrt is None or isinstance(wrt, list) and all(isinstance(w, str) for w in wrt), source,
            "wrt", "a list of parameter names", wrt)
    if data.get("decimals") is not None:
        int_field(data["decimals"], source, "decimals", lo=0, hi=MAX_DECIMALS)
    asked = data["asked"]
    _expect(isinstance(asked, list) and asked and all(isinstance(a, str) for a in asked), source,
            "asked", "a list of step names", asked)
    points = data["points"]
    _expect(isinstance(points, dict), source, "points", "a mapping of asked steps to points", points)
    for name, n in points.items():
        int_field(n, source, f"points.{name}", lo=0, hi=1000)
    variants = data["variants"]
    if not isinstance(variants, list) or not variants:
        raise SpecError(source, "variants", f"expected a list of {{id, seed, dir}}, got {kind_of(variants)}")
    for i, v in enumerate(variants):
        if not isinstance(v, dict) or not isinstance(v.get("id"), str):
            raise SpecError(source, f"variants[{i}]", "expected {id, seed, dir} with the ID as text, got "
                            + kind_of(v))
        int_field(v.get("seed"), source, f"variants[{i}].seed", lo=0, hi=None)
        _validate_exercise(v.get("exercise"), source, f"variants[{i}].exercise", asked, points)


EXERCISE_KEYS = ("ask", "given", "params", "points", "shapes", "answers", "backward", "extra", "categorical")
MAX_SIDE = 10_000   # rows or columns of a stored answer


def _validate_exercise(ex, source: str, where: str, asked: list, points: dict) -> None:
    """A variant's stored exercise (exercises/variant.record): the set's asked steps and points,
    a shape per asked step and its answer of that shape, every entry an exact number or decimal
    that the bounded parser reads (never evaluated as code)."""
    from symblock.engine.fields import int_field
    from symblock.errors import SpecError
    _expect(isinstance(ex, dict), source, where, "a mapping (the variant's exercise)", ex)
    for key in EXERCISE_KEYS:
        if key not in ex:
            raise SpecError(source, f"{where}.{key}", "missing (the manifest was edited or is damaged)")
    extra = sorted(set(ex) - set(EXERCISE_KEYS), key=str)
    if extra:
        raise SpecError(source, f"{where}.{extra[0]}", "unknown key; expected one of " + ", ".join(EXERCISE_KEYS))
    if ex["ask"] != asked:
        raise SpecError(source, f"{where}.ask", "expected the set's asked steps (`asked`), in their order")
    if ex["points"] != points:
        raise SpecError(source, f"{where}.points", "expected the set's points (`points`)")
    for key in ("given", "params", "extra", "categorical"):
        names = ex[key]
        _expect(isinstance(names, list) and all(isinstance(n, str) for n in names), source,
                f"{where}.{key}", "a list of step names", names)
        if key in ("extra", "categorical") and not set(names) <= set(asked):
            raise SpecError(source, f"{where}.{key}", "expected asked steps only")
    for key in ("shapes", "answers"):
        _expect(isinstance(ex[key], dict) and list(ex[key]) == asked, source, f"{where}.{key}",
                "a mapping of the asked steps, in their order", ex[key])
    for name in asked:
        shape = ex["shapes"][name]
        _expect(isinstance(shape, list) and len(shape) == 2, source, f"{where}.shapes.{name}", "[rows, columns]", shape)
        r, c = (int_field(n, source, f"{where}.shapes.{name}", lo=1, hi=MAX_SIDE) for n in shape)
        _matrix(ex["answers"][name], (r, c), source, f"{where}.answers.{name}")
    back = ex["backward"]
    if back is not None:
        from symblock.calculus.grad import LOSSES
        _expect(isinstance(back, dict) and set(back) == {"loss", "wrt", "target"}, source, f"{where}.backward",
                "null or {loss, wrt, target}", back)
        _expect(back["loss"] in LOSSES, source, f"{where}.backward.loss", "one of " + ", ".join(LOSSES), back["loss"])
        wrt = back["wrt"]
        _expect(isinstance(wrt, list) and wrt and all(isinstance(w, str) for w in wrt), source,
                f"{where}.backward.wrt", "a list of parameter names", wrt)
        if back["target"] is not None:
            _matrix(back["target"], None, source, f"{where}.backward.target")


def _matrix(text, shape, source: str, where: str) -> None:
    """A stored matrix (exercises/variant.matrix_text: entries joined by ", ", rows by "; "), of
    `shape` when given (its entries: `check_entries`)."""
    from symblock.errors import SpecError
    from symblock.exercises.variant import matrix_entries
    _expect(isinstance(text, str), source, where, 'rows of entries as text ("1/2, -3; 0, 1")', text)
    rows = matrix_entries(text)
    if any(len(r) != len(rows[0]) for r in rows):
        raise SpecError(source, where, "expected rows of equal length")
    if shape is not None and (len(rows), len(rows[0])) != shape:
        raise SpecError(source, where, f"expected {shape[0]} × {shape[1]} entries (its shape), got "
                        f"{len(rows)} × {len(rows[0])}")


def _expect(ok: bool, source: str, where: str, what: str, value) -> None:
    from symblock.engine.fields import kind_of
    from symblock.errors import SpecError
    if not ok:
        raise SpecError(source, where, f"expected {what}, got {kind_of(value)}")
