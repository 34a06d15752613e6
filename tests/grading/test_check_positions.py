"""The checker on a sinusoidal position table typed as a tutorial prints it (4 decimal places):
Machine Learning Mastery's base n = 100, d = 4 table for positions 0..3, its numbers typed here by
hand and held against math.sin/math.cos worked in this test (an independent path). Each row is
marked on its own: a row with a sin/cos pair swapped, or worked with the base 10000, is wrong for
that row only and named by its catalogued mistake (en and zh)."""
import json
import math

SPEC = """\
model:
  kind: encoder
  vocab: [a, b, c, d]
  positions: sinusoidal
  pe_base: 100
  prompt: [a, b, c, d]
dims: {d_model: 4, d_ff: 4, heads: 1}
block: {norm: layernorm, eps: "1/100", activation: relu}
random: {seed: 1, low: -1, high: 1}
"""

# P[p, 2i] = sin(p / 100^(2i/4)), P[p, 2i+1] = cos(p / 100^(2i/4)), as the tutorial prints it
TABLE = [[0.0, 1.0, 0.0, 1.0],
         [0.8415, 0.5403, 0.0998, 0.995],
         [0.9093, -0.4161, 0.1987, 0.9801],
         [0.1411, -0.99, 0.2955, 0.9553]]


def worked(p: int, base: float = 100, d: int = 4) -> list[float]:
    row = []
    for i in range(d // 2):
        angle = p / base ** (2 * i / d)
        row += [round(math.sin(angle), 4), round(math.cos(angle), 4)]
    return row


def test_the_typed_table_is_the_formula_worked_in_floats():
    assert TABLE == [worked(p) for p in range(4)]


def marks(cli, spec_file, table, *flags):
    answers = spec_file(json.dumps({"decimals": 4, "steps": {"pos": table}}), "answers.json")
    code, out, err = cli("check", spec_file(SPEC), answers, "--json", *flags)
    assert err == "", err
    step = next(s for s in json.loads(out)["steps"] if s["name"] == "pos")
    by_row = {}
    for e in step["entries"]:
        by_row.setdefault(e["row"], []).append(e["mark"])
    return code, step, by_row


def test_the_published_table_is_correct_in_every_row(cli, spec_file):
    code, step, by_row = marks(cli, spec_file, TABLE)
    assert code == 0 and step["status"] == "correct"
    assert by_row == {r: ["correct"] * 4 for r in range(4)}


def test_a_swapped_sin_cos_pair_is_wrong_for_its_row_only(cli, spec_file):
    table = [row[:] for row in TABLE]
    table[1][0], table[1][1] = table[1][1], table[1][0]       # cos(1), sin(1) in row 1
    code, step, by_row = marks(cli, spec_file, table)
    assert code == 1 and step["status"] == "wrong"
    assert by_row[1] == ["wrong", "wrong", "correct", "correct"]
    assert all(by_row[r] == ["correct"] * 4 for r in (0, 2, 3))
    assert step["diagnosis"] == ["pe_sin_cos_swapped"]


def test_a_row_worked_with_base_10000_is_wrong_for_that_row_only(cli, spec_file):
    table = [row[:] for row in TABLE]
    table[2] = worked(2, base=10000)                          # [0.9093, -0.4161, 0.02, 0.9998]
    assert table[2][2:] == [0.02, 0.9998]
    code, step, by_row = marks(cli, spec_file, table)
    assert code == 1
    assert by_row[2] == ["correct", "correct", "wrong", "wrong"]   # column pair 0 has frequency 1 in any base
    assert all(by_row[r] == ["correct"] * 4 for r in (0, 1, 3))
    assert step["diagnosis"] == ["pe_base_10000"]


def test_the_whole_table_swapped_or_in_base_10000_is_diagnosed(cli, spec_file):
    swapped = [[row[1], row[0], row[3], row[2]] for row in TABLE]
    assert marks(cli, spec_file, swapped)[1]["diagnosis"] == ["pe_sin_cos_swapped"]
    base = [worked(p, base=10000) for p in range(4)]
    assert marks(cli, spec_file, base)[1]["diagnosis"] == ["pe_base_10000"]


def test_a_wrong_row_the_catalogue_does_not_know_is_not_diagnosed(cli, spec_file):
    table = [row[:] for row in TABLE]
    table[3][1] = 0.99                                        # a sign slip: cos(3) = -0.99
    code, step, by_row = marks(cli, spec_file, table)
    assert by_row[3] == ["correct", "wrong", "correct", "correct"] and step["diagnosis"] == []


def test_the_diagnosis_reads_in_english_and_chinese(cli, spec_file):
    table = [row[:] for row in TABLE]
    table[1][0], table[1][1] = table[1][1], table[1][0]
    answers = spec_file(json.dumps({"decimals": 4, "steps": {"pos": table}}), "answers.json")
    en = cli("check", spec_file(SPEC), answers).out
    zh = cli("check", spec_file(SPEC), answers, "--lang", "zh").out
    assert "pe_sin_cos_swapped" in en and "sine and cosine swapped" in en
    assert "sin 与 cos 弄反了" in zh


def test_base_10000_is_no_diagnosis_when_the_table_is_base_10000(cli, spec_file):
    spec = spec_file(SPEC.replace("pe_base: 100", "pe_base: 10000"))
    table = [worked(p, base=10000) for p in range(4)]
    table[2][2] = 0.1987                                      # the base-100 entry in a base-10000 table
    answers = spec_file(json.dumps({"decimals": 4, "steps": {"pos": table}}), "answers.json")
    out = json.loads(cli("check", spec, answers, "--json").out)
    step = next(s for s in out["steps"] if s["name"] == "pos")
    assert step["status"] == "wrong" and "pe_base_10000" not in step["diagnosis"]


def test_a_table_of_the_wrong_width_is_that_step_wrong_and_a_ragged_one_refused(cli, spec_file):
    """Rows of 3 for the 4 columns of the table: the step is marked wrong, said once; rows of
    different widths are the file's structure, refused naming the row."""
    answers = spec_file(json.dumps({"decimals": 4, "steps": {"pos": [[0.0, 1.0, 0.0]] * 4}}), "answers.json")
    code, out, err = cli("check", spec_file(SPEC), answers)
    assert code == 1 and err == "" and out.count("written as a 4×3 matrix, not in this step's shape") == 1
    ragged = spec_file(json.dumps({"decimals": 4, "steps": {"pos": [[0.0, 1.0, 0.0, 1.0], [0.0]]}}), "ragged.json")
    code, out, err = cli("check", spec_file(SPEC), ragged)
    assert code == 2 and "pos[1]" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
