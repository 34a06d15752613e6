"""Time what users wait for around the engine, before and after: single commands (forward,
forward --json, verify, check) and a 30-variant worksheet set with every PDF.

    python bench/bench_batch.py --baseline DIR            # print the tables
    python bench/bench_batch.py --baseline DIR --write    # also write bench/README_batch.md

DIR is a checkout of the code to compare with (e.g. `git archive <commit> | tar -x -C DIR`); its
`symblock` package is put first on PYTHONPATH, the current one is this checkout's. Every timing is
a fresh process (`python -m symblock ...`), as a user runs it: imports included. The machine is
shared, so the load average is printed beside each table and before/after run interleaved.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BLOCKS = [  # (name, dims, block options): d_model 2..8, the 5×8 causal 4-head block last
    ("3×2 post relu", {"seq_len": 3, "d_model": 2, "d_ff": 3, "heads": 1}, {"activation": "relu", "eps": "1/1000"}),
    ("3×4 pre gelu causal 2h", {"seq_len": 3, "d_model": 4, "d_ff": 8, "heads": 2},
     {"norm_position": "pre", "activation": "gelu", "causal": True, "final_norm": True}),
    ("4×6 rmsnorm swiglu 2h", {"seq_len": 4, "d_model": 6, "d_ff": 12, "heads": 2},
     {"norm": "rmsnorm", "activation": "swiglu", "eps": "1/100"}),
    ("5×8 pre gelu causal 4h", {"seq_len": 5, "d_model": 8, "d_ff": 16, "heads": 4},
     {"norm_position": "pre", "activation": "gelu", "causal": True, "final_norm": True, "eps": "1/100000"}),
]
COMMANDS = ["forward", "forward --json", "verify", "verify --no-torch", "check"]
AFTER_ONLY = {"verify --no-torch"}  # new flags: the baseline does not know them
SET_SPEC = 'title: "Medium exercise"\nrandom: {seed: 7, difficulty: medium}\n'  # README's medium.yaml


def env_for(code: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1")


def timed(argv: list[str], code: Path, cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "symblock", *argv], cwd=cwd, env=env_for(code),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({code}): {proc.stderr.decode()[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def write_blocks(tmp: Path) -> list[tuple[str, Path, Path]]:
    """Spec and answers file (every step, rounded to 3 places) for each block."""
    import yaml
    from symblock.engine import block, spec
    out = []
    for i, (name, dims, opts) in enumerate(BLOCKS):
        path = tmp / f"block{i}.yaml"
        path.write_text(yaml.safe_dump({"title": name, "dims": dims, "block": opts,
                                        "random": {"seed": 3, "low": -2, "high": 2}}))
        trace = block.forward(spec.load(path))
        steps = {s.name: [[float(block.exact.real(e).decimal(3)) for e in row] for row in s.value.rows]
                 for s in trace if not s.given and s.name != "x"
                 and all(e is not block.exact.NEG_INF for row in s.value.rows for e in row)}
        answers = tmp / f"answers{i}.yaml"
        answers.write_text(yaml.safe_dump({"decimals": 3, "steps": steps}))
        out.append((name, path, answers))
    return out


def warm(code: Path) -> None:
    """Byte-compile a tree first, as an installed package is: otherwise every run (PYTHONDONTWRITEBYTECODE)
    would compile each module it imports from source."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "symblock")], check=True,
                   stdout=subprocess.DEVNULL)


def bench_commands(baseline: Path, runs: int) -> list[str]:
    warm(baseline)
    warm(REPO)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, path, answers in write_blocks(tmp):
            cells = []
            for command in COMMANDS:
                argv = command.split() + [str(path)] + ([str(answers)] if command == "check" else [])
                got = {"before": [], "after": []}
                codes = (("after", REPO),) if command in AFTER_ONLY else (("before", baseline), ("after", REPO))
                for _ in range(runs):  # interleaved, so that a burst of load hits both alike
                    for label, code in codes:
                        got[label].append(timed(argv, code, tmp))
                if command in AFTER_ONLY:
                    aw, ac = (statistics.median(x) for x in zip(*got["after"]))
                    cells.append(f"new: **{aw:.2f}** (CPU {ac:.2f})")
                    continue
                (bw, bc), (aw, ac) = [[statistics.median(x) for x in zip(*got[k])] for k in ("before", "after")]
                cells.append(f"{bw:.2f} → **{aw:.2f}** (CPU {bc:.2f} → {ac:.2f})")
                if command == "verify":
                    VERIFY_CPU[name] = (bc, ac)
            rows.append(f"| {name} | " + " | ".join(cells) + f" | {os.getloadavg()[0]:.1f} |")
    head = ["| block | " + " | ".join(f"`{c}`" for c in COMMANDS) + " | load |",
            "|---|" + "---|" * (len(COMMANDS) + 1)]
    return head + rows


VERIFY_CPU: dict[str, tuple[float, float]] = {}  # block -> verify's CPU (before, after)
IMPORT_CPU: dict[str, float] = {}


