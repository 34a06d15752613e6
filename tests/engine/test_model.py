"""The tiny GPT (engine/model.py): numbers worked by hand, the certified argmax and its tie, the
KV cache (rows reused, appended, and proved equal to the full recompute), sinusoidal positions,
the spec's errors, and the model parameter count against GPT-2 small."""
from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import symblock
from symblock import cli
from symblock.calculus.model_params import count_model
from symblock.engine import exact, model, model_spec
from symblock.engine.model_spec import MIXED_WARNING, from_mapping
from symblock.errors import SpecError

# One layer, d_model 2, one head, Post-LN, ε = 0: every 2-d LayerNorm row is ±(1, −1) or (−1, 1)
# whatever the attention does, so the output and the logits can be worked by hand.
HAND = {
    "model": {"vocab": ["a", "b", "c"], "positions": "learned", "layers": 1, "head": "tied",
              "final_norm": False, "prompt": ["a", "b"], "generate": 1, "kv_cache": True},
    "dims": {"d_model": 2, "d_ff": 2, "heads": 1},
    "block": {"norm_position": "post", "eps": 0, "activation": "relu"},
    "weights": {
        "W_E": [[2, 0], [0, 1], [1, 3]],
        "W_P": [[0, 1], [1, 0], [0, 0]],
        "layers": [{"W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 1]], "W_V": [[1, 0], [0, 1]],
                    "W_O": [[1, 0], [0, 1]], "W_1": [[1, 0], [0, 1]], "W_2": [[0, 0], [0, 0]]}],
    },
}


def _values(step) -> list[list[Fraction]]:
    return [[Fraction(str(e.to_sympy())) for e in row] for row in step.value.rows]


def test_embeddings_positions_and_logits_by_hand():
    spec = from_mapping(HAND, "hand")
    tr = model.forward(spec)
    assert _values(tr["embed"]) == [[2, 0], [0, 1]]           # rows a, b of W_E
    assert _values(tr["pos"]) == [[0, 1], [1, 0]]             # positions 0, 1
    assert _values(tr["x"]) == [[2, 1], [1, 1]]
    # row 0 = (2, 1) attends only to itself (causal): A = x, R1 = (4, 2), H1 = LN = (1, −1). Row 1
    # = (1, 1) averages V rows (2, 1) and (1, 1), so A = (a1, a2) with a1 > a2, and R1 = (1 + a1,
    # 1 + a2) has a larger first entry: LN = (1, −1) too (ε = 0, d = 2).
    assert _values(tr["layer0.norm1"]) == [[1, -1], [1, -1]]
    # W_2 = 0 and no bias: F = 0, so H2 = LN(H1) = H1, and the logits are (1, −1) W_Eᵀ per row
    assert _values(tr["layer0.output"]) == [[1, -1], [1, -1]]
    assert _values(tr["logits"]) == [[2, -1, -2], [2, -1, -2]]
    assert _values(tr["next_token"]) == [[0]]
    assert r"(\text{a})" in tr["next_token"].latex
    # the cached step feeds token a at position 2: x = W_E[a] + W_P[2] = (2, 0)
    assert _values(tr["gen1.x"]) == [[2, 0]]
    assert tr["gen1.layer0.cache.k"].value.shape == (3, 2)


def test_next_token_formula_names_the_row_of_the_logits_it_reads_from_1():
    """Entries are numbered from 1 (the sheets' K_{21}, the text view's (1,1)): the prompt pass of
    tiny-gpt has 2 rows of logits and its token is the argmax of row 2 (row 1's is another token);
    a cached step's logits are the one new row, ℓ_j."""
    tr = symblock.forward(symblock.load("tiny-gpt"))
    rows = tr["logits"].value.floats()
    assert len(rows) == 2 and int(np.argmax(rows[1])) == 2 != int(np.argmax(rows[0]))   # sat, not mat
    assert r"\arg\max_j \ell_{2,j} = 2\ (\text{sat})" in tr["next_token"].latex
    assert len(tr["gen1.logits"].value.rows) == 1
    assert r"\arg\max_j \ell_{j} = 3\ (\text{on})" in tr["gen1.next_token"].latex
    # an encoder-decoder's one-token target prefix: one row, never a row 0
    assert r"\ell_{j}" in symblock.forward(symblock.load("tiny-translate"))["next_token"].latex


def test_softmax_of_logits_is_exact_and_sums_to_one():
    tr = model.forward(from_mapping(HAND, "hand"))
    for row in tr["probs"].value.rows:
        assert exact.sign(exact.total(list(row)) - 1) == 0
    logits = np.array(tr["logits"].value.floats())
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    assert np.allclose(tr["probs"].value.floats(), z / z.sum(axis=1, keepdims=True), rtol=0, atol=1e-15)


