"""The fast paths of loading and working a spec (issues 12, 13): spec numbers parsed without SymPy,
the rational snap's cheap candidate, integer rounding of balls. Each is checked against an
independent path: SymPy's own parser, `fractions`/`decimal` arithmetic, and Arb at high precision."""
import subprocess
import sys
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction

import pytest
import sympy
from flint import arb, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.parsing.sympy_parser import convert_xor, parse_expr, rationalize, standard_transformations

from symblock.engine import balls, block, exact, spec
from symblock.engine.matrix import ExactMatrix
from symblock.errors import SpecError

SYMPY_NAMES = {n: getattr(sympy, n) for n in ("sqrt", "exp", "E", "pi", "erf", "tanh", "Rational", "oo")}


def sympy_value(text: str):
    """What the spec format meant before: SymPy's parser with the transformations spec.py used."""
    return parse_expr(text, local_dict=dict(SYMPY_NAMES),
                      transformations=standard_transformations + (convert_xor, rationalize))


def parse(v, allow_inf=False):
    return spec.parse_exact(v, "s.yaml", "weights.W_Q[0][0]", allow_inf=allow_inf)


# ---------------------------------------------------------------- the parser

RATIONAL_FORMS = ["0", "3", "-3", "+3", " 7 ", "00", "1.25", "-0.5", ".5", "5.", "1e-5", "2.5E3", "-1e+2",
                  "1/2", "-7/3", "3/-2", "2^3", "2**-2", "(1/2)**3", "(-1)**3", "(-1)**2", "(-1)**0",
                  "1**(1/2)", "0**2", "Rational(1, 3)", "Rational(3)", "Rational(1.5, 2)", "1/3 + 1/6",
                  "2*(3-5)/4", "0.1 + 0.2", "-(1/2)", "--2", "10**400", "4**(1/2)", "(9/4)**(-1/2)",
                  "(2^2)^3", "2**2**3"]


@pytest.mark.parametrize("text", RATIONAL_FORMS)
def test_every_rational_form_gives_sympys_exact_value_as_a_fraction(text):
    got, want = parse(text), sympy_value(text)
    assert want.is_Rational and isinstance(got, Fraction)
    assert got == Fraction(int(want.p), int(want.q))


@pytest.mark.parametrize("text", ["sqrt(2)/2", "E/(1+E)", "exp(-1/2)", "erf(1)", "tanh(1/3)", "pi/4",
                                  "2**(1/2)", "E**2", "1/sqrt(3) + 1", "sqrt(8)", "2**(1/3)", "sin(10**(-1/4))"])
def test_irrational_forms_still_go_through_sympy(text):
    got = parse(text)
    assert sympy.simplify(got - sympy_value(text)) == 0 and not got.is_Rational


@pytest.mark.parametrize("value,message", [
    ("1/0", "finite real"), ("abc", "unknown name abc"), ("x", "unknown name x"), ("2(3)", "could not parse"),
    ("9^9^9", "too large"), ("1e999999999", "too large"), ("0x10", "unknown name x"), ("1j", "unknown name j"),
    ("", "expected a number"), ("sqrt(-1)", "finite real"), ("oo", "finite real"), ("-oo", "finite real"),
    ("(-8)**(1/3)", "positive rational base"), ("2**sqrt(2)", "exponent"), ("007", "could not parse"), ("1_000", "unknown name _"), ("07/2", "could not parse"), ("1/2/", "could not parse"), ("0**-1", "finite real"), (True, "boolean"),
    (None, "expected a number"), ([1], "expected a number"), (Decimal("NaN"), "finite"),
    ("1" * 501, "expected a number"), (10**4000, "too large"),
])
def test_refused_forms_name_the_file_and_field(value, message):
    with pytest.raises(SpecError, match=message) as e:
        parse(value)
    assert str(e.value).startswith("s.yaml: weights.W_Q[0][0]: ")


def test_minus_infinity_only_where_allowed():
    assert parse("-oo", allow_inf=True) is exact.NEG_INF
    assert parse(" - oo", allow_inf=True) is exact.NEG_INF
    with pytest.raises(SpecError, match="finite real"):
        parse("oo", allow_inf=True)


