"""The `symblock` command. Thin: parse arguments, call the engine, print. Heavy modules are
imported inside the commands so that `symblock --help` starts fast.

Exit codes: 0 fine, 1 a check failed (verify/check), 2 bad input (message, no traceback),
3 an internal error (a bug: "please report"; `--debug` or SYMBLOCK_DEBUG=1 shows the traceback).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import traceback

from symblock.errors import SpecError, UndecidableError, UsageError, excerpt, printable
from symblock.commands.arguments import HelpFormatter, Parser, add_spec_argument, decimals, nonneg, tolerance
from symblock.options import DEFAULT_EXAMPLE, MAX_DECIMALS  # noqa: F401  (DEFAULT_EXAMPLE re-exported)

ID_NOTE = f"default: {DEFAULT_EXAMPLE}; or the worksheet ID of a built-in's variant, e.g. preset-medium-v2.7"



# Commands that live in their own module: (command, module, one-line help). Each module exposes
# add_arguments(parser) and run(args) -> exit code, and keeps heavy imports inside run().
COMMANDS = [
    ("worksheet", "commands.worksheet", "write worksheets and answer keys (PDF, LaTeX, Markdown, HTML, LMS, Jupyter)"),
    ("check", "commands.check", "check hand-worked answers step by step and diagnose mistakes"),
    ("grade", "commands.grade", "grade a class: a folder of answers files to a gradebook and a summary"),
    ("params", "commands.params", "count a block's parameters and FLOPs per component"),
    ("stress", "commands.stress", "draw many variants of a spec: rejections per constraint, answer spread"),
    ("derive", "commands.derive", "the block's steps as general formulas in symbols, and verified facts"),
    ("depth", "commands.depth", "Pre-LN vs Post-LN as depth grows: gradient norms and output scale (PNG, CSV)"),
    ("grad", "commands.grad", "exact gradients of a loss of the output, backwards step by step"),
    ("import", "commands.import_model", "turn a saved tiny model (Hugging Face folder, nanoGPT ckpt.pt) into a spec"),
]


def main(argv: list[str] | None = None) -> int:
    with _printable_streams():
        argv = sys.argv[1:] if argv is None else argv
        parser = build_parser(only=_command_word(argv))
        from symblock.commands.flags import join_values
        args = parser.parse_args(join_values(argv))  # `--score-range -6:6` as the README writes it
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        try:
            from symblock.engine import cost
            with cost.limit(getattr(args, "max_cost", None)), cost.kept():
                return args.func(args)
        except (SpecError, UsageError, UndecidableError) as e:
            print(f"symblock: error: {e}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # `symblock forward | head`
            return 0
        except KeyboardInterrupt:
            print("symblock: interrupted", file=sys.stderr)
            return 130
        except Exception as e:  # a bug of ours, never disguised as bad input
            if args.debug or os.environ.get("SYMBLOCK_DEBUG"):
                traceback.print_exc()
            else:
                print(f"symblock: internal error, please report: {type(e).__name__}: {e}\n"
                      "(run again with --debug for the traceback)", file=sys.stderr)
            return 3


class _Printable(io.TextIOBase):
    """A text stream that escapes control characters before they reach the terminal."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", "utf-8")


