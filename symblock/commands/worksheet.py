"""Write a worksheet and its answer key for a block spec: LaTeX and Markdown (PDF with --pdf), or
any of HTML, Moodle XML, Canvas QTI and Jupyter (--format); with --variants N, a set of N variants
(one per student) with sheets.pdf/keys.pdf, blank answers files and the manifest `grade` reads.

The argparse glue over `symblock.sheets.worksheet` (documents, files) and `symblock.exercises`
(presets, variants, IDs).
"""
from __future__ import annotations

EXAMPLES = """\
examples:
  symblock worksheet --out ws --pdf                # the seed block: sheet + key
  symblock worksheet pre-ln-causal-gelu --preset attention --out ws2
  symblock worksheet class.yaml --variants 30 --out set --pdf
  symblock worksheet --id pre-ln-causal-gelu.3 --out again   # the same .tex and .md, byte for byte
  symblock worksheet set/instructor/manifest.yaml --id ID --out again   # a set's variant, from its manifest
  symblock worksheet --format html,ipynb --lang zh --out web
  (class.yaml holding `random: {seed: 1, difficulty: medium}` draws a
  different block of the same size for every variant)"""  # the --help epilog

import os
from pathlib import Path

from symblock.sheets.worksheet import ENGINES, bundle, documents, remove_files, write_files


def add_arguments(p) -> None:
    from symblock.commands.arguments import add_spec_argument, bounded, decimals, nonneg
    from symblock.options import DEFAULT_EXAMPLE, MAX_DECIMALS, MAX_SEED, MAX_VARIANTS
    from symblock.exercises.presets import PRESETS
    from symblock.sheets.lang import LANGS
    add_spec_argument(p, None, "", f"default: {DEFAULT_EXAMPLE}; with --difficulty D and no SPEC, preset:D, "
                                   "the difficulty's own block, ID preset-D.SEED")
    p.add_argument("--out", metavar="DIR", required=True, help="directory to write into")
    p.add_argument("--format", default="latex,markdown", metavar="LIST",
                   help="comma-separated: latex, markdown, html, moodle, qti, ipynb (default latex,markdown)")
    p.add_argument("--pdf", action="store_true", help="also compile the LaTeX (TeX Live: pdflatex, or xelatex for zh)")
    p.add_argument("--jobs", type=nonneg, metavar="N",
                   help="LaTeX compiles run at once (default or 0: the number of cores; at most 64); with "
                        "--variants and N >= 2 the variants are also rendered in N processes (the same files)")
    p.add_argument("--preset", choices=PRESETS,
                   help="which steps to ask (default: the spec's `exercise:` section, else full)")
    p.add_argument("--loss", choices=("sum", "mse"),
                   help="--preset backprop: the loss of the output (default: the spec's exercise.loss, else mse "
                        "against an integer target drawn from the seed)")
    p.add_argument("--wrt", metavar="NAMES",
                   help="--preset backprop: comma-separated parameters to differentiate, e.g. W_2,W_1 "
                        "(default: the spec's exercise.wrt, else W_2,W_1)")
    p.add_argument("--decimals", type=decimals, metavar="N",   # None: 3, or a set manifest's (`_from_set`)
                   help=f"decimal places of rounded values (default 3, or the set's when SPEC is its manifest; at most "
                        f"{MAX_DECIMALS})")
    p.add_argument("--lang", choices=LANGS,
                   help="language of the prose (default en, or the set's when SPEC is its manifest)")
    p.add_argument("--title", help="title printed on sheet and key (default: the spec's title)")
    p.add_argument("--space", type=float, default=0, metavar="CM",
                   help="working space under each task's grid on the sheet, in cm (default none)")
    p.add_argument("--variants", type=bounded(1, MAX_VARIANTS), metavar="N",
                   help=f"write N variants drawn from --seed (at most {MAX_VARIANTS:,})")
    p.add_argument("--seed", type=bounded(0, MAX_SEED), metavar="S", help="first seed of --variants (default 1)")
    p.add_argument("--id", metavar="ID", help="regenerate the variant with this worksheet ID")
    p.add_argument("--template-dir", metavar="DIR",
                   help="a directory of templates used before the built-in ones (rendered sandboxed)")
    p.add_argument("--force", action="store_true",
                   help="overwrite existing output files, and remove the files an earlier run wrote there that "
                        "this run does not (a dropped variant's folder, a format or PDF not written now)")
    p.add_argument("--link-key", action="store_true",
                   help="--format html, one variant: the sheet page links to its key (default: no link, "
                        "for sheets handed to students)")
    p.add_argument("--list", action="store_true", help="with --variants: print every file written "
                                                       "(default: one summary line per kind)")
    p.add_argument("--allow-repeats", action="store_true",
                   help="--variants: write the set even when some asked step repeats its answer in more "
                        "than 10%% of the variants (or a statistic takes fewer than 5 values), or is the "
                        "same on every sheet because it reads only given data (e.g. a given X)")
    p.add_argument("--max-cost", type=nonneg, metavar="N", help="raise the exact engine's size limit")
    from symblock.commands.flags import add_random_arguments
    add_random_arguments(p)


