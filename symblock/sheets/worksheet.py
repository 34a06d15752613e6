"""Write a worksheet and its answer key (LaTeX and Markdown, optionally PDF) for a block spec.

The sheet has the conventions, the given matrices and one task per asked step with an empty grid;
the key shows, for every task, the formula, the numbers going in, the work (entries written out)
and the exact result with its decimal. `--preset` or the spec's `exercise:` section chooses the
steps; `--variants N --seed S` draws N variants, each with a worksheet ID that `--id` regenerates.

Files: DIR/sheet.tex, DIR/key.tex, DIR/sheet.md, DIR/key.md (+ .pdf with --pdf); with --variants,
one sub-directory DIR/<ID>/ per variant and the set files (`symblock.sheets.sets`). Existing files are
never overwritten without --force. Output is written in units (one variant's files; the set files):
every target is checked before anything moves, each unit is written and compiled in a temporary
folder beside the output and moved into place whole, and an error, SIGINT or SIGTERM leaves no
temporary folder and no half-made unit behind.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

DOCS = ("sheet", "key")
ENGINES = {"en": "pdflatex", "zh": "xelatex"}
# formats written once per set by a writer module: files(models, many=..., template_dir=...)
SET_WRITERS = {"html": "symblock.sheets.html", "moodle": "symblock.sheets.moodle",
               "qti": "symblock.sheets.qti", "ipynb": "symblock.sheets.notebook"}


# ---------------------------------------------------------------- orchestration


@dataclass(frozen=True)
class Documents:
    files: dict      # {file name: text}: sheet and key in each per-variant format
    model: dict      # the sheet model (sheets/sheet.py) the set-level writers (`bundle`) read


def documents(variant, *, formats, lang="en", places=3, title=None, template_dir=None,
              space=0) -> Documents:
    """One variant's sheet and key in each format, and its sheet model (the SET_WRITERS' files
    come from `bundle`, which reads the models of a set)."""
    from symblock.sheets import render, sheet
    model = sheet.build(variant, lang=lang, places=places, title=title, space=space)
    model.setdefault("marking", {})["preset"] = variant.options.preset   # a student's `check` must ask for it again
    out = {}
    for fmt in (f for f in formats if f not in SET_WRITERS):
        for doc in DOCS:
            out[doc + render.FORMATS[fmt]] = render.render(model, fmt, key=(doc == "key"),
                                                           template_dir=template_dir)
    return Documents(out, model)


def bundle(models: list[dict], formats, many: bool, template_dir=None,
           link_key: bool = False) -> dict[str, str | bytes]:
    """{file name: text or bytes} of the set-level formats (html, moodle, qti, ipynb) for the
    sheet models of a set; `many`: variants live in sub-directories named by their ID; `link_key`:
    the HTML sheet links to its key."""
    from importlib import import_module
    out: dict[str, str | bytes] = {}
    for fmt in formats:
        if fmt in SET_WRITERS:
            own = {"link_key": link_key} if fmt == "html" else {}
            out.update(import_module(SET_WRITERS[fmt]).files(models, many=many, template_dir=template_dir, **own))
    return out


def document_names(formats) -> list[str]:
    """The names `documents` returns for `formats`, in its order (known before rendering)."""
    from symblock.sheets.render import FORMATS
    return [doc + FORMATS[fmt] for fmt in formats if fmt not in SET_WRITERS for doc in DOCS]


# ---------------------------------------------------------------- checking targets

def output_names(names, pdf: bool) -> list[str]:
    """What a unit of `names` puts on disk: the files, and with --pdf a PDF beside each .tex."""
    names = list(names)
    return names + ([n[:-4] + ".pdf" for n in names if n.endswith(".tex")] if pdf else [])


def check_targets(out: Path, names, force: bool) -> None:
    """Refuse, before anything is written, every target a file could not be moved onto: an
    existing file without --force, a directory where a file goes, a file where a folder goes,
    a folder that is not writable."""
    from symblock.errors import UsageError
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} exists and is not a directory")
    clash, folders = [], set()
    for name in names:
        folder = out
        for part in Path(name).parts[:-1]:
            folder = folder / part
            if folder.exists() and not folder.is_dir():
                raise UsageError(f"--out: {folder} is a file where a folder of the output goes; "
                                 "remove it or choose another directory")
        folders.add(folder)
        target = out / name
        if target.is_dir() and not target.is_symlink():
            raise UsageError(f"--out: {target} is a directory where a file of the output goes; "
                             "remove it or choose another directory")
        if target.exists() or target.is_symlink():
            clash.append(target)
    if clash and not force:
        raise UsageError(f"--out: {clash[0]} already exists"
                         + (f" (and {len(clash) - 1} more)" if len(clash) > 1 else "")
                         + "; use --force to overwrite, or another directory")
    for folder in folders:
        base = _existing(folder)
        if not os.access(base, os.W_OK | os.X_OK):
            raise UsageError(f"--out: cannot write into {base} (permission denied)")


def _existing(path: Path) -> Path:
    """`path` or its nearest ancestor that exists."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


