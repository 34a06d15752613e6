"""Answers as people really write them: blanks and partial steps, the CSV form, significant
digits, a program's float32/float64 print-out, fewer places than asked, `id:` in the file, the
Chinese report, and backprop answers (grad.*) with carried errors.

Truths come from hand-worked numbers (the seed article's block: resid1, norm1.var = 0.811801,
0.015376, 0.1849) or from NumPy (symblock.reference.numeric, and the FFN gradients written out
below in NumPy), never from the checker."""
import json
import textwrap

import numpy as np
import pytest

from symblock.cli import main
from symblock.reference import numeric

RESID1 = [[2.401, 0.599], [1.504, 1.752], [2.576, 1.716]]


def check(cli, spec_file, text, *args, name="a.yaml", spec="seed-post-ln"):
    path = spec_file(textwrap.dedent(text), name)
    code, out, err = cli("check", *([spec] if spec else []), path, "--json", *args)
    assert err == "", err
    data = json.loads(out)
    return code, data, {s["name"]: s for s in data["steps"]}


def marks(step):
    return [e["mark"] for e in step["entries"]]


# ---------------------------------------------------------------- blanks and partial steps

@pytest.mark.parametrize("value, answered", [
    ("[[2.401, 0.599], [1.504, null], [2.576, \"\"]]", 4),     # null and "" entries
    ("[[2.401, 0.599], null, [2.576, 1.716]]", 4),              # a null row
    ("[[2.401, 0.599], [1.504, 1.752]]", 4),                    # a missing (last) row
    ("{row: 1, value: [1.504, 1.752]}", 2),                     # one row, counted from 0
    ("{row: 2, col: 0, value: 2.576}", 1),                      # one entry
    ("{entries: {\"[0][1]\": 0.599, \"2,1\": 1.716}}", 2),      # an entry map
])
def test_partial_steps_mark_what_is_there_and_count_blanks(cli, spec_file, value, answered):
    code, data, steps = check(cli, spec_file, f"decimals: 3\nsteps:\n  resid1: {value}\n"
                                                "  norm1.mean: [[1.5], [1.628], [2.146]]\n")
    s = steps["resid1"]   # its answered entries right, the others blank: partly blank, not done (exit 1)
    assert code == 1 and s["status"] == "partly_blank" and data["ok"] is False and data["first_break"] is None
    assert s["blank"] == 6 - answered and marks(s).count("blank") == 6 - answered
    assert all(e["ok"] for e in s["entries"] if e["mark"] != "blank")
    # the blanks carry the truth on: norm1.mean (from resid1) is still correct
    assert steps["norm1.mean"]["status"] == "correct"


def test_a_wrong_entry_in_a_partial_step_is_wrong(cli, spec_file):
    code, data, steps = check(cli, spec_file, "steps:\n  resid1: {row: 1, value: [1.504, 1.761]}\n")
    assert code == 1 and steps["resid1"]["status"] == "wrong"
    assert marks(steps["resid1"]) == ["blank"] * 2 + ["correct", "wrong"] + ["blank"] * 2


def test_all_blank_is_missing_and_only_asked_steps_count(cli, spec_file):
    code, data, steps = check(cli, spec_file, "steps:\n  resid1: [[null, null], [null, null], [null, null]]\n")
    assert code == 1 and steps["resid1"]["status"] == "missing"  # nothing answered is not ok
    # the seed example asks the full preset: x and output are neither asked nor counted
    assert steps["x"]["asked"] is False and steps["output"]["asked"] is False
    assert steps["resid1"]["asked"] is True


def test_csv_answers_form(cli, spec_file):
    rows = ["step,row,col,value", "name,,,Ada", "decimals,,,3"]
    rows += [f"resid1,{i},{j},{v}" for i, r in enumerate(RESID1) for j, v in enumerate(r)]
    rows += ["norm1.var,0,0,1.624", "norm1.var,1,0,0.031", "norm1.var,2,0,"]   # n−1, one blank
    code, data, steps = check(cli, spec_file, "\r\n".join(rows) + "\r\n", name="ada.csv")
    assert data["name"] == "Ada" and code == 1
    assert steps["resid1"]["status"] == "correct"
    assert steps["norm1.var"]["status"] == "wrong" and steps["norm1.var"]["diagnosis"] == ["ln_sample_variance"]
    assert steps["norm1.var"]["blank"] == 1


