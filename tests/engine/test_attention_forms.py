"""Attention as tutorials write it (issue 15): projection widths d_k, d_v ≠ d_model/heads, a key
padding mask, batches, fixed dropout masks. Hand-worked numbers and the spec's clear errors."""
import pytest
import sympy
from sympy import E, Rational, sqrt

from symblock.engine import block, spec
from symblock.engine.exact import NEG_INF
from symblock.engine.spec import SpecError
from symblock.engine.steps import step_names


def values(trace, name):
    return trace[name].value.to_sympy(2000)


def same(a, b) -> bool:
    a, b = sympy.Matrix(a), sympy.Matrix(b)
    return a.shape == b.shape and all(sympy.simplify(x - y) == 0 for x, y in zip(a, b))


def dk2(**over):
    """The book's chapter: 3-dim inputs projected to d_k = d_v = 2 (no zero padding columns)."""
    data = {"dims": {"d_model": 3, "d_ff": 1, "heads": 1, "d_k": 2, "d_v": 2},
            "weights": {"W_Q": [[1, 0], [0, 1], [1, 0]], "W_K": [[1, 0], [0, 1], [0, 0]],
                        "W_V": [[1, 2], [0, 1], [1, 0]], "W_O": [[1, 0, 0], [0, 1, 1]],
                        "W_1": [[1], [1], [1]], "W_2": [[1, 0, 0]]},
            "inputs": {"X": [[1, 0, 1], [0, 1, 0]]}}
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v}
    return spec.from_mapping(data)


def test_d_k_2_from_d_model_3_by_hand():
    """Q = [[2, 0], [0, 1]], K = [[1, 0], [0, 1]]: S = [[2, 0], [0, 1]], scaled by 1/√2 (d_k = 2,
    not d_model = 3); V = [[2, 2], [0, 1]]; A = O W_O with W_O 2 × 3."""
    s = dk2()
    assert s.params["W_Q"].shape == (3, 2) and s.params["W_O"].shape == (2, 3)
    t = block.forward(s)
    assert values(t, "attn.q") == sympy.Matrix([[2, 0], [0, 1]])
    assert values(t, "attn.h0.scores") == sympy.Matrix([[2, 0], [0, 1]])
    assert same(values(t, "attn.h0.scaled"), [[sqrt(2), 0], [0, sqrt(2) / 2]])
    a, b = E ** sqrt(2), E ** (sqrt(2) / 2)
    assert same(values(t, "attn.h0.weights"), [[a / (a + 1), 1 / (a + 1)], [1 / (b + 1), b / (b + 1)]])
    w0 = a / (a + 1)
    assert same(values(t, "attn.h0.out")[0, :], [[2 * w0, 2 * w0 + (1 - w0)]])
    assert t["attn.out"].value.shape == (2, 3)
    assert same(values(t, "attn.out")[0, :], [[2 * w0, 1 + w0, 1 + w0]])
    assert "d_k = 2" in t["attn.h0.scaled"].latex


def test_layout_torch_takes_the_projections_as_linear_stores_them():
    """nn.Linear(3, 2).weight is 2 × 3 (out, in): a torch-layout spec writes W_Q that way."""
    math = dk2()
    data = {"layout": "torch", "dims": {"d_model": 3, "d_ff": 1, "heads": 1, "d_k": 2, "d_v": 2},
            "weights": {"W_Q": [[1, 0, 1], [0, 1, 0]], "W_K": [[1, 0, 0], [0, 1, 0]],
                        "W_V": [[1, 0, 1], [2, 1, 0]], "W_O": [[1, 0], [0, 1], [0, 1]],
                        "W_1": [[1, 1, 1]], "W_2": [[1], [0], [0]]},
            "inputs": {"X": [[1, 0, 1], [0, 1, 0]]}}
    assert dict(spec.from_mapping(data).params) == dict(math.params)
    data["weights"]["W_Q"] = [[1, 0], [0, 1], [1, 0]]  # math layout in a torch spec: wrong shape
    with pytest.raises(SpecError, match=r"weights.W_Q.*expected shape 2×3, got 3×2"):
        spec.from_mapping(data)


