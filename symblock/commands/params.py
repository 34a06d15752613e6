"""Exact parameter counts and FLOPs per token of one Transformer block (or, with --layers, of a
tiny GPT), per component, with their formulas.

The argparse glue over `symblock.calculus.params`.
"""
from __future__ import annotations

EXAMPLES = """\
examples:
  symblock params seed-post-ln                    # a spec's own block or model
  symblock params --d-model 32 --heads 4 --d-ff 128
  symblock params --d-model 4096 --heads 32 --d-ff 11008 --no-bias \\
                  --norm rmsnorm --activation swiglu        # a LLaMA-7B layer
  symblock params --d-model 768 --heads 12 --layers 12 --vocab 50257 \\
                  --context 1024                            # GPT-2 small
  symblock params --d-model 512 --heads 8 --encoder-layers 6 \\
                  --decoder-layers 6                        # nn.Transformer()
  symblock params --d-model 768 --heads 12 --layers 12 --vocab 30522 \\
                  --context 512 --encoder                   # BERT-base-like
  symblock params --d-model 32 --heads 4 --format latex     # align* for notes"""  # the --help epilog

import argparse
import json
import sys

from symblock.calculus.params import ACTIVATIONS, DEFAULT_SEQ_LEN, NORMS, BadArgument, count


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `symblock params` to a (sub)parser."""
    from symblock.commands.arguments import bounded
    whole = bounded(None)  # count() checks the range and names the field
    if not parser.description:
        parser.description = ("Exact parameter counts of one Transformer block (attention W_Q "
                              "W_K W_V W_O, FFN, norms) with the formula of each, shares, and "
                              "FLOPs per token. Embeddings belong to the model, not the block, "
                              "and are not counted.")
    parser.add_argument("spec", nargs="?", metavar="SPEC",
                        help="a spec file or built-in example: count its block (or model) as it is; "
                             "else give the dimensions with --d-model and --heads")
    parser.add_argument("--d-model", type=whole, default=None, metavar="D",
                        help="model width d (rows and columns of W_Q, W_K, W_V, W_O)")
    parser.add_argument("--heads", type=whole, default=None, metavar="H",
                        help="number of attention heads; must divide D unless --d-k and --d-v are "
                             "given. With the default widths D/H it does not change the counts: "
                             "the heads share the same d×d matrices")
    parser.add_argument("--d-ff", type=whole, default=None, metavar="F",
                        help="FFN hidden width f (W_1 is d×f, W_2 is f×d); default 4·D")
    parser.add_argument("--d-k", type=int, default=None, metavar="K",
                        help="per-head query/key width (W_Q, W_K are d×H·K); default D/H")
    parser.add_argument("--d-v", type=int, default=None, metavar="V",
                        help="per-head value width (W_V is d×H·V, W_O H·V×d); default D/H")
    parser.add_argument("--kv-heads", type=int, default=None, metavar="G",
                        help="grouped K/V heads (GQA; 1 = multi-query): W_K, W_V are d×G·K; must "
                             "divide H. Also prints the KV cache's size per token (entries, bytes)")
    parser.add_argument("--no-bias", dest="bias", action="store_false",
                        help="no additive biases: drop b_Q b_K b_V b_O, b_1 b_2 (b_3) and "
                             "LayerNorm's β (as torch's bias=False does); default: with biases")
    parser.add_argument("--norm", choices=NORMS, default="layernorm",
                        help="layernorm: γ and β per norm (default); rmsnorm: γ only")
    parser.add_argument("--activation", choices=ACTIVATIONS, default="relu",
                        help="FFN activation (default relu); the gated swiglu and geglu add "
                             "a third matrix W_3 (d×f) and b_3")
    parser.add_argument("--cross-attention", action="store_true",
                        help="a decoder layer (nn.TransformerDecoderLayer): add the cross-attention and ln3")
    parser.add_argument("--final-norm", action="store_true",
                        help="count a final norm ln_final after the block (Pre-LN stacks)")
    parser.add_argument("--seq-len", type=whole, default=DEFAULT_SEQ_LEN, metavar="N",
                        help="positions each token attends to, for the attention score/value "
                             f"FLOPs (default {DEFAULT_SEQ_LEN}); parameter counts do not "
                             "depend on it")
    parser.add_argument("--format", choices=("text", "latex"), default="text",
                        help="latex: a snippet for notes (an align* block, amsmath only)")
    parser.add_argument("--layers", type=int, metavar="L",
                        help="count a whole model of L blocks: also token embedding (--vocab), "
                             "positions (--context), final norm and head (GPT-2 small: --d-model 768 "
                             "--heads 12 --layers 12 --vocab 50257 --context 1024)")
    parser.add_argument("--vocab", type=int, metavar="V", help="with --layers: vocabulary size")
    parser.add_argument("--context", type=int, default=0, metavar="N",
                        help="with --layers: rows of a learned position table (default 0: none)")
    parser.add_argument("--untied", action="store_true",
                        help="with --layers: the head W_U is its own d×V matrix (default: tied to W_E)")
    parser.add_argument("--encoder", action="store_true",
                        help="with --layers: an encoder (BERT-like): a norm after the embeddings, no "
                             "final norm, no head (its hidden states; a tied MLM head has no parameters)")
    parser.add_argument("--encoder-layers", type=int, metavar="E",
                        help="an encoder-decoder (nn.Transformer): E encoder layers, with --decoder-layers; "
                             "--vocab adds the shared embedding and the head, --context learned positions")
    parser.add_argument("--decoder-layers", type=int, metavar="D",
                        help="an encoder-decoder's decoder layers (each with cross-attention and ln3)")
    parser.add_argument("--json", action="store_true",
                        help='print JSON: {"attention": int, "ffn": int, "norm": int, '
                             '"total": int, "shares", "formulas", "params", '
                             '"flops_per_token", ...}')


def _as_flag(e: ValueError, args: argparse.Namespace) -> str:
    """A count's error in the terms of the command line: `d_ff must be …` says `--d-ff must be …`
    (the counting functions name their Python arguments, which are the flags' dests here)."""
    if isinstance(e, BadArgument) and e.arg in vars(args):
        return f"--{e.arg.replace('_', '-')} {e.expected}"
    return str(e)


def run(args: argparse.Namespace) -> int:
    """Print the table (or JSON) for parsed arguments; 0 on success, 2 on a bad value."""
    try:
        if args.spec is not None:
            c = _of_spec(args)
        elif args.d_model is None or args.heads is None:
            raise ValueError("give a SPEC, or the dimensions: --d-model D --heads H (see --help)")
        elif args.encoder_layers is not None or args.decoder_layers is not None:
            c = _encoder_decoder(args)
        elif args.layers is not None or args.vocab is not None:
            from symblock.calculus.model_params import count_model
            if args.layers is None or args.vocab is None:
                raise ValueError("a model count needs both --layers and --vocab")
            if args.cross_attention:
                raise ValueError("--cross-attention counts one decoder layer; leave out --layers and --vocab")
            c = count_model(args.vocab, args.d_model, args.heads, args.layers, args.d_ff,
                            context=args.context, tied=not args.untied, bias=args.bias, norm=args.norm,
                            activation=args.activation, kv_heads=args.kv_heads, encoder=args.encoder)
        else:
            if args.encoder:
                raise ValueError("--encoder counts a model: give --layers and --vocab too")
            if args.context or args.untied:   # else silently the block's count, as if they were not given
                raise ValueError("--context and --untied count a model's positions and head: give --layers "
                                 "and --vocab too")
            c = count(args.d_model, args.heads, args.d_ff, bias=args.bias, norm=args.norm,
                      activation=args.activation, final_norm=args.final_norm, seq_len=args.seq_len,
                      d_k=args.d_k, d_v=args.d_v, kv_heads=args.kv_heads,
                      cross_attention=args.cross_attention)
    except ValueError as e:
        print(f"symblock params: error: {_as_flag(e, args) if args.spec is None else e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(c.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(c.latex() if args.format == "latex" else c.table())
        if args.kv_heads is not None and args.format != "latex":
            print("\n" + c.kv_cache.line())
    return 0


# the flags a SPEC replaces: given with one, they would be ignored (or contradict it)
_SHAPE_FLAGS = {"d_model": None, "heads": None, "d_ff": None, "d_k": None, "d_v": None, "kv_heads": None,
                "bias": True, "norm": "layernorm", "activation": "relu", "cross_attention": False,
                "final_norm": False, "layers": None, "vocab": None, "context": 0, "untied": False,
                "encoder": False, "encoder_layers": None, "decoder_layers": None}


def _of_spec(args: argparse.Namespace):
    """The counts of a spec's own block (its seq_len for the FLOPs) or model, as it is written."""
    import math
    from symblock.engine.cost import limit
    from symblock.exercises.generate import load
    given = [f"--{k.replace('_', '-')}" for k, v in _SHAPE_FLAGS.items() if getattr(args, k) != v]
    if given:
        raise ValueError(f"{', '.join(given)}: SPEC gives the dimensions and options; leave "
                         f"{'it' if len(given) == 1 else 'them'} out, or leave SPEC out")
    with limit(math.inf):  # counting does no exact arithmetic: the exact engine's size limit is not for it
        spec = load(args.spec, allow_model=True)
    args.kv_heads = spec.dims.kv_heads if spec.dims.kv_heads != spec.dims.heads else None   # GQA: the KV cache's line
    return {"block": _of_block, "model": _of_model}[spec.form](spec, args.kv_heads)


def _given_biases(layer) -> frozenset:
    """The bias vectors and β a layer with `block.bias: false` is given: its forward adds them,
    so they are counted (with `block.bias: true` every one is counted anyway)."""
    from symblock.engine import parameters
    if layer.options.bias:
        return frozenset()
    return frozenset(n for n in layer.supplied if parameters.parse(n).kind in ("bias", "beta"))


def _stack_biases(layers) -> tuple[frozenset, int]:
    """The given biases every layer of a stack has (counted in its block) and the parameters of
    those only some layers have (counted apart)."""
    sets = [_given_biases(layer) for layer in layers]
    common = frozenset.intersection(*sets)
    rest = sum(_size(layer.params[n]) for layer, s in zip(layers, sets) for n in s - common)
    return common, rest


def _size(m) -> int:
    rows, cols = m.shape
    return rows * cols


def _norm_count(norm, name: str, spec, bias: bool) -> int:
    """A model's own norm (`ln_final`, `ln_embed`, `ln_encoder`) as the spec has it: γ, and β with
    biases or when given; 0 without the norm."""
    return sum(_size(m) for k, m in norm.items()
               if k != "beta" or bias or f"{name}.beta" in spec.supplied)


def _widths(d) -> dict:
    """The per-head widths d_k, d_v when a spec gives others than d_model/heads (then the formulas
    use h, k, v); none when they are the default, so the formulas read 4·d² as the flags' do."""
    default = d.d_model % d.heads == 0 and d.d_k == d.d_v == d.d_model // d.heads
    return {} if default else {"d_k": d.d_k, "d_v": d.d_v}


def _of_block(spec, kv):
    d, o = spec.dims, spec.options
    return count(d.d_model, d.heads, d.d_ff, bias=o.bias, norm=o.norm, activation=o.activation,
                 final_norm=o.final_norm, seq_len=d.seq_len, **_widths(d), kv_heads=kv,
                 cross_attention=o.cross_attention, extra=_given_biases(spec), out_proj=o.out_proj,
                 mem_len=d.mem_len if o.cross_attention else None)


def _of_model(spec, kv):
    from dataclasses import replace
    d, o = spec.dims, spec.options
    shape = dict(bias=o.bias, norm=o.norm, activation=o.activation, out_proj=o.out_proj, **_widths(d))
    context = spec.W_P.shape[0] if spec.W_P is not None else 0
    common, rest = _stack_biases(spec.layers)
    final = _norm_count(spec.final_norm, "ln_final", spec, o.bias)
    if spec.kind == "encoder-decoder":
        from symblock.calculus.transformer_params import count_transformer
        enc_common, enc_rest = _stack_biases(spec.encoder)
        c = count_transformer(d.d_model, d.heads, d.d_ff, len(spec.encoder), len(spec.layers),
                              vocab=len(spec.vocab), context=context, tied=spec.head == "tied",
                              separate=spec.W_E_src is not None, extra_encoder=enc_common,
                              extra_decoder=common, decoder_norm=bool(spec.final_norm), **shape)
        return replace(c, extra=rest + enc_rest,
                       final_norms=_norm_count(spec.encoder_norm, "ln_encoder", spec, o.bias) + final)
    from symblock.calculus.model_params import count_model
    c = count_model(len(spec.vocab), d.d_model, d.heads, len(spec.layers), d.d_ff, context=context,
                    tied=spec.head == "tied", final_norm=bool(spec.final_norm), kv_heads=kv,
                    encoder=spec.kind == "encoder", extra=common, **shape)
    # the model's own norms as the spec has them (--encoder: BERT's embedding norm only)
    return replace(c, extra=rest, final_norm=final, embed_norm=_norm_count(spec.embed_norm, "ln_embed", spec, o.bias))


def _encoder_decoder(args: argparse.Namespace):
    """nn.Transformer's stacks (and, with --vocab, its embeddings and head) from the arguments."""
    from symblock.calculus.transformer_params import count_transformer
    if args.encoder_layers is None or args.decoder_layers is None:
        raise ValueError("an encoder-decoder needs both --encoder-layers and --decoder-layers")
    for flag, bad in (("--layers", args.layers is not None), ("--cross-attention", args.cross_attention),
                      ("--encoder", args.encoder), ("--kv-heads", args.kv_heads is not None),
                      ("--final-norm", args.final_norm)):
        if bad:
            raise ValueError(f"{flag} does not go with --encoder-layers/--decoder-layers (an encoder-decoder "
                             "has two stacks, cross-attention in every decoder layer and both final norms)")
    if (args.context or args.untied) and args.vocab is None:
        raise ValueError("--context and --untied count the embeddings and head: give --vocab too")
    return count_transformer(args.d_model, args.heads, args.d_ff or 4 * args.d_model, args.encoder_layers,
                             args.decoder_layers, bias=args.bias, norm=args.norm, activation=args.activation,
                             vocab=args.vocab or 0, context=args.context, tied=not args.untied)


def main(argv: list[str] | None = None) -> int:
    """`python -m symblock.calculus.params ...`: the same command without the symblock CLI."""
    parser = argparse.ArgumentParser(prog="symblock params")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