@pytest.mark.parametrize("lang, said", [("en", "row 3, col 2"), ("zh", "第 3 行第 2 列")])
def test_a_report_on_entries_placed_by_row_and_col_says_they_count_from_0_there(cli, spec_file, lang, said):
    """The report names entries from 1, as the sheet does; row:, entries: and the CSV form count
    from 0, so a report on such a file says so: the entry it names is the file's row 2, col 1
    (9.999 there, not 1.716). A file of plain lists, or nothing named, says nothing."""
    rows = ["step,row,col,value", "decimals,,,3"]
    rows += [f"resid1,{i},{j},{9.999 if (i, j) == (2, 1) else v}" for i, r in enumerate(RESID1) for j, v in enumerate(r)]
    note = "count them from 0" if lang == "en" else "从 0 开始数"
    mine = [[9.999 if (i, j) == (2, 1) else v for j, v in enumerate(r)] for i, r in enumerate(RESID1)]
    for name, text in (("ada.csv", "\n".join(rows) + "\n"),
                       ("row.yaml", f"decimals: 3\nsteps:\n  resid1: {{row: 2, value: {mine[2]}}}\n")):
        code, out, err = cli("check", "seed-post-ln", spec_file(text, name), "--lang", lang)
        assert code == 1 and err == ""
        entry = next(line for line in out.splitlines() if said in line)
        assert "9.999" in entry and "1.716" in entry
        assert out.count(note) == 1, name
    code, out, _ = cli("check", "seed-post-ln", spec_file(f"decimals: 3\nsteps:\n  resid1: {mine}\n", "a.yaml"),
                       "--lang", lang)
    assert code == 1 and said in out and note not in out   # a list's rows are the sheet's
    right = spec_file("\n".join(rows).replace("9.999", "1.716") + "\n", name="right.csv")
    assert note not in cli("check", "seed-post-ln", right, "--lang", lang).out   # nothing named, nothing to say


def test_csv_of_a_decimal_comma_spreadsheet_is_semicolon_separated(cli, spec_file):
    """What Excel saves in a comma-decimal locale: `;` between fields, `2,401` for 2.401."""
    rows = ["step;row;col;value", "name;;;Ada", "decimals;;;3"]
    rows += [f"resid1;{i};{j};{str(v).replace('.', ',')}" for i, r in enumerate(RESID1) for j, v in enumerate(r)]
    rows += ["norm1.var;0;0;1,624", "norm1.var;1;0;0,031", "norm1.var;2;0;"]   # n−1, one blank
    code, data, steps = check(cli, spec_file, "\r\n".join(rows) + "\r\n", name="ada.csv")
    assert data["name"] == "Ada" and code == 1
    assert steps["resid1"]["status"] == "correct"
    assert steps["norm1.var"]["status"] == "wrong" and steps["norm1.var"]["diagnosis"] == ["ln_sample_variance"]
    assert steps["norm1.var"]["blank"] == 1


def test_csv_needs_its_header(tmp_path, capsys):
    path = tmp_path / "a.csv"
    path.write_text("resid1,0,0,1\n", encoding="utf-8")
    assert main(["check", "seed-post-ln", str(path)]) == 2
    assert "a.csv: line 1: expected the header step,row,col,value" in capsys.readouterr().err


