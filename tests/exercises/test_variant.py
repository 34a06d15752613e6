"""One Variant: a variant's exercise is chosen once (counted here through the chooser), its asked
answers are the block's values (checked against NumPy float64 and the mse gradient worked by
hand), a decoder variant carries its conceptual and token tasks outside the variety guarantee,
and a stored exercise (the manifest's record) comes back exactly."""
from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import sympy
import yaml

from symblock.cli import main
from symblock.engine import block, names, spec
from symblock.exercises import presets, variant
from symblock.reference import numeric


@pytest.fixture
def choices(monkeypatch):
    """Every exercise choice of the run, counted by the drawn variant's seed."""
    counted: Counter = Counter()
    real = presets.choose

    def counting(trace, *args, **kw):
        counted[trace.spec.seed] += 1
        return real(trace, *args, **kw)
    monkeypatch.setattr(presets, "choose", counting)
    return counted


def test_a_set_of_three_chooses_each_exercise_once_and_grade_chooses_none(tmp_path, choices, capsys):
    out = tmp_path / "set"
    assert main(["worksheet", "pre-ln-causal-gelu", "--variants", "3", "--seed", "40", "--out", str(out),
                 "--format", "markdown,moodle"]) == 0
    assert choices == Counter({40: 1, 41: 1, 42: 1})   # drawn, judged for variety, rendered, stored: once
    answers = tmp_path / "answers"
    answers.mkdir()
    for ident in ("pre-ln-causal-gelu.40", "pre-ln-causal-gelu.41", "pre-ln-causal-gelu.42"):
        blank = (out / "students" / ident / "answers.yaml").read_text(encoding="utf-8")
        (answers / f"{ident}.yaml").write_text(blank.replace('name: ""', f"name: s{ident[-2:]}"), encoding="utf-8")
    choices.clear()
    capsys.readouterr()
    assert main(["grade", str(out), str(answers), "--out", str(tmp_path / "marks")]) == 1   # blank files: flagged
    assert choices == Counter()   # grade marks from the exercises the manifest stored


def test_the_asked_answers_are_the_blocks_values():
    s = spec.load("pre-ln-causal-gelu")
    v = variant.build("pre-ln-causal-gelu", block.forward(s), variant.Options.of("norm"))
    floats = numeric.forward(s)
    assert list(v.answers) == list(v.ask) and v.ask and all(names.parse(n).norm for n in v.ask)
    for name, value in v.answers.items():
        np.testing.assert_allclose(np.array(value.floats()), floats[name], rtol=1e-12, atol=1e-12)
    assert v.shapes == {n: floats[n].shape for n in v.ask}
    assert v.varied == dict(v.answers)   # a block's tasks all vary


def test_a_gradient_answer_is_the_mse_gradient_worked_by_hand():
    s = spec.load("pre-ln-causal-gelu")
    v = variant.build("x", block.forward(s), variant.Options.of("backprop", "mse", ["W_2"]))
    Y = numeric.forward(s)["output"]
    T = np.array(v.exercise.target.floats())
    n, d = Y.shape
    np.testing.assert_allclose(np.array(v.answers["grad.output"].floats()), 2 * (Y - T) / (n * d), atol=1e-12)
    assert v.options == variant.Options("backprop", "mse", ("W_2",))


def test_a_decoder_variant_keeps_its_reused_rows_and_token_out_of_the_variety():
    from symblock.engine.model import forward_any
    from symblock.exercises.generate import load
    v = variant.build("tiny-decoder", forward_any(load("tiny-decoder", allow_model=True)))
    assert v.model and not variant.build("b", block.forward(spec.load("seed-post-ln"))).model
    reused = [n for n in v.ask if n.endswith("cache.reused")]
    assert reused and "gen1.next_token" in v.ask
    for name in reused:   # 1 for each row read from the cache, 0 for the new one
        cache = v.trace[name.replace("reused", "k")].value.shape[0]
        assert [[float(e) for e in row] for row in v.answers[name].rows] == [[1.0] * (cache - 1) + [0.0]]
    assert set(v.answers) - set(v.varied) == {*reused, "gen1.next_token"}


@pytest.mark.parametrize("preset", [None, "backprop"])
def test_a_stored_exercise_comes_back_exactly(preset):
    s = spec.load("pre-ln-causal-gelu")
    trace = block.forward(s)
    v = variant.build("x", trace, variant.Options.of(preset))
    stored = yaml.safe_load(yaml.safe_dump(variant.record(v)))   # through the manifest's text
    for name, text in stored["answers"].items():   # text that sympify reads back as the exact value
        exact = [[sympy.sympify(e) for e in row] for row in variant.matrix_entries(text)]
        assert len(exact) == stored["shapes"][name][0] and len(exact[0]) == stored["shapes"][name][1]
        for row, want in zip(exact, v.answers[name].rows):
            for e, w in zip(row, want):
                if w.is_rational:
                    assert e == sympy.Rational(Fraction(int(w.q.p), int(w.q.q)))
                else:   # a closed form (e^x, a root), or -oo for a masked score
                    assert float(e) == float(w) or abs(float(e) - float(w)) < 1e-12
    back = variant.build("x", trace, stored=stored)
    assert back.ask == v.ask and back.given == v.given and back.points == v.points
    assert back.exercise.data_params == v.exercise.data_params
    assert {n: m.floats() for n, m in back.answers.items()} == {n: m.floats() for n, m in v.answers.items()}
    assert (back.exercise.backward is None) == (preset is None)


def test_a_drawn_variant_is_worked_once_and_its_trace_is_the_blocks(monkeypatch):
    """The constraint generator works its accepted candidate exactly; `draw` keeps that trace
    instead of working the drawn spec again (grade redraws every variant of a set)."""
    from symblock.engine import model
    from symblock.exercises import variants
    data, source = variants.read("preset:medium", {"generator": 2})
    forwards = []
    real = model.forward_any
    monkeypatch.setattr(model, "forward_any", lambda s: forwards.append(s) or real(s))
    got = variant.draw(data, source, 3)
    assert got is not None and forwards == []          # no second forward of the drawn spec
    drawn, trace = got
    assert trace.spec is drawn
    again = block.forward(drawn)
    assert trace.names() == again.names()
    from symblock.engine import exact
    def forms(t, n):
        return [[exact.text(x) for x in row] for row in t[n].value.rows]
    assert all(forms(trace, n) == forms(again, n) for n in again.names())
