"""Bad input: one clear message naming the file, the field and what was expected; exit 2."""
import subprocess
import sys
import textwrap

import pytest

from symblock.engine import spec
from symblock.cli import main

GOOD = textwrap.dedent("""\
    dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
    weights:
      W_Q: [[1, 0], [0, 1]]
      W_K: [[1, 0], [0, 1]]
      W_V: [[1, 0], [0, 1]]
      W_O: [[1, 0], [0, 1]]
      W_1: [[1, 0], [0, 1]]
      W_2: [[1, 0], [0, 1]]
    inputs:
      X: [[1, 0], [0, 2]]
    """)


def run_cli(cli, spec_file, text, name="spec.yaml"):
    """`symblock forward` on the spec `text`: (exit code, stderr, the file's path)."""
    path = spec_file(text, name)
    code, _, err = cli("forward", path)
    return code, err, str(path)


def test_good_spec_loads(spec_file, cli):
    code, err, _ = run_cli(cli, spec_file, GOOD)
    assert code == 0 and err == ""


@pytest.mark.parametrize("edit, field, expected", [
    (("W_Q: [[1, 0], [0, 1]]", "W_Q: [[1, 0], [0, abc]]"), "weights.W_Q[1][1]", "expected a number"),
    (("W_Q: [[1, 0], [0, 1]]", "W_Q: [[1, 0, 0], [0, 1, 0]]"), "weights.W_Q", "expected shape 2×2, got 2×3"),
    (("W_Q: [[1, 0], [0, 1]]", "W_Q: [[1, 0], [0]]"), "weights.W_Q", "different lengths"),
    (("W_Q: [[1, 0], [0, 1]]", "W_Q: 5"), "weights.W_Q", "expected a matrix"),
    (("W_Q: [[1, 0], [0, 1]]", "W_Q: [[1, 0], [0, true]]"), "weights.W_Q[1][1]", "got a boolean"),
    (("W_Q: [[1, 0], [0, 1]]", "W_Q: [[1, 0], [0, \"foo(2)\"]]"), "weights.W_Q[1][1]", "unknown name foo"),
    (("heads: 1", "heads: 3"), "dims.heads", "divisor of d_model = 2, got 3"),
    (("heads: 1", "heads: 0"), "dims.heads", "whole number in 1.."),
    (("heads: 1", "heads: 1.5"), "dims.heads", "expected a whole number, got 1.5"),   # as written, no repr
    (("dims:", "colour: red\ndims:"), "colour", "unknown key; expected one of title"),
    (("W_Q:", "W_Z: [[1]]\n  W_Q:"), "weights.W_Z", "unknown key"),
    (("inputs:", "block: {activation: swish}\ninputs:"), "block.activation",
     "expected one of relu, gelu, gelu_tanh, silu, swiglu, geglu, got the text 'swish'"),
    (("inputs:", "block: {norm: batchnorm}\ninputs:"), "block.norm", "expected one of layernorm, rmsnorm"),
    (("inputs:", "block: {causal: maybe}\ninputs:"), "block.causal", "expected true or false"),
    (("inputs:", "block: {eps: -1}\ninputs:"), "block.eps", "ε >= 0"),
    (("inputs:", "block: {final_norm: true}\ninputs:"), "block.final_norm", "only a Pre-LN block"),
    (("inputs:", "given: {attn.nope: [[1, 2], [3, 4]]}\ninputs:"), "given.attn.nope", "no such step"),
    (("inputs:", "given: {attn.out: [[1, 2]]}\ninputs:"), "given.attn.out", "expected shape 2×2, got 1×2"),
    (("  W_1: [[1, 0], [0, 1]]\n", ""), "weights.W_1", "missing; expected a 2×2 matrix"),
    (("X: [[1, 0], [0, 2]]", "X: [[1, 1], [2, 2]]"), "norm1.var[0]", "row 1 of the norm1 input has zero variance and ε = 0"),
    (("inputs:", "layout: sideways\ninputs:"), "layout", "expected math or torch"),
])
def test_each_bad_field_is_named(spec_file, cli, edit, field, expected):
    old, new = edit
    assert old in GOOD
    code, err, path = run_cli(cli, spec_file, GOOD.replace(old, new, 1))
    assert code == 2
    assert err.startswith(f"symblock: error: {path}: {field}:"), err
    assert expected in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_bad_w1_is_named_when_d_ff_is_read_from_it(spec_file, cli):
    """Without dims.d_ff, d_ff comes from W_1's shape: a W_1 that is no matrix is the field at fault."""
    text = GOOD.replace("d_ff: 2, ", "").replace("W_1: [[1, 0], [0, 1]]", 'W_1: "not a matrix"')
    code, err, path = run_cli(cli, spec_file, text)
    assert code == 2 and err.startswith(f"symblock: error: {path}: weights.W_1: expected a matrix"), err
    assert "dims.d_ff is read from its shape" in err