def bench_imports(runs: int) -> list[str]:
    """Wall (and CPU) of a bare `python -c "import X"`, and of `python -c pass`: the floors."""
    out = []
    for mod in ("sympy", "torch", "numpy", "flint", None):
        ts = []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {mod}" if mod else "pass"], check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            ts.append((time.perf_counter() - t0, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)))
        wall, cpu = (statistics.median(x) for x in zip(*ts))
        IMPORT_CPU[mod or ""] = cpu
        out.append(f"`{'import ' + mod if mod else 'python -c pass'}` {wall:.2f} s (CPU {cpu:.2f})")
    return out


def installed(code: Path, where: Path) -> dict:
    """The environment that runs `code` as a user's (non-editable) install does, templates included:
    `code` copied and pip-installed into `where`, run with `python -S` (no .pth files, so this
    checkout's editable install cannot lend its own templates to the baseline) and the venv's packages."""
    import site
    src = where.with_name(where.name + "-src")
    shutil.copytree(code, src, ignore=shutil.ignore_patterns(".git", ".venv", "worksheets", "build", "*.egg-info",
                                                             "node_modules", "__pycache__"))
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--target", str(where), str(src)], capture_output=True, text=True)
    if pip.returncode:
        raise SystemExit(f"installing {code} failed:\n{pip.stderr[-2000:]}")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(where), *site.getsitepackages()]),
                PYTHONDONTWRITEBYTECODE="1")


def timed_set(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall, CPU of symblock and every LaTeX process) of one `python -S -m symblock` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-S", "-m", "symblock", *argv], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_set(baseline: Path, variants: int, runs: int = 3) -> list[str]:
    rows = ["Best of 3 runs, interleaved (before, after --jobs 1, after). CPU is the user + system time "
            "of symblock and every LaTeX process it ran, which the other developers' load changes far "
            "less than wall time; on an idle machine the wall time is about the rendering (one core) "
            "plus the LaTeX runs that do not overlap it.", "",
            "| run | PDFs | LaTeX runs | wall (best) | CPU (best) | load average during the runs |",
            "|---|---|---|---|---|---|"]
    configs = [("before (the baseline checkout), --jobs = cores", "before", []),
               ("after, --jobs 1", "after", ["--jobs", "1"]),
               ("after, --jobs = cores", "after", [])]
    got: dict[str, list] = {label: [] for label, _, _ in configs}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        envs = {"before": installed(baseline, tmp / "before"), "after": installed(REPO, tmp / "after")}
        (tmp / "bin").mkdir()  # pdflatex behind a wrapper that counts its runs
        real, runs_file = shutil.which("pdflatex"), tmp / "latex-runs"
        (tmp / "bin" / "pdflatex").write_text(f'#!/bin/sh\necho >> "{runs_file}"\nexec "{real}" "$@"\n')
        (tmp / "bin" / "pdflatex").chmod(0o755)
        for env in envs.values():
            env["PATH"] = f"{tmp / 'bin'}{os.pathsep}{env['PATH']}"
        (tmp / "medium.yaml").write_text(SET_SPEC)
        for r in range(runs):
            for label, which, extra in configs:
                out = tmp / f"out-{r}-{label.split(',')[0].split(':')[0].replace(' ', '')}-{len(extra)}"
                load = os.getloadavg()[0]
                runs_file.write_text("")
                wall, cpu = timed_set(["worksheet", "medium.yaml", "--variants", str(variants), "--pdf",
                                       "--out", str(out), *extra], envs[which], tmp)
                latex = len(runs_file.read_text().splitlines())
                pdfs = sum(1 for _ in out.rglob("*.pdf"))
                got[label].append((wall, cpu, load, pdfs, latex))
        for label, which, _ in configs:
            walls, cpus, loads, pdfs, latex = zip(*got[label])
            rows.append(f"| {label} | {pdfs[0]} | {latex[0]} | {min(walls):.1f} s | {min(cpus):.1f} s | "
                        f"{min(loads):.1f}–{max(loads):.1f} |")
    return rows


