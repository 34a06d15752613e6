"""A masked score written as tutorials' `masked_fill` writes it (−1e9, −1e4) is read as −∞: correct,
with a note, and the chain carries −∞ on; a value that only looks large, or one where the truth is
finite, stays wrong. Also a decoder layer's cross-attention steps checked end to end."""
from __future__ import annotations

import json
import textwrap

import pytest

from symblock.cli import main

SPEC = """\
    dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
    block: {attention_scale: none, causal: true}
    weights:
      W_Q: [[1, 0], [0, 1]]
      W_K: [[1, 0], [0, 1]]
      W_V: [[1, 0], [0, 1]]
      W_O: [[1, 0], [0, 1]]
      W_1: [[1, 0], [0, 1]]
      W_2: [[1, 0], [0, 1]]
    inputs:
      X: [[1, 0], [0, 1]]
    """
# X Xᵀ = I, so the causal masked scores are [[1, −∞], [0, 1]] and row 0 of the weights is [1, 0]


def check(tmp_path, capsys, answers: str, *flags, spec_text=SPEC):
    spec, path = tmp_path / "spec.yaml", tmp_path / "answers.yaml"
    spec.write_text(textwrap.dedent(spec_text), encoding="utf-8")
    path.write_text(textwrap.dedent(answers), encoding="utf-8")
    code = main(["check", str(spec), str(path), *flags])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("fill", ["-1e9", "-1e4", "-10000", -1000000000.0, "-3.4e38"])
def test_a_masked_fill_value_is_read_as_minus_infinity(tmp_path, capsys, fill):
    code, out = check(tmp_path, capsys, f"""\
        steps:
          attn.h0.masked: [[1, {fill}], [0, 1]]
          attn.h0.weights: [[1, 0], ["1/(1+E)", "E/(1+E)"]]
        """, "--json")
    data = json.loads(out)
    steps = {s["name"]: s for s in data["steps"]}
    assert code == 0 and data["ok"], steps
    masked = steps["attn.h0.masked"]
    assert masked["status"] == "correct" and masked["entries"][1]["note"] == "mask_fill"
    assert masked["entries"][1]["expected"] == "-inf" and "note" not in masked["entries"][0]
    assert steps["attn.h0.weights"]["status"] == "correct"  # built on −∞, not on e^(−1e9)
    assert "built_on" not in steps["attn.h0.weights"]


def test_the_report_says_so_in_english_and_chinese(tmp_path, capsys):
    answers = "steps:\n  attn.h0.masked: [[1, -1e9], [0, 1]]\n"
    code, out = check(tmp_path, capsys, answers)
    assert code == 0 and "the masked score written -1000000000 is read as −∞ (as masked_fill" in out
    code, out = check(tmp_path, capsys, answers, "--lang", "zh")
    assert code == 0 and "按 −∞ 计" in out


@pytest.mark.parametrize("answers", [
    "steps:\n  attn.h0.masked: [[1, -9999], [0, 1]]\n",     # above the fill threshold: a number
    "steps:\n  attn.h0.masked: [[-1e9, -inf], [0, 1]]\n",   # −1e9 where the score is 1
])
def test_what_is_not_a_fill_of_a_masked_score_stays_wrong(tmp_path, capsys, answers):
    code, out = check(tmp_path, capsys, answers, "--json")
    steps = {s["name"]: s for s in json.loads(out)["steps"]}
    assert code == 1 and steps["attn.h0.masked"]["status"] == "wrong"


DECODER = """\
    dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
    block: {cross_attention: true, attention_scale: none, eps: "1/10"}
    weights:
      W_Q: [[1, 0], [0, 1]]
      W_K: [[1, 0], [0, 1]]
      W_V: [[1, 0], [0, 1]]
      W_O: [[1, 0], [0, 1]]
      W_1: [[1, 0], [0, 1]]
      W_2: [[1, 0], [0, 1]]
      cross: {W_Q: [[1, 0], [0, 1]], W_K: [[1, 0], [0, 1]], W_V: [[1, 0], [0, 1]], W_O: [[1, 0], [0, 1]]}
    inputs:
      X: [[1, 0], [0, 1]]
      memory: [[1, 0], [0, 1], [0, 0]]
      memory_padding_mask: [false, false, true]
    given: {norm1: [[1, -1], [-1, 1]]}
    """


def test_a_decoder_layers_cross_attention_is_checked_and_a_fill_accepted(tmp_path, capsys):
    """H1 = ±(1, −1) is given, so the cross scores are [[1, −1, 0], [−1, 1, 0]], the padded third
    memory row −∞; weights e/(e + 1/e), … by hand."""
    code, out = check(tmp_path, capsys, """\
        steps:
          cross.k: [[1, 0], [0, 1], [0, 0]]
          cross.h0.scores: [[1, -1, 0], [-1, 1, 0]]
          cross.h0.masked: [[1, -1, -1e9], [-1, 1, -inf]]
          cross.h0.weights: [["E/(E+1/E)", "(1/E)/(E+1/E)", 0], ["(1/E)/(E+1/E)", "E/(E+1/E)", 0]]
        """, "--json", spec_text=DECODER)
    data = json.loads(out)
    steps = {s["name"]: s for s in data["steps"]}
    assert code == 0 and data["ok"], steps
    assert steps["cross.h0.masked"]["entries"][2]["note"] == "mask_fill"
    code, out = check(tmp_path, capsys, "steps:\n  cross.k: [[1, -1], [-1, 1], [0, 0]]\n", "--json",
                      spec_text=DECODER)  # K from the decoder's H1, not the memory
    assert code == 1