def test_a_csv_cell_outside_its_grid_is_named_by_its_line(tmp_path, capsys):
    """resid1 of the seed block is 3 × 2: a row 5 on the file's fourth line is named there, in
    the CSV's own terms (rows and columns from 0), not by an internal field."""
    path = tmp_path / "a.csv"
    path.write_text("step,row,col,value\nresid1,0,0,2.401\n\nresid1,5,0,1\n", encoding="utf-8")
    assert main(["check", "seed-post-ln", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"symblock: error: {path}: line 4: row 5, col 0 is outside resid1's 3 × 2 grid "
                           "(row 0..2, col 0..1, from 0)")


def test_a_huge_entry_is_shown_short_as_given(cli, spec_file):
    code, data, steps = check(cli, spec_file, "decimals: 3\nsteps:\n  resid1: [['1e999', 0.599], [%s, 1.752]]\n"
                              % ("9" * 40))
    given = {(e["row"], e["col"]): e.get("given") for e in steps["resid1"]["entries"]}
    assert given[0, 0] == "1E+999" and given[1, 0] == "9999999999999999…(40 digits)"


# ---------------------------------------------------------------- numbers as written

@pytest.mark.parametrize("policy, var, status", [
    ("sig_figs: 3", "[[0.812], [0.0154], [0.185]]", "correct"),      # 0.811801, 0.015376, 0.1849
    ("sig_figs: 3", "[[0.8118], [0.01538], [0.1849]]", "correct"),   # more digits: judged at their own
    ("sig_figs: 3", "[[0.81], [0.015], [0.18]]", "rounded"),         # 2 significant digits, right there
    ("sig_figs: 3", "[[0.811], [0.0154], [0.185]]", "slip"),         # one unit off in the 3rd digit
    ("sig_figs: 3", "[[0.822], [0.0154], [0.185]]", "wrong"),
    ("decimals: 4", "[[0.81], [0.02], [0.18]]", "rounded"),          # 2 places of 4: 0.81, 0.02, 0.18
    ("decimals: 4", "[[0.8118], [0.0154], [0.18]]", "rounded"),
    ("decimals: 4", "[[0.8], [0.02], [0.2]]", "rounded"),
    ("decimals: 3", "[[1], [0], [0]]", "wrong"),                     # an integer is judged at 3 places
])
def test_significant_digits_and_fewer_places(cli, spec_file, policy, var, status):
    code, data, steps = check(cli, spec_file, f"{policy}\nsteps:\n  norm1.var: {var}\n")
    assert steps["norm1.var"]["status"] == status
    assert code == (1 if status == "wrong" else 0)


def test_fewer_places_scores_a_little_less_in_grade_and_says_so(cli, spec_file, tmp_path, capsys):
    code, data, steps = check(cli, spec_file, "decimals: 4\nsteps:\n  norm1.var: [[0.81], [0.0154], [0.1849]]\n")
    assert marks(steps["norm1.var"]) == ["rounded", "correct", "correct"]
    main(["check", "seed-post-ln", str(tmp_path / "a.yaml")])
    out = capsys.readouterr().out
    assert "≈ rounded  norm1.var   correct, rounded to fewer places than asked" in out


@pytest.fixture(scope="module")
def gelu_truth():
    """pre-ln-causal-gelu's attention weights in NumPy float64 (irrational entries)."""
    from symblock.exercises.generate import load
    return numeric.forward(load("pre-ln-causal-gelu"))["attn.h0.weights"]


def grid_text(m, fmt):
    return "[" + ", ".join("[" + ", ".join(fmt(x) for x in row) + "]" for row in m) + "]"


def test_a_programs_print_out_float32_and_float64(cli, spec_file, gelu_truth):
    f64 = grid_text(gelu_truth, lambda x: repr(float(x)))
    f32 = grid_text(gelu_truth, lambda x: str(np.float32(x)))
    off = gelu_truth.copy()
    off[1, 0] += 1e-12
    cases = [("float64", f64, "correct"), ("float32", f32, "correct"), ("float32", f64, "correct"),
             ("float64", f32, "wrong"), ("float64", grid_text(off, lambda x: repr(float(x))), "wrong")]
    for fmt, grid, status in cases:
        code, data, steps = check(cli, spec_file, f"print: {fmt}\nsteps:\n  attn.h0.weights: {grid}\n",
                                  spec="pre-ln-causal-gelu")
        assert steps["attn.h0.weights"]["status"] == status, (fmt, status)
    # without the print policy, 17 digits are judged at 17 places: wrong by float64 rounding
    code, data, steps = check(cli, spec_file, f"steps:\n  attn.h0.weights: {f64}\n", spec="pre-ln-causal-gelu")
    assert steps["attn.h0.weights"]["status"] == "wrong"


# ---------------------------------------------------------------- id: and --lang zh

def test_check_rebuilds_the_variant_an_id_names(cli, spec_file, tmp_path, capsys):
    from symblock.exercises import variant
    spec = variant.rebuild("pre-ln-causal-gelu.3", None).spec
    q = numeric.forward(spec)["attn.q"]   # the variant's own draw, in NumPy
    grid = grid_text(q, lambda x: f"{x:.3f}")
    text = f"id: pre-ln-causal-gelu.3\ndecimals: 3\nsteps:\n  attn.q: {grid}\n"
    code, data, steps = check(cli, spec_file, text, spec=None)   # an example's id: needs no SPEC
    assert code == 0 and data["id"] == "pre-ln-causal-gelu.3" and steps["attn.q"]["status"] == "correct"
    code, data, steps = check(cli, spec_file, text, spec="pre-ln-causal-gelu")
    assert code == 0
    # the same numbers against the example's own seed (7) are wrong: the id is what decides
    code, out, err = cli("check", "pre-ln-causal-gelu", spec_file(text, "b.yaml"), "--json", "--id", "pre-ln-causal-gelu")
    assert code == 1 and json.loads(out)["id"] == "pre-ln-causal-gelu"   # the report names the variant marked
    assert "checked against --id pre-ln-causal-gelu" in err and "says id: pre-ln-causal-gelu.3" in err, err
    path = tmp_path / "a.yaml"
    assert main(["check", "seed-post-ln", str(path)]) == 2
    assert "was made from spec 'pre-ln-causal-gelu', but seed-post-ln is 'seed-post-ln'" in capsys.readouterr().err


def test_id_accepts_long_seeds_that_variants_printed(tmp_path, capsys):
    seed = 9_223_372_036_854_775_000  # 19 digits: the old ID reader took at most 18 (--seed allows 2**63 − 1)
    out = tmp_path / "set"
    assert main(["worksheet", "pre-ln-causal-gelu", "--variants", "1", "--seed", str(seed), "--out", str(out),
                 "--format", "markdown"]) == 0
    ident = f"pre-ln-causal-gelu.{seed}"
    assert main(["worksheet", "--id", ident, "--out", str(tmp_path / "again"), "--format", "markdown"]) == 0
    assert (tmp_path / "again" / "key.md").read_bytes() == (out / "instructor" / ident / "key.md").read_bytes()


def test_chinese_report(tmp_path, capsys):
    path = tmp_path / "a.yaml"
    path.write_text("decimals: 3\nsteps:\n  resid1: [[2.401, 0.599], [1.504, 1.752], [2.576, 1.716]]\n"
                    "  norm1.mean: [[1.5], [1.628], [2.146]]\n  norm1.var: [[1.624], [0.031], [0.370]]\n",
                    encoding="utf-8")
    assert main(["check", "seed-post-ln", str(path), "--lang", "zh"]) == 1
    out = capsys.readouterr().out
    assert "✗ 错误  norm1.var   ← 计算链从这里开始出错" in out
    assert "诊断：ln_sample_variance — LayerNorm 的方差除以了 n−1（样本方差），应除以 n" in out
    assert "未通过（正确 2，错误 1，未答 10）。计算链从 norm1.var 开始出错。" in out
    assert "第 2 行第 1 列  你的答案 0.031      应为 0.015" in out   # rows count from 1, as in the key


# ---------------------------------------------------------------- backprop answers

RELU = """\
dims: {seq_len: 3, d_model: 2, d_ff: 3, heads: 1}
block: {norm_position: pre, norm: layernorm, eps: "1/10", activation: relu}
inputs: {X: [[1, 0], [0, 2], [2, 1]]}
weights: {W_1: [[1, -1, 2], [0, 1, -1]], W_2: [[1, 0], [-1, 2], [1, 1]]}
random: {seed: 4, low: -1, high: 1}
exercise: {preset: backprop, loss: sum, wrt: [W_2, W_1]}   # backprop presets default to mse now
"""


def relu_grads(spec_path):
    """dL/d each FFN step and W for L = Σ Y, written out in NumPy from the NumPy forward."""
    from symblock.engine import spec as spec_mod
    T = numeric.forward(spec_mod.load(spec_path))
    W1 = np.array([[1, -1, 2], [0, 1, -1]], float)
    W2 = np.array([[1, 0], [-1, 2], [1, 1]], float)
    ones = np.ones((3, 2))
    act = ones @ W2.T
    hidden = act * (T["ffn.hidden"] > 0)
    return T, {"grad.output": ones, "grad.resid2": ones, "grad.ffn.out": ones, "grad.ffn.act": act,
               "grad.ffn.hidden": hidden, "grad.W_2": T["ffn.act"].T @ ones, "grad.W_1": T["norm2"].T @ hidden}


def test_backprop_answers_with_carried_errors(cli, spec_file, tmp_path):
    spec_path = tmp_path / "relu.yaml"
    spec_path.write_text(RELU, encoding="utf-8")
    T, G = relu_grads(spec_path)
    wrong_act = G["grad.ffn.act"] * 2               # planted: dL/dU doubled
    hidden = wrong_act * (T["ffn.hidden"] > 0)      # worked on honestly from it
    answers = {**G, "grad.ffn.act": wrong_act, "grad.ffn.hidden": hidden, "grad.W_1": T["norm2"].T @ hidden}
    text = "decimals: 3\nsteps:\n" + "".join(f"  {k}: {grid_text(v, lambda x: f'{x:.3f}')}\n"
                                             for k, v in answers.items())
    code, data, steps = check(cli, spec_file, text, spec=str(spec_path))
    assert code == 1 and data["first_break"] == "grad.ffn.act"
    assert [steps[k]["status"] for k in G] == ["correct", "correct", "correct", "wrong", "carried",
                                               "correct", "carried"]
    assert steps["grad.W_1"]["built_on"] == ["grad.ffn.act"]
    assert all(not s["asked"] for s in data["steps"] if not s["name"].startswith("grad."))
    # the honest answers are all correct; a missing gradient counts only because it is asked
    text = "decimals: 3\nsteps:\n" + "".join(f"  {k}: {grid_text(v, lambda x: f'{x:.3f}')}\n"
                                             for k, v in G.items() if k != "grad.W_1")
    code, data, steps = check(cli, spec_file, text, spec=str(spec_path))
    assert code == 0 and steps["grad.W_1"]["status"] == "missing" and steps["grad.W_1"]["asked"]


def test_a_backprop_set_is_graded(tmp_path, capsys):
    spec_path = tmp_path / "relu.yaml"
    spec_path.write_text(RELU, encoding="utf-8")
    set_dir = tmp_path / "set"
    assert main(["worksheet", str(spec_path), "--variants", "2", "--out", str(set_dir), "--format", "markdown",
                 "--allow-repeats"]) == 0  # Σ Y: the first gradients are all ones in every variant
    import yaml
    manifest = yaml.safe_load((set_dir / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["asked"] == ["grad.output", "grad.resid2", "grad.ffn.out", "grad.ffn.act", "grad.ffn.hidden",
                                 "grad.W_2", "grad.W_1"]
    ident = manifest["variants"][0]["id"]
    blank = (set_dir / "students" / ident / "answers.yaml").read_text(encoding="utf-8")
    assert f"id: {ident}" in blank and "grad.W_1: [[null, null, null], [null, null, null]]" in blank
    csv_lines = (set_dir / "students" / ident / "answers.csv").read_text(encoding="utf-8").splitlines()
    assert csv_lines[:4] == ["step,row,col,value", f"id,,,{ident}", "name,,,", "decimals,,,3"]
    assert "grad.W_1,1,2," in csv_lines and len(csv_lines) == 4 + sum(v.size for v in relu_grads(spec_path)[1].values())
    T, G = relu_grads(spec_path)   # the weights are given, so both variants share these FFN numbers
    answers = tmp_path / "answers"
    answers.mkdir()
    text = blank.replace("name: \"\"", "name: Ada")
    for k, v in G.items():
        if k in ("grad.output", "grad.ffn.act"):
            nulls = "[" + ", ".join("[" + ", ".join(["null"] * v.shape[1]) + "]" for _ in range(v.shape[0])) + "]"
            text = text.replace(f"  {k}: {nulls}", f"  {k}: {grid_text(v, lambda x: f'{x:.3f}')}")
    (answers / "ada.yaml").write_text(text, encoding="utf-8")
    assert main(["grade", str(set_dir), str(answers)]) == 0
    book = (answers / "graded" / "gradebook.csv").read_text(encoding="utf-8").splitlines()
    assert book[1] == f"Ada,,,,,2.00,28.57,1.00,0.00,0.00,1.00,0.00,0.00,0.00,7,{ident},ada.yaml,graded,,feedback/Ada.md"


def test_a_tie_rounded_the_other_way_is_correct(cli, spec_file):
    # norm2.mean is exactly 2.5, 0.5, 2.5: half away from zero gives 3, 1, 3; a calculator's
    # round-half-even gives 2, 0, 2 — an exact tie is accepted rounded either way
    code, data, steps = check(cli, spec_file, "decimals: 0\nsteps:\n  norm2.mean: [[2], [0], [2]]\n")
    assert steps["norm2.mean"]["status"] == "correct" and steps["norm2.mean"]["diagnosis"] == []
    assert code == 0 and data["first_break"] is None
    code, data, steps = check(cli, spec_file, "decimals: 0\nsteps:\n  norm2.mean: [[3], [1], [3]]\n")
    assert steps["norm2.mean"]["status"] == "correct"


# ---------------------------------------------------------------- decimal commas, student data, unreadable entries

@pytest.mark.parametrize("name, text", [
    ("a.yaml", 'decimals: 3\nsteps:\n  resid1: [["2,401", "0,599"], ["1,504", "1,752"], ["2,576", "1,716"]]\n'),
    ("b.yaml", "decimals: 3\nsteps:\n  resid1:\n    - - 2,401\n      - 0,599\n"),   # block style: text
    ("c.csv", "step,row,col,value\ndecimals,,,3\nresid1,0,0,\"2,401\"\nresid1,0,1,0,599\n"),   # quoted or not
])
def test_a_single_decimal_comma_is_a_decimal_point(cli, spec_file, name, text):
    """One comma between digits and no point is a decimal comma: 2,401 is the seed article's
    resid1[0][0] 2.401 (a thousands reading, 2401, is never taken)."""
    code, data, steps = check(cli, spec_file, text, name=name)
    answered = [e for e in steps["resid1"]["entries"] if e["mark"] != "blank"]
    assert answered and all(e["mark"] == "correct" for e in answered) and data["first_break"] is None
    assert code == (0 if len(answered) == 6 else 1)   # b, c answer row 0 only: partly blank, not done
    assert answered[0]["given"] == "2.401"


def test_a_comma_beside_a_point_or_two_commas_is_ambiguous_and_that_entry_wrong(cli, spec_file):
    code, data, steps = check(cli, spec_file, 'steps:\n  resid1: [["2,401.0", "0,599,1"], ["1,504", "1,752"]]\n')
    e = steps["resid1"]["entries"]
    assert code == 1 and [(x["mark"], x.get("reason")) for x in e[:4]] == \
        [("wrong", "comma"), ("wrong", "comma"), ("correct", None), ("correct", None)]


def test_other_top_level_keys_are_the_students_data(tmp_path):
    """student_id, Email, section: kept (keys lower-cased, one line, cut to 200 characters), not errors."""
    from symblock.grading import answers
    data = {"student_id": 42, "Email": "ada@example.org", "section": "B\n# injected", "comment": "x" * 500,
            "nothing": None, "steps": {"resid1": [[2.401, 0.599]]}}
    a = answers.from_mapping(data, "a.yaml", {"resid1": (3, 2)})
    assert a.student == {"student_id": "42", "email": "ada@example.org", "section": "B # injected",
                         "comment": "x" * 199 + "…"}
    assert a.steps["resid1"].answered == 2


def test_student_data_does_not_stop_check_and_the_zh_report_says_why(tmp_path, capsys):
    text = "student_id: s-7\nemail: ada@example.org\ndecimals: 3\nsteps:\n  resid1: [[abc, 0.599]]\n"
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["check", "seed-post-ln", str(path), "--lang", "zh"]) == 1
    out = capsys.readouterr().out
    assert "你的答案 abc" in out and "错（不是数：'abc'）" in out
