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


@pytest.mark.parametrize("edit, where, said", [
    (("dims:", "dimz:"), "dimz", "unknown key (did you mean dims?); expected one of title, layout, dims"),
    (("seq_len: 3", "seq_length: 3"), "dims.seq_length", "unknown key (did you mean seq_len?); expected one of seq_len"),
    (("  W_1:", "  W1:"), "weights.W1", "unknown key (did you mean W_1?); expected one of W_Q"),
    (("  eps: 0", "  epsilon: 0"), "block.epsilon", "unknown key (did you mean eps?); expected one of norm_position"),
    (("norm: layernorm", "norm: layer_norm"), "block.norm",
     "expected one of layernorm, rmsnorm, got the text 'layer_norm' (did you mean layernorm?)"),
    (("activation: relu", "activation: Relu"), "block.activation",
     "expected one of relu, gelu, gelu_tanh, silu, swiglu, geglu, got the text 'Relu' (did you mean relu?)"),
    (("dims:", "colour: red\ndims:"), "colour", "unknown key; expected one of title"),   # nothing near: no guess
])
def test_a_misspelt_spec_key_or_choice_is_offered_the_one_it_was_meant_to_be(edit, where, said):
    msg = refused(lambda: loads(spec.example_text("seed-post-ln").replace(*edit, 1)))
    assert msg == f"s.yaml: {where}: {said}" or msg.startswith(f"s.yaml: {where}: {said}"), msg


@pytest.mark.parametrize("edit, said", [
    (("head: tied", "head: tide"), "model.head: expected one of tied, untied, none, got the text 'tide' (did you mean tied?)"),
    (("  layers: 2", "  layer: 2"), "model.layer: unknown key (did you mean layers?)"),
    (("prompt: [the, cat]", "prompt: [the, Cat]"),     # a case slip, not `sat`, which difflib scores the same
     "model.prompt[1]: expected a token of model.vocab (the, cat, sat, on, mat) or its index 0..4, got 'Cat' "
     "(did you mean cat?)"),
])
def test_a_misspelt_model_key_choice_or_token(edit, said):
    from symblock.engine import model_spec
    text = spec.example_text("tiny-gpt")
    assert edit[0] in text
    msg = refused(lambda: model_spec.from_mapping(*spec.read_mapping("s.yaml", text.replace(*edit, 1))))
    assert msg.startswith(f"s.yaml: {said}"), msg


def test_a_prompt_token_of_a_big_vocabulary_is_refused_without_listing_it():
    from symblock.engine import model_spec
    data = spec.read_mapping("s.yaml", spec.example_text("tiny-gpt"))[0]
    vocab = [f"w{i}" for i in range(3000)]
    data["model"] = {**data["model"], "vocab": vocab, "prompt": ["w1", "w30000"]}
    msg = refused(lambda: model_spec.from_mapping(data, "s.yaml"))
    assert msg.startswith("s.yaml: model.prompt[1]: expected a token of model.vocab (3000 tokens) or its index "
                          "0..2999, got 'w30000'") and len(msg) < 300, msg


def test_a_case_slip_is_the_first_guess():
    assert did_you_mean("Cat", ["sat", "cat"]) == "did you mean cat? "
    assert did_you_mean("NORM1.STD", ["norm1.var", "norm1.std"]) == "did you mean norm1.std? "


@pytest.mark.parametrize("arg, said", [
    ("seed-post-lm", "seed-post-lm: no such file; did you mean the built-in example seed-post-ln? SPEC is a spec file"),
    ("seed-post-ln.yaml", "seed-post-ln.yaml: no such file; did you mean the built-in example seed-post-ln? SPEC is"),
    ("example:tiny-gtp", "example:tiny-gtp: no built-in example 'tiny-gtp'; did you mean tiny-gpt? expected one of "),
    ("preset:meduim", "preset:meduim: no difficulty 'meduim'; did you mean medium? preset:D takes D easy, medium, hard"),
    ("nothing-like-it.yaml", "nothing-like-it.yaml: no such file; SPEC is a spec file"),
])
def test_a_spec_argument_near_a_built_in_name(cli, tmp_path, monkeypatch, arg, said):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("forward", arg)
    assert code == 2 and out == "" and err.startswith("symblock: error: " + said), err


@pytest.mark.parametrize("fmt, said", [("md", "got 'md' (did you mean markdown?)"),
                                       ("latex,jupyter", "got 'latex,jupyter' (did you mean ipynb?)"),
                                       ("htm", "got 'htm' (did you mean html?)"),
                                       ("pdf", "got 'pdf' (a PDF comes from the LaTeX: add --pdf)")])
def test_a_format_by_another_name(cli, tmp_path, fmt, said):
    code, _, err = cli("worksheet", "--out", tmp_path / "w", "--format", fmt)
    assert code == 2 and err == ("symblock: error: --format: expected a comma-separated list of latex, markdown, "
                                 f"html, moodle, qti, ipynb, {said}\n")
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("argv, said", [
    (["worksheet", "--id", "seed-post-lm.3"], "--id: no built-in example 'seed-post-lm' (did you mean seed-post-ln?)"),
    (["worksheet", "--id", "preset-meduim-v2.3"], "--id: no built-in example 'preset-meduim' (did you mean preset-medium?)"),
    (["check", "ANSWERS"], "ANSWERS: id: no built-in example 'seed-post-lm' (did you mean seed-post-ln?)"),
    (["check", "seed-post-ln", "ANSWERS"], "ANSWERS: id: 'seed-post-lm' names no spec: 'seed-post-lm' is no built-in "
                                           "example (did you mean seed-post-ln?) and no spec file's token (h…)"),
])
def test_a_misspelt_worksheet_id(cli, spec_file, tmp_path, argv, said):
    answers = spec_file("id: seed-post-lm\ndecimals: 3\nsteps:\n  norm1.std: [[0.901], [0.124], [0.43]]\n", "a.yaml")
    argv = [str(answers) if a == "ANSWERS" else a for a in argv]
    code, _, err = cli(*argv, *(["--out", tmp_path / "w"] if argv[0] == "worksheet" else []))
    assert code == 2 and err == "symblock: error: " + said.replace("ANSWERS", str(answers)) + "\n", err


