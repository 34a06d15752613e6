"""A misspelt step name is refused with the name it was likely meant to be ("did you mean
norm1.mean?") before the list of the names there are, wherever a step name is looked up: a spec's
`given:` and dropout masks, a worksheet's exercise and random sections, an answers file, and the
commands' --step and --wrt."""
import textwrap

import pytest

from symblock.engine import block, spec
from symblock.errors import SpecError, did_you_mean
from symblock.exercises import presets
from symblock.exercises.generate import from_mapping

SMALL = {"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1}, "random": {"seed": 1}}


def loads(text: str):
    return spec.from_mapping(*spec.read_mapping("s.yaml", text))


def refused(call) -> str:
    with pytest.raises(SpecError) as e:
        call()
    return str(e.value)


def test_the_helper_offers_the_closest_name_or_nothing():
    known = ["norm1.mean", "norm1.var", "norm1.std", "norm1"]
    assert did_you_mean("norm1.men", known) == "did you mean norm1.mean? "
    assert did_you_mean("attention", known) == ""
    assert did_you_mean("norm1.men" * 20, known) == ""   # too long to be a misspelling of any


def test_a_given_step():
    text = spec.example_text("seed-post-ln").replace("attn.out:", "atn.out:")
    msg = refused(lambda: loads(text))
    assert "given.atn.out" in msg and "did you mean attn.out? expected one of x, attn.q," in msg


def test_a_dropout_mask():
    data = {**SMALL, "dropout": {"p": "1/2", "masks": {"ffn.ack": [[1, 0], [1, 1]]}}}
    msg = refused(lambda: spec.from_mapping(data, "s"))
    assert "dropout.masks.ffn.ack" in msg and "did you mean ffn.act? expected one of " in msg


def test_a_drawn_dropout():
    data = {**SMALL, "random": {"seed": 1, "dropout": {"p": "1/2", "steps": ["ffn.ack"]}}}
    msg = refused(lambda: from_mapping(data, "s"))
    assert "random.dropout.steps" in msg and "did you mean ffn.act? expected one of " in msg


def test_a_staged_step():
    data = {**SMALL, "random": {"seed": 1, "staged": {"step": "norm1.men"}}}
    msg = refused(lambda: from_mapping(data, "s"))
    assert "random.staged.step" in msg and "did you mean norm1.mean? expected one of x, " in msg


@pytest.mark.parametrize("exercise, where, meant", [
    ({"ask": ["resid1", "norm1.men"]}, "exercise.ask[1]", "norm1.mean"),
    ({"give": ["atn.out"]}, "exercise.give[0]", "attn.out"),
    ({"ask": ["norm1.mean"], "points": {"norm1.men": 2}}, "exercise.points.norm1.men", "norm1.mean"),
    ({"preset": "backprop", "wrt": ["W_22"]}, "exercise.wrt[0]", "W_2"),
])
def test_an_exercise_section(exercise, where, meant):
    loaded = loads(spec.example_text("seed-post-ln") + f"exercise: {exercise}\n")
    msg = refused(lambda: presets.choose(block.forward(loaded)))
    assert f"s.yaml: {where}:" in msg and f"did you mean {meant}? " in msg and "expected " in msg, msg


def test_an_answers_file(cli, spec_file):
    path = spec_file(textwrap.dedent("""\
        decimals: 3
        steps:
          norm1.men: [[1], [2], [3]]
        """), "answers.yaml")
    code, _, err = cli("check", "seed-post-ln", path)
    assert code == 2 and "steps.norm1.men" in err
    assert "did you mean norm1.mean? expected one of " in err and "Traceback" not in err


@pytest.mark.parametrize("argv, meant", [
    (["forward", "seed-post-ln", "--step", "norm1.men"], "norm1.mean"),
    (["derive", "--step", "norm1.men"], "norm1.mean"),
    (["derive", "tiny-gpt", "--step", "layer0.norm1.men"], "layer0.norm1.mean"),
    (["grad", "seed-post-ln", "--wrt", "W_22"], "W_2"),
    (["grad", "tiny-gpt", "--wrt", "layer0.W_QQ"], "layer0.W_Q"),
])
def test_the_commands_options(cli, argv, meant):
    code, _, err = cli(*argv)
    assert code == 2 and f"did you mean {meant}? expected one of " in err and "Traceback" not in err
