"""`preset:D`, the SPEC of a command given --difficulty D and no spec: the difficulty's own block,
with an ID (`preset-D.SEED`) that rebuilds the same variant without any file."""
from __future__ import annotations

import pytest

from symblock.errors import UsageError
from symblock.exercises import generate, spec_arg, variant, variants
from symblock.options import DEFAULT_EXAMPLE


def test_default_spec_follows_the_difficulty_flag():
    assert spec_arg.default_spec({"difficulty": "hard"}) == "preset:hard"
    assert spec_arg.default_spec({}) == spec_arg.default_spec(None) == DEFAULT_EXAMPLE
    assert spec_arg.difficulty_of("preset:nope") is None and spec_arg.difficulty_of("seed-post-ln") is None
    assert spec_arg.difficulty_of("preset:hard") == spec_arg.difficulty_of("preset-hard", "-") == "hard"


def test_preset_id_rebuilds_the_variant_the_preset_draws():
    data, source = variants.read("preset:hard")
    assert source == "preset:hard" and data["random"] == {"seed": 1, "difficulty": "hard"}
    assert data["title"]["zh"] == "练习（困难）"
    assert variants.spec_token("preset:hard") == "preset-hard"
    assert variants.parse_id("preset-hard.4", None) == ("preset:hard", 4)
    v = variant.rebuild("preset-hard.4", None)
    spec, trace = v.spec, v.trace
    want = generate.variant({"random": {"seed": 4, "difficulty": "hard"}}, "t")
    assert spec.dims == want.spec.dims and spec.dims.seq_len == 3 and spec.dims.d_model == 4
    assert [[str(e) for e in r] for r in trace["output"].value.rows] == \
        [[str(e) for e in r] for r in want.trace["output"].value.rows]
    with pytest.raises(UsageError, match="no built-in example 'preset-harder'"):
        variants.parse_id("preset-harder.4", None)
