"""Every command reads SPEC the same way (exercises/spec_arg.py): a spec file, a built-in example's
name (NAME or example:NAME) or preset:D, and refuses anything else with one message listing them."""
from __future__ import annotations

import pytest

from symblock.engine import spec
from symblock.exercises import generate

EXAMPLE = "rmsnorm-swiglu"   # small enough for derive, with a `random:` section for stress
ANSWERS = "steps:\n  x: [[2, 0, 1, -1], [1, 1, 0, 2]]\n"   # the example's X: check marks it right
FORMS = ["file", EXAMPLE, f"example:{EXAMPLE}", "preset:medium"]
COMMANDS = {   # command -> its arguments after SPEC ({tmp}: the test's folder)
    "forward": ["--step", "x"],
    "verify": ["--no-torch"],
    "grad": ["--wrt", "W_2"],
    "derive": ["--step", "x"],
    "stress": ["-n", "2"],
    "worksheet": ["--out", "{tmp}/ws"],
    "worksheet --variants": ["--variants", "2", "--allow-repeats", "--out", "{tmp}/set"],
    "check": ["{tmp}/answers.yaml"],
}
# params and depth take no SPEC: they work on dims given as flags


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_every_form_of_spec(cli, tmp_path, command, form):
    (tmp_path / "answers.yaml").write_text(ANSWERS, encoding="utf-8")
    if form == "file":
        form = tmp_path / "block.yaml"
        form.write_text(spec.example_text(EXAMPLE), encoding="utf-8")
    rest = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]]
    code, out, err = cli(command.split()[0], form, *rest)
    want = 1 if command == "check" and form == "preset:medium" else 0   # another block's X: marked wrong
    assert code == want, err
    assert "Traceback" not in err and "error" not in err


def test_the_forms_name_the_same_block():
    """NAME, example:NAME and a copy of the example's file are one block; preset:D is the block
    a spec holding only `random: {seed: 1, difficulty: D}` draws."""
    named = [generate.load(f) for f in (EXAMPLE, f"example:{EXAMPLE}")]
    assert named[0].params == named[1].params and named[0].source == named[1].source == f"example:{EXAMPLE}"
    drawn = generate.load("preset:hard")
    want = generate.variant({"random": {"seed": 1, "difficulty": "hard"}}, "t").spec
    assert drawn.dims == want.dims and drawn.params == want.params and drawn.X == want.X


def test_worksheet_takes_a_difficulty_block_without_variants(cli, tmp_path):
    code, out, err = cli("worksheet", "preset:easy", "--out", tmp_path / "ws")
    assert code == 0, err
    sheet = next((tmp_path / "ws").glob("*.md")).read_text(encoding="utf-8")
    assert "Exercise (easy)" in sheet and "preset-easy-v2.1" in sheet   # its title and its ID (generator version 2)


@pytest.mark.parametrize("arg, said", [
    ("no-such.yaml", "no such file; SPEC is a spec file (YAML or JSON), a built-in example's name "
                     "(NAME or example:NAME"),
    ("example:no-such", "no built-in example 'no-such'; expected one of decoder-layer, padding-batch"),
    ("preset:extreme", "no difficulty 'extreme'; preset:D takes D easy, medium, hard"),
])
@pytest.mark.parametrize("command", ["forward", "verify", "grad", "derive", "stress", "worksheet"])
def test_a_spec_of_no_form_is_refused_with_the_forms_listed(cli, tmp_path, command, arg, said):
    rest = ["--out", tmp_path / "ws"] if command == "worksheet" else []
    code, out, err = cli(command, arg, *rest)
    assert code == 2 and err.startswith(f"symblock: error: {arg}: {said}"), err
    assert err.count("\n") == 1 and not (tmp_path / "ws").exists()
