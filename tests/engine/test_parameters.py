"""The parameter-name grammar, read in one place (engine/parameters.py): each prefix and part lands
in its field, and what a parameter is agrees with the shapes the engine gives it."""
import pytest

from symblock.engine import parameters
from symblock.engine.steps import Dims, Options, param_names, param_shape


@pytest.mark.parametrize("name, fields", [
    ("W_Q", dict(base="W_Q", kind="weight", sub="Q", norm=None, sublayer="attn", vector=False, linear=True)),
    ("b_O", dict(kind="bias", sub="O", sublayer="attn", vector=True, linear=True)),
    ("W_3", dict(kind="weight", sub="3", sublayer="ffn")),
    ("b_2", dict(kind="bias", sub="2", sublayer="ffn", vector=True)),
    ("ln1.gamma", dict(base="ln1.gamma", kind="gamma", norm="ln1", sub=None, sublayer="norm", vector=True,
                       linear=False)),
    ("ln_final.beta", dict(kind="beta", norm="ln_final", sublayer="norm")),
    ("W_E", dict(kind="weight", sub="E", sublayer="embed")),
    ("W_U", dict(kind="weight", sub="U", sublayer="head")),
    ("X", dict(kind="input", batch=None, sublayer=None, vector=False, prefix="")),
    ("b1.X", dict(kind="input", batch=1, base="X", prefix="b1.")),
    ("grad.b_1", dict(grad=True, kind="bias", sub="1", batch=None)),     # a bias, not sequence 1
    ("grad.b0.X", dict(grad=True, kind="input", batch=0)),
    ("layer1.W_K", dict(layer=1, kind="weight", sub="K", prefix="layer1.")),
    ("grad.layer0.ln2.gamma", dict(grad=True, layer=0, kind="gamma", norm="ln2", prefix="layer0.")),
    ("cross.W_Q", dict(base="W_Q", kind="weight", sub="Q", cross=True, sublayer="cross", prefix="cross.")),
    ("cross.b_O", dict(kind="bias", sub="O", cross=True, sublayer="cross", vector=True)),
    ("grad.layer1.cross.W_V", dict(grad=True, layer=1, kind="weight", sub="V", cross=True,
                                   prefix="layer1.cross.")),
    ("W_K", dict(cross=False, sublayer="attn")),
    ("enc.layer0.W_Q", dict(encoder=True, layer=0, kind="weight", sub="Q", prefix="enc.layer0.")),
    ("grad.enc.ln_final.gamma", dict(grad=True, encoder=True, layer=None, kind="gamma", norm="ln_final")),
    ("ln_final.beta", dict(encoder=False)),
    ("M", dict(kind="memory", sublayer=None, vector=False, prefix="")),
])
def test_each_part_of_a_parameter_name_lands_in_its_field(name, fields):
    p = parameters.parse(name)
    assert p.full == name
    for key, want in fields.items():
        assert getattr(p, key) == want, (name, key)


@pytest.mark.parametrize("name", ["attn.q", "b1.attn.q", "norm1.mean", "ln1.mean", "W", "Wq", "x", "dropout.masks.x",
                                  "cross.q", "cross.W", "cross.W_1", "cross.ln1.gamma", "cross.h0.scores"])
def test_anything_else_is_no_parameter(name):
    assert parameters.parse(name).kind == "other"


def test_vectors_are_the_parameters_the_engine_shapes_as_one_row():
    """`vector` agrees with steps.param_shape: biases, γ and β are 1 × n, weights are not."""
    dims = Dims(seq_len=2, d_model=3, d_ff=4, heads=2, d_k=2, d_v=2)
    opts = Options(norm_position="pre", final_norm=True, activation="swiglu")
    names = param_names(opts)
    assert {"W_3", "ln_final.beta"} <= set(names)
    for name in names:
        rows = param_shape(name, dims)[0]
        assert parameters.parse(name).vector == (rows == 1), name


def test_every_cross_attention_weight_the_engine_reads_is_a_cross_parameter():
    """steps.param_names of a decoder layer: its cross.* names parse as the cross-attention's
    weights and biases, with the subscripts of the self-attention's."""
    opts = Options(norm_position="post", cross_attention=True)
    cross = [n for n in param_names(opts) if n.startswith("cross.")]
    assert len(cross) == 8
    for name in cross:
        p = parameters.parse(name)
        assert p.cross and p.sublayer == "cross" and p.linear and p.prefix + p.base == name
        assert parameters.parse(p.base).sublayer == "attn"


def test_a_norm_step_names_its_parameters_section():
    """of_norm agrees with the step graph: the norm step reads its section's γ."""
    from symblock.engine.steps import step_inputs
    dims = Dims(seq_len=2, d_model=3, d_ff=4, heads=1)
    graph = step_inputs(dims, Options(norm_position="pre", final_norm=True))
    for norm in ("norm1", "norm2", "norm_final"):
        assert f"{parameters.of_norm(norm)}.gamma" in graph[norm]
    assert parameters.of_norm("norm3") == "ln3"
    with pytest.raises(ValueError):
        parameters.of_norm("norm1.std")
