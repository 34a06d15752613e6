"""`random.secret`: a set drawn with a private text cannot be drawn again from its public IDs by
anyone without it (a student guessing the spec), while the instructor's spec rebuilds and grades it.
Without the secret nothing changes (every other test's bytes)."""
import textwrap

import numpy as np
import pytest
import yaml
from test_grade import SPEC, grid, params, read_gradebook, work, write_yaml

from symblock.cli import main

SECRET = "tuesday group 7f3c"
SECRET_SPEC = textwrap.dedent(SPEC).replace("random: {seed: 1, low: -1, high: 1}",
                                            f"random: {{seed: 1, low: -1, high: 1, secret: '{SECRET}'}}")


def _set(tmp_path, name, text, *flags):
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / name
    assert main(["worksheet", str(spec), "--variants", "3", "--out", str(out), "--format", "markdown",
                 *flags]) == 0
    return spec, out, yaml.safe_load((out / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))


def test_the_guessable_spec_draws_other_weights_and_its_id_is_refused(tmp_path, capsys):
    spec, out, manifest = _set(tmp_path, "secret", SECRET_SPEC)
    guess = tmp_path / "guess.yaml"
    guess.write_text(textwrap.dedent(SPEC), encoding="utf-8")      # the spec without its secret
    for v in manifest["variants"]:
        mine, theirs = params(yaml.safe_load(SECRET_SPEC), v["seed"]), params(yaml.safe_load(SPEC), v["seed"])
        assert any(not np.array_equal(mine[k], theirs[k]) for k in ("W_Q", "W_K", "W_V", "W_1"))
        assert np.array_equal(mine["X"], theirs["X"])               # given, not drawn
    ident = manifest["variants"][1]["id"]
    assert ident.endswith(".2")                                     # the ID keeps the public seed
    capsys.readouterr()
    assert main(["worksheet", str(guess), "--id", ident, "--out", str(tmp_path / "k")]) == 2
    assert "another spec" in capsys.readouterr().err
    assert main(["worksheet", str(spec), "--id", ident, "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "key.md").read_bytes() == (out / "instructor" / ident / "key.md").read_bytes()


def test_the_secret_is_in_no_file_students_get_and_changes_the_token(tmp_path):
    _, out, manifest = _set(tmp_path, "secret", SECRET_SPEC)
    _, _, plain = _set(tmp_path, "plain", textwrap.dedent(SPEC))
    _, _, other = _set(tmp_path, "other", SECRET_SPEC.replace(SECRET, SECRET + "!"))
    assert len({manifest["spec_token"], plain["spec_token"], other["spec_token"]}) == 3
    students = [p for p in (out / "students").rglob("*") if p.is_file()]
    assert students and not [p for p in students if SECRET.encode() in p.read_bytes()]
    assert manifest["spec"]["random"]["secret"] == SECRET          # the instructor's manifest keeps it


def test_a_secret_set_is_graded_from_its_manifest(tmp_path):
    """Answers worked in NumPy from the secret draw get full marks; from the guessed draw they do not."""
    _, out, manifest = _set(tmp_path, "secret", SECRET_SPEC)
    answers = tmp_path / "answers"
    answers.mkdir()
    for i, v in enumerate(manifest["variants"]):
        data = yaml.safe_load(SECRET_SPEC if i < 2 else SPEC)      # the third worked from a guess
        steps = {s: grid(m) for s, m in work(params(data, v["seed"])).items()}
        write_yaml(answers / f"s{i}.yaml", v["id"], f"s{i}", steps)
    assert main(["grade", str(out), str(answers)]) in (0, 1)   # 1: a file flagged, graded all the same
    book = read_gradebook(answers / "graded" / "gradebook.csv")
    assert [book[f"s{i}"]["percent"] for i in range(3)][:2] == ["100.00", "100.00"]
    assert book["s2"]["attn.out"] == "0.00" and float(book["s2"]["percent"]) < 100  # later steps: carried


def test_a_set_drawn_under_constraints_depends_on_the_secret(tmp_path):
    _, _, plain = _set(tmp_path, "plain", "random: {difficulty: easy}\n")
    _, _, secret = _set(tmp_path, "secret", f"random: {{difficulty: easy, secret: '{SECRET}'}}\n")
    answers = [[v["exercise"]["answers"] for v in m["variants"]] for m in (plain, secret)]
    assert answers[0] != answers[1]
    assert [v["id"].rsplit(".", 1)[1] for v in secret["variants"]] == ["1", "2", "3"]


@pytest.mark.parametrize("value, said", [("''", "1 to 200 characters, got an empty text"),
                                         ("' '", "got an empty text"), ("5", "1 to 200 characters, got 5"),
                                         ("null", "got nothing (null)"), ("", "got nothing (null)"),
                                         ("'" + "x" * 201 + "'", "got 201 characters")])
def test_a_bad_secret_is_refused_by_name(tmp_path, capsys, value, said):
    spec = tmp_path / "bad.yaml"
    spec.write_text(SECRET_SPEC.replace(f"'{SECRET}'", value), encoding="utf-8")
    assert main(["worksheet", str(spec), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "random.secret" in err and said in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("lang, said", [
    ("en", ("cannot be checked without the spec", "private one", "drawn with a secret", "ask them to check it",
            "symblock check SPEC")),
    ("zh", ("无法检查", "私有的", "secret", "请老师替你检查", "symblock check SPEC"))])
def test_a_student_copy_of_a_secret_sheet_is_refused_plainly(tmp_path, capsys, lang, said):
    """A student has their folder of students/ (or all of students/), never the manifest: check says the
    ID is a spec file's, perhaps a private one, so that only the spec checks it (not "no built-in
    example", naming a spec they never had), and how the instructor checks it."""
    import shutil
    spec, out, manifest = _set(tmp_path, "secret", SECRET_SPEC)
    ident = manifest["variants"][0]["id"]
    mine = tmp_path / "home" / ident
    shutil.copytree(out / "students" / ident, mine)
    shutil.copytree(out / "students", tmp_path / "handed" / "students")    # the students' half of the set
    capsys.readouterr()
    for answers in (mine / "answers.yaml", tmp_path / "handed" / "students" / ident / "answers.yaml"):
        assert main(["check", str(answers), "--lang", lang]) == 2
        err = capsys.readouterr().err
        assert all(s in err for s in said), err
        assert ident in err and "no built-in example" not in err and "Traceback" not in err
    assert main(["check", str(spec), str(mine / "answers.yaml")]) == 1   # with the spec: checked (nothing answered)
    assert main(["check", str(out / "students" / ident / "answers.yaml")]) == 1   # inside the set: its manifest