def options(args):
    """The exercise the command line chooses (--preset, --loss, --wrt)."""
    from symblock.exercises.variant import Options
    return Options.of(args.preset, args.loss, _wrt(args.wrt))


def variants(args, manifest: dict | None = None) -> list:
    """The Variants (exercises/variant.py) to write, as the options ask: each exercise chosen once.
    `manifest`: the set's, when SPEC is one (`_from_set`): its variant --id, as the set stored it."""
    from symblock.exercises import variant, variants
    from symblock.engine.model import forward_any as forward  # a block, or a model (decoder preset)
    from symblock.errors import UsageError
    from symblock.commands.flags import overrides_from_args
    from symblock.exercises.generate import from_mapping
    from symblock.exercises.spec_arg import default_spec
    overrides, opts = overrides_from_args(args), options(args)  # the same flags must be given again with --id
    if args.id is not None:
        if args.variants is not None or args.seed is not None:
            raise UsageError("--id regenerates one variant; it cannot be combined with --variants/--seed")
        if manifest is not None:
            from symblock.grading.gradebook import Variants
            pool = Variants(manifest, str(Path(args.spec)))   # its stored entries checked as it is built
            if pool.problem(args.id):
                raise UsageError(f"--id: {pool.problem(args.id)}, read from {args.spec}")
            return [pool.variant(args.id)]
        return [variant.rebuild(args.id, args.spec, opts, overrides=overrides)]
    spec_arg = args.spec or default_spec(overrides)  # --difficulty D alone: preset:D
    overrides = variants.new_flags(spec_arg, overrides)  # a new draw: the newest generator version
    if args.variants is not None:
        if args.variants < 1:
            raise UsageError("--variants: expected at least 1")
        seed = 1 if args.seed is None else args.seed
        from symblock.grading.mistakes import judge
        from symblock.exercises.stress import spread
        def draw(keep):
            return variant.draw_set(spec_arg, args.variants, seed, opts, overrides, judge(args.decimals), keep)
        drawn = draw(None if args.allow_repeats else spread(args.variants))
        if not args.allow_repeats and len(drawn) > 1:  # every student's exercise differs (exercises/stress.py)
            from symblock.exercises.stress import require_variety
            _same_on_every_sheet(drawn)
            try:
                require_variety(drawn)
            except UsageError:   # a small set short of a statistic's values: drawn again, each adding one
                drawn = draw(spread(args.variants, values=True))
                require_variety(drawn)
        return drawn
    if args.seed is not None:
        raise UsageError("--seed goes with --variants N")
    spec = from_mapping(*variants.read(spec_arg, overrides)) if overrides else _load(spec_arg)
    ident = variants.make_id(variants.set_token(spec_arg, overrides),
                             variants.id_seed(spec_arg, overrides, spec.seed))
    return [variant.build(ident, forward(spec), opts)]


