"""How the generator works a candidate cheaply: the candidate's spec built from its tensors (no
parsing per candidate) is the spec the parser makes of the same numbers, and the forward that
stops at ffn.hidden for a relu_mixed refit draws the very variants a full forward draws."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from symblock.engine import block, spec as specmod
from symblock.exercises import generate

TORCH_BATCH = {"layout": "torch", "dims": {"seq_len": 2, "d_model": 3, "d_ff": 2, "heads": 1},
               "block": {"bias": True, "norm_position": "pre"}, "random": {"seed": 5}}
W_Q_TORCH = [[1, 0, -1], [2, 1, 0], [0, -2, 1]]   # (out, in): torch's layout
B_1 = [[1, -1]]
GAMMA = [[2, 1, Fraction(1, 2)]]
BATCH_X = [[[1, 2, 3], [0, 1, -1]], [[Fraction(1, 2), 0, 2], [3, -3, 1]]]


def test_candidate_spec_equals_the_spec_parsed_from_the_same_numbers():
    data = {**TORCH_BATCH, "inputs": {"X": [[[0] * 3] * 2] * 2}}
    probe = specmod.from_mapping(data, "t")
    params = {"W_Q": [list(r) for r in zip(*W_Q_TORCH)], "b_1": B_1, "ln1.gamma": GAMMA}  # math layout
    built = specmod.with_tensors(probe, params, BATCH_X)  # one X per sequence
    text = lambda m: [[str(e) for e in r] for r in m]  # noqa: E731  (as a spec file writes them)
    parsed = specmod.from_mapping({**TORCH_BATCH, "inputs": {"X": [text(x) for x in BATCH_X]},
                                   "weights": {"W_Q": W_Q_TORCH, "b_1": B_1[0], "ln1": {"gamma": text(GAMMA)[0]}}}, "t")
    assert dict(built.params) == dict(parsed.params) and built.batch == parsed.batch and built.X is None
    assert built.params["W_Q"][0, 1] == 2 and built.params["W_Q"][2, 0] == -1  # transposed by hand
    assert built.params["ln1.gamma"][0, 2] == Fraction(1, 2)
    assert all(isinstance(e, Fraction) for e in built.params["b_1"])
    with pytest.raises(AssertionError):  # a shape the spec does not have is a bug, not bad input
        specmod.with_tensors(probe, {"W_Q": [[1, 2]]})


def test_with_given_validates_and_drops_what_only_fed_the_given_step():
    s = specmod.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
                              "block": {"norm": "rmsnorm"}, "random": {"seed": 3}}, "t")
    g = specmod.with_given(s, {"attn.out": [["0.5", -1], [2, "1/3"]]})
    assert "W_Q" in s.params and not {"W_Q", "W_K", "W_V", "W_O"} & set(g.params)
    t = block.forward(g)
    A = [[Fraction(1, 2), -1], [2, Fraction(1, 3)]]
    want = [[s.X[i, j] + A[i][j] for j in range(2)] for i in range(2)]
    assert t["attn.out"].given and [[Fraction(int(e.q.p), int(e.q.q)) for e in r] for r in t["resid1"].value.rows] == want
    with pytest.raises(specmod.SpecError) as e:
        specmod.with_given(s, {"norm1.rms": [[0], [1]]})
    assert e.value.where == "given.norm1.rms[0][0]"


def test_split_forward_stops_at_ffn_hidden_only_where_no_norm_follows():
    hard = generate.plan({"random": {"seed": 1, "difficulty": "hard"}}, "t")
    easy = generate.plan({"random": {"seed": 1, "difficulty": "easy"}}, "t")   # Post-LN: norm2 after FFN
    assert hard.split == "ffn.hidden" and easy.split is None
    final = generate.plan({"random": {"seed": 1, "difficulty": "hard"}, "block": {"final_norm": True}}, "t")
    assert final.split is None


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_split_forward_draws_the_variants_a_full_forward_draws(difficulty, monkeypatch):
    """Seeds chosen where W_1 is refitted: the refit starts from the stopped forward, and the
    carried-on forward finishes the FFN; the variant, draws and every value are unchanged."""
    def run():
        out = []
        for seed in range(1, 9):
            v = generate.variant({"random": {"seed": seed, "difficulty": difficulty}}, "t")
            out.append((v.key, v.draws, v.forwards, dict(v.redraws),
                        [(s.name, s.given, [[str(e) for e in r] for r in s.value.rows]) for s in v.trace]))
        return out
    split = run()
    refitted = [o for o in split if o[3].get("ffn weights refit")]
    assert len(refitted) >= 3 and all(o[1] == 1 for o in refitted)  # the refit saves the first draw
    monkeypatch.setattr(generate, "split_step", lambda *a: None)
    assert run() == split
    v = generate.variant({"random": {"seed": 2, "difficulty": difficulty}}, "t")
    assert [s.name for s in v.trace][-1] == "output"
    hidden = np.array(v.trace["ffn.hidden"].value.floats())
    assert all((row > 0).any() and (row < 0).any() for row in hidden)   # relu_mixed: rows, on the values
