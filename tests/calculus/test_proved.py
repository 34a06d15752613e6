"""The proofs stored with the release (symblock/calculus/proved.json) are made again here: every
fact proved by SymPy now and the tiny block derived now must give the store byte for byte, so a
stale or hand-edited store turns this red. `derive --facts` and `derive --step` of the tiny block
read the store without importing SymPy; `--prove` proves them now and prints the same."""
from __future__ import annotations

import json
import subprocess
import sys

import sympy

from symblock.calculus import proved


def test_the_stored_proofs_are_proved_again_and_match():
    again = proved.build()   # SymPy, now: raises if a fact no longer proves
    store = json.loads(proved.STORE.read_text(encoding="utf-8"))
    assert again == store, "the stored proofs are stale: run python -m symblock.calculus.proved"
    names = {f["name"] for f in store["facts"]}
    assert {"rope_relative", "gqa_repeated_mha", "online_softmax_tiles"} <= names


def test_build_refuses_to_store_an_unproved_fact(monkeypatch):
    from symblock.calculus import derive
    real = derive.facts
    monkeypatch.setattr(derive, "facts", lambda: [f if f.name != "softmax_shift" else
                                                  derive.Fact(f.name, f.statement, f.latex, False, f.how)
                                                  for f in real()])
    try:
        proved.build()
    except AssertionError as e:
        assert "not proved, so not stored: softmax_shift" in str(e)
    else:
        raise AssertionError("an unproved fact was stored")


CHILD = """
import sys
from symblock.cli import main
code = main(sys.argv[1:])
assert "sympy" not in sys.modules, "derive imported SymPy"
sys.exit(code)
"""


def _run(*argv):
    return subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=False)


def test_derive_answers_from_the_store_without_sympy_and_prove_gives_the_same(capsys):
    from symblock.cli import main
    for argv in (["derive", "--facts"], ["derive", "--step", "norm1.std"],
                 ["derive", "--step", "attn.h0.weights", "--format", "latex"]):
        fast = _run(*argv)
        assert fast.returncode == 0, fast.stderr
        assert main([*argv, "--prove"]) == 0
        assert capsys.readouterr().out == fast.stdout, argv
    facts = _run("derive", "--facts").stdout
    assert "■ online_softmax_tiles:" in facts and "■ rope_relative:" in facts and "■ gqa_repeated_mha:" in facts


def test_the_stored_layernorm_of_a_2d_row_is_the_sign_derived_by_hand():
    """LN([a, b]) = (a − b)/|a − b| by hand: the stored text of norm1 prints the sign form."""
    text = proved.tiny("norm1", "text")
    assert "(1,1) = sign(r^{(1)}_{11} - r^{(1)}_{12})" in text
    assert proved.tiny("nope", "text") is None


def test_text_entries_are_labelled_from_1_as_their_subscripts():
    """derive's text names entry (i,j) by row and column from 1, as the sheets and the symbols'
    own subscripts do: X's entry (2,1) is x_21, not [1][0]."""
    import re
    text = proved.tiny("x", "text")
    entries = re.findall(r"^    \((\d),(\d)\) = x_\{(\d)(\d)\}$", text, flags=re.M)
    assert len(entries) == 4 and all((i, j) == (a, b) for i, j, a, b in entries), text
    assert "[0]" not in proved.tiny("", "text")


def test_forward_of_one_step_labels_its_entries_from_1(cli):
    """The one-entry-a-line view of `forward --step`: a causal head's first row attends to itself
    only (weights 1, 0, 0, worked by hand), labelled (1,1), (1,2), (1,3); the last entry is (3,3)."""
    out = cli("forward", "pre-ln-causal-gelu", "--step", "attn.h0.weights").out
    assert "(1,1) = 1  ≈ 1.0000" in out and "(1,2) = 0  ≈ 0.0000" in out and "(1,3) = 0  ≈ 0.0000" in out
    assert "(3,3) = " in out and "(0," not in out and "[0][" not in out


def test_rope_as_a_formula_keeps_cos_and_sin_exact(cli, spec_file):
    """derive --step attn.q_rot: row 2 (position 1) of Q turned by angle 1 (d_k = 2, pair (0, 1)):
    q'_21 = q_21 cos 1 − q_22 sin 1, q'_22 = q_21 sin 1 + q_22 cos 1, by hand; no float anywhere."""
    path = spec_file("dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}\n"
                     "block: {norm_position: pre, norm: rmsnorm, rope: true, causal: true}\nrandom: {seed: 1}\n")
    code, out, err = cli("derive", path, "--step", "attn.q_rot")
    assert code == 0, err
    q21, q22 = sympy.symbols("q21 q22", real=True)
    rows = dict(line.strip().split(" = ", 1) for line in out.splitlines() if line.strip().startswith("("))

    def read(text):
        return sympy.sympify(text.replace("q_{21}", "q21").replace("q_{22}", "q22"), locals={"q21": q21, "q22": q22})
    assert sympy.simplify(read(rows["(2,1)"]) - (q21 * sympy.cos(1) - q22 * sympy.sin(1))) == 0
    assert sympy.simplify(read(rows["(2,2)"]) - (q21 * sympy.sin(1) + q22 * sympy.cos(1))) == 0
    assert rows["(1,1)"] == "q_{11}" and not any("." in v for v in rows.values())