def test_heads_times_d_k_need_not_be_d_model():
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 3, "d_ff": 1, "heads": 2, "d_k": 1, "d_v": 2},
                           "random": {"seed": 1}})
    t = block.forward(s)
    assert t["attn.q"].value.shape == (2, 2) and t["attn.v"].value.shape == (2, 4)
    assert t["attn.h1.out"].value.shape == (2, 2) and t["attn.concat"].value.shape == (2, 4)
    assert s.params["W_O"].shape == (4, 3)


def test_out_proj_false_needs_heads_d_v_equal_d_model():
    with pytest.raises(SpecError, match=r"block.out_proj.*heads·d_v = 1·2 must equal d_model = 3"):
        dk2(block={"out_proj": False})
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 3, "d_ff": 1, "heads": 1, "d_k": 2, "d_v": 3},
                           "block": {"out_proj": False}, "random": {"seed": 2}})
    assert block.forward(s)["attn.out"].value.shape == (2, 3) and "W_O" not in s.params


def test_heads_not_dividing_d_model_names_the_way_out():
    with pytest.raises(SpecError, match=r"dims.heads.*or give dims.d_k and dims.d_v"):
        spec.from_mapping({"dims": {"seq_len": 2, "d_model": 3, "d_ff": 1, "heads": 2}, "random": {"seed": 1}})


def test_default_widths_keep_every_spec_meaning():
    s = spec.load("rmsnorm-swiglu")
    assert s.dims.d_k == s.dims.d_v == s.dims.d_model // s.dims.heads
    assert not s.options.padding and not s.options.dropout and s.dims.batch == 0


# ---------------------------------------------------------------- padding and batches

def padded(**over):
    data = {"dims": {"d_model": 2, "d_ff": 1, "heads": 1},
            "block": {"attention_scale": "none", "eps": "1/100"},
            "weights": {k: [[1, 0], [0, 1]] for k in ("W_Q", "W_K", "W_V", "W_O")} |
                       {"W_1": [[1], [0]], "W_2": [[1, 1]]},
            "inputs": {"X": [[1, 0], [0, 1], [5, 7]], "key_padding_mask": [False, False, True]}}
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v}
    return spec.from_mapping(data)


def test_a_padded_key_gets_exact_weight_zero():
    """Key 2 is padding: every query's weight on it is exactly 0, and the other two keys share
    the row exactly as without the padded token (its large values never leak in)."""
    t = block.forward(padded())
    m = t["attn.h0.masked"].value
    assert all(m[i, 2] is NEG_INF for i in range(3)) and m[0, 0] is not NEG_INF
    w = t["attn.h0.weights"].value
    assert all(w[i, 2].is_rational and w[i, 2].q == 0 for i in range(3))
    assert same(values(t, "attn.h0.weights")[:2, :2], [[E / (E + 1), 1 / (E + 1)], [1 / (E + 1), E / (E + 1)]])
    # the padded query still attends (torch pads keys, not queries): row 2 = softmax(5, 7)
    assert same(values(t, "attn.h0.weights")[2, :], [[1 / (1 + E ** 2), E ** 2 / (1 + E ** 2), 0]])
    assert r"\text{key } j \text{ is padding}" in t["attn.h0.masked"].latex


def test_padding_and_causal_together():
    t = block.forward(padded(block={"causal": True}, inputs={"key_padding_mask": [False, True, False]}))
    m = t["attn.h0.masked"].value
    assert [[m[i, j] is NEG_INF for j in range(3)] for i in range(3)] == \
        [[False, True, True], [False, True, True], [False, True, False]]


