"""The cross preset on a decoder layer: it asks exactly the cross-attention's steps (the memory
and the decoder rows its queries read given), a block without one is refused, and a class set
keeps its guarantees on the cross-attention heads: every asked answer differs across variants and
the softmax rows of the cross heads are held to the difficulty's weight range."""
from __future__ import annotations

import pytest

from symblock.exercises import variant
from symblock.exercises.variant import Options


def test_cross_preset_asks_the_cross_attention(cli, tmp_path):
    code, out, err = cli("worksheet", "decoder-layer", "--preset", "cross", "--out", tmp_path, "--format",
                         "markdown")
    assert code == 0, err
    key = (tmp_path / "key.md").read_text(encoding="utf-8")
    tasks = [line.split("`")[1] for line in key.splitlines() if line.startswith("### Task")]
    assert tasks == ["cross.q", "cross.k", "cross.v", "cross.h0.scores", "cross.h0.scaled", "cross.h0.masked",
                     "cross.h0.weights", "cross.h0.out", "cross.out"]
    assert "(`memory`, $3 \\times 4$)" in key and "(`norm1`, $2 \\times 4$)" in key   # given


def test_cross_preset_on_a_block_without_cross_attention_is_refused(cli, tmp_path):
    code, out, err = cli("worksheet", "seed-post-ln", "--preset", "cross", "--out", tmp_path)
    assert code == 2 and "the cross preset asks a decoder layer's cross-attention" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def class_set():
    return variant.draw_set("decoder-layer", 4, 1, Options.of("cross"), overrides={
        "softmax_weights": ["3/10", "7/10"], "softmax_distinct": True})


def test_every_asked_cross_answer_differs_across_the_set(class_set):
    assert len(class_set) == 4
    for name in class_set[0].ask:
        values = [tuple(str(e) for row in v.answers[name].rows for e in row) for v in class_set]
        assert len(set(values)) == 4, name


def test_cross_heads_keep_the_softmax_guarantee(class_set):
    """random.softmax_weights [3/10, 7/10] bounds every live cross weight of every variant (the
    seeds kept without the guarantee on cross heads have weights beyond it)."""
    lo, hi = 3 / 10, 7 / 10
    for v in class_set:
        w = v.trace["cross.h0.weights"].value.to_sympy(10 ** 6)
        live = [float(x) for x in w if x != 0]   # the padded memory column weighs 0
        assert live and all(lo - 1e-12 <= x <= hi + 1e-12 for x in live), (v.ident, live)
