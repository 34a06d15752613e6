"""symblock derive: formulas from the engine on symbols, simplified; facts verified by SymPy."""
import pytest
import sympy

from symblock import derive, spec
from symblock.cli import main


@pytest.fixture(scope="module")
def tiny():
    return derive.derive()


def test_layernorm_of_2d_rows_is_a_sign(tiny):
    r = {(i, j): sympy.Symbol(f"r^{{(1)}}_{{{i}{j}}}", real=True) for i in (1, 2) for j in (1, 2)}
    rows = tiny["norm1"].entries
    for i in (1, 2):
        assert rows[i - 1][0] == sympy.sign(r[i, 1] - r[i, 2])
        assert rows[i - 1][1] == -sympy.sign(r[i, 1] - r[i, 2])
    assert tiny["norm1"].over == "R_1"


def test_steps_are_the_blocks_in_order_and_agree_with_numbers(tiny):
    from symblock import block
    s = spec.from_mapping(derive.TINY)
    assert list(tiny) == block.forward(s).names()
    # attn.q in symbols: Q = X W^Q entrywise
    x = sympy.Matrix(2, 2, lambda i, j: sympy.Symbol(f"x_{{{i + 1}{j + 1}}}", real=True))
    w = sympy.Matrix(2, 2, lambda i, j: sympy.Symbol(f"w^{{Q}}_{{{i + 1}{j + 1}}}", real=True))
    assert sympy.expand(sympy.Matrix(tiny["attn.q"].entries) - x * w) == sympy.zeros(2, 2)
    # residual in the symbols of its two summands
    assert tiny["resid2"].entries[0][0] == sympy.Symbol("h^{(1)}_{11}", real=True) + sympy.Symbol("f_{11}", real=True)


def test_facts_are_verified():
    fs = derive.facts()
    assert {f.name for f in fs} >= {"layernorm_2d", "softmax_shift", "causal_first_row",
                                    "layernorm_mean_var", "softmax_sums_to_one", "scaling_sqrt_dk"}
    assert all(f.verified for f in fs)


def test_a_false_fact_would_not_verify():
    # the 2-d LayerNorm check must be able to fail: a row of 3 is not ±1
    a, b, c = sympy.symbols("a b c", real=True)
    y = derive._engine_norm([a, b, c])
    t = sympy.Symbol("t", positive=True)
    assert sympy.simplify(y[0].subs({a: b + t, c: b}) - sympy.sign(t)) != 0


def test_cli_formats_and_limits(capsys):
    assert main(["derive", "--step", "norm1", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "### `norm1`" in out and "$$" in out and r"\operatorname{sign}" in out
    assert main(["derive", "--step", "attn.q", "--format", "latex"]) == 0
    assert r"\begin{bmatrix}" in capsys.readouterr().out
    assert main(["derive", "--facts"]) == 0
    assert "verified by SymPy" in capsys.readouterr().out
    assert main(["derive", "--step", "nope"]) == 2
    assert main(["derive", "pre-ln-causal-gelu"]) == 2   # 3 × 4 symbols: over the size limit
    assert "limited to seq_len·d_model <= 8" in capsys.readouterr().err
    assert main(["derive", "seed-post-ln"]) == 2         # a given step has no general formula