@contextlib.contextmanager
def _printable_streams():
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Printable(out), _Printable(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


EXAMPLES = """\
examples (an instructor, a student, an author):
  symblock worksheet --out ws --pdf            # sheet + key of the seed block
  symblock worksheet class.yaml --variants 30 --out set --pdf
  symblock grade set answers                   # gradebook, summary, feedback
  symblock check seed-post-ln answers.yaml     # mark a hand calculation
  symblock forward --format latex --step norm1.std   # LaTeX for notes
  symblock verify pre-ln-causal-gelu           # NumPy and torch.nn agree
  (class.yaml holding `random: {seed: 1, difficulty: medium}` draws a
  different block of the same size for every student)"""

FORWARD_EXAMPLES = """\
examples:
  symblock forward                             # the worked example of an article's Post-LN block
  symblock forward pre-ln-causal-gelu --step attn.h0.weights
  symblock forward my.yaml --json > steps.json # exact strings and floats
  symblock forward preset-medium-v2.7          # the variant a sheet's ID names (a built-in's or a preset's)
  symblock forward --format latex --step norm1.std   # needs only amsmath"""

EXAMPLES_EXAMPLES = """\
examples:
  symblock examples
  symblock examples --show seed-post-ln > my.yaml   # a spec to edit"""

VERIFY_EXAMPLES = """\
examples:
  symblock verify pre-ln-causal-gelu
  symblock verify my.yaml --no-torch          # NumPy only: no torch import, under a second
  symblock verify my.yaml --json --require-torch"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("symblock")
    except PackageNotFoundError:   # run from a source tree that was never installed
        return "(not installed)"


class _Version(argparse.Action):
    """`--version`: the installed package's version, looked up only when asked (importing
    importlib.metadata and reading the package's metadata cost every command ~30 ms)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"symblock {_version()}")
        parser.exit()


def _command_word(argv: list[str]) -> str:
    """The command a command line runs (its first word that is no option), "" for none."""
    return next((a for a in argv if not a.startswith("-")), "")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line. `only`: the command about to run; the other modular commands are
    named with their one-line help but not imported (each costs its imports: ~0.1 s in all)."""
    p = Parser(
        prog="symblock",
        description="Work a Transformer block forward exactly (rationals, square roots, e^x), "
                    "check it numerically, and print every named step.",
        epilog="Run `symblock COMMAND --help` for a command's options and examples. Specs are YAML or "
               "JSON (see README.md); `symblock examples` lists the built-in ones.\n\n" + EXAMPLES,
        formatter_class=HelpFormatter)
    p.add_argument("--debug", action="store_true",
                   help="show the traceback of an internal error (also SYMBLOCK_DEBUG=1)")
    p.add_argument("--version", action=_Version, help="show the version and exit")
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    f = sub.add_parser("forward", help="work the block forward exactly and print every step",
                       description="Work the block forward exactly and print every step in forward "
                                   "order: name, formula, exact value and a decimal.",
                       epilog=FORWARD_EXAMPLES, formatter_class=HelpFormatter)
    add_spec_argument(f, note=ID_NOTE)
    f.add_argument("--json", action="store_true", help="print every step as JSON: name, shape, LaTeX, exact string, float "
                                                          "(and a model's generated tokens)")
    f.add_argument("--format", choices=("text", "latex"), default="text",
                   help="latex: a snippet for notes (each step's formula and value; amsmath only)")
    f.add_argument("--step", metavar="NAME", help="print only this step (e.g. norm1.std)")
    f.add_argument("--decimals", type=decimals, default=4, metavar="N",
                   help=f"decimal places in the table (default 4, at most {MAX_DECIMALS})")
    f.add_argument("--max-cost", type=nonneg, metavar="N",
                   help="raise the exact engine's size limit (multiply-adds; default 6,000,000, about 10 s of work)")
    f.set_defaults(func=cmd_forward)

    e = sub.add_parser("examples", help="list the built-in example specs",
                       description="List the built-in example specs (use a name wherever a SPEC goes).",
                       epilog=EXAMPLES_EXAMPLES, formatter_class=HelpFormatter)
    e.add_argument("--show", metavar="NAME", help="print one example's YAML, to copy and edit")
    e.set_defaults(func=cmd_examples)

    v = sub.add_parser("verify", help="compare every exact step with NumPy float64 (and torch)",
                       description="Compute every step again in an independent NumPy float64 path "
                                   "and, when torch is installed, with real torch.nn modules; print "
                                   "the largest absolute difference per step (--no-torch: NumPy "
                                   "only, without torch's 2-3 s import). Exit 1 if any differs "
                                   "by more than the tolerance.",
                       epilog=VERIFY_EXAMPLES, formatter_class=HelpFormatter)
    add_spec_argument(v, note=ID_NOTE)
    v.add_argument("--json", action="store_true", help="print {ok, backends: {numpy, torch}} as JSON")
    v.add_argument("--tol", type=tolerance, default=1e-9, help="tolerance, a finite number >= 0 (default 1e-9)")
    which = v.add_mutually_exclusive_group()
    which.add_argument("--require-torch", action="store_true",
                       help="fail (exit 1) when torch is not installed instead of skipping it")
    which.add_argument("--no-torch", action="store_true",
                       help="compare with NumPy alone: answers in well under a second (importing "
                            "torch alone takes 2-3 s)")
    v.add_argument("--max-cost", type=nonneg, metavar="N", help="raise the exact engine's size limit")
    v.set_defaults(func=cmd_verify)

    import importlib
    for name, module, summary in COMMANDS:
        if only is not None and name != only:
            sub.add_parser(name, help=summary)
            continue
        try:
            mod = importlib.import_module(f"symblock.{module}")
        except ModuleNotFoundError as e:
            if e.name != f"symblock.{module}":
                raise
            continue
        sp = sub.add_parser(name, help=summary, description=(mod.__doc__ or summary).strip().split("\n\n")[0],
                            epilog=getattr(mod, "EXAMPLES", None), formatter_class=HelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.run)
    return p


# ---------------------------------------------------------------- commands

def _trace(args):
    from symblock.engine.model import forward_any
    from symblock.exercises.generate import load
    from symblock.exercises import variant
    if variant.is_built_in_id(args.spec):   # a sheet's ID (preset-medium-v2.7): the variant it names, worked through
        return variant.redraw(args.spec, None, "SPEC")
    return forward_any(load(args.spec, allow_model=True))


def _one_of(known: list[str], asked: str, shown: int = 24) -> str:
    """"expected one of …": every name when there are few, else the closest ones and where the rest are."""
    from symblock.errors import close_matches, did_you_mean
    if len(known) <= shown:
        return did_you_mean(asked, known) + "expected one of " + ", ".join(known)
    close = close_matches(asked, known, n=5)
    near = f"did you mean {', '.join(close)}? " if close else ""
    return f"{near}{len(known)} steps; `symblock forward SPEC` prints them all (e.g. {', '.join(known[:3])}, …)"


def cmd_forward(args) -> int:
    from symblock.engine import report
    trace = _trace(args)
    steps = list(trace)
    if args.step:
        if args.step not in trace:
            from symblock.exercises import variant
            source = args.spec if variant.is_built_in_id(args.spec) else trace.spec.source  # what was asked for
            raise SpecError(source, "--step", f"no step {excerpt(args.step)} in this {trace.spec.form}; "
                            + _one_of(list(trace.names()), args.step))
        steps = [trace[args.step]]
    if args.json:
        print(report.to_json(steps, None if args.step else report.generated(trace)))
    elif args.format == "latex":
        print(report.latex(steps, args.decimals), end="")
    else:
        width = 120 if args.step else report.TEXT_WIDTH  # one step: room for longer closed forms
        print(report.table(trace, steps, args.decimals, width), end="")
        if not args.step and (text := report.generated_text(trace)):  # a model: the text it generated
            print("\n" + text)
    return 0


def cmd_examples(args) -> int:
    from symblock.engine import spec
    from symblock.exercises.generate import load
    names = spec.example_names()
    if args.show:
        if args.show not in names:
            from symblock.errors import did_you_mean
            raise UsageError(f"--show: no example {excerpt(args.show)}; {did_you_mean(args.show, names)}"
                             f"expected one of {', '.join(names)}")
        print(spec.example_text(args.show), end="")
        return 0
    for name in names:
        s = load(name, allow_model=True)
        print(f"{name:<22} {s.title}")
    return 0


def cmd_verify(args) -> int:
    if not args.no_torch:
        _import_in_background("torch")  # ~2 s, mostly reading files: it overlaps loading and the exact forward
    from symblock.exercises import variant
    from symblock.exercises.generate import load
    from symblock.reference import verify
    spec = (variant.spec_of_id(args.spec) if variant.is_built_in_id(args.spec)   # a sheet's ID
            else load(args.spec, allow_model=True))
    result = verify.run(spec, tol=args.tol, require_torch=args.require_torch,
                        use_torch=not args.no_torch)
    print(verify.to_json(result) if args.json else verify.table(result))
    return 0 if result.ok else 1


def _import_in_background(name: str) -> None:
    """Start importing a module in a daemon thread. Whoever imports it later waits for that import
    (Python's per-module import lock) and gets the module, or the ImportError, as usual."""
    import importlib.util
    import threading

    def run():
        try:
            __import__(name)
        except Exception:  # noqa: BLE001  (the later import raises it again where it is handled)
            pass
    if importlib.util.find_spec(name) is not None:
        threading.Thread(target=run, name=f"import {name}", daemon=True).start()


if __name__ == "__main__":
    raise SystemExit(main())