def _same_on_every_sheet(drawn) -> None:
    """Asked steps that read only what the spec gives (not drawn) have one answer for the whole
    set: the variety guarantee leaves them out, so say so, naming the given data and the fix, on
    stderr; a set where every asked step is such is refused (exit 2): its sheets are all alike."""
    import sys
    from symblock.errors import UsageError
    from symblock.exercises.stress import fixed_steps
    from symblock.engine import parameters
    trace = drawn[0].trace
    fixed = fixed_steps([v.trace for v in drawn])
    asked = list(drawn[0].varied)
    same = [n for n in asked if n in fixed]
    if not same:
        return
    given, todo = [], list(same)
    while todo:   # the given data behind them, in the order the block reads it
        for i in trace[todo.pop(0)].inputs:
            if i in trace.params and i not in given:
                given.append(i)
            elif i in fixed and i in trace and i not in todo:
                todo.append(i)
    given.sort(key=lambda g: parameters.parse(g).kind != "input")   # X (b1.X) first: the likely cause
    data = ", ".join(given) or "the spec's data"
    x = [g for g in given if parameters.parse(g).kind == "input"]
    fix = (f"leave {'inputs.X' if x else 'them'} out of the spec so that "
           f"{'X is' if x else 'they are'} drawn for each variant, or pass --allow-repeats to hand "
           "out the same numbers on purpose")
    steps = ", ".join(same) if len(same) <= 6 else f"{', '.join(same[:5])} … ({len(same)} steps)"
    if len(same) == len(asked):
        raise UsageError(f"--variants {len(drawn)}: every sheet would have the same answers: every asked "
                         f"step ({steps}) reads only {data}, none of which is drawn; {fix}")
    print(f"symblock worksheet: warning: {steps} {'has' if len(same) == 1 else 'have'} the same answer on "
          f"all {len(drawn)} sheets: {'it reads' if len(same) == 1 else 'they read'} only {data}, none "
          f"of which is drawn; {fix}", file=sys.stderr)


def _load(spec_arg: str):
    from symblock.exercises.generate import load
    return load(spec_arg, allow_model=True)


def _one_positions_table(args) -> None:
    """The positions preset's table depends on no draw: a set of variants would repeat it."""
    from symblock.errors import UsageError
    if args.preset == "positions" and args.variants is not None:
        raise UsageError("--variants: the positions preset's table depends on no draw, so every variant "
                         "would be the same; leave --variants out, or vary model.pe_base or the prompt")


def _formats_for_models(sets, formats) -> None:
    """A decoder sheet (a model spec) goes out in every format but the notebook, whose check cell
    marks one block's steps."""
    from symblock.errors import UsageError
    from symblock.sheets.notebook import FORMS
    if "ipynb" in formats and any(v.trace.form not in FORMS for v in sets):
        raise UsageError("--format ipynb: a decoder worksheet (a model spec) has no notebook yet; use "
                         "latex, markdown, html, moodle or qti")


def _wrt(text: str | None) -> list[str] | None:
    return None if text is None else [w.strip() for w in text.split(",") if w.strip()]


