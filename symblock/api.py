"""The Python API: what the command line does, as functions. `import symblock` exposes these names
and imports the engine only when one is first used, so `import symblock` stays light.

    >>> import symblock
    >>> trace = symblock.forward(symblock.load("seed-post-ln"))
    >>> trace["norm1.std"].value.to_sympy()
    Matrix([
    [901/1000],
    [  31/250],
    [  43/100]])
"""
from __future__ import annotations

from pathlib import Path

from typing import TYPE_CHECKING, Any, ContextManager, Mapping, NoReturn, cast, overload

__all__ = ["load", "from_mapping", "forward", "verify", "check", "worksheet", "grade", "spec_from"]

if TYPE_CHECKING:
    import argparse

    from symblock.engine.block import Trace
    from symblock.engine.model_spec import Spec
    from symblock.grading.gradebook import Class
    from symblock.grading.marking import CheckResult
    from symblock.reference.verify import VerifyResult


def load(name_or_path: str | Path) -> "Spec":
    """A built-in example name (`"seed-post-ln"`), a YAML/JSON spec file or the worksheet ID of a
    built-in's variant (`"preset-easy-v2.1"`), validated, with any `random:` draws made under
    their guarantees. A bad spec raises `SpecError` naming the file, the field and what was expected.

        >>> symblock.load("tiny-gpt").vocab
        ('the', 'cat', 'sat', 'on', 'mat')
    """
    from symblock.exercises import generate, variant
    if isinstance(name_or_path, str) and variant.is_built_in_id(name_or_path):
        return variant.spec_of_id(name_or_path)
    return generate.load(name_or_path, allow_model=True)


def from_mapping(data: Mapping[str, Any], source: str = "<spec>") -> "Spec":
    """A spec given as a mapping (what `spec_from` returns, or a parsed YAML file).

        >>> dims = {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1}
        >>> symblock.from_mapping({"dims": dims, "random": {"seed": 1}}).dims.seq_len
        2
    """
    from symblock.exercises import generate
    return generate.from_mapping(data, source, allow_model=True)


def forward(spec: "Spec | str | Path") -> "Trace[Spec]":
    """Work the block (or tiny GPT) forward exactly: a Trace of named steps in forward order, each
    with its formula and exact value. A name, path or ID is loaded first (`load`).

        >>> trace = symblock.forward(symblock.load("seed-post-ln"))
        >>> [s.name for s in trace][:3]
        ['x', 'attn.out', 'resid1']
    """
    from symblock.engine.model import forward_any
    return forward_any(_spec(spec))


def verify(spec: "Spec | str | Path", tol: float = 1e-9, use_torch: bool = True) -> "VerifyResult":
    """Every step again through independent NumPy float64 code and real torch.nn modules (when torch is
    installed and `use_torch`), compared with the exact values (to `tol`, relative above 1); `.ok`
    says whether all agree. A name, path or ID is loaded first (`load`).

        >>> symblock.verify(symblock.load("seed-post-ln"), use_torch=False).ok
        True
    """
    from symblock.reference import verify as v
    return v.run(_spec(spec), tol=tol, use_torch=use_torch)


def _spec(spec: "Spec | str | Path") -> "Spec":
    return load(spec) if isinstance(spec, (str, Path)) else spec


def spec_from(obj: Any, *inputs: Any, **options: Any) -> dict[str, Any]:
    """The spec mapping that reproduces a torch, Hugging Face or nanoGPT object's forward on `inputs`:
    `nn.TransformerEncoderLayer`, `nn.TransformerDecoderLayer`, `nn.Transformer`,
    `nn.MultiheadAttention`, Hugging Face `BertLayer`, `BertModel`, `GPT2LMHeadModel`, `GPT2Model`,
    `LlamaForCausalLM` and nanoGPT's `GPT` (the docs' author tutorial lists each call). Weights are
    the exact decimals of their float64 values; what the spec cannot express is refused by name.

        >>> import torch
        >>> layer = torch.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True, dtype=torch.float64).eval()
        >>> x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        >>> trace = symblock.forward(symblock.from_mapping(symblock.spec_from(layer, x)))
        >>> with torch.no_grad():
        ...     want = layer(x[None])[0]
        >>> float((torch.tensor(trace["output"].value.floats(), dtype=torch.float64) - want).abs().max()) < 1e-9
        True
    """
    from symblock.reference.spec_from import spec_from as read
    return read(obj, *inputs, **options)