@pytest.mark.parametrize("text, name, expected", [
    ("dims: {seq_len: [1, 2\n", "bad.yaml", "line 2: malformed YAML: expected ',' or ']'"),
    ('{"dims": {"seq_len": 2,}}', "bad.json", "line 1: malformed JSON"),
    ("", "empty.yaml", "the file is empty"),
    ("   \n", "blank.yaml", "the file is empty"),
    ("- 1\n- 2\n", "list.yaml", "expected a mapping at the top level"),
])
def test_unreadable_files(spec_file, cli, text, name, expected):
    code, err, path = run_cli(cli, spec_file, text, name=name)
    assert code == 2
    assert err.startswith(f"symblock: error: {path}: ") and expected in err


def test_missing_path(tmp_path, capsys):
    path = tmp_path / "nope.yaml"
    assert main(["forward", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: no such file" in err and "symblock examples" in err


def test_rmsnorm_zero_row_and_eps_cures_it(spec_file, cli):
    text = GOOD.replace("inputs:", "block: {norm: rmsnorm, norm_position: pre}\ninputs:").replace("[[1, 0], [0, 2]]", "[[0, 0], [0, 2]]")
    code, err, path = run_cli(cli, spec_file, text)
    assert code == 2 and "norm1.ms[0]" in err and "zero mean square" in err
    code, err, _ = run_cli(cli, spec_file, text.replace("{norm: rmsnorm,", "{norm: rmsnorm, eps: \"1e-5\","))
    assert code == 0, err


def test_json_spec_same_as_yaml(tmp_path):
    import json
    import yaml
    data = yaml.safe_load(GOOD)
    (tmp_path / "s.json").write_text(json.dumps(data))
    (tmp_path / "s.yaml").write_text(GOOD)
    a, b = spec.load(tmp_path / "s.json"), spec.load(tmp_path / "s.yaml")
    assert a.params == b.params and a.X == b.X and a.dims == b.dims


def test_decimals_are_exact_as_written(tmp_path):
    text = GOOD.replace("X: [[1, 0], [0, 2]]", "X: [[0.1, 0.2], [1.401, \"1/3\"]]")
    for name, body in (("s.yaml", text), ("s.json", None)):
        if body is None:
            body = '{"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2}, "inputs": {"X": [[0.1, 0.2], [1.401, "1/3"]]}, "random": {"seed": 1}}'
        (tmp_path / name).write_text(body)
        X = spec.load(tmp_path / name).X
        import sympy
        assert X[0, 0] == sympy.Rational(1, 10) and X[1, 0] == sympy.Rational(1401, 1000)
        assert X[1, 1] == sympy.Rational(1, 3)


def test_exact_entry_strings():
    import sympy
    p = lambda s: spec.parse_exact(s, "f", "w")  # noqa: E731
    assert p("1e-5") == sympy.Rational(1, 100000)
    assert p("sqrt(2)/2") == sympy.sqrt(2) / 2
    assert p("2^3") == 8  # ^ is a power, as people write it
    assert p("E/(1+E)") == sympy.E / (1 + sympy.E)
    with pytest.raises(spec.SpecError, match="finite real"):
        p("sqrt(-1)")
    with pytest.raises(spec.SpecError, match="unknown name"):
        p("__import__('os')")


def test_torch_layout_transposes_weights(tmp_path):
    math_spec = spec.from_mapping({"dims": {"seq_len": 1, "d_model": 2, "d_ff": 3},
                                   "weights": {"W_1": [[1, 2, 3], [4, 5, 6]]},
                                   "inputs": {"X": [[1, 2]]}, "random": {"seed": 1}})
    torch_spec = spec.from_mapping({"layout": "torch", "dims": {"seq_len": 1, "d_model": 2, "d_ff": 3},
                                    "weights": {"W_1": [[1, 4], [2, 5], [3, 6]]},
                                    "inputs": {"X": [[1, 2]]}, "random": {"seed": 1}})
    assert math_spec.params["W_1"] == torch_spec.params["W_1"]
    with pytest.raises(spec.SpecError, match=r"weights\.W_1: expected shape 3×2, got 2×3"):
        spec.from_mapping({"layout": "torch", "dims": {"seq_len": 1, "d_model": 2, "d_ff": 3},
                           "weights": {"W_1": [[1, 2, 3], [4, 5, 6]]}, "inputs": {"X": [[1, 2]]},
                           "random": {"seed": 1}})


def test_random_fill_is_reproducible_and_independent_per_tensor():
    base = {"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2}, "random": {"seed": 5, "low": -3, "high": 3}}
    a, b = spec.from_mapping(base), spec.from_mapping(base)
    assert a.params == b.params and a.X == b.X
    entries = [e for m in a.params.values() for e in m if m is not a.params.get("ln1.gamma")]
    assert all(-3 <= e <= 3 and e.denominator == 1 for e in entries)
    pinned = spec.from_mapping({**base, "weights": {"W_Q": [[9, 9], [9, 9]]}})
    assert pinned.params["W_K"] == a.params["W_K"] and pinned.params["W_Q"] != a.params["W_Q"]
    other = spec.from_mapping({**base, "random": {"seed": 6, "low": -3, "high": 3}})
    assert other.params != a.params


def test_given_step_lets_weights_be_left_out():
    s = spec.load("seed-post-ln")
    assert "W_Q" not in s.params and "W_1" in s.params


def test_cli_bad_input_no_traceback_subprocess(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("heads: 1", "heads: 3"))
    r = subprocess.run([sys.executable, "-m", "symblock", "forward", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "dims.heads" in r.stderr and r.stdout == ""


def test_size_limit_refuses_up_front(capsys, tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("dims: {seq_len: 64, d_model: 128, d_ff: 256, heads: 4}\nrandom: {seed: 1}\n")  # ~10.9 M units
    assert main(["forward", str(big)]) == 2
    err = capsys.readouterr().err
    assert "dims: this block needs about" in err and "limit of 6,000,000 (about 10 s of work)" in err and "--max-cost" in err


def test_torch_layout_one_row_weight_is_a_matrix_not_a_vector():
    """d_model = 1: W_1 in torch layout is (d_ff, 1) and must be transposed, not read as a list."""
    s = spec.from_mapping({"layout": "torch", "dims": {"seq_len": 1, "d_model": 1, "d_ff": 2},
                           "weights": {"W_1": [[2], [3]]}, "inputs": {"X": [[1]]},
                           "block": {"eps": 1}, "random": {"seed": 1}})
    import sympy
    assert s.params["W_1"] == sympy.Matrix([[2, 3]])


@pytest.mark.parametrize("entry", ['"' + "9" * 100_000 + '"', "1." + "9" * 100_000, '"1/' + "9" * 100_000 + '"'])
def test_a_long_entry_is_quoted_as_a_short_excerpt(spec_file, cli, entry):
    # the message repeated the whole 100,000-digit entry back
    code, err, _ = run_cli(cli, spec_file, GOOD.replace("X: [[1, 0], [0, 2]]", f"X: [[1, 0], [0, {entry}]]"))
    assert code == 2 and "inputs.X[1][1]" in err and len(err) < 500


def test_a_long_unknown_key_is_named_by_an_excerpt(spec_file, cli):
    code, err, _ = run_cli(cli, spec_file, GOOD + "? " + "k" * 10_000 + "\n: 1\n")
    assert code == 2 and "unknown key" in err and len(err) < 500


@pytest.mark.parametrize("title", ['{en: a, zh: "\\ud800"}', '"a\\udc80b"'])
def test_a_lone_surrogate_in_a_title_is_refused_by_field(tmp_path, capsys, title):
    # worksheet crashed writing the sheet (UnicodeEncodeError, exit 3)
    path = tmp_path / "spec.yaml"
    path.write_text(f"title: {title}\n" + GOOD, encoding="utf-8")
    code = main(["worksheet", str(path), "--lang", "zh", "--out", str(tmp_path / "w")])
    err = capsys.readouterr().err
    assert code == 2 and "title" in err and "lone surrogate" in err and "internal error" not in err
    assert not (tmp_path / "w").exists()


def test_a_spec_name_over_the_systems_limit_is_bad_input(tmp_path, capsys):
    # os.stat raised ENAMETOOLONG: exit 3
    code = main(["forward", str(tmp_path / ("a" * 300 + ".yaml"))])
    err = capsys.readouterr().err
    assert code == 2 and "File name too long" in err and "internal error" not in err and len(err) < 600


@pytest.mark.parametrize("layout, w1, said", [
    ("", "[[1, 0], [0, 1], [1, -1]]", "weights.W_1: expected shape 2×3, got 3×2, its transpose: in layout: math "
                                      "(the default) W is (in, out), for y = x W; a matrix as nn.Linear stores it, "
                                      "(out, in), needs `layout: torch`"),
    ("layout: torch\n", "[[1, 0, 1], [0, 1, -1]]", "weights.W_1: expected shape 3×2, got 2×3, its transpose: with "
                                                   "layout: torch, W is written as nn.Linear stores it, (out, in)"),
    ("", "[[1, 0], [0, 1]]", "weights.W_1: expected shape 2×3, got 2×2"),   # no transpose: nothing more to say
])
def test_a_weight_written_in_the_other_layout_says_so(cli, spec_file, layout, w1, said):
    text = spec.example_text("seed-post-ln").replace("W_1: [[1, 0, 1], [0, 1, -1]]", f"W_1: {w1}")
    path = spec_file(layout + text)
    code, _, err = cli("forward", path)
    assert code == 2 and err == f"symblock: error: {path}: {said}\n", err