@pytest.mark.parametrize("mask,causal,msg", [
    ([True, True, True], False, "every key is padding"),
    ([True, False, False], True, "query 0 may attend to no key"),
])
def test_a_query_with_no_key_is_a_clear_error(mask, causal, msg):
    with pytest.raises(SpecError, match=f"inputs.key_padding_mask: {msg}.*torch gives NaN"):
        padded(block={"causal": causal}, inputs={"key_padding_mask": mask})


@pytest.mark.parametrize("mask, where, msg", [
    ([False, 1, False], "inputs.key_padding_mask[1]",
     "expected true or false (true = a padding key), got 1 (write true or false, not 1 or 0)"),
    ([False, False], "inputs.key_padding_mask", "expected 3 entries, one per key position, got 2 entries"),
    ([[False, True, True]], "inputs.key_padding_mask", "a list of lists is a batch's mask"),
])
def test_bad_padding_masks(mask, where, msg):
    with pytest.raises(SpecError) as e:
        padded(inputs={"key_padding_mask": mask})
    assert e.value.where == where and e.value.message.startswith(msg), e.value


def batch_data():
    return {"dims": {"d_model": 2, "d_ff": 1, "heads": 1}, "block": {"eps": "1/100"},
            "weights": {k: [[1, 0], [0, 1]] for k in ("W_Q", "W_K", "W_V", "W_O")} |
                       {"W_1": [[1], [0]], "W_2": [[1, 1]]},
            "inputs": {"X": [[[1, 0], [0, 1], [0, 0]], [[1, 0], [0, 1], [1, 1]]],
                       "key_padding_mask": [[False, False, True], [False, False, False]]}}


def test_a_batch_prefixes_every_step_and_works_each_sequence():
    s = spec.from_mapping(batch_data())
    assert s.dims.batch == 2 and s.X is None and len(s.batch) == 2
    t = block.forward(s)
    names = t.names()
    assert names[0] == "b0.x" and "b1.output" in names and "x" not in names
    assert names == step_names(s.dims, s.options)
    assert t["b0.attn.q"].inputs == ("b0.x", "W_Q", "b_Q")
    # sequence 0 with its padded row equals the 2-token sequence alone
    alone = block.forward(spec.from_mapping({**batch_data(), "inputs": {"X": [[1, 0], [0, 1]]}}))
    for name in ("attn.out", "resid1", "output"):
        assert same(values(t, f"b0.{name}")[:2, :], values(alone, name))


def test_batch_errors_say_what_to_do():
    data = batch_data()
    data["inputs"]["X"][1] = [[1, 0], [0, 1]]
    with pytest.raises(SpecError, match=r"inputs.X\[1\]: expected 3 rows.*pad the shorter"):
        spec.from_mapping(data)
    data = batch_data()
    data["inputs"]["key_padding_mask"] = [[False, False, True]]
    with pytest.raises(SpecError, match="inputs.X: expected a batch of 1 matrices|key_padding_mask"):
        spec.from_mapping(data)


def test_a_batch_given_step_and_draws():
    data = batch_data()
    data["given"] = {"b1.attn.out": [[0, 0], [0, 0], [0, 0]]}
    t = block.forward(spec.from_mapping(data))
    assert t["b1.attn.out"].given and "b1.attn.q" not in t and "b0.attn.q" in t
    drawn = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 1, "heads": 1},
                               "inputs": {"key_padding_mask": [[False, True], [False, False]]},
                               "random": {"seed": 4}})
    assert drawn.dims.batch == 2 and drawn.batch[0] != drawn.batch[1]


# ---------------------------------------------------------------- dropout