def check(spec: str | Path | None, answers: str | Path | Mapping[str, Any], **options: Any) -> "CheckResult":
    """Hand-worked answers checked entry by entry, as `symblock check [SPEC] ANSWERS`: `answers` is an
    answers file (YAML, JSON, CSV; in a set's folder its manifest names the variant) or the same
    mapping in memory; `spec` may be None when the answers carry an `id:`; `options` are the
    command's flags (`id=`, `preset="norm"`, `loss=`, `wrt="W_2,W_1"`, `max_cost=`). The result's `.ok`,
    `.first_break` and `.steps` (each with `.status` and `.diagnosis`) are what `check --json` prints
    (where a partly blank step's status is `partly_blank`; its `.status` is that of its answered entries).

        >>> std = {"decimals": 3, "steps": {"norm1.std": [[0.901], [0.124], [0.43]]}}
        >>> symblock.check("seed-post-ln", std).ok
        True
        >>> r = symblock.check("seed-post-ln", {"decimals": 3, "steps": {"norm1.std": [[0.901], [0.124], [0.7]]}})
        >>> r.ok, r.first_break, [(s.name, s.status) for s in r.steps if s.status != "missing"]
        (False, 'norm1.std', [('attn.out', 'given'), ('norm1.std', 'wrong')])
    """
    from symblock.commands import check as command
    memory = isinstance(answers, Mapping)
    argv = ([] if spec is None else [str(spec)]) + ([] if memory else [str(answers)])
    args = _arguments("check", argv, **options)
    with _cost(args):
        if isinstance(answers, Mapping):
            return command.mark(args, dict(answers), "<answers>")[0]
        return command.mark(args)[0]


@overload
def worksheet(spec: str | Path | None = None, out: None = None, **options: Any) -> dict[str, str | bytes]: ...
@overload
def worksheet(spec: str | Path | None, out: str | Path, **options: Any) -> list[Path]: ...


def worksheet(spec: str | Path | None = None, out: str | Path | None = None,
              **options: Any) -> dict[str, str | bytes] | list[Path]:
    """A worksheet and its key, as `symblock worksheet [SPEC] --out DIR ...`: each option is the
    command's flag (`format="html,markdown"`, `preset="norm"`, `lang="zh"`, `variants=30`,
    `pdf=True`, `force=True`, ...). With `out`, the files are written there and their paths
    returned; without, the documents come back in memory, {file name: text}, nothing written
    (one variant; a set and PDFs need `out`).

        >>> files = symblock.worksheet("seed-post-ln", format="markdown")
        >>> sorted(files)
        ['key.md', 'sheet.md']
        >>> files["key.md"].splitlines()[2]
        '**Answer key** · Worksheet ID: `seed-post-ln`'
    """
    import tempfile

    from symblock.commands import worksheet as command
    from symblock.errors import UsageError
    if out is not None:
        args = _arguments("worksheet", [] if spec is None else [str(spec)], out=str(out), list=True, **options)
        with _cost(args):
            written, idents, result, _ = command.write(args)
        result = cast(Any, result)   # a set's write result (sheets/sets.py), None for one variant
        if result is not None and result.failed:
            raise result.error(Path(out), len(idents))
        return [Path(p) for p in written]
    for flag in ("variants", "pdf"):
        if options.get(flag):
            raise UsageError(f"worksheet: {flag}= writes files; give out= (a folder) as well")
    with tempfile.TemporaryDirectory(prefix="symblock-") as tmp:
        paths = worksheet(spec, Path(tmp) / "ws", **options)
        return {p.relative_to(Path(tmp) / "ws").as_posix(): _read(p) for p in paths if p.is_file()}


