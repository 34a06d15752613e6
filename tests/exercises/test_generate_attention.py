"""The generator and stress with issue 15's options: constraints hold on a padded spec with
d_k ≠ d_model/heads; a batch with constraints is a clear error (they read one sequence)."""

import pytest

import symblock
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


def test_a_batch_with_constraints_is_a_clear_error(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(PADDED.replace("[false, false, true]", "[[false, false, true], [false, false, false]]"),
                    encoding="utf-8")
    with pytest.raises(SpecError, match="generation constraints work on one sequence"):
        symblock.load(path)