# ---------------------------------------------------------------- staging and compiling

class _Children:
    """The compiler processes of one run, so that an error or a signal can stop them all."""

    def __init__(self):
        self.lock, self.procs, self.stopped = threading.Lock(), set(), False

    def run(self, cmd: list[str], cwd: Path, env: dict) -> tuple[int, bytes]:
        with self.lock:
            if self.stopped:
                raise _Stopped()
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.procs.add(proc)
        try:
            out, _ = proc.communicate(timeout=COMPILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            return -1, out + f"\n{cmd[0]} ran longer than {COMPILE_TIMEOUT} s".encode()
        finally:
            with self.lock:
                self.procs.discard(proc)
        return proc.returncode, out

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            procs = list(self.procs)
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


class _Stopped(Exception):
    """A compile asked for after the run was stopped."""


def default_jobs() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


class Stage:
    """One run's temporary folder, beside the output (one file system, so landing is a rename).

    Each unit of output is written and compiled in its own sub-folder (`write`, `compile`) and
    moved into place whole (`land`). Leaving the `with` block — normally, on an error, on SIGINT
    or on SIGTERM (turned into SystemExit here) — stops running compilers and removes the folder."""

    def __init__(self, out: Path, jobs: int | None = None):
        self.out, self.jobs = out, jobs or default_jobs()

    def __enter__(self) -> "Stage":
        self.root = Path(tempfile.mkdtemp(prefix=".symblock-", dir=_existing(self.out.parent)))
        self.children = _Children()
        self.pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="symblock-tex")
        self._handlers = _handle_signals(_terminate)
        return self

    def __exit__(self, *exc) -> None:
        quiet = _handle_signals(signal.SIG_IGN)  # a second Ctrl-C must not interrupt the cleanup
        try:
            self.children.stop()
            self.pool.shutdown(wait=True, cancel_futures=True)
            shutil.rmtree(self.root, ignore_errors=True)
        finally:
            quiet()
            self._handlers()

    def write(self, unit: str, files: dict[str, str | bytes]) -> Path:
        """Write one unit's files (text as UTF-8, or bytes) into its own staging folder; returns the folder."""
        folder = self.root / unit
        for name, text in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def compile(self, tex: Path, engine: str) -> Future:
        """Compile `tex` in the pool (at most `jobs` at a time); the future raises UsageError."""
        return self.pool.submit(compile_pdf, tex, engine, self.children)

    def land(self, folder: Path, dest: Path, names: list[str]) -> list[Path]:
        """Move the staged unit's `names` to `dest`: one rename when `dest` does not exist yet,
        else file by file onto targets that `check_targets` cleared. Logs and aux files stay."""
        keep = {folder / n for n in names}
        if not dest.exists():
            for path in [p for p in folder.rglob("*") if p.is_file() and p not in keep]:
                path.unlink()
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(folder, dest)
        else:
            for name in names:
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(folder / name, dest / name)
        return [dest / n for n in names]