def parse_formats(text: str) -> list[str]:
    from symblock.errors import UsageError, close_matches
    from symblock.options import FORMAT_ALIASES
    from symblock.sheets.render import FORMATS
    fmts = [f.strip() for f in text.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        b = bad[0].lower() if bad else ""   # a format's other name (md, jupyter), a typo or pdf
        meant = FORMAT_ALIASES.get(b)
        hint = (" (a PDF comes from the LaTeX: add --pdf)" if b == "pdf" else f" (did you mean {meant}?)" if meant
                else f" (did you mean {close[0]}?)" if (close := close_matches(b, FORMATS)) else "")
        raise UsageError(f"--format: expected a comma-separated list of {', '.join(FORMATS)}, got {text!r}{hint}")
    return list(dict.fromkeys(fmts))


def run(args) -> int:
    written, idents, result, removed = write(args)
    many = args.variants is not None
    for line in (map(str, written) if not many or args.list else _summary(Path(args.out), written, idents)):
        print(line)
    if removed:
        print(_removed(Path(args.out), removed))
    if result is not None and result.failed:
        raise result.error(Path(args.out), len(idents))
    return 0


def write(args) -> tuple[list, list[str], object, list[Path]]:
    """(the files written, the variants' IDs, a set's write result or None, the files of an
    earlier run that --force removed: `left_over`) of the arguments."""
    from symblock.errors import UsageError
    manifest = _from_set(args)
    formats = parse_formats(args.format)
    if args.title is not None:
        from symblock.engine.spec import check_text
        check_text(args.title, "--title", "")
        if not args.title.strip():
            raise UsageError("--title: expected a title, got an empty text (leave --title out for the spec's own)")
    if not 0 <= args.space <= 30:
        raise UsageError(f"--space: expected centimetres from 0 to 30, got {args.space:g}")
    args.space = round(args.space, 2)  # to 0.1 mm: a length LaTeX reads (never 1e-05)
    if args.pdf and "latex" not in formats:
        raise UsageError("--pdf needs the latex format (--format latex,...)")
    if args.template_dir and not Path(args.template_dir).is_dir():
        raise UsageError(f"--template-dir: {args.template_dir} is not a directory")
    if args.jobs is not None and args.jobs > 64:
        raise UsageError(f"--jobs: expected at most 64, got {args.jobs}")
    jobs = args.jobs or None
    engine = ENGINES[args.lang] if args.pdf else None
    _one_positions_table(args)
    sets = variants(args, manifest)
    _formats_for_models(sets, formats)
    from symblock.engine.spec import check_text
    for v in sets:  # printed escaped by forward; a file needs text UTF-8 can hold
        check_text(v.spec.title, v.spec.source, "title")
    many = args.variants is not None
    if many and args.link_key:
        raise UsageError("--link-key: a set's sheets go to students/ and never link to the keys, which "
                         "stay in instructor/ (its index.html links every key)")
    models: dict[str, dict] = {}

    def document(v):
        docs = documents(v, formats=formats, lang=args.lang, places=args.decimals, title=args.title,
                         template_dir=args.template_dir, space=args.space)
        return docs.files, docs.model
    done = rendered_at_once(sets, document, args.jobs) if many and (args.jobs or 0) > 1 else {}

    def render(v) -> dict[str, str]:
        got = done.pop(v.ident) if v.ident in done else document(v)
        if isinstance(got, BaseException):
            raise got
        models[v.ident] = got[1]
        return got[0]

    def set_extra() -> dict:  # once every variant is rendered
        done = [(v, models[v.ident]) for v in sets if v.ident in models]
        if {"moodle", "qti"} & set(formats):
            _lms_answers(done, args.decimals)
        models_in_order = [m for _, m in done]
        extra = bundle(models_in_order, formats, many, args.template_dir, args.link_key)  # html, moodle, qti, ipynb
        if many:  # the set remembers itself: manifest.yaml and blank answers files, for `symblock grade`
            from symblock.grading.manifest import set_files
            from symblock.commands.flags import overrides_from_args
            from symblock.exercises.spec_arg import default_spec
            extra.update(set_files(sets, args.spec or default_spec(overrides_from_args(args)),
                                   overrides=overrides_from_args(args), decimals=args.decimals, lang=args.lang))
        return extra
    result = None
    try:
        if not many:
            one, = sets
            written = write_files(Path(args.out), {**render(one), **set_extra()}, force=args.force,
                                  pdf_engine=engine, jobs=jobs)
        else:  # rendered one by one inside, under the progress bar
            from symblock.sheets.sets import write_set
            result = write_set(Path(args.out), [(v.ident, lambda v=v: render(v)) for v in sets], formats,
                               force=args.force, pdf_engine=engine, jobs=jobs, extra=set_extra)
            written = result.written
    except OSError as e:  # /proc/..., /sys/..., a read-only disk, a name too long: the folder, not a bug
        where = f" ({e.filename})" if e.filename and ".symblock-" not in str(e.filename) \
            and str(e.filename) != args.out else ""
        raise UsageError(f"--out {args.out}: cannot write there: {e.strerror or e}{where}") from None
    removed = remove_files(Path(args.out), left_over(Path(args.out), written, many)) if args.force else []
    return written, [v.ident for v in sets], result, removed


def _from_set(args) -> dict | None:
    """The set's manifest when SPEC is one (SET/instructor/manifest.yaml, or the set's folder), read and checked as `grade`
    reads it: with --id, the variant is written again from it alone (the spec file not needed), with
    the set's preset, flags, places and language, unless --decimals or --lang asks for others. None
    for a spec; --decimals and --lang then default to 3 and en."""
    from symblock.errors import UsageError
    from symblock.grading import manifest
    if args.spec and Path(args.spec).is_dir() and manifest.find(Path(args.spec)) is not None:
        args.spec = str(manifest.find(Path(args.spec)))   # a set's folder (SET or SET/instructor): its manifest
    is_set = bool(args.spec) and manifest.is_manifest(args.spec)
    man = manifest.read(Path(args.spec).parent, entries=False) if is_set else None   # entries: as the variant is built
    if man is not None:
        from symblock.commands.flags import overrides_from_args
        given = [f for f, v in (("--preset", args.preset), ("--loss", args.loss), ("--wrt", args.wrt)) if v]
        if args.id is None:
            raise UsageError(f"{args.spec}: a set's manifest (what `worksheet --variants` wrote, read by `grade` and "
                             f"`check`), not a spec: give --id ID to write one of its variants again (--id "
                             f"{man['variants'][0]['id']}), or, to draw a new set, the spec it was drawn from "
                             f"({man.get('spec_source') or 'its spec file'})")
        if given or overrides_from_args(args):
            raise UsageError(f"{given[0] if given else 'random-section flags'}: {args.spec} is a set's manifest, "
                             "which gives the set's own preset, loss, wrt and random-section flags; leave them out")
    args.decimals = args.decimals if args.decimals is not None else man["decimals"] if man else 3
    args.lang = args.lang or (man["lang"] if man else "en")
    return man


def left_over(out: Path, written: list, many: bool) -> list[Path]:
    """The files an earlier worksheet run wrote into `out` that this run did not write again: an
    earlier sheet.pdf beside a new sheet.tex, the folders of variants the new set does not have,
    moodle.xml of a set now written without it. Only names a worksheet run writes, where it
    writes them, are looked at; any other file is left alone."""
    from symblock.grading.manifest import ANSWERS, NAME
    from symblock.sheets import html, moodle, notebook, qti
    from symblock.sheets.sets import INSTRUCTOR, SET_NAMES, STUDENTS
    from symblock.sheets.worksheet import DOCS
    variant = {d + e for d in DOCS for e in (".tex", ".pdf", ".md", ".html")} | {notebook.FILE, *ANSWERS}
    lms = {moodle.FILE, qti.FILE}
    katex = list(html.katex_files())   # katex/…
    if many:
        whole = {n for t in SET_NAMES.values() for n in (t, t[:-4] + ".pdf")} | lms | {NAME, "index.html"}
        names = []
        for side in (out / STUDENTS, out / INSTRUCTOR):
            names += [side / n for n in [*whole, *katex]]
            names += [d / n for d in (sorted(side.iterdir()) if side.is_dir() else [])
                      if d.is_dir() and not d.is_symlink() and d.name != html.KATEX for n in variant]
    else:
        names = [out / n for n in [*variant, *lms, *katex]]
    kept = {os.path.abspath(p) for p in written}
    return [p for p in names if (p.is_file() or p.is_symlink()) and os.path.abspath(p) not in kept]


def _removed(out: Path, files: list[Path]) -> str:
    """One line for the files --force removed: the variants whose folders went, then the other
    files' names (katex/ and a removed folder's files not listed one by one)."""
    gone = sorted({p.parent.name for p in files if not p.parent.exists() and "katex" not in p.parts})
    names = sorted({p.name for p in files if p.parent.exists() and "katex" not in p.parts})
    parts = ([f"the folders of {len(gone)} variant{'s' * (len(gone) != 1)} this run does not have "
              f"({', '.join(gone[:3])}{' …' if len(gone) > 3 else ''})"] if gone else []) \
        + ([", ".join(names[:6]) + (" …" if len(names) > 6 else "")] if names else []) \
        + (["katex/"] if any("katex" in p.parts for p in files) else [])
    return (f"removed {len(files)} file{'s' * (len(files) != 1)} an earlier run left in {out} that this run "
            f"does not write: {'; '.join(parts)}")


def rendered_at_once(sets: list, document, jobs: int) -> dict:
    """{ID: (files, sheet model)} of every variant, rendered by `document` in `jobs` forked processes
    (each a contiguous share, in order), or the exception a variant's rendering raised, which the
    set then meets at that variant as a serial run would. {} where processes cannot be forked."""
    import multiprocessing
    if "fork" not in multiprocessing.get_all_start_methods() or len(sets) < 2:
        return {}
    ctx = multiprocessing.get_context("fork")
    jobs = min(jobs, len(sets))
    shares = [sets[k * len(sets) // jobs:(k + 1) * len(sets) // jobs] for k in range(jobs)]
    pipes, procs = [], []
    for share in shares:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_render_share, args=(child, share, document), daemon=True)
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)
    out: dict = {}
    try:
        for conn, share in zip(pipes, shares):
            try:
                out.update(conn.recv())
            except EOFError:
                raise RuntimeError("a rendering process ended without its sheets") from None
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
    return out


def _render_share(conn, share: list, document) -> None:
    """One process of `rendered_at_once`: its variants rendered in order, up to the first that fails."""
    import pickle
    got: dict = {}
    for v in share:
        try:
            got[v.ident] = document(v)
        except Exception as e:
            try:
                pickle.dumps(e)
            except Exception:
                e = RuntimeError(f"{type(e).__name__}: {e}")
            got[v.ident] = e
            break
    conn.send(got)
    conn.close()


def _summary(out: Path, written: list, idents: list[str]) -> list[str]:
    """A set's files in a few lines (a 30-variant set writes ~200 files): the variants and what
    each holds in students/ and instructor/, then the set's own files (katex/ as one folder)."""
    ids = set(idents)
    inner = [Path(p) for p in written if Path(p).parent.name in ids]
    folders = list(dict.fromkeys(p.parent.name for p in inner))
    lines = []
    if folders:
        span = ", ".join(folders) if len(folders) <= 3 else f"{folders[0]} … {folders[-1]}"
        sides = {side: list(dict.fromkeys(p.name for p in inner if p.parent.parent.name == side))
                 for side in dict.fromkeys(p.parent.parent.name for p in inner)}
        each = "; ".join(f"{side}/<ID>/: {', '.join(names)}" for side, names in sides.items())
        lines.append(f"wrote {len(folders)} variant{'' if len(folders) == 1 else 's'} in {out}/ ({span}), each: {each}")
    own = list(dict.fromkeys(str(Path(*Path(p).parts[:len(out.parts) + 2])) + ("/" if len(Path(p).parts)
                             > len(out.parts) + 2 else "") for p in written if Path(p).parent.name not in ids))
    if own:
        lines.append("set files: " + ", ".join(own))
    return lines


def _lms_answers(done: list, places: int) -> None:
    """What the Moodle and QTI questions accept for each entry (grading.points: the exact value, the
    key's printed chain, rounding slips), worked from each (Variant, sheet model)."""
    from symblock.grading.points import annotate
    for v, model in done:
        annotate(model["tasks"], v.trace, v.exercise, places)