def test_a_misspelt_preset_in_the_exercise_section():
    loaded = loads(spec.example_text("seed-post-ln") + "exercise: {preset: atention}\n")
    msg = refused(lambda: presets.choose(block.forward(loaded)))
    assert msg == ("s.yaml: exercise.preset: expected one of full, attention, norm, ffn, backprop, decoder, tiles, "
                   "cross, rope, positions, got 'atention' (did you mean attention?)"), msg


@pytest.mark.parametrize("rnd, said", [
    # an unknown key was taken for a constraint: "load this spec with symblock.load", on the command line
    ("{seed: 1, difficuly: easy}", "random.difficuly: unknown key (did you mean difficulty?); expected one of seed,"),
    ("{seed: 1, requre: [integer_scores]}", "random.requre: unknown key; expected one of seed, low, high, "),
    ("{seed: 1, difficulty: eazy}", "random.difficulty: expected one of easy, medium, hard, got 'eazy' "
                                    "(did you mean easy?)"),
    ("{seed: 1, difficulty: easy, ranges: {x: [-2, 2]}}", "random.ranges.x: unknown tensor (did you mean X?); "
                                                         "expected one of X, weights"),
])
def test_a_misspelt_random_section(cli, spec_file, rnd, said):
    path = spec_file(f"dims: {{seq_len: 2, d_model: 3, d_ff: 2, heads: 1}}\nrandom: {rnd}\n")
    for command in ("forward", "verify"):
        code, out, err = cli(command, path)
        assert code == 2 and out == "" and err.startswith(f"symblock: error: {path}: {said}"), err
        assert "symblock.load" not in err


@pytest.mark.parametrize("edit, said", [
    (("dims:", "dimz:"), "dimz: 未知的键（是不是想写 dims？）；应为 title, layout, dims, "),
    (("activation: relu", "activation: Relu"), "block.activation: 应为 relu, gelu, gelu_tanh, silu, swiglu, geglu "
                                               "之一，实际是 the text 'Relu'（是不是想写 relu？）"),
])
def test_a_near_miss_in_a_spec_is_said_in_chinese_by_check(cli, spec_file, edit, said):
    path = spec_file(spec.example_text("seed-post-ln").replace(*edit, 1))
    answers = spec_file("decimals: 3\nsteps:\n  norm1.std: [[0.901], [0.124], [0.43]]\n", "a.yaml")
    code, _, err = cli("check", path, answers, "--lang", "zh")
    assert code == 2 and err.startswith(f"symblock: error: {path}: {said}"), err


@pytest.mark.parametrize("extra, said", [
    ("exercise: {preset: full, asks: [x]}", "exercise.asks: unknown key (did you mean ask?); expected one of preset, ask"),
    ("dropout: {pp: 0.1}", "dropout.pp: unknown key (did you mean p?); expected one of p, masks"),
    ("layout: Torch", "layout: expected math or torch, got the text 'Torch' (did you mean torch?)"),
])
def test_a_misspelt_exercise_dropout_or_layout(cli, spec_file, tmp_path, extra, said):
    path = spec_file(spec.example_text("seed-post-ln") + extra + "\n")
    code, _, err = cli("worksheet", path, "--out", tmp_path / "w")
    assert code == 2 and err.startswith(f"symblock: error: {path}: {said}"), err


@pytest.mark.parametrize("argv, said", [
    (["worksheet", "--out", "w", "--preset", "atention"], "argument --preset: invalid choice: 'atention' (choose from "
                                                          "'full', 'attention', "),
    (["forwrd"], "argument COMMAND: invalid choice: 'forwrd' (choose from 'forward', "),
    (["worksheet", "--out", "w", "--varients", "3"], "unrecognized arguments: --varients (did you mean --variants?)"),
    (["forward", "--stpe", "norm1"], "unrecognized arguments: --stpe (did you mean --step?)"),
    (["forward", "--format", "tex"], "invalid choice: 'tex' (choose from 'text', 'latex'); did you mean latex?"),
    (["derive", "--format", "md"], "invalid choice: 'md' (choose from 'latex', 'markdown', 'text'); did you mean markdown?"),
])
def test_a_misspelt_command_option_or_choice(cli, capsys, argv, said):
    with pytest.raises(SystemExit) as e:
        cli(*argv)
    err = capsys.readouterr().err.splitlines()[-1]
    assert e.value.code == 2 and said in err and "Traceback" not in err, err
    meant = {"atention": "attention", "forwrd": "forward"}.get(argv[-1])
    assert err.endswith(f"; did you mean {meant}?") if meant else True


def test_an_example_to_show_near_a_built_in_name(cli):
    code, _, err = cli("examples", "--show", "seed-post-lm")
    assert code == 2 and err.startswith("symblock: error: --show: no example 'seed-post-lm'; did you mean seed-post-ln? "
                                        "expected one of decoder-layer, ")