def test_a_tie_between_the_largest_logits_is_an_error_naming_the_tokens():
    tie = {**HAND, "weights": {**HAND["weights"], "W_E": [[1, 0], [1, 0], [0, 1]],
                               "W_P": [[1, 0], [0, 0]]}}
    tie["model"] = {**HAND["model"], "prompt": ["a"]}
    # x = (2, 0), R1 = 2x, H = LN = (1, −1): logits (1, 1, −1), a tie between a and b
    with pytest.raises(SpecError) as e:
        model.forward(from_mapping(tie, "tie"))
    assert e.value.field == "next_token"
    assert "'a'" in str(e.value) and "'b'" in str(e.value)


def tiny(**changes):
    """The tiny-gpt example with sections (or model keys) replaced."""
    from symblock.engine.spec import read_spec
    data, _ = read_spec("tiny-gpt")
    data = {**data, "model": {**data["model"], **changes.pop("model", {})}, **changes}
    return from_mapping(data, "tiny")


def test_the_cache_reuses_rows_and_appends_one():
    tr = model.forward(tiny())
    for i in range(2):
        k0, c1, c2 = (tr[f"layer{i}.attn.k"].value, tr[f"gen1.layer{i}.cache.k"].value,
                      tr[f"gen2.layer{i}.cache.k"].value)
        assert c1.shape == (3, 4) and c2.shape == (4, 4)
        assert all(a is b for ra, rb in zip(k0.rows, c1.rows[:2]) for a, b in zip(ra, rb))  # reused
        assert c1.rows[2] == tr[f"gen1.layer{i}.attn.k"].value.rows[0]                      # appended
        assert all(a is b for ra, rb in zip(c1.rows, c2.rows[:3]) for a, b in zip(ra, rb))
        assert tr[f"gen2.layer{i}.attn.h0.weights"].value.shape == (1, 4)                   # one row
        assert f"gen2.layer{i}.attn.h0.masked" not in tr
        assert tr[f"gen2.layer{i}.cache.v"].inputs == (f"gen1.layer{i}.cache.v", f"gen2.layer{i}.attn.v")


def test_every_cached_step_equals_the_full_recompute_exactly():
    spec = tiny()
    verdicts = model.prove_cache(spec)
    assert len(verdicts) > 100
    assert {v for _, v in verdicts} == {"exact"}
    full = model.forward(tiny(model={"kv_cache": False}))
    cached = model.forward(spec)
    assert full["gen2.next_token"].value.rows == cached["gen2.next_token"].value.rows or \
        _values(full["gen2.next_token"]) == _values(cached["gen2.next_token"])
    assert full["gen2.layer1.attn.h0.weights"].value.shape == (4, 4)


def test_a_cache_that_forgets_to_append_is_caught(monkeypatch):
    real = model._Run.cached_layer

    def stale(self, i, h, prefix, x_name):  # a planted bug: the new row's K/V never reach the cache
        k, v = self.caches[i]
        out = real(self, i, h, prefix, x_name)
        self.caches[i] = (k, v)
        return out
    monkeypatch.setattr(model._Run, "cached_layer", stale)
    verdicts = dict(model.prove_cache(tiny()))
    assert verdicts["gen2.layer0.cache.k"] == "differs"


def test_canonical_identity_is_structural_not_numeric():
    c = model.Canonical()
    two = exact.real(2)
    a = exact.sqrt(two) * exact.real(3) + exact.exp(exact.real(Fraction(1, 2)))
    b = exact.exp(exact.real(Fraction(1, 2))) + exact.real(3) * exact.sqrt(exact.real(2))  # built anew
    assert a is not b and c(a) == c(b)
    assert c(a) != c(a + exact.real(Fraction(1, 10**30)))


def test_sinusoidal_positions_are_exact_sin_and_cos():
    tr = model.forward(tiny(model={"positions": "sinusoidal", "generate": 0}, weights={}))
    pos = tr["pos"].value
    want = [[math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)] for p in range(2)]
    assert np.allclose(pos.floats(), want, rtol=0, atol=1e-15)
    assert str(pos.rows[1][2].to_sympy()) == "sin(1/100)"
    with pytest.raises(SpecError, match="expected an even d_model, got 5"):
        tiny(model={"positions": "sinusoidal"}, dims={"d_model": 5, "d_ff": 4, "heads": 1}, weights={})