def grade(set_dir: str | Path, answers_dir: str | Path, out: str | Path | None = None, *,
          lang: str = "en", carried: str = "1", rounded: str = "9/10", slip: str = "1/2",
          roster: str | Path | None = None, force: bool = False) -> "Class":
    """A class graded, as `symblock grade SET_DIR ANSWERS_DIR`: every answers file against its own
    variant of the set, with the same credit policy (`carried`, `rounded`, `slip`: 0..1 or a
    percentage). Returns the class (`.graded`: each file's `.name`, `.ident`, `.total`,
    `.flags`; `.rejected`: the files that could not be graded, with a `.reason` and `.flags`); with `out`, the
    gradebook, summaries, plots and feedback are written there too, never over existing files
    unless `force`.

        >>> import pathlib, shutil, tempfile
        >>> tmp = pathlib.Path(tempfile.mkdtemp())
        >>> _ = symblock.worksheet("preset:easy", tmp / "set", variants=2, format="markdown")
        >>> (tmp / "answers").mkdir()
        >>> for student in ("ada", "bo"):
        ...     _ = shutil.copy(next((tmp / "set/students").glob("*/answers.yaml")), tmp / f"answers/{student}.yaml")
        >>> cls = symblock.grade(tmp / "set", tmp / "answers")
        >>> sorted((g.name, g.total) for g in cls.graded)      # blank files score nothing
        [('ada', Fraction(0, 1)), ('bo', Fraction(0, 1))]
    """
    from symblock.commands import grade as command
    from symblock.grading import report
    argv = [str(set_dir), str(answers_dir)]
    args = _arguments("grade", argv, lang=lang, carried=carried, rounded=rounded, slip=slip,
                      roster=None if roster is None else str(roster), force=force)
    if out is not None:
        command._no_links(Path(out), ("feedback", report.PLOTS))   # never written through a link
    cls, credit = command.grade(args)
    if out is not None:
        command.write(Path(out), command.documents(cls, credit, lang, report.available()), force)
    return cls


# ---------------------------------------------------------------- the command line's own parsing

def _arguments(command: str, argv: list[str], **options: Any) -> "argparse.Namespace":
    """The command's arguments parsed by its own argparse definition, so every option is checked
    as on the command line; a bad one raises UsageError naming the flag. `name=value` is
    `--name value`, True a bare flag, False and None left out."""
    import argparse
    import importlib

    from symblock.cli import COMMANDS
    from symblock.errors import UsageError

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{command}: {message}")

    module = next(m for name, m, _ in COMMANDS if name == command)
    parser = Parser(prog=f"symblock {command}", add_help=False)
    importlib.import_module(f"symblock.{module}").add_arguments(parser)
    known = {a.dest for a in parser._actions}
    for key, value in options.items():
        if key not in known:
            raise UsageError(f"{command}: no option {key}= (the command's flags: "
                             f"{', '.join(sorted(k for k in known if k not in ('spec', 'help')))})")
        if value is True:
            argv.append(f"--{key.replace('_', '-')}")
        elif value is not None and value is not False:
            for one in (value if isinstance(value, (list, tuple)) and key in _REPEATED else [value]):
                text = ",".join(map(str, one)) if isinstance(one, (list, tuple)) else str(one)
                argv.append(f"--{key.replace('_', '-')}={text}")
    return parser.parse_args(argv)


_REPEATED = {"require", "range", "drop"}   # flags given once per value (--require A --require B)


def _cost(args: "argparse.Namespace") -> "ContextManager[None]":
    """The command's --max-cost, as the command line sets it around a command."""
    from symblock.engine import cost
    return cost.limit(getattr(args, "max_cost", None))


def _read(path: Path) -> str | bytes:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data
