"""worksheet --variants N: the set files (one document holding every variant), parallel compiles,
progress only on a terminal, the set split into students/ and instructor/, and output that appears in whole units (issue 10, "Partial output"):
a variant's files or the set files land whole or not at all, a failed variant keeps the finished
ones, and no temporary folder survives an error, SIGINT or SIGTERM."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from symblock import cli
from symblock.sheets import sets, worksheet
from symblock.sheets.render import package_template_dir
from symblock.sheets.sets import combined
from worksheet_tools import need

IDS = ["pre-ln-causal-gelu.40", "pre-ln-causal-gelu.41", "pre-ln-causal-gelu.42"]  # --seed 40


def run(*argv: str) -> int:
    return cli.main(["worksheet", "pre-ln-causal-gelu", "--seed", "40", *argv])


def body(tex: str) -> str:
    return tex[tex.index("\\begin{document}") + len("\\begin{document}"):tex.rindex("\\end{document}")].strip("\n")


def at(out: Path, name: str) -> Path:
    """Where a set's file named relative to the set (`<ID>/key.tex`, `sheets.tex`) lands."""
    return out / sets.placed(name)


def top(out: Path) -> list[str]:
    """The set's own files and variant folders, students/ and instructor/ together."""
    return sorted({p.name for side in ("students", "instructor") if (out / side).is_dir()
                   for p in (out / side).iterdir()})


def variant(out: Path, ident: str) -> list[str]:
    """A variant's files, its sheet's in students/ and its key's in instructor/ together."""
    return sorted(p.name for side in ("students", "instructor") if (out / side / ident).is_dir()
                  for p in (out / side / ident).iterdir())


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".symblock-*"))


def failing_templates(tmp_path: Path, ident_suffix: str,
                      insert: str = "\\symblockundefinedcommand") -> Path:
    """The built-in LaTeX template with `insert` (an undefined command) in one variant's body."""
    tdir = tmp_path / "templates"
    tdir.mkdir()
    text = (Path(package_template_dir()) / "worksheet.tex.j2").read_text()
    text = text.replace("\\begin{document}\n", "\\begin{document}\n((* if ident.endswith('"
                        + ident_suffix + "') *))" + insert + "((* endif *))\n", 1)
    (tdir / "worksheet.tex.j2").write_text(text)
    return tdir


# ---------------------------------------------------------------- the set files

def test_set_files_hold_every_variant_in_order(tmp_path, capsys):
    out = tmp_path / "set"
    assert run("--variants", "3", "--out", str(out), "--list") == 0
    assert top(out) == sorted(IDS + ["keys.tex", "manifest.yaml", "sheets.tex"])
    printed = capsys.readouterr().out.split()
    docs = [str(at(out, "sheets.tex")), str(at(out, "keys.tex"))]
    assert [p for p in printed if p in docs] == docs
    assert printed.index(docs[0]) > max(printed.index(str(at(out, f"{i}/key.tex"))) for i in IDS)  # variants first
    for doc, set_doc in (("sheet", "sheets"), ("key", "keys")):
        whole = at(out, f"{set_doc}.tex").read_text()
        first = at(out, f"{IDS[0]}/{doc}.tex").read_text()
        assert whole.startswith(first[:first.index("\\begin{document}")])  # the shared preamble, once
        assert whole.count("\\documentclass") == 1 and whole.count("\\begin{document}") == 1
        starts = [whole.index(f"\\symblockvariant{{{i}}}") for i in IDS]
        assert starts == sorted(starts)
        for i, ident in enumerate(IDS):  # each variant's body, verbatim, in its own slot
            chunk = whole[starts[i]:starts[i + 1] if i + 1 < len(IDS) else len(whole)]
            assert body(at(out, f"{ident}/{doc}.tex").read_text()) in chunk
    again = tmp_path / "again"
    assert run("--variants", "3", "--out", str(again)) == 0
    for name in ("sheets.tex", "keys.tex"):
        assert at(again, name).read_bytes() == at(out, name).read_bytes()


def test_markdown_only_set_has_no_set_files(tmp_path):
    out = tmp_path / "md"
    assert run("--variants", "2", "--format", "markdown", "--out", str(out)) == 0
    assert top(out) == sorted(IDS[:2] + ["manifest.yaml"])  # no sheets/keys.tex


def test_combined_refuses_variants_whose_preambles_differ():
    a = "\\documentclass{article}\n\\begin{document}\nA\n\\end{document}\n"
    b = a.replace("article", "report")
    assert "\\symblockvariant{x.1}" in combined([("x.1", a), ("x.2", a)])
    with pytest.raises(Exception, match="x.2: its LaTeX preamble differs"):
        combined([("x.1", a), ("x.2", b)])
    with pytest.raises(Exception, match="no \\\\begin"):
        combined([("x.1", "no document here")])