def _handle_signals(handler):
    """Install `handler` for SIGINT and SIGTERM (main thread only); returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    sigs = [signal.SIGTERM] + ([signal.SIGINT] if handler is signal.SIG_IGN else [])
    previous = {s: signal.signal(s, handler) for s in sigs}

    def restore():
        for s, h in previous.items():
            signal.signal(s, h)
    return restore


def write_files(out: Path, files: dict[str, str | bytes], force: bool = False, pdf_engine: str | None = None,
                jobs: int | None = None) -> list[Path]:
    """Write `files` (relative name -> text) under `out` as one unit, compiling each .tex to PDF
    when `pdf_engine` is set (in parallel). Refuses to overwrite unless `force`; the files appear
    only when all of them were written and compiled."""
    names = output_names(files, bool(pdf_engine))
    check_targets(out, names, force)
    if pdf_engine:
        require(pdf_engine)
    with Stage(out, jobs) as stage:
        folder = stage.write("unit", files)
        if pdf_engine:
            for job in [stage.compile(folder / n, pdf_engine) for n in files if n.endswith(".tex")]:
                job.result()
        return stage.land(folder, out, names)


def remove_files(out: Path, files: list[Path]) -> list[Path]:
    """Unlink `files` (an earlier run's output that --force replaces), then the folders inside
    `out` they leave empty (a dropped variant's, katex/fonts/)."""
    for f in files:
        f.unlink()
    folders = {q for p in files for q in (p.parent, p.parent.parent) if out.absolute() in q.absolute().parents}
    for folder in sorted(folders, key=lambda p: -len(p.absolute().parts)):
        with contextlib.suppress(OSError):   # not empty: something else is in it
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    return files


def require(program: str) -> None:
    from symblock.errors import UsageError
    if shutil.which(program) is None:
        raise UsageError(f"--pdf needs {program}, which is not installed (TeX Live: e.g. `apt-get install "
                         "texlive-latex-recommended texlive-xetex texlive-lang-chinese`)")


COMPILE_TIMEOUT = 600  # seconds per LaTeX run
MAX_RUNS = 3           # LaTeX runs per document while the log asks for another (labels, outlines)
_RERUN = re.compile(r"Rerun to get|Please rerun|Rerun LaTeX")
_ERROR = re.compile(r"^(?:!|\S*\.tex:\d+: )")  # `! …` or `./key.tex:12: …` (-file-line-error)


def _first_error(log: str) -> str:
    """The log's first error with the input line it stopped at (`l.12 \\foo`)."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if _ERROR.match(line):
            where = next((x.strip() for x in lines[i + 1:i + 12] if re.match(r"l\.\d+ ", x)), "")
            return line.strip() + (f" ({where})" if where else "")
    return log[-500:].strip()


def compile_pdf(tex: Path, engine: str = "pdflatex", children: _Children | None = None) -> Path:
    """Compile one .tex in its own directory (never with shell escape); the log stays beside it.

    The engine runs directly, once, and again only while the log asks for it (at most MAX_RUNS
    runs; pandoc's rule): latexmk would run it twice on every fresh document for an .aux file
    these documents do not use. Raises UsageError with the log's first errors when it fails."""
    from symblock.errors import UsageError
    cmd = [engine, "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
           "-file-line-error", "-recorder", tex.name]
    env = dict(os.environ, SOURCE_DATE_EPOCH="0", FORCE_SOURCE_DATE="1")
    children = children or _Children()
    pdf, log = tex.with_suffix(".pdf"), tex.with_suffix(".log")
    for _ in range(MAX_RUNS):
        code, output = children.run(cmd, tex.parent, env)
        text = log.read_text(errors="replace") if log.exists() else output.decode(errors="replace")
        if code != 0 or not pdf.exists():
            raise UsageError(f"{engine} failed on {tex.name}: {_first_error(text)}")
        if not _RERUN.search(text):
            break
    return pdf
