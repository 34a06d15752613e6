"""Given data is read off the sheet: a step the sheet prints rounded (N_2 ≈ -1.589 …, H_1 ≈ 0.507 …)
is what a person works from, so the next step worked from those printed numbers is honest rounding
(correct, as the key's own worked lines compute it), and a catalogued slip worked from them is still
named. A −∞ written where the truth is finite is shown against the truth at the asked places.

The printed numbers are copied from the sheets; every answer is worked here with NumPy from them."""
import json
import textwrap

import numpy as np

from symblock.cli import main


def half_up(x, places=3):
    """Rounded half away from zero, as text at `places`."""
    q = np.sign(x) * np.floor(np.abs(x) * 10 ** places + 0.5) / 10 ** places
    return [[float(f"{v:.{places}f}") for v in row] for row in np.atleast_2d(q)]


def check(tmp_path, capsys, ident, preset, steps: dict):
    path = tmp_path / "answers.yaml"
    lines = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in steps.items())
    path.write_text(f"id: {ident}\ndecimals: 3\nsteps:\n{lines}")
    code = main(["check", str(path), "--preset", preset, "--json"])
    out = capsys.readouterr().out
    return code, {s["name"]: s for s in json.loads(out)["steps"]}


# pre-ln-causal-gelu.7, --preset ffn: N_2 as the sheet prints it, and W_1
N2_PRINTED = np.array([[-1.589, 0.083, 1.163, 0.343], [0.844, -0.701, -1.252, 1.109],
                       [1.180, 0.779, -0.778, -1.181]])
W1 = np.array([[0, -1, -1, 1], [0, 1, 0, 0], [-1, -1, 1, 1], [0, -1, 1, -1]])


def test_a_step_worked_from_the_printed_given_is_correct_not_a_slip(tmp_path, capsys):
    honest = half_up(N2_PRINTED @ W1)   # four entries differ by one unit from the exact N_2's product
    code, steps = check(tmp_path, capsys, "pre-ln-causal-gelu.7", "ffn", {"ffn.hidden": honest})
    assert code == 0
    assert steps["ffn.hidden"]["status"] == "correct", steps["ffn.hidden"]
    assert all(e["mark"] == "correct" for e in steps["ffn.hidden"]["entries"])
    # one unit off the printed numbers' product (and the truth's) is still a rounding slip
    off = [row[:] for row in honest]
    off[0][0] = round(off[0][0] - 0.001, 3)
    code, steps = check(tmp_path, capsys, "pre-ln-causal-gelu.7", "ffn", {"ffn.hidden": off})
    assert steps["ffn.hidden"]["status"] == "slip"
    assert [(e["row"], e["col"]) for e in steps["ffn.hidden"]["entries"] if e["mark"] == "slip"] == [(0, 0)]


# decoder-layer.5, --preset cross: H_1 as the sheet prints it, the memory and the cross weights
H1_PRINTED = np.array([[0.507, 1.183, -0.169, -1.521], [-0.136, 1.269, 0.363, -1.496]])
MEMORY = np.array([[1, -1, 0, 0], [0, 0, 1, -1], [0, 0, 0, 0]])
WQ = np.array([[0, 0, -1, -1], [-1, 0, 1, -1], [0, 1, -1, -1], [-1, -1, 0, -1]])
WK = np.array([[1, 1, 0, 1], [1, -1, 1, -1], [-1, 1, 1, 0], [1, 0, -1, 0]])
WV = np.array([[0, 0, 0, 1], [-1, -1, -1, 0], [-1, -1, 1, 1], [-1, -1, -1, -1]])


def test_keys_taken_from_the_printed_decoder_rows_are_named(tmp_path, capsys):
    """K = H_1 W_K from the printed H_1 (two rows where the memory has three): the slip is named,
    though two of its entries differ by one unit from the exact H_1's product."""
    steps = {"cross.q": half_up(H1_PRINTED @ WQ), "cross.k": half_up(H1_PRINTED @ WK),
             "cross.v": half_up(MEMORY @ WV)}
    code, marked = check(tmp_path, capsys, "decoder-layer.5", "cross", steps)
    assert code == 1
    assert marked["cross.q"]["status"] == "correct" and marked["cross.v"]["status"] == "correct"
    assert marked["cross.k"]["status"] == "wrong"
    assert marked["cross.k"]["diagnosis"] == ["cross_kv_from_decoder"]


def test_a_causal_mask_on_cross_attention_is_named_and_the_missed_score_shown_as_a_decimal(tmp_path, capsys):
    q, k = half_up(H1_PRINTED @ WQ), MEMORY @ WK
    scaled = np.array(q) @ k.T / 2                    # d_k = 4: 1/√4
    masked = scaled.copy()
    masked[0, 1] = masked[0, 2] = masked[1, 2] = np.nan   # causal (j > i) and the padded memory row 3
    code, marked = check(tmp_path, capsys, "decoder-layer.5", "cross",
                         {"cross.h0.masked": [["-inf" if np.isnan(v) else v for v in row]
                                              for row in half_up(masked)]})
    step = marked["cross.h0.masked"]
    assert step["status"] == "wrong" and step["diagnosis"] == ["cross_causal_mask"]
    wrong = [e for e in step["entries"] if e["mark"] == "wrong"]
    assert [(e["row"], e["col"], e["given"]) for e in wrong] == [(0, 1, "-inf")]
    assert wrong[0]["expected"] == f"{half_up(scaled)[0][1]:.3f}" == "1.183"   # not sqrt(35)/5