def test_jobs_is_bounded(tmp_path, capsys):
    assert run("--variants", "2", "--jobs", "65", "--out", str(tmp_path / "o")) == 2
    assert "--jobs: expected at most 64" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def pages(pdf: Path) -> list[str]:
    """The text of each page (pdftotext), last page included."""
    need("pdftotext")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    return text.split("\f")[:-1]


@pytest.mark.slow
def test_set_pdf_numbers_each_variant_from_one_on_an_odd_page(tmp_path, capsys):
    out = tmp_path / "set"
    assert run("--variants", "3", "--pdf", "--format", "latex", "--jobs", "2", "--out", str(out)) == 0
    for doc, set_doc in (("sheet", "sheets"), ("key", "keys")):
        have = pages(at(out, f"{set_doc}.pdf"))
        page = 0
        for ident in IDS:
            own = len(pages(at(out, f"{ident}/{doc}.pdf")))
            assert page % 2 == 0, f"{ident} starts on page {page + 1} of {set_doc}.pdf (must be odd)"
            for n in range(1, own + 1):  # footer: the ID and the page number within the variant
                footer = [line for line in have[page].splitlines() if line.strip()][-1].split()
                assert footer == [ident, str(n)], (set_doc, page, footer)
                page += 1
            if own % 2:
                assert have[page].strip() == "", f"{set_doc}: the page after an odd-length variant is blank"
                page += 1
        assert page == len(have)


def count_compiles(monkeypatch) -> list[str]:
    """The names of the .tex files LaTeX is run on, from now on."""
    seen, real = [], worksheet.compile_pdf

    def counting(tex, *args, **kwargs):
        seen.append(tex.name)
        return real(tex, *args, **kwargs)
    monkeypatch.setattr(worksheet, "compile_pdf", counting)
    return seen


def images(pdf: Path, tmp: Path) -> list[bytes]:
    """Each page rendered to grey pixels (pdftoppm's PGM: no metadata, so equal pages give equal bytes)."""
    need("pdftoppm")
    folder = tmp / f"png-{len(list(tmp.glob('png-*')))}"
    folder.mkdir()
    subprocess.run(["pdftoppm", "-r", "30", "-gray", str(pdf), str(folder / "p")], check=True)
    return [p.read_bytes() for p in sorted(folder.iterdir())]


@pytest.mark.slow
def test_each_variants_pdfs_are_cut_from_the_set_and_match_its_own_compile(tmp_path, monkeypatch, capsys):
    compiles = count_compiles(monkeypatch)
    cut, again, own = tmp_path / "cut", tmp_path / "again", tmp_path / "own"
    assert run("--variants", "3", "--pdf", "--format", "latex", "--out", str(cut)) == 0
    assert sorted(compiles) == ["keys.tex", "sheets.tex"]  # 8 PDFs from two LaTeX runs
    assert run("--variants", "3", "--pdf", "--format", "latex", "--out", str(again)) == 0
    monkeypatch.setattr(sets, "_cutter", lambda: None)  # as without pypdf: each variant compiled on its own
    compiles.clear()
    assert run("--variants", "3", "--pdf", "--format", "latex", "--out", str(own)) == 0
    assert sorted(compiles) == sorted(["keys.tex", "sheets.tex"] + ["sheet.tex", "key.tex"] * 3)
    pdfs = sorted(p.relative_to(cut) for p in cut.rglob("*.pdf"))
    assert len(pdfs) == 8 and pdfs == sorted(p.relative_to(own) for p in own.rglob("*.pdf"))
    for name in pdfs:  # the same seed gives the same bytes
        assert (cut / name).read_bytes() == (again / name).read_bytes(), name
    for ident in IDS:
        for doc in ("sheet.pdf", "key.pdf"):
            name = f"{ident}/{doc}"
            have, want = pages(at(cut, name)), pages(at(own, name))
            assert len(have) == len(want) > 1, (ident, doc)  # the blank page that pads a set is not cut
            assert have == want, (ident, doc)
            assert images(at(cut, name), tmp_path) == images(at(own, name), tmp_path), (ident, doc)
    for doc in ("sheets.pdf", "keys.pdf"):
        assert at(cut, doc).read_bytes() == at(own, doc).read_bytes()


# ---------------------------------------------------------------- failures keep finished units

