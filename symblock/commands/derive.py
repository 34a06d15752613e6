"""The block's steps as general formulas in symbols, and tutorial facts verified by SymPy.

The argparse glue over `symblock.calculus.derive`.
"""
from __future__ import annotations

EXAMPLES = """\
examples:
  symblock derive --step norm1
  symblock derive --step attn.h0.weights --format latex
  symblock derive tiny-gpt --step layer0.attn.h0.weights
  symblock derive --facts
  symblock derive --facts --prove"""  # the --help epilog

from symblock.calculus.derive import FORMATS, TooLarge, derive, facts, render, render_facts, symbolic


def add_arguments(p) -> None:
    from symblock.commands.arguments import add_spec_argument
    add_spec_argument(p, None, "the block or model whose numbers are replaced by symbols: ",
                      "default: a tiny Post-LN block, seq_len 2, d_model 2, d_ff 2")
    p.add_argument("--step", metavar="NAME", help="only this step (e.g. norm1)")
    p.add_argument("--format", choices=FORMATS, default="text", help="latex, markdown or text (default)")
    p.add_argument("--facts", action="store_true",
                   help="print the facts tutorials state in prose, derived and verified by SymPy "
                        "(exit 1 if one fails)")
    p.add_argument("--prove", action="store_true",
                   help="prove the facts (and derive the built-in tiny block) with SymPy now, instead of "
                        "printing the proofs made for this release and re-checked by its tests")


def run(args) -> int:
    from symblock.calculus import proved
    if args.facts:
        fs = facts() if args.prove else proved.facts()
        print(render_facts(fs, args.format), end="")
        return 0 if all(f.verified for f in fs) else 1
    stored = None if args.spec is not None or args.prove else proved.tiny(args.step, args.format)
    if stored is not None:   # the built-in tiny block, derived for this release
        print(stored, end="")
        return 0
    from symblock.engine.spec import SpecError
    from symblock.exercises.generate import load
    loaded = None if args.spec is None else load(args.spec, allow_model=True)
    chosen, heading, source = DERIVERS["block" if loaded is None else loaded.form](loaded, args.step)
    try:
        text = render(chosen, args.format, heading, strict=bool(args.step))
    except TooLarge as e:
        raise SpecError(source, "--step" if args.step else "dims", str(e)) from None
    print(text, end="")
    return 0


def _block(spec, step):
    """A block (a decoder layer's too), or the tiny built-in one when spec is None."""
    s = symbolic(spec)
    return list(derive(s, only=step).values()), s.title, s.source


def _model(spec, step):
    """A GPT, an encoder or an encoder-decoder: its prompt pass (calculus/derive_model.py)."""
    from symblock.calculus.derive_model import derive_model, title
    return list(derive_model(spec, only=step).values()), title(spec), spec.source


DERIVERS = {"block": _block, "model": _model}   # keyed on the spec's form