@settings(max_examples=300, deadline=None)
@given(st.fractions(), st.sampled_from(["ratio", "decimal", "Decimal", "float", "int"]))
def test_random_rationals_and_decimals_parse_exactly(q, how):
    if how == "ratio":
        text, want = f"{q.numerator}/{q.denominator}", q
    elif how in ("decimal", "Decimal"):
        d = Decimal(q.numerator) / Decimal(q.denominator)  # 28 digits: itself exact as written
        text, want = (str(d) if how == "decimal" else d), Fraction(d)
    elif how == "float":
        text = float(q)
        want = Fraction(repr(text))  # a float is read as its shortest repr, as written
    else:
        text, want = q.numerator, Fraction(q.numerator)
    got = parse(text)
    assert isinstance(got, Fraction) and got == want
    if isinstance(text, str):
        assert sympy_value(text) == sympy.Rational(want.numerator, want.denominator)


def test_a_spec_loads_and_works_forward_without_importing_sympy():
    code = ("import sys\nfrom symblock.engine import block, spec\nfrom symblock.exercises import generate\n"
            "t = block.forward(spec.load('pre-ln-causal-gelu'))\n"
            "v = generate.variant({'random': {'seed': 3, 'difficulty': 'easy'}}, 'x')\n"
            "print(t['output'].value.rows[0][0].decimal(3), 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[-1] == "False", out


def test_spec_matrices_read_like_sympy_matrices():
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2},
                           "inputs": {"X": [["1/2", "sqrt(2)/2"], [3, -1]]}, "random": {"seed": 1}})
    X = s.X
    assert isinstance(X, ExactMatrix) and X.shape == (2, 2) and (X.rows, X.cols) == (2, 2)
    assert X[0, 0] == Fraction(1, 2) and isinstance(X[0, 1], exact.Real) and X[1] == X[0, 1]
    want = sympy.Matrix([[sympy.Rational(1, 2), sympy.sqrt(2) / 2], [3, -1]])
    assert X == want and X.to_sympy() == want and sympy.sympify(X) == want
    assert X.T.to_sympy() == want.T and X[1, :].to_sympy() == want[1, :] and list(X)[2:] == [3, -1]
    assert [float(e) for e in X] == [float(e) for e in want]
    assert sympy.Matrix(X) == want and sympy.ImmutableMatrix(X).shape == (2, 2)
    import numpy as np
    assert np.array(X, dtype=float).tolist() == [[0.5, 2 ** 0.5 / 2], [3.0, -1.0]]
    y = block.forward(s)["x"].value
    assert y.to_sympy() == want  # the irrational entry reaches the engine exactly


# ---------------------------------------------------------------- the rational snap

def small_rationals():  # what balls.snap promises to recognise: |t| <= 10^7, denominator <= 10^4
    return st.one_of(st.fractions(min_value=-100, max_value=100, max_denominator=10**4),
                     st.fractions(min_value=-10**7, max_value=10**7, max_denominator=10**4))


@settings(max_examples=200, deadline=None)
@given(small_rationals())
def test_a_node_that_equals_a_simple_rational_is_snapped(t):
    s2, s3, s6 = (exact.sqrt(exact.real(n)) for n in (2, 3, 6))
    v = exact.real(t) * s2 * s3 / s6  # = t, though no algebra here sees it
    assert v.is_rational and Fraction(int(v.q.p), int(v.q.q)) == t


@pytest.mark.parametrize("k", [92, 400, 2000])  # e^-92 ≈ 1e-40, e^-400 ≈ 1e-174, e^-2000 ≈ 1e-869
@settings(max_examples=20, deadline=None)
@given(t=small_rationals())
def test_a_node_within_a_tiny_distance_of_a_simple_rational_is_not(k, t):
    tiny = exact.exp(exact.real(-k))
    for v in (exact.real(t) + tiny, exact.real(t) - tiny):
        assert not v.is_rational
        assert v.sign() == (1 if v.enclosure(1 << 13) > 0 else -1)


@pytest.mark.parametrize("bound", [1, 100, 10**7])
def test_the_candidate_finds_every_simple_rational(bound):
    """Against `fractions`: every p/q (q <= 10^4) is found from its float; the float pre-check
    (|x| < 100) loses none of them."""
    import random
    rng = random.Random(bound)
    for _ in range(20000):
        t = Fraction(rng.randint(-bound * 10**4, bound * 10**4), rng.randint(1, 10**4))
        if abs(t) <= bound:
            assert balls._candidate(float(t)) == (t.numerator, t.denominator), t


