"""Turn a saved tiny model into a spec: a Hugging Face `save_pretrained` folder (GPT-2, BERT, Llama)
or a nanoGPT `ckpt.pt`, on a prompt of token ids, worked exactly by every other command.

The weights are written as the exact decimals of their float64 values; the spec's exact forward is
the model's forward on that prompt (its greedy tokens too, with --generate). Nothing is downloaded.
"""
from __future__ import annotations

EXAMPLES = """\
examples:
  symblock import my-gpt2/ --tokens 1,5,2 --out tiny.yaml
  symblock import out/ckpt.pt --tokens 0,3 --generate 2 --out nano.yaml
  symblock forward tiny.yaml --step logits"""  # the --help epilog


def _tokens(text: str) -> list[int]:
    import argparse
    try:
        out = [int(t) for t in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected token ids such as 1,5,2, got {text!r}") from None
    if not out or any(t < 0 for t in out):
        raise argparse.ArgumentTypeError(f"expected non-negative token ids such as 1,5,2, got {text!r}")
    return out


def add_arguments(p) -> None:
    from symblock.commands.arguments import bounded
    p.add_argument("model", metavar="MODEL", help="a save_pretrained folder (config.json + model.safetensors) "
                                                 "or a nanoGPT ckpt.pt")
    p.add_argument("--tokens", type=_tokens, required=True, metavar="IDS",
                   help="the prompt as token ids, comma-separated (e.g. 1,5,2)")
    p.add_argument("--generate", type=bounded(0, 16), default=0, metavar="K",
                   help="greedy steps after the prompt, each from a KV cache (default 0)")
    p.add_argument("--out", required=True, metavar="FILE", help="the spec file to write (YAML)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")


def run(args) -> int:
    import os
    import tempfile
    from pathlib import Path

    import yaml

    from symblock.errors import PATH_EXCERPT, InternalError, SpecError, UsageError, excerpt
    from symblock.exercises.generate import from_mapping
    from symblock.reference import checkpoint
    out = Path(args.out)
    if out.is_symlink() or out.is_dir():
        raise UsageError(f"--out: {excerpt(str(out), PATH_EXCERPT)} is a link or a folder; "
                         "expected a file to write")
    if out.exists() and not args.force:
        raise UsageError(f"--out: {excerpt(str(out), PATH_EXCERPT)} already exists; use --force to overwrite, "
                         "or another name")
    spec = checkpoint.read(args.model, args.tokens, args.generate)
    try:   # the readers refuse a malformed model by name; a spec that still does not load is their bug
        from_mapping(spec, str(out), allow_model=True)
    except SpecError as e:
        raise InternalError(f"the spec read from {excerpt(str(args.model), PATH_EXCERPT)} does not load ({e}); "
                            "nothing was written") from e
    text = ("# written by `symblock import`: weights are the exact decimals of the model's float64 values, "
            "eps as its config writes it\n"
            + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100))
    fd, tmp = tempfile.mkstemp(prefix=".symblock-", suffix=".yaml", dir=out.parent if str(out.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"wrote {out}: {spec['title']}, prompt {args.tokens}" + (f", {args.generate} greedy steps" if args.generate else ""))
    return 0
