"""The generator and stress with issue 15's options: constraints hold on a padded spec with
d_k ≠ d_model/heads; on a batch a failing constraint names the sequence."""

import pytest

import symblock
import symblock.exercises.generate
from symblock.cli import main
from symblock.engine.spec import SpecError

PADDED = """\
dims: {seq_len: 3, d_model: 3, d_ff: 2, heads: 1, d_k: 2, d_v: 2}
block: {eps: "1/10", causal: true}
inputs:
  key_padding_mask: [false, false, true]
random: {seed: 1, integer_scores: true, softmax_distinct: true}
"""


def test_constraints_hold_with_padding_and_widths(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(PADDED, encoding="utf-8")
    s = symblock.load(path)
    from symblock.engine import block
    t = block.forward(s)
    assert t["attn.q"].value.shape == (3, 2)
    assert all(e.is_rational and e.q.denominator == 1 for r in t["attn.h0.scores"].value.rows for e in r)
    w = t["attn.h0.weights"].value
    assert all(w[i, 2].q == 0 for i in range(3))
    live = [e for e in t["attn.h0.masked"].value.rows[1] if e is not t["attn.h0.masked"].value.rows[0][1]]
    assert len(live) == 2 and (live[0] - live[1]).sign() != 0  # softmax_distinct on the live keys


def test_stress_runs_on_a_padded_spec(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(PADDED, encoding="utf-8")
    assert main(["stress", str(path), "-n", "3", "--json"]) == 0
    assert "attn.h0.masked" in capsys.readouterr().out


def test_a_failing_constraint_names_the_sequence_and_its_numbers():
    """Sequence b1 has two equal rows, so its keys tie in every query row: no weights can make its
    softmax inputs distinct, and the error says so for b1 with the tied numbers."""
    with pytest.raises(SpecError) as e:
        symblock.exercises.generate.from_mapping({
            "dims": {"seq_len": 2, "d_model": 3, "d_ff": 2, "heads": 1}, "block": {"eps": "1/10"},
            "inputs": {"X": [[[1, 0, 2], [0, 1, -1]], [[1, 2, 0], [1, 2, 0]]]},
            "random": {"seed": 1, "softmax_distinct": True, "max_draws": 20}}, "t")
    assert e.value.where == "random.softmax_distinct"
    msg = e.value.message
    assert "b1.attn.h0.scaled row" in msg and "two equal live entries [" in msg and "b0." not in msg
