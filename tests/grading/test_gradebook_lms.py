"""gradebook.csv as Canvas's and Moodle's grade imports read it, and the class summary with its
report. Answers are worked independently in NumPy (test_grade's helpers); the expected totals and
percentages are worked here from the printed cells with Decimal."""
import csv
import io
from decimal import ROUND_HALF_UP, Decimal

import pytest
import yaml
from PIL import Image
from test_grade import ASKED, grid, params, work, write_yaml
from test_identity import three  # noqa: F401  (the 3-variant set)

from symblock.cli import main

CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


@pytest.fixture(scope="module")
def klass(three, tmp_path_factory):  # noqa: F811
    """Ada carries her student ID and email; Bo (sample variance, an HTML name) and Cy (sample
    variance, a formula as name) are found in a roster."""
    root, ids, steps = three
    manifest = yaml.safe_load((root / "set" / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    spec = yaml.safe_load((root / "spec.yaml").read_text(encoding="utf-8"))
    answers = tmp_path_factory.mktemp("lms") / "answers"
    answers.mkdir()
    write_yaml(answers / "ada.yaml", ids[0], "Ada", steps[ids[0]],
               head="decimals: 3\nstudent_id: s1001\nemail: ada@example.edu")
    for k, (file, name) in enumerate([("bo.yaml", "<b>Bo</b>"), ("cy.yaml", "=HYPERLINK(1)")], start=1):
        mine = work(params(spec, manifest["variants"][k]["seed"]), ddof=1, mean_places=2)
        write_yaml(answers / file, ids[k], f'"{name}"', {s: grid(m) for s, m in mine.items()})
    roster = answers.parent / "roster.csv"
    roster.write_text("file,name,student_id,email,section\nbo.yaml,,s1002,bo@example.edu,A\n"
                      ",=hyperlink(1),s1003,cy@example.edu,B\n", encoding="utf-8")
    return root, answers, roster


def run(klass, out, *extra):
    root, answers, roster = klass
    assert main(["grade", str(root / "set"), str(answers), "--roster", str(roster), "--out", str(out), *extra]) == 0
    return out


@pytest.fixture(scope="module")
def graded(klass, tmp_path_factory):
    out = run(klass, tmp_path_factory.mktemp("out") / "graded")
    text = (out / "gradebook.csv").read_text(encoding="utf-8")
    return out, list(csv.reader(io.StringIO(text)))


def test_roster_rows_and_files_that_match_nothing_are_named(klass, tmp_path, capsys):
    """A misspelt roster name must not leave a student's LMS columns empty without a word."""
    root, answers, _ = klass
    roster = tmp_path / "roster.csv"
    roster.write_text("file,name,student_id\nbo.yaml,,s1002\n,Cyy,s1003\ndee.yaml,,s1004\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["grade", str(root / "set"), str(answers), "--roster", str(roster), "--out", str(tmp_path / "g")]) == 0
    out = capsys.readouterr().out
    assert f"{roster}: 2 rows match no answers file: cyy, dee.yaml" in out, out
    assert f"{roster}: 1 answers file has no row: cy.yaml" in out    # Ada carries her own student_id
    assert f"{roster}: did you mean the row cyy for cy.yaml (" in out    # the likely pair, by its file name
    assert "for bo.yaml" not in out and out.count("did you mean") == 1     # dee.yaml is like no file
    assert main(["grade", str(root / "set"), str(answers), "--roster", str(tmp_path / "none.csv"),
                 "--out", str(tmp_path / "h")]) == 2
    assert "none.csv: no such file" in capsys.readouterr().err


def test_the_header_is_canvas_identity_then_grades_then_notes(graded):
    _, rows = graded
    assert rows[0] == CANVAS + ["total", "percent", *ASKED, "max", "worksheet", "file", "status", "flags", "feedback"]


def test_each_row_names_its_students_feedback_file(graded):
    """The feedback column gives the file to send each student, relative to the gradebook's folder."""
    out, rows = graded
    by = {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert by["Ada"]["feedback"] == "feedback/Ada.md" and by["<b>Bo</b>"]["feedback"] == "feedback/b-Bo-b.md"
    for name, row in by.items():
        title = (out / row["feedback"]).read_text(encoding="utf-8").splitlines()[0]
        assert title.startswith("# Feedback for ") and row["worksheet"] in (out / row["feedback"]).read_text(encoding="utf-8")
    assert len({r["feedback"] for r in by.values()}) == len(by) == len(list((out / "feedback").glob("*.md")))


def test_rows_carry_the_ids_and_emails_canvas_and_moodle_match_on(graded):
    _, rows = graded
    by = {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert set(by) == {"Ada", "<b>Bo</b>", "'=HYPERLINK(1)"}    # a formula is text to a spreadsheet
    assert [by[n]["SIS User ID"] for n in sorted(by)] == ["s1003", "s1002", "s1001"]
    assert by["Ada"]["SIS Login ID"] == "ada@example.edu" and by["Ada"]["Section"] == ""
    assert by["<b>Bo</b>"]["SIS Login ID"] == "bo@example.edu" and by["<b>Bo</b>"]["Section"] == "A"
    assert all(r["ID"] == "" for r in by.values())    # Canvas's own user number: left to Canvas
    for r in by.values():                              # Moodle: the grade columns are plain numbers
        assert all(Decimal(r[c]) >= 0 for c in ["total", "percent", *ASKED])


def test_totals_are_the_sums_of_the_printed_task_cells(graded):
    _, rows = graded
    recs = [dict(zip(rows[0], r)) for r in rows[1:]]
    assert any(r["total"] != "9.00" for r in recs)     # partial credit: the cells have decimals
    for r in recs:
        total = sum(Decimal(r[s]) for s in ASKED)
        assert Decimal(r["total"]) == total and r["max"] == "9"
        assert r["percent"] == str((total * 100 / 9).quantize(Decimal("0.01"), ROUND_HALF_UP))


def test_the_summary_has_plots_mistakes_and_escapes_names(graded, klass, tmp_path):
    out, _ = graded
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert "`norm1.var`: `ln_sample_variance`" in md and ": 2 of 3 students" in md
    assert "![totals](plots/totals.png)" in md
    html = (out / "summary.html").read_text(encoding="utf-8")
    assert '<img src="plots/totals.png"' in html
    again = run(klass, tmp_path / "again")
    for name in ("totals.png", "tasks.png"):
        data = (out / "plots" / name).read_bytes()
        assert data == (again / "plots" / name).read_bytes()     # byte for byte, run to run
        with Image.open(out / "plots" / name) as im:
            assert im.format == "PNG" and im.size[0] >= 600
    zh = (run(klass, tmp_path / "zh", "--lang", "zh") / "summary.md").read_text(encoding="utf-8")
    assert "## 最常见的错误" in zh and "3 名学生中有 2 名" in zh


def test_without_matplotlib_the_summary_says_so(klass, tmp_path, monkeypatch, capsys):
    from symblock.grading import report
    monkeypatch.setattr(report, "available", lambda: False)
    out = run(klass, tmp_path / "g")
    assert not (out / "plots").exists()
    assert "No plots: matplotlib is not installed" in (out / "summary.md").read_text(encoding="utf-8")
    assert "no plots: matplotlib is not installed" in capsys.readouterr().out


def test_user_text_in_markdown_is_plain_text():
    from symblock.grading.report import md_text
    assert md_text("<b>*x*</b> [a](b) `c` | #") == r"\<b\>\*x\*\</b\> \[a\](b) \`c\` \| \#"


def test_a_roster_without_an_identifying_column_is_a_clear_error(klass, tmp_path, capsys):
    root, answers, _ = klass
    bad = tmp_path / "roster.csv"
    bad.write_text("who,email\nx,y\n", encoding="utf-8")
    assert main(["grade", str(root / "set"), str(answers), "--roster", str(bad), "--out", str(tmp_path / "g")]) == 2
    assert f"{bad}: line 1: expected a header naming file or name" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()


def test_a_file_not_graded_keeps_its_roster_row(klass, tmp_path):
    root, answers, roster = klass
    mine = tmp_path / "answers"
    mine.mkdir()
    (mine / "bo.yaml").write_text((answers / "bo.yaml").read_text(encoding="utf-8").replace("id: ", "id: x"),
                                  encoding="utf-8")
    assert main(["grade", str(root / "set"), str(mine), "--roster", str(roster)]) == 1
    rows = list(csv.DictReader(io.StringIO((mine / "graded" / "gradebook.csv").read_text(encoding="utf-8"))))
    assert [(r["SIS User ID"], r["SIS Login ID"], r["total"]) for r in rows] == [("s1002", "bo@example.edu", "")]
    assert rows[0]["status"].startswith("not graded: id x")


def test_the_csv_form_carries_student_id_and_email(three, tmp_path):  # noqa: F811
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    rows = ["step,row,col,value", f"id,,,{ids[0]}", "name,,,Di", "student_id,,,s1004", "email,,,di@example.edu"]
    rows += [f"{s},{a},{b},{x}" for s, g in steps[ids[0]].items() for a, row in enumerate(g) for b, x in enumerate(row)]
    (answers / "di.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["grade", str(root / "set"), str(answers)]) == 0
    got = next(csv.DictReader(io.StringIO((answers / "graded" / "gradebook.csv").read_text(encoding="utf-8"))))
    assert (got["Student"], got["SIS User ID"], got["SIS Login ID"], got["total"]) == ("Di", "s1004", "di@example.edu", "9.00")


def test_a_total_is_the_sum_of_the_rounded_cells_not_the_rounded_sum(three, tmp_path):  # noqa: F811
    root, ids, _ = three
    manifest = yaml.safe_load((root / "set" / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    spec = yaml.safe_load((root / "spec.yaml").read_text(encoding="utf-8"))

    def plant(name, v):   # one wrong entry in each: 11/12, 2/3 and 11/12 of a point (later steps carried)
        v = v.copy()
        if name in ("attn.out", "norm1.mean", "ffn.act"):
            v[0, 0] += 1
        return v
    answers = tmp_path / "answers"
    answers.mkdir()
    mine = work(params(spec, manifest["variants"][0]["seed"]), plant=plant)
    write_yaml(answers / "eli.yaml", ids[0], "Eli", {s: grid(m) for s, m in mine.items()})
    assert main(["grade", str(root / "set"), str(answers)]) == 0
    got = next(csv.DictReader(io.StringIO((answers / "graded" / "gradebook.csv").read_text(encoding="utf-8"))))
    assert [got[s] for s in ("attn.out", "norm1.mean", "ffn.act")] == ["0.92", "0.67", "0.92"]
    assert got["total"] == "8.51" and got["percent"] == "94.56"   # 6 + 0.92 + 0.67 + 0.92 (exactly 8.50)


def test_without_a_roster_the_rows_no_lms_can_match_are_counted(klass, tmp_path, capsys):
    """Bo and Cy carry no student ID or email: without --roster their rows reach the LMS unmatched."""
    root, answers, _ = klass
    capsys.readouterr()
    assert main(["grade", str(root / "set"), str(answers), "--out", str(tmp_path / "g")]) == 0
    out = capsys.readouterr().out
    assert out.count("note: 2 of 3 gradebook rows have no student ID or email") == 1, out
    assert "--roster FILE (a CSV of file or name, student_id, email) fills them" in out
    run(klass, tmp_path / "r")                          # the roster fills them: no note
    assert "have no student ID" not in capsys.readouterr().out
    alone = tmp_path / "ada"
    alone.mkdir()
    (alone / "ada.yaml").write_text((answers / "ada.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["grade", str(root / "set"), str(alone)]) == 0   # every row has its ID: no note
    assert "have no student ID" not in capsys.readouterr().out


def test_two_files_given_one_student_id_are_flagged(klass, tmp_path, capsys):
    """A roster row keyed by a name both files share, or two rows with one ID: the LMS would put both
    grades on one student. Each file is flagged, naming the other."""
    root, answers, _ = klass
    roster = tmp_path / "roster.csv"
    roster.write_text("file,name,student_id\nbo.yaml,,s1001\ncy.yaml,,s1003\n", encoding="utf-8")  # Ada's own ID
    capsys.readouterr()
    assert main(["grade", str(root / "set"), str(answers), "--roster", str(roster), "--out", str(tmp_path / "g")]) == 1
    out = capsys.readouterr().out
    assert "flagged: ada.yaml (Ada): same student ID s1001 as bo.yaml" in out, out
    assert "flagged: bo.yaml (<b>Bo</b>): same student ID s1001 as ada.yaml" in out
    assert "cy.yaml (" not in out
    book = {r["file"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g" / "gradebook.csv").read_text(encoding="utf-8")))}
    assert book["ada.yaml"]["flags"] == ("same student ID s1001 as bo.yaml (an LMS import matches both rows "
                                         "to one student)")
    assert book["bo.yaml"]["flags"].startswith("same student ID s1001 as ada.yaml") and book["cy.yaml"]["flags"] == ""
    md = (tmp_path / "g" / "summary.md").read_text(encoding="utf-8")
    assert "- ada.yaml (Ada): same student ID s1001 as bo.yaml" in md
    assert "bo.yaml (&lt;b&gt;Bo&lt;/b&gt;): same student ID s1001 as ada.yaml" in (tmp_path / "g" / "summary.html").read_text(encoding="utf-8")
    assert main(["grade", str(root / "set"), str(answers), "--roster", str(roster), "--out", str(tmp_path / "zh"),
                 "--lang", "zh"]) == 1
    assert "与 bo.yaml 的学号 s1001 相同" in (tmp_path / "zh" / "summary.md").read_text(encoding="utf-8")


def test_a_file_not_graded_is_flagged_for_a_student_id_it_shares(klass, tmp_path, capsys):
    """Nora's file has no id: it is not graded, but its row still carries Ada's student ID, so an LMS
    import would put both rows on one student: both are flagged, the row not graded too."""
    root, answers, _ = klass
    mine = tmp_path / "answers"
    mine.mkdir()
    (mine / "ada.yaml").write_bytes((answers / "ada.yaml").read_bytes())
    (mine / "nora.yaml").write_text("name: Nora\nstudent_id: s1001\nsteps:\n  resid1: null\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["grade", str(root / "set"), str(mine), "--out", str(tmp_path / "g")]) == 1
    out = capsys.readouterr().out
    assert "flagged: ada.yaml (Ada): same student ID s1001 as nora.yaml" in out, out
    assert "flagged: nora.yaml (Nora): same student ID s1001 as ada.yaml" in out
    book = {r["file"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g" / "gradebook.csv").read_text(encoding="utf-8")))}
    assert book["nora.yaml"]["status"].startswith("not graded: no id")
    assert book["nora.yaml"]["flags"].startswith("same student ID s1001 as ada.yaml")
    assert book["ada.yaml"]["flags"].startswith("same student ID s1001 as nora.yaml")
    md = (tmp_path / "g" / "summary.md").read_text(encoding="utf-8")
    assert "- nora.yaml (Nora): same student ID s1001 as ada.yaml" in md
    assert "graded against their own ID (or not graded: see Not graded)" in md and "## Not graded" in md


@pytest.mark.parametrize("lang, words", [
    ("en", "same email ada@example.edu as bo.yaml (an LMS import matches both rows to one student)"),
    ("zh", "与 bo.yaml 的邮箱 ada@example.edu 相同"),
])
def test_two_files_with_one_email_are_flagged(klass, tmp_path, capsys, lang, words):
    """The roster gives Bo Ada's email (written in other case): Moodle, matching rows by email, would put
    both grades on one student. Each file is flagged, naming the other; Cy's is not."""
    root, answers, _ = klass
    roster = tmp_path / "roster.csv"
    roster.write_text("file,name,student_id,email\nbo.yaml,,s1002,Ada@Example.EDU\ncy.yaml,,s1003,cy@example.edu\n",
                      encoding="utf-8")
    capsys.readouterr()
    assert main(["grade", str(root / "set"), str(answers), "--roster", str(roster), "--out", str(tmp_path / "g"),
                 "--lang", lang]) == 1
    book = {r["file"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g" / "gradebook.csv").read_text(encoding="utf-8")))}
    assert words in book["ada.yaml"]["flags"], book["ada.yaml"]["flags"]
    assert "Ada@Example.EDU" in book["bo.yaml"]["flags"] and "ada.yaml" in book["bo.yaml"]["flags"]
    assert book["cy.yaml"]["flags"] == ""
    assert words in (tmp_path / "g" / "summary.md").read_text(encoding="utf-8")