def test_dropout_mask_scales_what_it_keeps():
    """ffn.out.dropped = D ⊙ F / (1 − p); resid2 reads the dropped value."""
    s = padded(dropout={"p": "1/4", "masks": {"ffn.out": [[1, 0], [0, 1], [1, 1]],
                                              "attn.h0.weights": [[1, 1, 1], [0, 1, 1], [1, 1, 1]]}})
    t = block.forward(s)
    f, fd = values(t, "ffn.out"), values(t, "ffn.out.dropped")
    assert same(fd, [[f[0, 0] * Rational(4, 3), 0], [0, f[1, 1] * Rational(4, 3)],
                     [f[2, 0] * Rational(4, 3), f[2, 1] * Rational(4, 3)]])
    assert t["resid2"].inputs == ("norm1", "ffn.out.dropped")
    assert same(values(t, "resid2"), values(t, "norm1") + fd)
    w = values(t, "attn.h0.weights.dropped")
    assert w[1, 0] == 0 and same(w[0, :], values(t, "attn.h0.weights")[0, :] * Rational(4, 3))
    assert t["attn.h0.out"].inputs == ("attn.h0.weights.dropped", "attn.v")
    names = t.names()
    assert names.index("attn.h0.weights.dropped") == names.index("attn.h0.weights") + 1


@pytest.mark.parametrize("dropout,where", [
    ({"p": "1/2", "masks": {"attn.h0.scores": [[1] * 3] * 3}}, "dropout.masks.attn.h0.scores"),
    ({"p": "1/2", "masks": {"ffn.out": [[1, 2], [1, 1], [1, 1]]}}, r"dropout.masks.ffn.out\[0\]\[1\]"),
    ({"p": "1/2", "masks": {"ffn.out": [[1, 1]]}}, "dropout.masks.ffn.out"),
    ({"p": 1, "masks": {"ffn.out": [[1, 1]] * 3}}, "dropout.p"),
    ({"p": "1/2"}, "dropout.masks"),
    ({"p": "1/2", "masks": {}, "seed": 1}, "dropout.seed"),
])
def test_bad_dropout_sections(dropout, where):
    with pytest.raises(SpecError, match=where):
        padded(dropout=dropout)


def test_a_dropout_mask_can_be_drawn_from_the_seed():
    """`masks: {step: random}` draws a fixed 0/1 mask (each entry dropped with probability p) from
    the seed; the same seed gives the same mask, and about a share p of 60 entries is dropped."""
    data = {"dims": {"seq_len": 6, "d_model": 2, "d_ff": 10, "heads": 1}, "block": {"eps": "1/100"},
            "random": {"seed": 5}, "dropout": {"p": "1/2", "masks": {"ffn.act": "random"}}}
    m = spec.from_mapping(data).dropout_masks["ffn.act"]
    assert m == spec.from_mapping(data).dropout_masks["ffn.act"] and set(m) <= {0, 1}
    assert 15 <= list(m).count(0) <= 45
    data["random"]["seed"] = 6
    assert spec.from_mapping(data).dropout_masks["ffn.act"] != m
    with pytest.raises(SpecError, match="dropout.masks.ffn.act.*random.seed"):
        padded(dropout={"p": "1/2", "masks": {"ffn.act": "random"}})


def test_sequence_lengths_can_be_drawn_from_the_seed():
    """`key_padding_mask: random` draws each sequence's length (trailing keys padded, key 0
    never), reproducibly; across seeds every length 1..4 appears."""
    def mask(seed, X=None):
        inputs = {"key_padding_mask": "random"} | ({"X": X} if X else {})
        return spec.from_mapping({"dims": {"seq_len": 4, "d_model": 2, "d_ff": 1, "heads": 1},
                                  "block": {"eps": "1/100", "causal": True}, "inputs": inputs,
                                  "random": {"seed": seed}}).key_padding_mask
    rows = [mask(seed)[0] for seed in range(40)]
    assert rows[0] == mask(0)[0] and all(not r[0] for r in rows)
    assert all(list(r) == sorted(r) for r in rows)  # padding only after the length
    assert {r.count(False) for r in rows} == {1, 2, 3, 4}
    batch = mask(3, [[[1, 0]] * 4, [[0, 1]] * 4, [[1, 1]] * 4])
    assert len(batch) == 3
    with pytest.raises(SpecError, match="inputs.key_padding_mask.*random.seed"):
        padded(inputs={"key_padding_mask": "random"})