def test_mixed_pre_and_post_layers_need_an_explicit_list_and_warn():
    with pytest.warns(UserWarning) as w:
        spec = tiny(model={"norm_positions": ["pre", "post"]})
    assert "Encoder 块：残差、归一化与前馈网络" in str(w[0].message) and MIXED_WARNING in str(w[0].message)
    assert [layer.options.norm_position for layer in spec.layers] == ["pre", "post"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny(model={"norm_positions": ["post", "post"]})


@pytest.mark.parametrize("change,field", [
    ({"model": {"vocab": ["a", True]}}, "model.vocab[1]"),
    ({"model": {"prompt": ["dog"]}}, "model.prompt[0]"),
    ({"model": {"layers": 99}}, "model.layers"),
    ({"model": {"positions": "rotary"}}, "model.positions"),
    ({"model": {"norm_positions": ["pre"]}}, "model.norm_positions"),
    ({"block": {"causal": False}}, "block.causal"),
    ({"dims": {"seq_len": 3, "d_model": 4, "d_ff": 8, "heads": 2}}, "dims.seq_len"),
    ({"weights": {"W_E": [[1, 2]]}}, "weights.W_E"),
    ({"weights": {"layers": [{"W_Q": [[1]]}]}}, "weights.layers[0].W_Q"),
    ({"weights": {"W_U": [[1]]}}, "weights.W_U"),
])
def test_bad_model_specs_name_the_field(change, field):
    with pytest.raises(SpecError) as e:
        tiny(**change)
    assert e.value.field == field, str(e.value)


def test_yaml_booleans_in_the_vocabulary_get_a_hint(tmp_path, capsys):
    p = tmp_path / "m.yaml"
    p.write_text("model: {vocab: [yes, no], prompt: [0]}\ndims: {d_model: 2, d_ff: 2, heads: 1}\n"
                 "random: {seed: 1}\n")
    assert cli.main(["forward", str(p)]) == 2
    err = capsys.readouterr().err
    assert "model.vocab[0]" in err and 'quote the token' in err


def test_the_size_guard_refuses_a_large_model_at_once(monkeypatch):
    def no_work(*a, **k):
        raise AssertionError("the guard must refuse before any layer is worked or drawn")
    monkeypatch.setattr(model.block, "Tracer", no_work)
    monkeypatch.setattr(model.block, "forward", no_work)
    # the loader refuses after the first layer, before the 23 others and the embedding are drawn
    drawn = []
    real_draw = model_spec.specmod.draw
    monkeypatch.setattr(model_spec.specmod, "draw", lambda seed, name, *a: drawn.append(name) or real_draw(seed, name, *a))
    with pytest.raises(SpecError, match="exact operations"):
        tiny(model={"layers": 24, "generate": 64}, dims={"d_model": 64, "d_ff": 256, "heads": 4})
    assert "W_E" not in drawn


@pytest.mark.parametrize("value, said", [("abc", "the text 'abc'"), ([4], "a list"),
                                          ("1e400", "the text '1e400'"), (4.0, "4.0"),
                                          (10**9, "in 1..512, got 1000000000")])
def test_every_model_dim_is_validated_before_anything_is_built(value, said):
    # int() ran first: 'abc', [4] and '1e400' were internal errors, 10**9 built a 10**9-wide row
    for key in ("d_model", "d_ff", "heads"):
        with pytest.raises(SpecError) as e:
            tiny(dims={"d_model": 4, "d_ff": 8, "heads": 2, key: value})
        assert e.value.where == f"dims.{key}" and said in e.value.message


def test_a_model_without_d_model_names_the_field():
    with pytest.raises(SpecError) as e:
        tiny(dims={"d_ff": 8, "heads": 2})
    assert e.value.where == "dims.d_model" and "missing" in e.value.message


def test_public_api_and_commands():
    tr = symblock.forward(symblock.load("tiny-gpt"))
    assert tr.names()[:3] == ["embed", "pos", "x"] and tr.names()[-1] == "gen2.next_token"


def test_block_only_commands_refuse_a_model_clearly(tmp_path, capsys):
    # (worksheet and check take models since the decoder preset: tests/sheets/test_worksheet_decoder.py;
    # derive since its model path: tests/calculus/test_derive_model.py)
    assert cli.main(["worksheet", "tiny-gpt", "--out", str(tmp_path / "w"), "--format", "ipynb"]) == 2
    assert "--format ipynb" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_gpt2_small_parameter_count():
    assert count_model(vocab=50257, d_model=768, heads=12, layers=12, d_ff=3072, context=1024).total == 124_439_808
    # untied: the head adds d·vocab
    assert count_model(vocab=50257, d_model=768, heads=12, layers=12, context=1024, tied=False).total \
        == 124_439_808 + 768 * 50257


def test_params_cli_counts_a_model(capsys):
    assert cli.main(["params", "--d-model", "768", "--heads", "12", "--layers", "12", "--vocab", "50257",
                     "--context", "1024"]) == 0
    assert "124,439,808" in capsys.readouterr().out
    assert cli.main(["params", "--d-model", "8", "--heads", "2", "--layers", "2"]) == 2


def test_a_token_with_a_lone_surrogate_is_refused_by_field():
    with pytest.raises(SpecError) as e:
        tiny(model={"vocab": ["the", "cat", "sat", "on", "m\ud800t"]})
    assert e.value.where == "model.vocab[4]" and "lone surrogate" in e.value.message
