"""`--force` replaces an earlier run's output as a whole: what the earlier run wrote and this one
does not (a dropped variant's folders, a format or a set file not written now, feedback of a
student no longer in the class) is removed, so no stale file sits beside the new ones; a file
symblock did not write is never touched, and without --force nothing is removed."""
from pathlib import Path

from symblock.cli import main


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "katex/" not in p.as_posix()}


def test_a_smaller_set_written_with_force_leaves_nothing_of_the_bigger_one(tmp_path, capsys):
    out = tmp_path / "set"
    assert main(["worksheet", "--difficulty", "easy", "--variants", "3", "--format", "markdown,html,moodle",
                 "--out", str(out)]) == 0
    ids = sorted(p.name for p in (out / "students").iterdir() if p.is_dir() and p.name != "katex")
    assert len(ids) == 3 and (out / "instructor" / "moodle.xml").exists() and (out / "students" / "katex").is_dir()
    (out / "instructor" / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "students" / ids[2] / "marks.txt").write_text("mine", encoding="utf-8")
    capsys.readouterr()
    assert main(["worksheet", "--difficulty", "easy", "--variants", "2", "--format", "markdown",
                 "--out", str(out), "--force"]) == 0
    said = capsys.readouterr().out
    assert f"the folders of 1 variant this run does not have ({ids[2]})" in said, said
    assert "moodle.xml" in said and "sheet.html" in said and "katex/" in said, said
    kept = {f"students/{i}/{n}" for i in ids[:2] for n in ("sheet.md", "answers.yaml", "answers.csv")} \
        | {f"instructor/{i}/key.md" for i in ids[:2]} | {"instructor/manifest.yaml", "instructor/notes.txt",
                                                        f"students/{ids[2]}/marks.txt"}
    assert files(out) == kept
    assert not (out / "instructor" / ids[2]).exists() and not (out / "students" / "katex").exists()


def test_one_sheet_rewritten_with_force_drops_the_formats_not_asked_now(tmp_path, capsys):
    out = tmp_path / "one"
    assert main(["worksheet", "seed-post-ln", "--format", "latex,markdown,ipynb", "--out", str(out)]) == 0
    (out / "sheet.txt").write_text("mine", encoding="utf-8")
    assert files(out) == {"sheet.tex", "key.tex", "sheet.md", "key.md", "notebook.ipynb", "sheet.txt"}
    assert main(["worksheet", "seed-post-ln", "--format", "markdown", "--out", str(out), "--force"]) == 0
    assert files(out) == {"sheet.md", "key.md", "sheet.txt"}
    assert "removed 3 files an earlier run left" in capsys.readouterr().out


def test_without_force_nothing_is_removed(tmp_path, capsys):
    out = tmp_path / "one"
    assert main(["worksheet", "seed-post-ln", "--format", "latex", "--out", str(out)]) == 0
    assert main(["worksheet", "seed-post-ln", "--format", "markdown", "--out", str(out)]) == 0   # no clash
    assert files(out) == {"sheet.tex", "key.tex", "sheet.md", "key.md"}
    assert "removed" not in capsys.readouterr().out


def test_grade_with_force_removes_the_feedback_of_a_file_no_longer_graded(tmp_path, capsys):
    out = tmp_path / "set"
    assert main(["worksheet", "--difficulty", "easy", "--variants", "2", "--format", "markdown", "--out", str(out)]) == 0
    answers = tmp_path / "answers"
    answers.mkdir()
    blanks = sorted((out / "students").glob("*/answers.yaml"))
    for name, blank in zip(("ada", "bo"), blanks):
        (answers / f"{name}.yaml").write_text(blank.read_text(encoding="utf-8").replace("name:", f"name: {name} #"),
                                              encoding="utf-8")
    graded = tmp_path / "graded"
    main(["grade", str(out), str(answers), "--out", str(graded)])
    assert {p.name for p in (graded / "feedback").iterdir()} == {"ada.md", "bo.md"}
    (graded / "notes.md").write_text("mine", encoding="utf-8")
    (answers / "bo.yaml").unlink()
    capsys.readouterr()
    main(["grade", str(out), str(answers), "--out", str(graded), "--force"])
    assert {p.name for p in (graded / "feedback").iterdir()} == {"ada.md"}
    assert (graded / "notes.md").exists()
    assert "removed 1 file an earlier grading left" in capsys.readouterr().out
