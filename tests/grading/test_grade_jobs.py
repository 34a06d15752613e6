"""`grade --jobs N` marks in N processes and writes what one process writes, byte for byte: the
gradebook, the summaries, every feedback file, the flags of files whose identity is in doubt and the
files that could not be graded. The answers are worked in NumPy (test_grade's helpers)."""
import filecmp
import textwrap

import pytest
import yaml
from test_grade import SPEC, grid, params, work, write_yaml

from symblock.commands import grade as command


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """A 4-variant set and a class of files: right, one labelled with another variant's ID, a
    duplicate name, a broken file and an ID of no variant."""
    from symblock.cli import main
    root = tmp_path_factory.mktemp("jobs")
    (root / "spec.yaml").write_text(textwrap.dedent(SPEC), encoding="utf-8")
    assert main(["worksheet", str(root / "spec.yaml"), "--variants", "4", "--out", str(root / "set"),
                 "--format", "markdown"]) == 0
    manifest = yaml.safe_load((root / "set" / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    spec = yaml.safe_load(textwrap.dedent(SPEC))
    ids = [v["id"] for v in manifest["variants"]]
    steps = {i: {s: grid(m) for s, m in work(params(spec, v["seed"])).items()}
             for i, v in zip(ids, manifest["variants"])}
    answers = root / "answers"
    answers.mkdir()
    for k, ident in enumerate(ids):
        write_yaml(answers / f"s{k}.yaml", ident, f"Student {k}", steps[ident])
    write_yaml(answers / "swap.yaml", ids[3], "Swap", steps[ids[0]])     # variant 1's numbers, labelled 4
    write_yaml(answers / "twin.yaml", ids[2], "Student 1", steps[ids[2]])
    (answers / "broken.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    write_yaml(answers / "stray.yaml", ids[0].rsplit(".", 1)[0] + ".999", "Stray", steps[ids[0]])
    huge = {s: [list(row) for row in m] for s, m in steps[ids[1]].items()}   # an entry too long to read
    first = next(iter(huge))
    huge[first][0][0] = "9" * 2000   # a bare YAML integer of 2000 digits
    write_yaml(answers / "huge.yaml", ids[1], "Huge", huge)
    return root, ids


def _same(a, b) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only:
        return False
    _, bad, odd = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not bad and not odd and all(_same(a / d, b / d) for d in cmp.common_dirs)


def test_jobs_write_the_same_bytes_as_one_process(klass, tmp_path, cli, monkeypatch):
    root, ids = klass
    calls = []
    real = command.in_processes
    monkeypatch.setattr(command, "in_processes", lambda *a: calls.append(a[3]) or real(*a))
    runs = {}
    for jobs in ("1", "2", "3"):
        runs[jobs] = cli("grade", root / "set", root / "answers", "--out", tmp_path / jobs, "--jobs", jobs)
    assert calls == [2, 3]                       # the processes ran (one process: never)
    serial = runs["1"]
    assert serial.code == 1 and f"flagged: swap.yaml (Swap): fits {ids[0]} better" in serial.out
    assert "broken.yaml" in (tmp_path / "1" / "gradebook.csv").read_text(encoding="utf-8")
    assert "stray.yaml" in (tmp_path / "1" / "gradebook.csv").read_text(encoding="utf-8")
    for jobs in ("2", "3"):
        assert runs[jobs] == (serial.code, serial.out.replace(str(tmp_path / "1"), str(tmp_path / jobs)), serial.err)
        assert _same(tmp_path / "1", tmp_path / jobs), f"--jobs {jobs} wrote other bytes"


def test_jobs_past_the_limit_are_refused(klass, tmp_path, cli):
    root, _ = klass
    code, _, err = cli("grade", root / "set", root / "answers", "--out", tmp_path / "g", "--jobs", "65")
    assert code == 2 and "--jobs: expected at most 64" in err


@pytest.mark.parametrize("damage", ["field", "edited"])
def test_a_bad_manifest_is_named_as_one_process_names_it_and_no_process_is_left(klass, tmp_path, cli, damage):
    """A manifest that fails its checks is the same error with --jobs 2 as without, and no
    process is left behind."""
    import multiprocessing
    import shutil
    root, _ = klass
    shutil.copytree(root / "set", tmp_path / "set")
    path = tmp_path / "set" / "instructor" / "manifest.yaml"
    text = path.read_text(encoding="utf-8")
    if damage == "field":   # a variant's seed no longer a number: named by its field, before the hash
        text = text.replace("\n  seed: 2\n", "\n  seed: two\n", 1)
    else:                   # another seed: a valid manifest whose hash no longer holds
        text = text.replace("\n  seed: 2\n", "\n  seed: 3\n", 1)
    assert text != path.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    runs = {}
    for jobs in ("1", "2"):
        runs[jobs] = cli("grade", tmp_path / "set", root / "answers", "--out", tmp_path / jobs, "--jobs", jobs)
        assert not multiprocessing.active_children()
    assert runs["1"].code == 2 and "Traceback" not in runs["1"].err
    assert ("variants[1].seed: expected a whole number" if damage == "field" else "content_sha256") in runs["1"].err
    assert runs["2"] == runs["1"]
    assert not (tmp_path / "2").exists()