@pytest.mark.slow
def test_a_set_document_that_fails_alone_still_writes_every_variant(tmp_path, capsys):
    out = tmp_path / "set"  # the second variant in one document stops LaTeX; each variant alone compiles
    tdir = failing_templates(tmp_path, "", "\\ifdefined\\symblockseen\\symblockonlyinaset\\fi"
                                           "\\gdef\\symblockseen{}")
    code = run("--variants", "3", "--pdf", "--format", "latex", "--template-dir", str(tdir), "--out", str(out))
    assert code == 2
    err = capsys.readouterr().err
    assert "the set files failed" in err and "symblockonlyinaset" in err and "all 3 variants were written" in err
    assert top(out) == IDS
    for ident in IDS:
        assert variant(out, ident) == ["key.pdf", "key.tex", "sheet.pdf", "sheet.tex"]
        key = at(out, f"{ident}/key.pdf")
        assert pages(key)[-1].split()[-2:] == [ident, str(len(pages(key)))]
    assert leftovers(tmp_path) == []


def test_a_variant_that_fails_to_render_ends_the_set_and_keeps_those_before(tmp_path, capsys):
    out = tmp_path / "set"
    tdir = failing_templates(tmp_path, ".41", "((( no_such_value )))")
    code = run("--variants", "3", "--format", "latex", "--template-dir", str(tdir), "--out", str(out))
    assert code == 2
    err = capsys.readouterr().err
    assert f"variant {IDS[1]}: template worksheet.tex.j2" in err and "no_such_value" in err
    assert f"the variant before it was written to {out}" in err
    assert top(out) == [IDS[0]]  # no set files, nothing after the failure
    assert variant(out, IDS[0]) == ["key.tex", "sheet.tex"]
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_failed_variant_keeps_the_others_and_names_itself(tmp_path, capsys):
    out = tmp_path / "set"
    tdir = failing_templates(tmp_path, ".41")
    code = run("--variants", "3", "--pdf", "--format", "latex", "--template-dir", str(tdir), "--out", str(out))
    assert code == 2
    cap = capsys.readouterr()
    assert "variant pre-ln-causal-gelu.41 failed" in cap.err and "symblockundefinedcommand" in cap.err
    assert "2 of 3 variants were written" in cap.err and "set files were not" in cap.err
    assert top(out) == [IDS[0], IDS[2]]  # no set files, no .41
    for ident in (IDS[0], IDS[2]):
        assert variant(out, ident) == ["key.pdf", "key.tex", "sheet.pdf", "sheet.tex"]
    assert cap.out.startswith(f"wrote 2 variants in {out}/ ({IDS[0]}, {IDS[2]}), each: "), cap.out
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_failed_compile_leaves_no_new_folders(tmp_path, capsys):
    tdir = failing_templates(tmp_path, "")  # every variant fails
    assert cli.main(["worksheet", "--pdf", "--template-dir", str(tdir), "--out",
                     str(tmp_path / "newp" / "sub")]) == 2
    assert "symblockundefinedcommand" in capsys.readouterr().err
    assert not (tmp_path / "newp").exists() and leftovers(tmp_path) == []


# ---------------------------------------------------------------- every target checked first

def test_force_onto_a_directory_where_a_file_goes_moves_nothing(tmp_path, capsys):
    out = tmp_path / "ws"
    assert cli.main(["worksheet", "--out", str(out)]) == 0
    (out / "key.md").unlink()
    (out / "key.md").mkdir()
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert cli.main(["worksheet", "--preset", "ffn", "--force", "--out", str(out)]) == 2
    assert "key.md is a directory where a file of the output goes" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert (out / "key.md").is_dir() and list((out / "key.md").iterdir()) == []
    assert leftovers(tmp_path) == []


def test_a_file_blocking_a_variant_folder_writes_no_variant(tmp_path, capsys):
    out = tmp_path / "set"
    (out / "students").mkdir(parents=True)
    (out / "students" / IDS[1]).write_text("in the way")
    assert run("--variants", "3", "--force", "--out", str(out)) == 2
    assert f"{IDS[1]} is a file where a folder of the output goes" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["students"] and top(out) == [IDS[1]]
    assert leftovers(tmp_path) == []


def test_an_unwritable_folder_is_refused_before_writing(tmp_path, capsys, monkeypatch):
    from symblock.sheets import worksheet
    out = tmp_path / "ro"
    out.mkdir()
    real_access = os.access  # the tests run as root, who may write anywhere: say the folder is read-only
    monkeypatch.setattr(worksheet.os, "access", lambda p, mode: Path(p) != out and real_access(p, mode))
    assert run("--variants", "2", "--out", str(out)) == 2
    assert f"cannot write into {out} (permission denied)" in capsys.readouterr().err
    assert list(out.iterdir()) == [] and leftovers(tmp_path) == []