def set_section(args) -> list[str]:
    return [f"## A set: {args.variants} medium variants with every PDF", "",
            f"`symblock worksheet medium.yaml --variants {args.variants} --pdf` on the README's medium.yaml "
            "(`random: {seed: 7, difficulty: medium}`): each variant's sheet.pdf and key.pdf plus the set's "
            f"sheets.pdf and keys.pdf. Machine: {len(os.sched_getaffinity(0))} cores, Python "
            f"{platform.python_version()}; `--set-only --write` re-measures this section alone.", ""] \
        + bench_set(args.baseline, args.variants)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=Path, required=True, help="a checkout of the code before")
    p.add_argument("--runs", type=int, default=5, help="runs per command (median; default 5)")
    p.add_argument("--variants", type=int, default=30, help="variants in the set (default 30)")
    p.add_argument("--no-set", action="store_true", help="skip the worksheet set")
    p.add_argument("--write", action="store_true", help="write bench/README_batch.md")
    p.add_argument("--set-only", action="store_true",
                   help="only the set; with --write, replace its section (and the notes) in README_batch.md")
    args = p.parse_args()
    if args.set_only:
        section = "\n".join(set_section(args)) + "\n"
        print(section)
        if args.write:
            old = (HERE / "README_batch.md").read_text()
            start = old.index("## A set")
            (HERE / "README_batch.md").write_text(old[:start] + section + NOTES)
        return 0
    cores = len(os.sched_getaffinity(0))
    lines = ["# Batch output and single commands", "",
             "`python bench/bench_batch.py --baseline DIR --write` regenerates this file (DIR: a checkout "
             "of the code before, here the commit this branch started from). Every figure is a fresh "
             "`python -m symblock` process, imports included. The machine is shared by several "
             "developers, so the load average is given; before and after runs are interleaved.", "",
             f"Machine: {platform.machine()}, {cores} cores, Python {platform.python_version()}, "
             f"{platform.system()}; load average at start {os.getloadavg()[0]:.1f}.", "",
             f"## Single commands (median of {args.runs} runs, seconds: wall before → after, and CPU)", "",
             "CPU time (user + system of the process) depends far less on the other developers' load "
             "than wall time does; on an idle machine wall ≈ CPU for these single-threaded commands.", ""]
    lines += bench_commands(args.baseline, args.runs)
    lines += ["", "Floors, fresh processes (median of 3): " + ", ".join(bench_imports(3)) + ".", "",
              VERIFY_NOTE, ""]
    torch_cpu = IMPORT_CPU.get("torch", 0.0)
    lines += ["`verify`'s CPU beyond the bare `import torch` (after; seconds, a difference of medians of separate processes, so ±0.2 s of noise): "
              + ", ".join(f"{name} {after - torch_cpu:.2f}" for name, (_, after) in VERIFY_CPU.items()) + ".", ""]
    if not args.no_set:
        lines += set_section(args)
    if args.no_set and (HERE / "README_batch.md").exists():  # keep the set section as it was measured
        old = (HERE / "README_batch.md").read_text()
        start = old.find("\n## A set:")
        if start >= 0:
            lines += [old[start + 1:old.find("\n## What changed", start)].rstrip()]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        (HERE / "README_batch.md").write_text(text + NOTES)
    return 0


VERIFY_NOTE = """`verify` runs NumPy and real torch modules: the torch import alone costs more than the
1 s target on this machine (the line above), so ≤ 1 s is out of reach while torch runs in the same
process. What verify adds on top of it is the exact forward, the NumPy path and the torch modules
themselves; the torch import now starts in a background thread when verify starts, so that its
file reading overlaps the spec loading and the exact forward (two cores: the overlap is real, but
the import holds the GIL for its Python parts). `verify --no-torch` (new) compares with NumPy alone
and never imports torch: the column beside it, which has no "before"."""

NOTES = """
## What changed, and what is left

- **No SymPy on the default path.** `engine/spec.py` parses every rational entry (ints, decimals,
  `"a/b"`, arithmetic of them) without SymPy: plain numbers straight to `fractions.Fraction`, the
  rest evaluated exactly on the size guard's syntax tree (`engine/numbers.py`); SymPy's parser is
  the fallback for irrational forms only (`sqrt(2)/2`, `E/(1+E)`, `pi`). `BlockSpec` holds
  `ExactMatrix`es (Fraction entries, `exact.Real` for irrational ones; read like an
  ImmutableMatrix, `to_sympy()` on demand for the symbolic and derive paths). `forward`, `check`
  and `verify` no longer import SymPy (~1 s of every command before, on this machine).
- **Cheaper exact work.** The rational snap run on every graph node finds its candidate by a
  float continued fraction (Arb still certifies it at up to 16384 bits) instead of
  `Fraction.limit_denominator`; decimals of balls and rationals are rounded in integer arithmetic:
  `check` rounds thousands of them.
- **Closed forms without SymPy** (the change before this one): `forward --json` and the tables
  write each entry's exact form straight from the engine's graph (`engine/closed.py`).
- **Sets.** pdflatex runs directly, once per document (latexmk ran it twice: the second run was only
  for an `.aux` these documents do not use). Each variant's sheet.pdf and key.pdf are cut (pypdf)
  from the set's sheets.pdf and keys.pdf at the pages LaTeX wrote to `sheets.pages`/`keys.pages`,
  so 62 PDFs cost two LaTeX runs instead of 62 (~0.2 s of CPU each, mostly loading the format);
  cutting 60 PDFs takes ~1.5 s. Each template is compiled by Jinja once per process, not once per
  document (2 s of 60 renders). What is left is Python: drawing the 30 variants (~4.5 s, with the
  ambiguity checks) and building the sheet models (~7 s, mostly certified decimals of every shown
  number), both on one core; the two set documents can only start once every variant is rendered.
"""

if __name__ == "__main__":
    raise SystemExit(main())
