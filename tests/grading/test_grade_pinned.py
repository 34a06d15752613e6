"""What `grade` writes for a drawn set, pinned byte for byte: the gradebook, both summaries and every
feedback file of a class of a medium preset set (the constraint generator's variants, closed forms with
exp and sqrt in the stored answers) must stay what they are while grading is made faster. The plots
are left out: their pixels are matplotlib's (they are compared run to run in test_gradebook_lms).

When an output is meant to change, print the new digests with `pytest -s` and say why in the commit."""
import hashlib

import pytest
import yaml

PINNED = {   # written by main before grading was made faster (e52809d)
    "feedback/blank.md": "4e7a53a302b01bdb53cfe635140e0e5c55758e390dd25608df01a1bbadf48bab",
    # a docked entry shows its closed form, as check's report does (expected 0.5 (= …))
    "feedback/one-wrong.md": "03266bb892972b17ddfa810f7cb470417e94c89c135fbb9e69a36d78dbe845ad",
    "feedback/right.md": "a35d2a42f5527cf915b2376989432c822e674f68249d5437ae8fdbce6cf74e6e",
    "feedback/swapped.md": "f29a5b2dfa1f9bfda6c0064a16ea4f5a763697882f7ad3fb74ccffceecba196a",
    "gradebook.csv": "176c5161f576f3b5efbc36030592e5a5fd93101dd4e5288aabfb688826572de1",
    # the task tables leave out the swapped and the blank file (flagged: another variant fits, answers
    # nothing) and say so in a note; the rest of both summaries is as before
    "summary.html": "ffe17f2aac1fe495fd8a068f8c8150d1d778e7bde32a14a900d1169e7193a6d8",
    "summary.md": "1f92f84f5666952b6bf8de1933d9ffce0b0e9f94dc8397ce2ba7accc7cc16593",
}


def _key(exercise: dict, wrong: bool) -> list[str]:
    """The answers lines of a file giving the stored key at 3 places (one entry wrong if asked)."""
    from symblock.exercises.variant import entry
    lines = []
    for n, (step, text) in enumerate(exercise["answers"].items()):
        rows = [[f"{float(entry(e, 'test', step)):.3f}" for e in r.split(",")] for r in text.split(";")]
        if wrong and n == 1:
            rows[0][0] = "7.125"
        lines.append(f"  {step}: [" + ", ".join("[" + ", ".join(r) + "]" for r in rows) + "]")
    return lines


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from symblock.cli import main
    root = tmp_path_factory.mktemp("pinned")
    assert main(["worksheet", "preset:medium", "--variants", "3", "--format", "markdown", "--out", str(root / "set")]) == 0
    variants = yaml.safe_load((root / "set" / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))["variants"]
    answers = root / "answers"
    answers.mkdir()
    files = {"right": (variants[0]["id"], variants[0], False), "one-wrong": (variants[1]["id"], variants[1], True),
             "swapped": (variants[2]["id"], variants[0], False)}   # another variant's numbers under its ID
    for name, (ident, v, wrong) in files.items():
        text = [f"id: {ident}", f"name: {name}", "decimals: 3", "steps:", *_key(v["exercise"], wrong)]
        (answers / f"{name}.yaml").write_text("\n".join(text) + "\n", encoding="utf-8")
    blank = root / "set" / "students" / variants[1]["id"] / "answers.yaml"
    (answers / "blank.yaml").write_text(blank.read_text(encoding="utf-8").replace('name: ""', "name: blank"),
                                        encoding="utf-8")
    assert main(["grade", str(root / "set"), str(answers), "--out", str(root / "graded")]) == 1   # swapped: flagged
    out = root / "graded"
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file() and p.suffix != ".png"}


def test_grade_writes_the_pinned_bytes(graded):
    print("\n".join(f'    "{k}": "{v}",' for k, v in graded.items()))
    assert graded == PINNED
