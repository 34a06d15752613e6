"""The `positions` preset: a model's sinusoidal table P asked alone from the formula and its base.
The key's numbers are held against the table worked here with math.sin/math.cos (an independent
path); its working writes each entry as sin/cos of the exact angle; the sheet keeps the answers back;
the block, learned positions and --variants are refused with exit 2."""
import json
import math
import re

SPEC = """\
model:
  vocab: [a, b, c, d]
  positions: sinusoidal
  pe_base: {base}
  layers: 1
  head: tied
  prompt: [a, b, c, d]
  generate: 1
dims: {{d_model: {d}, d_ff: 4, heads: 1}}
block: {{norm_position: pre, norm: layernorm, eps: "1/100", activation: relu}}
random: {{seed: 1, low: -1, high: 1}}
"""


def table(base, d, rows=4, places=4):
    return [[round((math.sin if j % 2 == 0 else math.cos)(p / base ** ((j - j % 2) / d)), places)
             for j in range(d)] for p in range(rows)]


def sheet(cli, spec_file, tmp_path, base=100, d=4, *flags):
    out = tmp_path / "ws"
    code, _, err = cli("worksheet", spec_file(SPEC.format(base=base, d=d)), "--preset", "positions",
                       "--out", out, "--format", "markdown", "--decimals", "4", *flags)
    assert code == 0, err
    return (out / "sheet.md").read_text(encoding="utf-8"), (out / "key.md").read_text(encoding="utf-8")


def answer_matrix(key: str) -> list[list[float]]:
    body = re.search(r"\\mathrm\{PE\} \\approx \\begin\{bmatrix\}(.*?)\\end\{bmatrix\}", key.split("### ")[-1].split(r"\mathrm{PE}_{3,")[1]).group(1)
    return [[float(c) for c in row.split("&")] for row in body.split(r"\\")]


def test_the_key_is_the_base_100_table(cli, spec_file, tmp_path):
    _, key = sheet(cli, spec_file, tmp_path)
    assert answer_matrix(key) == table(100, 4)
    assert key.count("### Task") == 1                       # the table alone
    assert "100^{2i/d}" in key and "10000" not in key       # the spec's base, in the conventions too
    assert "Nothing is given" in key and "KV cache" not in key
    assert "The position vectors of the prompt's positions, one row per position." in key   # not "Its position vector."


def test_the_working_writes_sin_and_cos_of_the_exact_angle_row_by_row(cli, spec_file, tmp_path):
    _, key = sheet(cli, spec_file, tmp_path)
    assert r"\mathrm{PE}_{0,\cdot} = \begin{bmatrix} 0 & 1 & 0 & 1 \end{bmatrix}" in key
    row2 = next(line for line in key.splitlines() if line.startswith(r"\mathrm{PE}_{2,\cdot}"))
    assert r"\sin\left(2\right) & \cos\left(2\right) & \sin\left(0.2\right)" in row2   # 2 / 10, exact
    assert row2.endswith(r"\approx \begin{bmatrix} 0.9093 & -0.4161 & 0.1987 & 0.9801 \end{bmatrix}")


def test_an_irrational_frequency_is_written_as_the_quotient(cli, spec_file, tmp_path):
    _, key = sheet(cli, spec_file, tmp_path, base=10000, d=6)
    assert answer_matrix(key) == table(10000, 6)
    assert r"\sin\left(2 / 10000^{1/3}\right)" in key and r"\cos\left(3 / 10000^{2/3}\right)" in key


def test_the_sheet_keeps_the_answers_back(cli, spec_file, tmp_path):
    student, _ = sheet(cli, spec_file, tmp_path)
    assert "0.8415" not in student and r"\sin\left(1\right)" not in student
    assert "100^{2i/d}" in student


def test_the_chinese_sheet_names_the_base(cli, spec_file, tmp_path):
    _, key = sheet(cli, spec_file, tmp_path, 100, 4, "--lang", "zh")
    assert "底数 $n = 100$" in key and "没有给定的数据" in key
    assert answer_matrix(key) == table(100, 4)


def test_check_with_the_preset_marks_the_table_alone(cli, spec_file, tmp_path):
    spec = spec_file(SPEC.format(base=100, d=4))
    answers = spec_file(json.dumps({"decimals": 4, "steps": {"pos": table(100, 4)}}), "a.json")
    code, out, err = cli("check", spec, answers, "--preset", "positions", "--json")
    result = json.loads(out)
    assert code == 0 and result["ok"] and [s["name"] for s in result["steps"] if s["asked"]] == ["pos"]


def test_a_table_checked_without_the_preset_is_told_both_settings_and_the_preset(cli, spec_file, tmp_path):
    """A model spec without kv_cache or generate (all a published table needs) checked without
    --preset falls to the decoder preset: one line names both settings and --preset positions."""
    bare = spec_file(SPEC.format(base=100, d=4).replace("  generate: 1\n", ""), "bare.yaml")
    answers = spec_file(json.dumps({"decimals": 4, "steps": {"pos": table(100, 4)}}), "a.json")
    code, _, err = cli("check", bare, answers)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "model.kv_cache: true and model.generate to 1 or more" in err and "--preset positions" in err
    code, out, _ = cli("check", bare, answers, "--preset", "positions")
    assert code == 0, out


def test_refusals_exit_2_with_one_line(cli, spec_file, tmp_path):
    learned = spec_file(SPEC.format(base=100, d=4).replace("positions: sinusoidal\n  pe_base: 100",
                                                            "positions: learned"), "learned.yaml")
    cases = [(("seed-post-ln",), "model spec"), ((learned,), "model.positions"),
             ((spec_file(SPEC.format(base=100, d=4)), "--variants", "2"), "--variants")]
    for args, field in cases:
        code, _, err = cli("worksheet", args[0], "--preset", "positions", "--out", tmp_path / "x", *args[1:])
        assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err


def test_an_encoder_with_sinusoidal_positions_works_its_table(cli, spec_file, tmp_path):
    """An encoder (BERT-like) with `positions: sinusoidal`: the sheet is written (it was an internal
    error), the key says the formula, works each row as sin/cos of the exact angle, and its answer
    is the table math.sin/math.cos give; X = E + PE then says ≈ (the table's entries are rounded)."""
    enc = """\
model:
  kind: encoder
  vocab: [a, b, c]
  positions: sinusoidal
  pe_base: 100
  layers: 1
  prompt: [a, b, c]
dims: {d_model: 4, d_ff: 4, heads: 1}
block: {norm_position: post, norm: layernorm, eps: "1/100", activation: relu}
random: {seed: 1, low: -1, high: 1}
"""
    out = tmp_path / "ws"
    code, _, err = cli("worksheet", spec_file(enc), "--out", out, "--format", "markdown", "--decimals", "4")
    assert code == 0, err
    key = (out / "key.md").read_text(encoding="utf-8")
    assert r"\sin(p / 100^{2i/d})" in key and "row $i$ of $W_P$" not in key
    task = key.split("· `pos`")[1].split("### ")[0]
    assert r"\mathrm{PE}_{1,\cdot} = \begin{bmatrix} \sin\left(1\right) & \cos\left(1\right) & \sin\left(0.1\right)" in task
    answer = re.search(r"\\mathrm\{PE\} \\approx \\begin\{bmatrix\}(.*?)\\end\{bmatrix\}", task).group(1)
    assert [[float(c) for c in row.split("&")] for row in answer.split(r"\\")] == table(100, 4, rows=3)
    assert r"X = E + \mathrm{PE} \approx \begin{bmatrix}" in key