def test_the_candidate_is_the_rational_a_float_rounds_from():
    for p, q in [(1, 3), (-22, 7), (9999, 10**4), (10**7 // 7, 9), (-10**7 + 1, 9973), (0, 1), (5, 1)]:
        assert balls._candidate(p / q) == (p // (g := __import__("math").gcd(p, q)), q // g)
    assert balls._candidate(2 ** 0.5) is None and balls._candidate(1 / 10007) is None


# ---------------------------------------------------------------- decimals of a ball

def oracle(b: arb, places: int) -> tuple[Decimal, Decimal]:
    """Both ends of the ball to `places` decimals, half away from zero, in Decimal arithmetic."""
    ctx = Context(prec=5000, rounding=ROUND_HALF_UP)
    (m1, e1), (m2, e2) = ((int(x) for x in v.man_exp()) for v in (b.mid(), b.rad()))
    mid = ctx.multiply(Decimal(m1), ctx.power(Decimal(2), e1))
    rad = ctx.multiply(Decimal(m2), ctx.power(Decimal(2), e2))
    q = Decimal(1).scaleb(-places)
    return tuple(ctx.quantize(ctx.add(mid, s * rad), q) for s in (-1, 1))


@settings(max_examples=300, deadline=None)
@given(st.integers(-10**30, 10**30), st.integers(-200, 60), st.integers(0, 10**6), st.integers(-260, 0),
       st.integers(0, 12))
def test_ball_ends_round_like_decimal_arithmetic(man, exp, rman, rexp, places):
    b = arb(fmpq(man) * fmpq(2) ** exp if exp >= 0 else fmpq(man, 2 ** -exp),
            fmpq(rman, 2 ** -rexp))
    assert balls.round_ends(b, places) == oracle(b, places)


@settings(max_examples=300, deadline=None)
@given(st.fractions(), st.integers(0, 12))
def test_rationals_round_half_away_from_zero(q, places):
    ties = q.limit_denominator(10**places * 2) if places < 6 else q  # reach exact ties too
    for v in (q, ties, -ties):
        s = abs(v) * 10**places
        n = int(s) + (1 if s - int(s) >= Fraction(1, 2) else 0)
        want = Decimal(n if v >= 0 else -n).scaleb(-places, Context(prec=10**4))
        assert exact.real(v).decimal(places) == want


def test_forward_and_check_commands_never_import_sympy(tmp_path):
    """`symblock forward` (table and --json) and `symblock check` on a block: no SymPy import."""
    import yaml
    trace = block.forward(spec.load("pre-ln-causal-gelu"))
    steps = {s.name: [[float(e.decimal(3)) for e in row] for row in s.value.rows]
             for s in trace if s.name in ("attn.q", "norm1.mean", "output")}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"decimals": 3, "steps": steps}))
    code = ("import sys, contextlib, io\nfrom symblock.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    codes = [main(['forward', 'pre-ln-causal-gelu']), main(['forward', '--json', 'pre-ln-causal-gelu']),\n"
            f"             main(['check', 'pre-ln-causal-gelu', {str(tmp_path / 'a.yaml')!r}])]\n"
            "print(codes, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[-1] == "False" and out.startswith("[0, 0, 0]"), out





def test_everyday_worksheet_never_imports_sympy(tmp_path):
    """The everyday `symblock worksheet` (the default block, LaTeX and Markdown) prints its
    rational numbers and ε from the fmpq values themselves: importing SymPy would cost it ~0.3 s."""
    code = ("import sys, contextlib, io\nfrom symblock.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    code = main(['worksheet', '--out', {str(tmp_path / 'a')!r}])\n"
            "print(code, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "False"], out
    assert r"\sigma_{1} &= \sqrt{\sigma^2_{1}} = \sqrt{0.811801} = 0.901" in (tmp_path / "a" / "key.md").read_text()


def test_a_rational_eps_is_printed_as_sympy_prints_it(tmp_path):
    from symblock.engine.sources import example_text
    from symblock.sheets.numbers import number_tex
    for q in (Fraction(1, 100000), Fraction(0), Fraction(3), Fraction(22, 7)):
        assert number_tex(q) == sympy.latex(sympy.Rational(q.numerator, q.denominator))
    (tmp_path / "s.yaml").write_text(example_text("seed-post-ln").replace("eps: 0", "eps: 1e-5"))
    from symblock.cli import main
    assert main(["worksheet", str(tmp_path / "s.yaml"), "--format", "markdown", "--out", str(tmp_path / "a")]) == 0
    key = (tmp_path / "a" / "key.md").read_text()   # in the conventions and in each σ row
    assert r"\varepsilon = 10^{-5}" in key and r"\sqrt{\sigma^2_{1} + 10^{-5}}" in key   # a power of ten as one
