"""Pre-LN against Post-LN as depth grows (an exercise of the article “Encoder 块：残差、归一化与前馈网络”),
in float64 with torch: a PNG plot of the gradient norm reaching each layer and of the output scale
against depth, plus the numbers as CSV. Random stacks at initialisation; not an exact computation.
"""
from __future__ import annotations

EXAMPLES = """\
examples:
  symblock depth --out depth                     # depth/depth.png, depth.csv
  symblock depth --layers 1,2,4,8,16 --seeds 5 --out depth --force"""  # the --help epilog

import os
import re
import shutil
import tempfile
from pathlib import Path

from symblock.errors import UsageError
from symblock.commands.arguments import nonneg

MAX_LAYERS = 64


def add_arguments(p) -> None:
    p.add_argument("--layers", default="1..24", metavar="RANGE",
                   help="depths to compare: A..B or a comma list (default 1..24, at most "
                        f"{MAX_LAYERS})")
    p.add_argument("--out", metavar="DIR", required=True, help="directory for depth.png and depth.csv")
    p.add_argument("--d-model", type=nonneg, default=16, metavar="D", help="width (default 16)")
    p.add_argument("--heads", type=nonneg, default=2, metavar="H", help="heads (default 2)")
    p.add_argument("--seq-len", type=nonneg, default=8, metavar="N", help="tokens (default 8)")
    p.add_argument("--seeds", type=nonneg, default=3, metavar="S",
                   help="random stacks averaged per depth (default 3, at most 20)")
    p.add_argument("--force", action="store_true", help="overwrite existing depth.png/depth.csv")


def parse_layers(text: str) -> list[int]:
    m = re.fullmatch(r"\s*(\d+)\s*\.\.\s*(\d+)\s*", text)
    if m:
        depths = list(range(int(m.group(1)), int(m.group(2)) + 1))
    elif re.fullmatch(r"\s*\d+(\s*,\s*\d+)*\s*", text):
        depths = sorted({int(x) for x in text.split(",")})
    else:
        raise UsageError(f"--layers: expected A..B (e.g. 1..24) or a comma list (1,2,4,8), got {text!r}")
    if not depths or depths[0] < 1 or depths[-1] > MAX_LAYERS:
        raise UsageError(f"--layers: expected depths from 1 to {MAX_LAYERS}, got {text!r}")
    return depths


def run(args) -> int:
    depths = parse_layers(args.layers)
    if not 1 <= args.seeds <= 20:
        raise UsageError(f"--seeds: expected 1..20, got {args.seeds}")
    if args.d_model < 1 or args.heads < 1 or args.d_model % args.heads or not 1 <= args.seq_len <= 512 \
            or args.d_model > 512:
        raise UsageError("--d-model/--heads/--seq-len: expected heads dividing d_model (<= 512), "
                         "and 1 <= seq_len <= 512")
    try:
        import matplotlib  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        raise UsageError(f"symblock depth needs torch and matplotlib: pip install 'symblock[torch,plot]' "
                         f"({e.name} is missing)") from None
    from symblock.reference import depth
    out = Path(args.out)
    targets = [out / "depth.png", out / "depth.csv"]
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} exists and is not a directory")
    clash = [t for t in targets if t.exists()]
    if clash and not args.force:
        raise UsageError(f"--out: {clash[0]} already exists; use --force to overwrite, or another directory")
    rows = depth.measure(depths, args.d_model, args.heads, args.seq_len, args.seeds)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".symblock-", dir=out))
    try:
        depth.plot(rows, tmp / "depth.png")
        (tmp / "depth.csv").write_text(depth.to_csv(rows), encoding="utf-8")
        for t in targets:
            os.replace(tmp / t.name, t)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for t in targets:
        print(t)
    return 0