# ---------------------------------------------------------------- signals and progress

def _start(tmp_path: Path, out: Path, *extra: str, stderr=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "symblock", "worksheet", "pre-ln-causal-gelu",
                             "--seed", "40", "--variants", "3", "--pdf", "--format", "latex",
                             "--jobs", "1", "--out", str(out), *extra],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=stderr)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_pdf_removes_the_staging_folder(tmp_path, sig):
    need("pdflatex")
    out = tmp_path / "set"
    proc = _start(tmp_path, out)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".symblock-*/*/*.log")):  # a compile is under way
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before a compile began"
        time.sleep(0.02)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == (128 + sig if sig == signal.SIGTERM else 130)
    assert leftovers(tmp_path) == []
    for ident in (top(out) if out.exists() else []):  # what landed is whole
        assert variant(out, ident) == ["key.pdf", "key.tex", "sheet.pdf", "sheet.tex"]
    assert not at(out, "sheets.pdf").exists()


def test_progress_shows_on_a_terminal_and_is_quiet_otherwise(tmp_path, capsys):
    assert run("--variants", "2", "--format", "markdown", "--out", str(tmp_path / "quiet"), "--allow-repeats") == 0
    assert capsys.readouterr().err == ""   # (--allow-repeats: the example's given X repeats norm1, a warning)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # a real terminal's size
    proc = subprocess.Popen([sys.executable, "-m", "symblock", "worksheet", "pre-ln-causal-gelu", "--seed",
                             "40", "--variants", "2", "--format", "markdown", "--out", str(tmp_path / "tty")],
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    proc.communicate(timeout=120)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.returncode == 0
    assert re.search(rb"worksheets: +\d+%.*/3", seen), seen  # 2 variants + the set unit (manifest)


def test_a_set_prints_a_summary_not_every_file(tmp_path, capsys):
    out = tmp_path / "set"
    assert run("--variants", "3", "--out", str(out)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines
    assert lines[0] == (f"wrote 3 variants in {out}/ ({', '.join(IDS)}), each: students/<ID>/: sheet.tex, "
                        "sheet.md, answers.yaml, answers.csv; instructor/<ID>/: key.tex, key.md")
    assert lines[1] == "set files: " + ", ".join(str(at(out, n)) for n in ("sheets.tex", "keys.tex", "manifest.yaml"))


FIXED_X = """\
dims: {seq_len: 3, d_model: 4, d_ff: 4, heads: 1}
block: {norm_position: pre}
inputs:
  X: [[1, 0, 2, -1], [0, 1, -1, 2], [2, -1, 0, 1]]
random: {seed: 1, low: -1, high: 1}
"""


def test_a_given_x_is_named_when_its_steps_repeat_on_every_sheet(tmp_path, capsys):
    """Pre-LN with X given: norm1's answers are the same on every sheet (the means of X's rows,
    worked here by hand: 1/2, 1/2, 1/2). The set is written, with a warning that names those steps,
    the cause (X is given) and the fixes; --allow-repeats says it is meant. When every asked step
    is such, the set is refused (exit 2) and nothing is written."""
    spec = tmp_path / "fixed.yaml"
    spec.write_text(FIXED_X, encoding="utf-8")
    assert cli.main(["worksheet", str(spec), "--preset", "norm", "--variants", "3", "--format", "markdown",
                     "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "warning: norm1.mean, norm1.var, norm1.std, norm1 have the same answer on all 3 sheets" in err, err
    assert "only X, " in err and "leave inputs.X out of the spec" in err and "--allow-repeats" in err
    assert "norm2" not in err   # norm2 reads resid1, which the drawn attention weights change
    keys = [p.read_text(encoding="utf-8") for p in sorted((tmp_path / "a" / "instructor").glob("*/key.md"))]
    mean = r"\mu = \begin{bmatrix} 0.5 \\ 0.5 \\ 0.5 \end{bmatrix}"   # (1 + 0 + 2 − 1)/4, ...
    assert len(keys) == 3 and all(mean in k for k in keys)
    assert cli.main(["worksheet", str(spec), "--preset", "norm", "--variants", "3", "--format", "markdown",
                     "--out", str(tmp_path / "b"), "--allow-repeats"]) == 0
    assert "warning" not in capsys.readouterr().err
    spec.write_text(FIXED_X + "exercise: {ask: [norm1.mean, norm1.var]}\n", encoding="utf-8")
    assert cli.main(["worksheet", str(spec), "--variants", "3", "--format", "markdown",
                     "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "every sheet would have the same answers" in err and "norm1.mean, norm1.var" in err
    assert "leave inputs.X out of the spec" in err and not (tmp_path / "c").exists()
