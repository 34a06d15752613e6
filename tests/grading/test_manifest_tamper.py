"""A set's manifest is read like a spec: every field validated (a clear error naming it, exit 2,
never a crash), and its content hash names an edited manifest as edited."""
from __future__ import annotations

import textwrap

import pytest
import yaml
from test_grade import read_gradebook

from symblock.cli import main
from symblock.grading import manifest

SPEC = """\
    dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
    block: {norm_position: post, eps: 0, activation: relu}
    inputs: {X: [[1, 0], [0, 1]]}
    random: {seed: 1, low: -1, high: 1}
    exercise: {ask: [resid1, norm1.mean], points: {norm1.mean: 2}}
    """


@pytest.fixture(scope="module")
def set_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tamper")
    (root / "spec.yaml").write_text(textwrap.dedent(SPEC), encoding="utf-8")
    assert main(["worksheet", str(root / "spec.yaml"), "--variants", "2", "--out", str(root / "set"),
                 "--format", "markdown"]) == 0
    (root / "answers").mkdir()
    blank = next((root / "set" / "students").glob("*/answers.yaml"))   # one student's blank file
    (root / "answers" / "s1.yaml").write_bytes(blank.read_bytes())
    return root


def _grade_edited(root, tmp_path, capsys, edit, rehash="new", jobs="1") -> str:
    """grade against a copy of the set whose manifest `edit` changed; returns stderr (exit 2).
    rehash: "new" (recomputed), "old" (the hash as written) or "none" (left out)."""
    import shutil
    copy = tmp_path / "set"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root / "set", copy)
    data = yaml.safe_load((copy / "instructor" / manifest.NAME).read_text(encoding="utf-8"))
    old = data.pop("content_sha256")
    edit(data)
    if rehash == "new":  # a careful editor recomputes the hash: the validation must hold on its own
        data["content_sha256"] = manifest.digest(data)
    elif rehash == "old":
        data["content_sha256"] = old
    (copy / "instructor" / manifest.NAME).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    capsys.readouterr()
    assert main(["grade", str(copy), str(root / "answers"), "--out", str(tmp_path / "out"), "--jobs", jobs]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    return err


def test_the_manifest_carries_the_hash_of_its_content(set_dir):
    data = yaml.safe_load((set_dir / "set" / "instructor" / manifest.NAME).read_text(encoding="utf-8"))
    given = data.pop("content_sha256")
    assert len(given) == 64 and given == manifest.digest(data)


def test_an_untouched_set_grades(set_dir, tmp_path):
    out = tmp_path / "o"   # its one file is the blank template: graded 0, flagged (exit 1)
    assert main(["grade", str(set_dir / "set"), str(set_dir / "answers"), "--out", str(out)]) == 1
    assert read_gradebook(out / "gradebook.csv")["s1"]["flags"].startswith("answers nothing")


@pytest.mark.parametrize("field, value, said", [
    ("points", {"resid1": "two", "norm1.mean": 2}, "points.resid1: expected a whole number, got the text 'two'"),
    ("points", {"resid1": float("inf"), "norm1.mean": 2}, "points.resid1: expected a whole number"),
    ("points", {"resid1": [1], "norm1.mean": 2}, "points.resid1: expected a whole number, got a list"),
    ("points", {"resid1": -1, "norm1.mean": 2}, "points.resid1: expected a whole number in 0..1000"),
    ("points", {"resid1": 10**900, "norm1.mean": 2}, "about 901 digits"),
    ("points", [1, 2], "points: expected a mapping"),
    ("decimals", 99, "decimals: expected a whole number in 0..30, got 99"),
    ("spec", [1, 2], "spec: expected a mapping"),
    ("variants", [{"id": "x.1", "seed": "abc"}], "variants[0].seed: expected a whole number, got the text 'abc'"),
    ("asked", "resid1", "asked: expected a list of step names"),
])
def test_a_damaged_field_is_an_error_naming_it(set_dir, tmp_path, capsys, field, value, said):
    err = _grade_edited(set_dir, tmp_path, capsys, lambda d: d.__setitem__(field, value))
    assert "manifest.yaml" in err and said in err, err
    assert len(err) < 400   # a 901-digit number is not repeated back


def test_an_edited_spec_under_the_same_token_is_named_as_edited(set_dir, tmp_path, capsys):
    def edit(d):
        d["spec"]["inputs"]["X"] = [[2, 0], [0, 2]]
    err = _grade_edited(set_dir, tmp_path, capsys, edit, rehash="old")
    assert "content_sha256: does not match" in err and "edited" in err


def test_a_manifest_without_a_hash_is_refused_with_how_to_regenerate(set_dir, tmp_path, capsys):
    err = _grade_edited(set_dir, tmp_path, capsys, lambda d: None, rehash="none")
    assert "content_sha256: missing" in err and "worksheet" in err


def test_check_reads_the_manifest_the_same_way(set_dir, tmp_path, capsys):
    import shutil
    copy = tmp_path / "set"
    shutil.copytree(set_dir / "set", copy)
    text = (copy / "instructor" / manifest.NAME).read_text(encoding="utf-8")
    (copy / "instructor" / manifest.NAME).write_text(text.replace("decimals: 3", "decimals: 4"), encoding="utf-8")
    ident = yaml.safe_load(text)["variants"][0]["id"]
    capsys.readouterr()
    assert main(["check", str(copy / "students" / ident / "answers.yaml")]) == 2
    assert "content_sha256: does not match" in capsys.readouterr().err


def test_the_hash_holds_for_values_the_yaml_reader_reads_back_otherwise(tmp_path):
    # a float -inf dumps as -.inf, which the spec loader reads back as text: the hash is taken
    # over the manifest as it will be read, so such a value does not make every grade refuse
    from decimal import Decimal
    from symblock.engine.spec import read_mapping
    data = {"symblock_set": 1, "spec": {"given": {"x": [[float("-inf"), Decimal("1.50")]]}},
            "random_flags": {"scale": 0.5}}
    (tmp_path / "m.yaml").write_text(manifest.dump(manifest.stamped(data)), encoding="utf-8")
    back, _ = read_mapping(tmp_path / "m.yaml")
    assert back.pop("content_sha256") == manifest.digest(back)


# ---------------------------------------------------------------- each variant's stored exercise

def _exercise(d, i=0):
    return d["variants"][i]["exercise"]


def test_each_variant_stores_its_exercise_with_answers_that_read_back_exactly(set_dir):
    """The stored answers are the variant's own numbers (NumPy float64 of the drawn block), as
    exact text the bounded parser reads back; asked, given, points and shapes as the sheet has them."""
    import numpy as np
    from symblock.engine.numbers import parse_exact
    from symblock.exercises import variant
    from symblock.reference import numeric
    data = yaml.safe_load((set_dir / "set" / "instructor" / manifest.NAME).read_text(encoding="utf-8"))
    for v in data["variants"]:
        ex = v["exercise"]
        assert ex["ask"] == data["asked"] == ["resid1", "norm1.mean"] and ex["points"] == {"resid1": 1, "norm1.mean": 2}
        assert ex["given"] == ["x", "attn.out"] and ex["shapes"] == {"resid1": [2, 2], "norm1.mean": [2, 1]}
        assert ex["backward"] is None and ex["extra"] == [] and ex["categorical"] == []
        floats = numeric.forward(variant.rebuild(v["id"], str(set_dir / "spec.yaml")).spec)
        for name in ex["ask"]:
            rows = variant.matrix_entries(ex["answers"][name])
            np.testing.assert_allclose([[float(parse_exact(e, "m", "a")) for e in row] for row in rows],
                                       floats[name], atol=1e-12)
            assert all("." not in e for row in rows for e in row)   # rational: exact, e.g. "-1/2"


@pytest.mark.parametrize("edit, said", [
    (lambda d: d["variants"][0].pop("exercise"), "variants[0].exercise: expected a mapping"),
    (lambda d: _exercise(d).pop("answers"), "variants[0].exercise.answers: missing"),
    (lambda d: _exercise(d).__setitem__("hint", 1), "variants[0].exercise.hint: unknown key"),
    (lambda d: _exercise(d, 1).__setitem__("ask", ["norm1.mean", "resid1"]), "variants[1].exercise.ask: expected the set's asked steps"),
    (lambda d: _exercise(d)["points"].__setitem__("resid1", 5), "variants[0].exercise.points: expected the set's points"),
    (lambda d: _exercise(d)["shapes"].__setitem__("resid1", [2, 0]), "variants[0].exercise.shapes.resid1: expected a whole number in 1..10000"),
    (lambda d: _exercise(d)["answers"].__setitem__("resid1", "1, 2"), "variants[0].exercise.answers.resid1: expected 2 × 2 entries"),
    (lambda d: _exercise(d)["answers"].__setitem__("resid1", "1, 2; 3"), "variants[0].exercise.answers.resid1: expected rows of equal length"),
    (lambda d: _exercise(d)["answers"].__setitem__("norm1.mean", [[0.5], [1]]),
     "variants[0].exercise.answers.norm1.mean: expected rows of entries as text"),
    (lambda d: _exercise(d)["answers"].__setitem__("resid1", "1, __import__('os').getcwd(); 0, 1"),
     "variants[0].exercise.answers.resid1[0][1]: expected a number or exact expression"),
    (lambda d: _exercise(d)["answers"].__setitem__("resid1", "9^9^9, 1; 0, 1"),
     "variants[0].exercise.answers.resid1[0][0]: the number is too large"),
    (lambda d: d.__setitem__("symblock_set", 1), "symblock_set: 1: this set was written by an older symblock"),
    (lambda d: _exercise(d).__setitem__("backward", {"loss": "l1", "wrt": ["W_2"], "target": None}),
     "variants[0].exercise.backward.loss: expected one of sum, mse"),
    (lambda d: _exercise(d).__setitem__("extra", ["cache.reused"]), "variants[0].exercise.extra: expected asked steps only"),
])
def test_a_damaged_stored_exercise_is_an_error_naming_its_field(set_dir, tmp_path, capsys, edit, said):
    err = _grade_edited(set_dir, tmp_path, capsys, edit)
    assert said in err, err


def test_grade_marks_from_the_stored_exercise_whatever_the_generator_draws_today(set_dir, tmp_path, monkeypatch, capsys):
    """Answers worked (in NumPy) on the variants as handed out score full marks, also when the
    generator would now draw each seed differently (here: the next seed's block)."""
    import shutil
    from symblock.exercises import variant
    from symblock.reference import numeric
    data = yaml.safe_load((set_dir / "set" / "instructor" / manifest.NAME).read_text(encoding="utf-8"))
    answers = tmp_path / "answers"
    answers.mkdir()
    for v in data["variants"]:
        T = numeric.forward(variant.rebuild(v["id"], str(set_dir / "spec.yaml")).spec)
        steps = "\n".join(f"  {n}: {[[f'{x:.3f}' for x in row] for row in T[n]]}" for n in data["asked"])
        (answers / f"{v['seed']}.yaml").write_text(f"id: {v['id']}\nname: s{v['seed']}\ndecimals: 3\nsteps:\n"
                                                   + steps.replace("'", "") + "\n", encoding="utf-8")
    drawn = variant.draw
    monkeypatch.setattr(variant, "draw", lambda data, source, seed: drawn(data, source, seed + 1))
    shutil.copytree(set_dir / "set", tmp_path / "set")
    capsys.readouterr()
    assert main(["grade", str(tmp_path / "set"), str(answers), "--out", str(tmp_path / "marks")]) == 0
    import csv
    with open(tmp_path / "marks" / "gradebook.csv", newline="", encoding="utf-8") as f:
        book = {row["Student"]: row for row in csv.DictReader(f)}
    assert len(book) == 2 and {row["total"] for row in book.values()} == {"3.00"}, book   # 1 + 2 points each
    monkeypatch.undo()   # a check of the same file draws the variant as handed out: the same marks
    assert main(["check", str(set_dir / "spec.yaml"), str(answers / f"{data['variants'][0]['seed']}.yaml"), "--json"]) == 0


@pytest.mark.parametrize("text, said", [
    ("1, __import__('os').getcwd(); 0, 1", "variants[1].exercise.answers.resid1[0][1]: expected a number or exact expression"),
    ("9^9^9, 1; 0, 1", "variants[1].exercise.answers.resid1[0][0]: the number is too large")])
def test_a_hostile_entry_is_named_the_same_when_the_processes_check_their_variants(set_dir, tmp_path, capsys, text, said):
    """With --jobs each process checks the entries of its own variants (the second variant's are
    the second process's): the refusal is the one process's, word for word, and none is left."""
    import multiprocessing
    edit = lambda d: _exercise(d, 1)["answers"].__setitem__("resid1", text)   # noqa: E731
    errs = [_grade_edited(set_dir, tmp_path, capsys, edit, jobs=jobs) for jobs in ("1", "2")]
    assert said in errs[0] and errs[1] == errs[0]
    assert not multiprocessing.active_children() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("hostile, code", [(0, 2), (1, 1)])
def test_check_guards_the_entries_of_each_variant_it_rebuilds(set_dir, tmp_path, capsys, hostile, code):
    """`check` of one file rebuilds its own variant (and, for a suspect file, the others): a hostile
    entry there is refused by name; one in a variant it never rebuilds is not read (exit 1: the
    blank file is not OK, but marked)."""
    import shutil
    copy = tmp_path / "set"
    shutil.copytree(set_dir / "set", copy)
    path = copy / "instructor" / manifest.NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.pop("content_sha256")
    _exercise(data, hostile)["answers"]["resid1"] = "9^9^9, 1; 0, 1"
    data["content_sha256"] = manifest.digest(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    capsys.readouterr()
    assert main(["check", str(copy / "students" / data["variants"][0]["id"] / "answers.yaml")]) == code
    err = capsys.readouterr().err
    assert ("variants[0].exercise.answers.resid1[0][0]: the number is too large" in err) == (hostile == 0)
    assert "Traceback" not in err and "internal error" not in err
