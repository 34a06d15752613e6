"""The step-name grammar, read in one place (engine/names.py): each prefix and part lands in its
field, whatever else the name carries."""
import pytest

from symblock.engine import names


@pytest.mark.parametrize("name, fields", [
    ("attn.h1.scores", dict(base="attn.h1.scores", kind="scores", head=1, layer=None, gen=0, batch=None)),
    ("attn.h0.out", dict(kind="head_out", head=0)),
    ("attn.out", dict(kind="attn_out", head=None)),
    ("b2.norm1.std", dict(batch=2, base="norm1.std", kind="std", norm="norm1", stat="std")),
    ("norm_final", dict(kind="norm", norm="norm_final", stat=None)),
    ("norm2.rms", dict(kind="rms", norm="norm2", stat="rms")),
    ("gen3.layer1.attn.h0.weights", dict(gen=3, layer=1, head=0, kind="weights",
                                         base="attn.h0.weights")),
    ("gen1.layer0.cache.k", dict(gen=1, layer=0, kind="cache_k", base="cache.k")),
    ("gen2.next_token", dict(gen=2, layer=None, kind="next_token")),
    ("layer0.resid1", dict(layer=0, kind="resid")),
    ("enc.layer1.attn.h0.weights", dict(encoder=True, layer=1, head=0, kind="weights", prefix="enc.layer1.")),
    ("enc.norm_final.std", dict(encoder=True, layer=None, kind="std", norm="norm_final")),
    ("gen1.layer0.cross.h1.masked", dict(gen=1, layer=0, head=1, kind="cross_masked", encoder=False,
                                         head_prefix="gen1.layer0.cross.h1")),
    ("layer0.norm3.var", dict(kind="var", norm="norm3")),
    ("norm_embed", dict(kind="norm", norm="norm_embed")),
    ("attn.h0.weights.dropped", dict(dropped=True, kind="weights", base="attn.h0.weights")),
    ("grad.attn.q", dict(grad=True, kind="q", base="attn.q")),
    ("ffn.gate", dict(kind="gate")),
    ("W_Q", dict(kind="other", base="W_Q")),
])
def test_each_part_of_a_name_lands_in_its_field(name, fields):
    step = names.parse(name)
    for key, want in fields.items():
        assert getattr(step, key) == want, (name, key)


def test_a_name_rebuilds_from_its_parts_and_siblings_keep_the_prefixes():
    step = names.parse("gen2.layer1.attn.h0.masked")
    assert step.prefix == "gen2.layer1."
    assert names.name_of(step.base, gen=step.gen, layer=step.layer) == step.full
    assert step.head_step("scores") == "gen2.layer1.attn.h0.scores"
    assert step.sibling("attn.v") == "gen2.layer1.attn.v"
    assert names.parse("b1.x").prefix == "b1."


def test_a_norm_statistic_needs_a_known_statistic():
    assert names.parse("norm1.mean").stat == "mean"
    assert names.parse("norm1.gamma").kind == "other"   # a parameter's part, not a statistic
    assert names.parse("gen1.layer0.attn.h1.masked").part == "masked"


def test_a_step_knows_the_part_of_the_block_it_belongs_to():
    assert names.parse("b1.attn.h0.weights.dropped").section == "attn"
    assert names.parse("gen1.layer0.ffn.act").section == "ffn"
    assert names.parse("norm2.var").section == "norm2"
    assert names.parse("gen1.layer0.cache.v").section == "cache"
