"""`grade` flags a file whose identity is in doubt instead of grading it silently: an ID that
another variant of the set fits clearly better (a typo such as .1 for .2), and two files with the
same ID, name or answers. The answers are worked independently in NumPy from each variant's drawn
weights (test_grade's helpers), not by the checker."""
import csv
import textwrap

import pytest
import yaml
from test_grade import SPEC, grid, params, work, write_yaml

from symblock.cli import main


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """A 3-variant set and each variant's answers worked in NumPy (3 places)."""
    root = tmp_path_factory.mktemp("three")
    (root / "spec.yaml").write_text(textwrap.dedent(SPEC), encoding="utf-8")
    assert main(["worksheet", str(root / "spec.yaml"), "--variants", "3", "--seed", "1", "--out", str(root / "set"),
                 "--format", "markdown"]) == 0
    manifest = yaml.safe_load((root / "set" / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    spec = yaml.safe_load(textwrap.dedent(SPEC))
    ids = [v["id"] for v in manifest["variants"]]
    steps = {ident: {s: grid(m) for s, m in work(params(spec, v["seed"])).items()}
             for ident, v in zip(ids, manifest["variants"])}
    return root, ids, steps


def gradebook(path):
    with open(path, newline="", encoding="utf-8") as f:
        return {row["file"]: row for row in csv.DictReader(f)}


def test_an_answers_file_labelled_with_another_variants_id_is_flagged(three, tmp_path, capsys):
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    write_yaml(answers / "cy.yaml", ids[2], "Cy", steps[ids[2]])
    write_yaml(answers / "swap.yaml", ids[1], "Swap", steps[ids[0]])   # variant 1's numbers, labelled 2
    assert main(["grade", str(root / "set"), str(answers)]) == 1       # graded, but a person should look
    out = capsys.readouterr().out
    assert f"flagged: swap.yaml (Swap): fits {ids[0]} better than its own id" in out
    book = gradebook(answers / "graded" / "gradebook.csv")
    assert book["cy.yaml"]["flags"] == "" and book["cy.yaml"]["total"] == "9.00"
    swap = book["swap.yaml"]
    assert swap["status"] == "graded" and swap["worksheet"] == ids[1]       # still against its own ID
    assert swap["flags"].startswith(f"fits {ids[0]} better") and float(swap["total"]) < 9
    summary = (answers / "graded" / "summary.md").read_text(encoding="utf-8")
    assert f"- swap.yaml (Swap): fits {ids[0]} better" in summary
    fb = answers / "graded" / swap["feedback"]      # the student is told too, not only the instructor
    assert f"**Check your worksheet ID.** This file fits {ids[0]} better than its own id" in fb.read_text(encoding="utf-8")
    assert "Check your worksheet ID" not in (answers / "graded" / book["cy.yaml"]["feedback"]).read_text(encoding="utf-8")


def test_files_sharing_an_id_a_name_or_their_answers_are_flagged(three, tmp_path, capsys):
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    write_yaml(answers / "ada.yaml", ids[0], "Ada", steps[ids[0]])
    write_yaml(answers / "copy.yaml", ids[0], "Ada", steps[ids[0]])      # the same file handed in twice
    write_yaml(answers / "dan.yaml", ids[1], "Dan", steps[ids[1]])
    write_yaml(answers / "dana.yaml", ids[2], "dan", steps[ids[2]])      # the same name, other case
    write_yaml(answers / "eve.yaml", ids[1], "Eve", {s: g for s, g in steps[ids[1]].items() if s == "ffn.act"})
    assert main(["grade", str(root / "set"), str(answers)]) == 1
    book = gradebook(answers / "graded" / "gradebook.csv")
    assert book["ada.yaml"]["flags"] == "same id as copy.yaml; same name as copy.yaml; same answers as copy.yaml"
    assert book["copy.yaml"]["flags"] == "same id as ada.yaml; same name as ada.yaml; same answers as ada.yaml"
    assert book["dan.yaml"]["flags"] == "same id as eve.yaml; same name as dana.yaml"
    assert book["dana.yaml"]["flags"] == "same name as dan.yaml"
    assert book["eve.yaml"]["flags"] == "same id as dan.yaml"   # its ffn.act is no copy of Dan's whole file
    assert all(r["status"] == "graded" for r in book.values())
    for row in book.values():   # flags naming other students' files stay in the instructor's gradebook
        text = (answers / "graded" / row["feedback"]).read_text(encoding="utf-8")
        assert not any(f"{other}.yaml" in text for other in ("ada", "copy", "dan", "dana", "eve"))


def test_a_class_without_doubts_is_not_flagged(three, tmp_path):
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    for k, ident in enumerate(ids):
        write_yaml(answers / f"s{k}.yaml", ident, f"S{k}", steps[ident])
    assert main(["grade", str(root / "set"), str(answers)]) == 0
    assert {r["flags"] for r in gradebook(answers / "graded" / "gradebook.csv").values()} == {""}


def test_a_flagged_name_stays_text_in_the_summaries(three, tmp_path):
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    write_yaml(answers / "a.yaml", ids[0], '"<img src=x onerror=alert(1)> *A*"', steps[ids[0]])
    write_yaml(answers / "b.yaml", ids[1], '"<img src=x onerror=alert(1)> *A*"', steps[ids[1]])
    assert main(["grade", str(root / "set"), str(answers)]) == 1
    html = (answers / "graded" / "summary.html").read_text(encoding="utf-8")
    assert "<img src=x" not in html and "a.yaml (&lt;img src=x onerror=alert(1)&gt; *A*): same name as b.yaml" in html
    md = (answers / "graded" / "summary.md").read_text(encoding="utf-8")
    assert r"- a.yaml (\<img src=x onerror=alert(1)\> \*A\*): same name as b.yaml" in md


def test_files_differing_only_in_an_unreadable_entry_are_not_the_same_answers(three, tmp_path):
    """An entry that is no number ("abc", "x") is still part of what a file answers: two files that
    differ there are not copies, and two that agree there are."""
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    first = next(iter(steps[ids[0]]))
    for name, text in (("a", '"abc"'), ("b", '"x"'), ("c", '"x"')):
        mine = dict(steps[ids[0]])
        mine[first] = [[text, *row[1:]] for row in mine[first][:1]] + mine[first][1:]
        write_yaml(answers / f"{name}.yaml", ids[0], name.upper(), mine)
    assert main(["grade", str(root / "set"), str(answers)]) == 1
    book = gradebook(answers / "graded" / "gradebook.csv")
    assert "same answers" not in book["a.yaml"]["flags"]
    assert book["b.yaml"]["flags"].endswith("same answers as c.yaml")
    assert book["c.yaml"]["flags"].endswith("same answers as b.yaml")


def test_check_warns_as_grade_flags_of_a_file_another_variant_fits_better(three, tmp_path, capsys):
    """`check` runs grade's identity check: inside the set against its variants, and for a copy in no
    set against the IDs a slip of the pen makes of its own (.1 for .2); a right file gets no warning."""
    root, ids, steps = three
    inside = root / "set" / "students" / ids[1] / "swap.yaml"
    write_yaml(inside, ids[1], "Swap", steps[ids[0]])                 # variant 1's numbers, labelled 2
    write_yaml(tmp_path / "swap.yaml", ids[1], "Swap", steps[ids[0]])
    write_yaml(tmp_path / "own.yaml", ids[1], "Own", steps[ids[1]])
    try:
        for args, lang in (([str(inside)], "en"), ([str(root / "spec.yaml"), str(tmp_path / "swap.yaml")], "en"),
                           ([str(inside), "--lang", "zh"], "zh")):
            assert main(["check", *args]) == 1
            err = capsys.readouterr().err
            if lang == "en":
                assert f"swap.yaml fits {ids[0]} better than its own id (" in err, err
                assert f"check that its id: is the worksheet ID printed on your sheet (it was marked against {ids[1]}" in err
            else:
                assert f"与 {ids[0]} 的吻合程度明显高于它自己的 ID" in err and "请核对它的 id:" in err, err
        assert main(["check", str(root / "spec.yaml"), str(tmp_path / "own.yaml")]) == 0
        assert "warning" not in capsys.readouterr().err
    finally:
        inside.unlink()


def test_a_file_that_answers_nothing_is_flagged_not_only_graded_0(three, tmp_path, capsys):
    """A blank answers file is most often the wrong upload: graded 0 all the same, but a person looks."""
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    write_yaml(answers / "cy.yaml", ids[2], "Cy", steps[ids[2]])
    write_yaml(answers / "empty.yaml", ids[1], "Em", {s: [None] * len(g) for s, g in steps[ids[1]].items()})
    assert main(["grade", str(root / "set"), str(answers)]) == 1
    assert "flagged: empty.yaml (Em): answers nothing" in capsys.readouterr().out
    book = gradebook(answers / "graded" / "gradebook.csv")
    assert book["empty.yaml"]["total"] == "0.00" and book["empty.yaml"]["flags"].startswith("answers nothing")
    assert book["cy.yaml"]["flags"] == ""


def test_check_inside_a_set_compares_with_every_variant_without_drawing_them(three, monkeypatch, capsys):
    """The identity check reads the other variants' stored answers (rationals exactly, closed forms by
    certified balls), so an instructor's `check` of a doubtful file draws only the file's own variant,
    not the whole set; where a stored form does not decide a rounding, that variant is drawn and the
    warning is the same."""
    from symblock.exercises import variant
    from symblock.grading import gradebook
    root, ids, steps = three
    inside = root / "set" / "students" / ids[1] / "swap.yaml"
    write_yaml(inside, ids[1], "Swap", steps[ids[0]])                 # variant 1's numbers, labelled 2
    drawn = []
    real_draw = variant.draw
    monkeypatch.setattr(variant, "draw", lambda data, source, seed: drawn.append(seed) or real_draw(data, source, seed))
    try:
        assert main(["check", str(inside)]) == 1
        assert f"swap.yaml fits {ids[0]} better than its own id (" in capsys.readouterr().err
        assert len(drawn) == 1                       # its own variant, to mark it
        drawn.clear()
        monkeypatch.setattr(gradebook, "stored_rounded", lambda *a: variant.UNDECIDED)   # nothing decided
        assert main(["check", str(inside)]) == 1
        assert f"swap.yaml fits {ids[0]} better than its own id (" in capsys.readouterr().err
        assert sorted(drawn) == sorted(set(drawn)) and len(drawn) == 3   # every variant drawn, once
    finally:
        inside.unlink()


def test_flagged_files_do_not_push_the_classs_mistakes_out_of_the_task_list(three, tmp_path, capsys):
    """A file with another variant's numbers is wrong wherever the variants' weights enter (attn.out,
    ffn.hidden; the rest carried): counted, those show as the class's mistakes beside Eli's real one
    in ffn.act, every share diluted (in a larger set such files fill the terminal's top five and push
    the real mistakes out), and a blank file adds its blanks. The files another variant fits better,
    or that answer nothing, are left out of the task counts, alike on the terminal and in both
    summaries, with a note saying how many."""
    root, ids, steps = three
    spec = yaml.safe_load(textwrap.dedent(SPEC))
    manifest = yaml.safe_load((root / "set" / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))

    def plant(name, v):
        v = v.copy()
        if name == "ffn.act":
            v[0, 0] += 1
        return v
    answers = tmp_path / "answers"
    answers.mkdir()
    write_yaml(answers / "cy.yaml", ids[2], "Cy", steps[ids[2]])
    eli = work(params(spec, manifest["variants"][1]["seed"]), plant=plant)
    write_yaml(answers / "eli.yaml", ids[1], "Eli", {s: grid(m) for s, m in eli.items()})
    write_yaml(answers / "swap.yaml", ids[2], "Swap", steps[ids[0]])   # variant 1's numbers under variant 3's ID
    write_yaml(answers / "empty.yaml", ids[0], "Em", {s: [None] * len(g) for s, g in steps[ids[0]].items()})
    capsys.readouterr()
    assert main(["grade", str(root / "set"), str(answers)]) == 1
    out = capsys.readouterr().out
    assert "flagged: swap.yaml (Swap): fits" in out and "flagged: empty.yaml (Em): answers nothing" in out
    tasks = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and " wrong " in line]
    assert tasks == ["ffn.act"], out                     # 1 of the 2 files counted: 50%
    assert "  ffn.act            wrong 50%" in out
    assert "  (not counted in these shares: 2 flagged files: another variant fits better, or nothing answered)" in out
    md = (answers / "graded" / "summary.md").read_text(encoding="utf-8")
    rows = {l.split("|")[1].strip(" `"): [c.strip() for c in l.split("|")[2:6]] for l in md.splitlines()
            if l.startswith("| `")}
    assert rows["ffn.act"][2] == "50%" and all(r[2] == "0%" for s, r in rows.items() if s != "ffn.act")
    assert all(r[3] == "0%" for r in rows.values())       # the blank file's entries are not the class's blanks
    note = "Not counted in this table and the most common mistakes: 2 flagged files (another variant fits better"
    assert note in md and "mean total" in md
    html = (answers / "graded" / "summary.html").read_text(encoding="utf-8")
    assert f"<p>{note}" in html and "<td><code>ffn.act</code></td><td>1</td><td>0.96</td><td>50%</td>" in html   # (1 + 11/12) / 2
    assert "<td><code>resid1</code></td><td>1</td><td>1.00</td><td>0%</td>" in html
    assert len(gradebook(answers / "graded" / "gradebook.csv")) == 4   # the gradebook keeps every file


def test_a_class_of_flagged_files_only_has_no_task_shares_in_either_summary(three, tmp_path):
    """Every graded file left out of the task counts: both summaries show — for the shares (never a
    0% that reads as "nobody wrong"), as the Markdown table does for a class with nothing graded."""
    root, ids, steps = three
    answers = tmp_path / "answers"
    answers.mkdir()
    write_yaml(answers / "empty.yaml", ids[1], "Em", {s: [None] * len(g) for s, g in steps[ids[1]].items()})
    assert main(["grade", str(root / "set"), str(answers)]) == 1
    md = (answers / "graded" / "summary.md").read_text(encoding="utf-8")
    assert "| `resid1` | 1 | — | — | — | — |" in md and "1 flagged file (another" in md
    html = (answers / "graded" / "summary.html").read_text(encoding="utf-8")
    assert "<td><code>resid1</code></td><td>1</td><td>—</td><td>—</td><td>—</td>" in html


def test_checks_warnings_on_a_copy_in_no_set_are_chinese_with_lang_zh(three, tmp_path, capsys):
    """With --lang zh, what check says on stderr of a copy in no set is Chinese: the note that it is
    marked from its id alone, the warning of a key kept as student data, and the one of an ID a slip
    of the pen fits better (students.best_fit over check's Nearby IDs)."""
    root, ids, steps = three
    swap = tmp_path / "swap.yaml"
    write_yaml(swap, ids[1], "Swap", steps[ids[0]])                     # variant 1's numbers, labelled 2
    swap.write_text(swap.read_text(encoding="utf-8").replace("name: Swap", "name: Swap\nstudent_nr: 7"),
                    encoding="utf-8")
    assert main(["check", str(root / "spec.yaml"), str(swap), "--lang", "zh"]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    err = err.replace(str(swap), "FILE")
    assert lines[0].startswith("说明：") and f"按 {ids[1]} 抽出的练习" in lines[0], err
    assert lines[1].startswith(f"警告：{swap}：student_nr：不是答题文件格式中的键") and "（是不是想写 student_id？）" in lines[1]
    assert lines[2].startswith(f"警告：{swap} 与 {ids[0]} 的吻合程度明显高于它自己的 ID"), err
    assert not any(w in err for w in ("note:", "warning", "fits", "kept as", "did you mean")), err
    assert main(["check", str(root / "spec.yaml"), str(swap)]) == 1    # in English without it
    assert capsys.readouterr().err.count("warning: ") == 2


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_task_plot_leaves_out_the_files_the_task_table_leaves_out(three, tmp_path, jobs):
    """tasks.png counts what the task table counts: a class with a swapped and a blank file draws the
    same task plot as the class without them, while totals.png (as the mean total) counts every file."""
    root, ids, steps = three
    both, honest = tmp_path / "both", tmp_path / "honest"
    for folder in (both, honest):
        folder.mkdir()
        write_yaml(folder / "ada.yaml", ids[0], "Ada", steps[ids[0]])
        write_yaml(folder / "cy.yaml", ids[2], "Cy", steps[ids[2]])
    write_yaml(both / "swap.yaml", ids[1], "Swap", steps[ids[0]])   # variant 1's numbers, labelled 2
    write_yaml(both / "empty.yaml", ids[1], "Em", {s: [None] * len(g) for s, g in steps[ids[1]].items()})
    assert main(["grade", str(root / "set"), str(both), "--jobs", jobs]) == 1
    assert main(["grade", str(root / "set"), str(honest), "--jobs", jobs]) == 0
    plots = [folder / "graded" / "plots" for folder in (both, honest)]
    assert (plots[0] / "tasks.png").read_bytes() == (plots[1] / "tasks.png").read_bytes()
    assert (plots[0] / "totals.png").read_bytes() != (plots[1] / "totals.png").read_bytes()
