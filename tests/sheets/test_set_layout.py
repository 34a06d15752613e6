"""What goes to students carries no way to the key: a set is written as students/ (sheets, blank
answers files, HTML sheets, notebooks, an index of the sheets) and instructor/ (keys, manifest, LMS
exports, the set documents, an index of the keys); `grade` and `check` find the manifest there, and a
student's copy of an answers file is checked from its ID alone. An HTML sheet of one variant links to
its key only with --link-key; a set's summary counts variants, not the folders of KaTeX's files."""
from __future__ import annotations

import re
import shutil

import pytest

from symblock import cli

IDS = ["preset-easy-v2.1", "preset-easy-v2.2", "preset-easy-v2.3"]   # a new set: generator version 2
DECIMAL = re.compile(r"-?\d+\.\d{3}\b")


def _hrefs(path) -> list[str]:
    return re.findall(r'href="([^"]*)"', path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout") / "set"
    assert cli.main(["worksheet", "--difficulty", "easy", "--variants", "3", "--out", str(out),
                     "--format", "latex,markdown,html,moodle,qti,ipynb"]) == 0
    return out


def test_students_get_sheets_and_answers_files_and_instructors_the_rest(klass):
    students = {p.relative_to(klass / "students").as_posix() for p in (klass / "students").rglob("*")
                if p.is_file() and "katex" not in p.parts}
    assert students == {"index.html"} | {f"{i}/{n}" for i in IDS for n in (
        "sheet.tex", "sheet.md", "sheet.html", "notebook.ipynb", "answers.yaml", "answers.csv")}
    instructor = {p.relative_to(klass / "instructor").as_posix() for p in (klass / "instructor").rglob("*")
                  if p.is_file() and "katex" not in p.parts}
    assert instructor == {"index.html", "manifest.yaml", "sheets.tex", "keys.tex", "moodle.xml", "qti.zip"} | {
        f"{i}/{n}" for i in IDS for n in ("key.tex", "key.md", "key.html")}
    assert sorted(p.name for p in klass.iterdir()) == ["instructor", "students"]
    assert (klass / "students" / "katex" / "katex.min.js").is_file()  # each folder works on its own
    assert (klass / "instructor" / "katex" / "katex.min.js").is_file()


def test_no_student_file_links_to_or_holds_a_key(klass):
    for ident in IDS:
        key = set(DECIMAL.findall((klass / "instructor" / ident / "key.md").read_text(encoding="utf-8")))
        given = set(DECIMAL.findall((klass / "students" / ident / "sheet.md").read_text(encoding="utf-8")))
        answers = key - given     # the key's worked numbers that the sheet does not give
        assert len(answers) >= 10, answers
        for path in (klass / "students").rglob("*"):
            if path.is_file() and "katex" not in path.parts:
                text = path.read_text(encoding="utf-8")
                assert not answers & set(DECIMAL.findall(text)), (path, answers & set(DECIMAL.findall(text)))
                assert "key" not in " ".join(_hrefs(path)), (path, _hrefs(path))
    index = _hrefs(klass / "students" / "index.html")
    assert [h for h in index if h.endswith("sheet.html")] == [f"{i}/sheet.html" for i in IDS]
    keys = _hrefs(klass / "instructor" / "index.html")
    assert [h for h in keys if h.endswith("key.html")] == [f"{i}/key.html" for i in IDS]
    assert f"../students/{IDS[0]}/sheet.html" in keys
    assert f"../../students/{IDS[0]}/sheet.html" in _hrefs(klass / "instructor" / IDS[0] / "key.html")


def test_grade_and_check_find_the_manifest_with_the_instructor(klass, tmp_path, capsys):
    answers = tmp_path / "answers"
    answers.mkdir()
    blank = klass / "students" / IDS[1] / "answers.yaml"
    text = blank.read_text(encoding="utf-8").replace('name: ""', "name: Ada")
    (answers / "ada.yaml").write_text(text, encoding="utf-8")
    for n, set_dir in enumerate((klass, klass / "instructor")):
        assert cli.main(["grade", str(set_dir), str(answers), "--out", str(tmp_path / f"g{n}")]) == 1   # blank: flagged
        assert f",{IDS[1]},ada.yaml,graded" in (tmp_path / f"g{n}" / "gradebook.csv").read_text()
        assert (tmp_path / f"g{n}" / "gradebook.csv").read_text().splitlines()[1].startswith("Ada,")
    capsys.readouterr()
    assert cli.main(["check", str(blank)]) == 1
    in_set = capsys.readouterr().out
    copy = tmp_path / "mine.yaml"   # a student's own copy: no manifest anywhere near, the ID rebuilds it
    shutil.copy(blank, copy)
    assert cli.main(["check", str(copy)]) == 1
    alone = capsys.readouterr().out
    assert in_set.replace(str(blank), "F") == alone.replace(str(copy), "F")
    assert "13 missing" in alone


def test_a_single_html_sheet_links_its_key_only_when_asked(tmp_path):
    plain, linked = tmp_path / "plain", tmp_path / "linked"
    assert cli.main(["worksheet", "--format", "html", "--out", str(plain)]) == 0
    assert cli.main(["worksheet", "--format", "html", "--out", str(linked), "--link-key"]) == 0
    assert not [h for h in _hrefs(plain / "sheet.html") if "key" in h], _hrefs(plain / "sheet.html")
    assert "key.html" in _hrefs(linked / "sheet.html")
    assert "sheet.html" in _hrefs(plain / "key.html")  # the instructor's key still leads back


def test_an_html_set_summary_counts_variants_not_asset_folders(tmp_path, capsys):
    out = tmp_path / "set"
    assert cli.main(["worksheet", "--difficulty", "easy", "--variants", "3", "--format", "html",
                     "--out", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (f"wrote 3 variants in {out}/ ({', '.join(IDS)}), each: students/<ID>/: sheet.html, "
                     "answers.yaml, answers.csv; instructor/<ID>/: key.html"), first


def test_link_key_is_refused_for_a_set(tmp_path, capsys):
    out = tmp_path / "set"
    assert cli.main(["worksheet", "--difficulty", "easy", "--variants", "2", "--format", "html",
                     "--link-key", "--out", str(out)]) == 2
    assert "--link-key: a set's sheets go to students/" in capsys.readouterr().err and not out.exists()


def test_a_sheet_made_with_a_preset_prints_the_check_command_with_it(tmp_path):
    """A student's own copy has no manifest beside it: the page's command must name the preset, or
    `check` would mark the full block's steps as missing."""
    out = tmp_path / "one"
    assert cli.main(["worksheet", "pre-ln-causal-gelu", "--preset", "norm", "--format", "html",
                     "--out", str(out)]) == 0
    page = (out / "sheet.html").read_text(encoding="utf-8")
    assert "symblock check answers-pre-ln-causal-gelu.7.yaml --preset norm" in page   # the example's seed 7
