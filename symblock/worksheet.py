"""Write a worksheet and its answer key (LaTeX and Markdown, optionally PDF) for a block spec.

The sheet has the conventions, the given matrices and one task per asked step with an empty grid;
the key shows, for every task, the formula, the numbers going in, the work (entries written out)
and the exact result with its decimal. `--preset` or the spec's `exercise:` section chooses the
steps; `--variants N --seed S` draws N variants, each with a worksheet ID that `--id` regenerates.

Files: DIR/sheet.tex, DIR/key.tex, DIR/sheet.md, DIR/key.md (+ .pdf with --pdf); with --variants,
one sub-directory DIR/<ID>/ per variant. Existing files are never overwritten without --force, and
files appear only when everything was written (and compiled) without error.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

DOCS = ("sheet", "key")
ENGINES = {"en": "pdflatex", "zh": "xelatex"}


def add_arguments(p) -> None:
    from .cli import DEFAULT_EXAMPLE, _nonneg
    from .exercise import PRESETS
    from .lang import LANGS
    p.add_argument("spec", nargs="?", default=None, metavar="SPEC",
                   help=f"a spec file (YAML/JSON) or a built-in example name (default: {DEFAULT_EXAMPLE})")
    p.add_argument("--out", metavar="DIR", required=True, help="directory to write into")
    p.add_argument("--format", default="latex,markdown", metavar="LIST",
                   help="comma-separated: latex, markdown (default both)")
    p.add_argument("--pdf", action="store_true", help="also compile the LaTeX with latexmk (TeX Live)")
    p.add_argument("--preset", choices=PRESETS,
                   help="which steps to ask (default: the spec's `exercise:` section, else full)")
    p.add_argument("--loss", choices=("sum", "mse"),
                   help="--preset backprop: the loss of the output (default: exercise.loss, else sum)")
    p.add_argument("--wrt", metavar="NAMES",
                   help="--preset backprop: comma-separated parameters to differentiate, e.g. W_2,W_1 "
                        "(default: exercise.wrt, else W_2,W_1)")
    p.add_argument("--decimals", type=_nonneg, default=3, metavar="N",
                   help="decimal places of rounded values (default 3)")
    p.add_argument("--lang", choices=LANGS, default="en", help="language of the prose (default en)")
    p.add_argument("--title", help="title printed on sheet and key (default: the spec's title)")
    p.add_argument("--variants", type=_nonneg, metavar="N", help="write N variants drawn from --seed")
    p.add_argument("--seed", type=_nonneg, metavar="S", help="first seed of --variants (default 1)")
    p.add_argument("--id", metavar="ID", help="regenerate the variant with this worksheet ID")
    p.add_argument("--template-dir", metavar="DIR",
                   help="a directory of templates used before the built-in ones (rendered sandboxed)")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    p.add_argument("--max-cost", type=_nonneg, metavar="N", help="raise the exact engine's size limit")
    from .generate import add_random_arguments
    add_random_arguments(p)


# ---------------------------------------------------------------- orchestration

def variants(args) -> list[tuple[str, object]]:
    """(id, trace) for each document set to write, as the options ask."""
    from . import exercise
    from .block import forward
    from .cli import DEFAULT_EXAMPLE, UsageError
    from .generate import overrides_from_args
    from .spec import from_mapping
    overrides = overrides_from_args(args)  # the same flags must be given again with --id
    if args.id is not None:
        if args.variants is not None or args.seed is not None:
            raise UsageError("--id regenerates one variant; it cannot be combined with --variants/--seed")
        spec_arg, seed = exercise.parse_id(args.id, args.spec)
        data, source = exercise.read(spec_arg, overrides)
        if seed is None:
            return [(args.id, forward(_load(spec_arg), max_cost=args.max_cost))]
        got = exercise.draw_variant(data, source, seed, args.max_cost)
        if got is None:
            raise UsageError(f"--id {args.id}: seed {seed} does not give a usable block")
        return [(args.id, got[1])]
    spec_arg = args.spec or DEFAULT_EXAMPLE
    if args.variants is not None:
        if args.variants < 1:
            raise UsageError("--variants: expected at least 1")
        seed = 1 if args.seed is None else args.seed
        return [(i, t) for i, _, t in exercise.draw_variants(spec_arg, args.variants, seed, args.max_cost,
                                                              overrides)]
    if args.seed is not None:
        raise UsageError("--seed goes with --variants N")
    spec = from_mapping(*exercise.read(spec_arg, overrides)) if overrides else _load(spec_arg)
    return [(exercise.make_id(exercise.spec_token(spec_arg), spec.seed), forward(spec, max_cost=args.max_cost))]


def _load(spec_arg: str):
    from .spec import load
    return load(spec_arg)


def documents(trace, ident: str, *, formats, preset=None, lang="en", places=3, title=None,
              template_dir=None, loss=None, wrt=None) -> dict[str, str]:
    """{file name: text} for one variant: sheet and key in each format."""
    from . import exercise, render, sheet
    ex = exercise.choose(trace, preset, loss=loss, wrt=wrt)
    model = sheet.build(trace, ex, lang=lang, places=places, ident=ident, title=title)
    out = {}
    for fmt in formats:
        for doc in DOCS:
            out[doc + render.FORMATS[fmt]] = render.render(model, fmt, key=(doc == "key"),
                                                           template_dir=template_dir)
    return out


def _wrt(text: str | None) -> list[str] | None:
    return None if text is None else [w.strip() for w in text.split(",") if w.strip()]


def parse_formats(text: str) -> list[str]:
    from .cli import UsageError
    from .render import FORMATS
    fmts = [f.strip() for f in text.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        raise UsageError(f"--format: expected a comma-separated list of {', '.join(FORMATS)}, got {text!r}")
    return list(dict.fromkeys(fmts))


def run(args) -> int:
    from .cli import UsageError
    formats = parse_formats(args.format)
    if args.pdf and "latex" not in formats:
        raise UsageError("--pdf needs the latex format (--format latex,...)")
    if args.template_dir and not Path(args.template_dir).is_dir():
        raise UsageError(f"--template-dir: {args.template_dir} is not a directory")
    files: dict[str, str] = {}
    sets = variants(args)
    many = args.variants is not None
    for ident, trace in sets:
        docs = documents(trace, ident, formats=formats, preset=args.preset, lang=args.lang,
                         places=args.decimals, title=args.title, template_dir=args.template_dir,
                         loss=args.loss, wrt=_wrt(args.wrt))
        for name, text in docs.items():
            files[f"{ident}/{name}" if many else name] = text
    written = write_files(Path(args.out), files, force=args.force,
                          pdf_engine=ENGINES[args.lang] if args.pdf else None)
    for path in written:
        print(path)
    return 0


# ---------------------------------------------------------------- files

def write_files(out: Path, files: dict[str, str], force: bool = False, pdf_engine: str | None = None) -> list[Path]:
    """Write `files` (relative name -> text) under `out`, compiling each .tex to PDF when
    `pdf_engine` is set. Refuses to overwrite unless `force`; everything is written and compiled
    in a temporary directory first and moved into place only when all of it succeeded."""
    from .cli import UsageError
    names = list(files)
    if pdf_engine:
        names += [n[:-4] + ".pdf" for n in files if n.endswith(".tex")]
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} exists and is not a directory")
    clash = [n for n in names if (out / n).exists()]
    if clash and not force:
        raise UsageError(f"--out: {out / clash[0]} already exists"
                         + (f" (and {len(clash) - 1} more)" if len(clash) > 1 else "")
                         + "; use --force to overwrite, or another directory")
    if pdf_engine:
        _require("latexmk")
        _require(pdf_engine)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".symblock-", dir=parent))
    try:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        if pdf_engine:
            for name in files:
                if name.endswith(".tex"):
                    compile_pdf(tmp / name, pdf_engine)
        out.mkdir(parents=True, exist_ok=True)
        done = []
        for name in names:
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / name, target)
            done.append(target)
        return done
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _require(program: str) -> None:
    from .cli import UsageError
    if shutil.which(program) is None:
        raise UsageError(f"--pdf needs {program}, which is not installed (TeX Live: e.g. `apt-get install "
                         "latexmk texlive-latex-extra texlive-xetex texlive-lang-chinese`)")


def compile_pdf(tex: Path, engine: str = "pdflatex") -> Path:
    """Compile one .tex with latexmk (never with shell escape) in its own directory; the log
    stays beside it. Raises UsageError with the log's first error when it fails."""
    from .cli import UsageError
    flag = {"pdflatex": "-pdf", "xelatex": "-xelatex", "lualatex": "-lualatex"}[engine]
    cmd = ["latexmk", flag, "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
           "-file-line-error", "-quiet", tex.name]
    env = dict(os.environ, SOURCE_DATE_EPOCH="0", FORCE_SOURCE_DATE="1")
    proc = subprocess.run(cmd, cwd=tex.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, timeout=600)
    pdf = tex.with_suffix(".pdf")
    if proc.returncode != 0 or not pdf.exists():
        log = tex.with_suffix(".log")
        text = log.read_text(errors="replace") if log.exists() else proc.stdout.decode(errors="replace")
        errors = [line for line in text.splitlines() if line.startswith("!") or ":error" in line.lower()
                  or ".tex:" in line]
        raise UsageError(f"{engine} failed on {tex.name}: " + ("; ".join(errors[:3]) or text[-500:]))
    return pdf