def test_given_data_are_read_at_the_sheets_places_when_a_file_raises_its_own(tmp_path):
    """A set prints N_2 at its 3 places; a student who writes 4 places (`decimals: 4`) still worked
    from the printed 3-place numbers: N_2 W_1 from them (exact with integer weights, 4 places shown)
    is their honest rounding, full marks, not 4-place given data's other last digits."""
    import csv
    assert main(["worksheet", "pre-ln-causal-gelu", "--preset", "ffn", "--variants", "1", "--seed", "7",
                 "--format", "markdown", "--out", str(tmp_path / "set")]) == 0
    z = [[f"{v:.4f}" for v in row] for row in N2_PRINTED @ W1]
    assert z[0][2] == "3.0950"   # the exact N_2 gives 3.0943 at 4 places
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "s.yaml").write_text(
        "id: pre-ln-causal-gelu.7\ndecimals: 4\nsteps:\n  ffn.hidden: [" + ", ".join(
            "[" + ", ".join(row) + "]" for row in z) + "]\n", encoding="utf-8")
    assert main(["grade", str(tmp_path / "set"), str(tmp_path / "answers"), "--out", str(tmp_path / "g")]) == 0
    with open(tmp_path / "g" / "gradebook.csv", newline="", encoding="utf-8") as f:
        row, = csv.DictReader(f)
    assert row["ffn.hidden"] == "1.00", row


SHORT_GIVEN = """\
dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}
block: {norm_position: pre, norm: layernorm, eps: 0, activation: relu}
weights: {W_Q: [[4, 0], [0, 1]], W_K: [[1, 0], [0, 1]], W_V: [[1, 0], [0, 1]],
          W_O: [[1, 0], [0, 1]], W_1: [[1, 0], [0, 1]], W_2: [[1, 0], [0, 1]]}
inputs: {X: [[1, 0], [0, 1]]}
given:
  norm1: [[0.12345, SECOND], [1, 0]]
"""


def q_status(tmp_path, capsys, second: str, q00: float, q01: float) -> tuple[str, str]:
    tmp_path = tmp_path / str(len(list(tmp_path.iterdir())))   # a fresh folder for each call
    tmp_path.mkdir()
    spec = tmp_path / "s.yaml"
    spec.write_text(SHORT_GIVEN.replace("SECOND", second), encoding="utf-8")
    answers = tmp_path / "a.yaml"
    answers.write_text(f"decimals: 3\nsteps:\n  attn.q: [[{q00}, {q01}], [4, 0]]\n", encoding="utf-8")
    assert main(["worksheet", str(spec), "--format", "markdown", "--out", str(tmp_path / "ws")]) == 0
    key = (tmp_path / "ws" / "key.md").read_text(encoding="utf-8")
    main(["check", str(spec), str(answers), "--json"])
    out = capsys.readouterr().out
    steps = {s["name"]: s for s in json.loads(out[out.index("{"):])["steps"]}
    return key, steps["attn.q"]["status"]


def test_given_data_printed_exactly_are_read_exactly_not_at_the_sheets_places(tmp_path, capsys):
    """N_1 = [[0.12345, 0.5], [1, 0]] is printed as it is on a 3-place sheet (every entry a short
    decimal): Q = 4·0.12345 = 0.4938 ≈ 0.494, and 0.492 (from a 0.123 the sheet never showed) is wrong."""
    key, status = q_status(tmp_path, capsys, "0.5", 0.494, 0.5)
    assert r"N_1 = \begin{bmatrix} 0.12345 & 0.5 \\ 1 & 0 \end{bmatrix}" + "\n" in key
    assert status == "correct"
    assert q_status(tmp_path, capsys, "0.5", 0.492, 0.5)[1] == "wrong"


def test_given_data_printed_with_their_decimals_are_read_as_those_decimals(tmp_path, capsys):
    """With a 1/3 beside it the sheet prints N_1 exactly and ≈ at 3 places (0.123, 0.333): Q worked
    from those printed decimals (4·0.123 = 0.492) is honest rounding, and so is the exact chain's 0.494."""
    key, status = q_status(tmp_path, capsys, '"1/3"', 0.492, 0.333)
    assert r"\approx \begin{bmatrix} 0.123 & 0.333 \\ 1.000 & 0.000 \end{bmatrix}" in key
    assert status == "correct"
    assert q_status(tmp_path, capsys, '"1/3"', 0.494, 0.333)[1] == "correct"
