"""`symblock grade`: a generated 30-student class with planted mistakes, graded in one run and
compared with the points expected by the stated policy.

Every student's numbers come from an independent NumPy float64 forward written here (each step
from the student's own rounded earlier answers, as a person with a calculator works), with the
mistakes planted in NumPy: sample variance (n−1), a step rounded to 2 places instead of 3, a
rounding slip, a wrong entry carried forward, blanks and a missing row, a program's float32
print-out, the CSV form. The expected points are worked from the plan and the policy in
symblock/grading/points.py (1 per entry, carried 1, rounded 9/10, slip 1/2, wrong/blank 0), not
by the checker."""
import csv
import textwrap
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import yaml

from symblock.cli import main

SPEC = """\
    # a Post-LN block; everything but X is drawn per variant
    title: Class exercise
    dims: {seq_len: 3, d_model: 4, d_ff: 4, heads: 1}
    block: {norm_position: post, norm: layernorm, eps: 0, activation: relu, attention_scale: sqrt_dk}
    inputs:
      X: [[1, 0, 2, -1], [0, 1, -1, 2], [2, -1, 0, 1]]
    random: {seed: 1, low: -1, high: 1}
    exercise:
      ask: [attn.out, resid1, norm1.mean, norm1.var, norm1.std, norm1, ffn.hidden, ffn.act]
      points: {norm1.std: 2}
    """
ASKED = ["attn.out", "resid1", "norm1.mean", "norm1.var", "norm1.std", "norm1", "ffn.hidden", "ffn.act"]
POINTS = {s: (2 if s == "norm1.std" else 1) for s in ASKED}
N = 30


def r(x, places=3):
    """Round half away from zero at `places`, as a person does. The float is read at 9 places
    first, so that a mean of rounded numbers sitting on a tie (0.3815 computed as
    0.38149999999999995) rounds as the exact decimal does."""
    q = Decimal(1).scaleb(-places)
    return np.vectorize(lambda v: float(Decimal(f"{float(v):.9f}").quantize(q, ROUND_HALF_UP)))(x)


def softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def params(spec_data, seed):
    """The drawn weights of one variant (the generator's draw, not the checker)."""
    from symblock.exercises import variants
    s = variants.with_seed(spec_data, "spec.yaml", seed)
    P = {k: np.array(v.tolist(), dtype=float) for k, v in s.params.items()}
    P["X"] = np.array(s.X.tolist(), dtype=float)
    return P


def work(P, ddof=0, mean_places=3, plant=None, rounding=True):
    """The asked steps as a student works them, each from their own rounded earlier answers.
    `plant(name, value)` changes a step's answer before later steps use it."""
    out = {}

    def put(name, v, places=3):
        v = r(v, places) if rounding else v
        if plant:
            v = plant(name, v)
        out[name] = v
        return v
    X = P["X"]
    q, k, v = X @ P["W_Q"], X @ P["W_K"], X @ P["W_V"]
    a = put("attn.out", softmax_rows(q @ k.T / 2) @ v @ P["W_O"])
    r1 = put("resid1", X + a)
    mu = put("norm1.mean", r1.mean(axis=1, keepdims=True), mean_places)
    var = put("norm1.var", ((r1 - mu) ** 2).sum(axis=1, keepdims=True) / (4 - ddof))
    std = put("norm1.std", np.sqrt(var))
    n1 = put("norm1", (r1 - mu) / std)
    h = put("ffn.hidden", n1 @ P["W_1"])
    put("ffn.act", np.maximum(h, 0))
    return out


def text3(x, places=3):
    return f"{x:.{places}f}"


def write_yaml(path, ident, name, steps, head="decimals: 3"):
    lines = [f"id: {ident}", f"name: {name}", head, "steps:"]
    for step, rows in steps.items():
        lines.append(f"  {step}: [" + ", ".join("null" if row is None else "[" + ", ".join(row) + "]"
                                               for row in rows) + "]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def grid(m, places=3):
    return [[text3(x, places) for x in row] for row in m]


def share(credits) -> Fraction:
    credits = [Fraction(c) for c in credits]
    return sum(credits, Fraction(0)) / len(credits)


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """The set, the class's answers files and the points each student should get."""
    root = tmp_path_factory.mktemp("class")
    spec_path = root / "spec.yaml"
    spec_path.write_text(textwrap.dedent(SPEC), encoding="utf-8")
    set_dir, answers = root / "set", root / "answers"
    assert main(["worksheet", str(spec_path), "--variants", str(N), "--seed", "1", "--out", str(set_dir),
                 "--format", "markdown"]) == 0
    manifest = yaml.safe_load((set_dir / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["asked"] == ASKED and manifest["points"] == POINTS
    spec_data = yaml.safe_load(textwrap.dedent(SPEC))
    answers.mkdir()
    expected = {}
    for i, v in enumerate(manifest["variants"]):
        ident, name = v["id"], f"student{i:02d}"
        P = params(spec_data, v["seed"])
        kind, act00_carried, carried_n1 = i % 6, False, 0
        credit = {s: Fraction(1) for s in ASKED}
        if kind == 0:     # all right; every other one hands in the CSV form
            steps = {s: grid(m) for s, m in work(P).items()}
            if i % 12 == 6:
                rows = ["step,row,col,value", f"id,,,{ident}", f"name,,,{name}", "decimals,,,3"]
                rows += [f"{s},{a},{b},{x}" for s, g in steps.items() for a, row in enumerate(g)
                         for b, x in enumerate(row)]
                (answers / f"{name}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
            else:
                write_yaml(answers / f"{name}.yaml", ident, name, steps)
        elif kind == 1:   # sample variance; σ and the normalised rows carried forward from it
            mine = work(P, ddof=1)
            write_yaml(answers / f"{name}.yaml", ident, name, {s: grid(m) for s, m in mine.items()})
            credit["norm1.var"] = Fraction(0)   # σ, norm1, ...: carried, full credit by default
            # an entry of norm1 that still rounds to the right value (near 0) is simply correct:
            # the truth, or the rows normalised from their own resid1 and mean with the right σ
            dev = mine["resid1"] - mine["norm1.mean"]
            honest = r(dev / np.sqrt((dev ** 2).mean(axis=1, keepdims=True)))
            truth = r(work(P, rounding=False)["norm1"])
            carried_n1 = int(((mine["norm1"] != truth) & (mine["norm1"] != honest)).sum())
        elif kind == 2:   # blanks: ffn.act left null, ffn.hidden's last row missing and one cell ""
            steps = {s: grid(m) for s, m in work(P).items()}
            steps["ffn.hidden"] = steps["ffn.hidden"][:2]
            steps["ffn.hidden"][0][0] = '""'
            steps["ffn.act"] = [None, None, None]
            write_yaml(answers / f"{name}.yaml", ident, name, steps)
            credit["ffn.hidden"], credit["ffn.act"] = Fraction(7, 12), Fraction(0)
        elif kind == 3:   # the row means to 2 places although 3 are asked
            mine = work(P, mean_places=2)
            steps = {s: grid(m) for s, m in mine.items()}
            steps["norm1.mean"] = grid(mine["norm1.mean"], 2)
            write_yaml(answers / f"{name}.yaml", ident, name, steps)
            # right at 3 places (of the truth, or of the mean of their own rounded resid1), else
            # right at the 2 places written: "rounded"
            own = mine["resid1"].mean(axis=1)
            true = work(P, rounding=False)["norm1.mean"].ravel()
            credit["norm1.mean"] = share(1 if r(o, 2) in (r(o, 3), r(t, 3)) else Fraction(9, 10)
                                         for o, t in zip(own, true))
        elif kind == 4:   # a rounding slip in resid1, one wrong entry in ffn.hidden carried into ffn.act
            exact_r1 = work(P, rounding=False)["resid1"]

            def plant(name_, val):
                val = val.copy()
                if name_ == "resid1":
                    t = exact_r1[0, 0]
                    val[0, 0] = val[0, 0] + (0.001 if val[0, 0] <= t else -0.001)
                if name_ == "ffn.hidden":
                    val[0, 0] += 1
                return val
            mine = work(P, plant=plant)
            write_yaml(answers / f"{name}.yaml", ident, name, {s: grid(m) for s, m in mine.items()})
            credit["resid1"] = share([Fraction(1, 2)] + [1] * 11)
            credit["ffn.hidden"] = share([0] + [1] * 11)
            act00_carried = mine["ffn.hidden"][0, 0] > 0   # else relu gives the true 0
        else:             # a program's float32 print-out of the float64 forward
            exact_steps = work(P, rounding=False)
            steps = {s: [[str(np.float32(x)) for x in row] for row in m] for s, m in exact_steps.items()}
            write_yaml(answers / f"{name}.yaml", ident, name, steps, head="print: float32")
        expected[name] = {"kind": kind, "id": ident,
                          "points": {s: credit[s] * POINTS[s] for s in ASKED}, "act00_carried": act00_carried, "carried_n1": carried_n1}
    # files that must not be graded: an ID of no variant, an ID of another spec, a malformed entry
    write_yaml(answers / "stray.yaml", manifest["spec_token"] + ".999", "Stray", {"resid1": [["1", "2", "3", "4"]]})
    write_yaml(answers / "other.yaml", "seed-post-ln.3", "Other", {"resid1": [["1", "2", "3", "4"]]})
    write_yaml(answers / "broken.yaml", manifest["variants"][0]["id"], "Broken", {"resid1": [["1", "2", "3", "4", "5"], ["1"]]})
    return {"set": set_dir, "answers": answers, "expected": expected, "manifest": manifest, "root": root}


def read_gradebook(path: Path) -> dict:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["Student"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(klass):
    code = main(["grade", str(klass["set"]), str(klass["answers"])])
    return code, read_gradebook(klass["answers"] / "graded" / "gradebook.csv")


def dec2(x: Fraction) -> str:
    return str((Decimal(x.numerator) / Decimal(x.denominator)).quantize(Decimal("0.01"), ROUND_HALF_UP))


def test_gradebook_matches_the_expected_points(klass, graded):
    code, book = graded
    assert code == 1   # three files were not graded
    for name, exp in klass["expected"].items():
        row = book[name]
        assert row["status"] == "graded" and row["worksheet"] == exp["id"], (name, row["status"])
        for step in ASKED:
            assert row[step] == dec2(exp["points"][step]), (name, exp["kind"], step, row[step])
        assert row["total"] == dec2(sum(exp["points"].values(), Fraction(0))), name
        assert row["max"] == str(sum(POINTS.values()))
    assert len([r for r in book.values() if r["status"] == "graded"]) == N


def test_files_of_no_variant_or_another_spec_are_named_not_graded(klass, graded):
    _, book = graded
    token = klass["manifest"]["spec_token"]
    assert book["Stray"]["status"].startswith(f"not graded: id {token}.999 is not a variant of this set")
    assert "made from another spec ('seed-post-ln'" in book["Other"]["status"]
    assert "resid1[0]" in book["Broken"]["status"] and "a row of 5" in book["Broken"]["status"]
    assert book["Stray"]["total"] == "" and book["Other"]["total"] == ""
    summary = (klass["answers"] / "graded" / "summary.md").read_text(encoding="utf-8")
    for f in ("stray.yaml", "other.yaml", "broken.yaml"):
        assert f"- {f} (" in summary


def test_every_not_graded_reason_has_one_form_in_each_language(klass, tmp_path, capsys):
    """`FILE (NAME): REASON`, the reason naming neither the file nor its path (printed beside it), in
    the summary, the gradebook and on the terminal; in Chinese with --lang zh."""
    answers = tmp_path / "class" / "answers"
    answers.mkdir(parents=True)
    for f in ("stray.yaml", "other.yaml", "broken.yaml"):
        (answers / f).write_bytes((klass["answers"] / f).read_bytes())
    (answers / "latin.yaml").write_bytes("name: Lé\n".encode("latin-1"))
    (answers / "noid.yaml").write_text("name: Nora\nsteps: {}\n", encoding="utf-8")
    token = klass["manifest"]["spec_token"]
    expected = {"en": {"stray.yaml (Stray): id " + token + ".999 is not a variant of this set (",
                       "broken.yaml (Broken): steps.resid1", "latin.yaml (latin): is not UTF-8 text",
                       "noid.yaml (Nora): no id: (the worksheet ID printed on the sheet) in the file",
                       "other.yaml (Other): id seed-post-ln.3 was made from another spec ("},
                "zh": {"stray.yaml (Stray): ID " + token + ".999 不是本题组的练习（",
                       "broken.yaml (Broken): 文件有误：steps.resid1[0]: 形状应为 3×4，这一行却有 5 个数",
                       "latin.yaml (latin): 文件有误：不是 UTF-8 文本", "noid.yaml (Nora): 文件中没有 id:（练习上印的 ID）",
                       "other.yaml (Other): ID seed-post-ln.3 来自另一份 spec（"}}
    for lang, starts in expected.items():
        assert main(["grade", str(klass["set"]), str(answers), "--lang", lang, "--out", str(tmp_path / lang)]) == 1
        terminal = capsys.readouterr().out
        lines = [x[2:].replace("\\", "") for x in (tmp_path / lang / "summary.md").read_text(encoding="utf-8").splitlines()
                 if x.startswith("- ") and x.split(" ")[1].replace("\\", "") in {s.split(" ")[0] for s in starts}]
        assert len(lines) == 5 and all(any(x.startswith(s) for s in starts) for x in lines), lines
        assert not any("answers" in x.split(": ", 1)[1] or x.split(" ")[0] in x.split(": ", 1)[1] for x in lines), lines
        book = read_gradebook(tmp_path / lang / "gradebook.csv")
        assert book["Nora"]["status"] == "not graded: " + next(x for x in lines if x.startswith("noid")).split(": ", 1)[1]
        if lang == "en":   # the terminal says it in English, in the same form
            assert "not graded: latin.yaml (latin): is not UTF-8 text" in terminal


def test_summary_counts_wrong_shares_and_diagnoses(klass, graded):
    summary = (klass["answers"] / "graded" / "summary.md").read_text(encoding="utf-8")
    var_row = next(l for l in summary.splitlines() if l.startswith("| `norm1.var` |"))
    # 5 of 30 students (kind 1) used the sample variance: 17% wrong, diagnosed each time
    assert "| 17% |" in var_row and "`ln_sample_variance` ×5" in var_row
    act_row = next(l for l in summary.splitlines() if l.startswith("| `ffn.act` |"))
    assert act_row.split("|")[5].strip() == "17%"   # kind 2 left it blank
    assert "carried forward" in summary          # the policy is stated


def test_both_summaries_give_the_mean_of_the_gradebooks_totals(klass, tmp_path):
    """The mean an instructor gets from the gradebook's total column, in the Markdown and the HTML
    summary alike (the HTML page once gave the exact mean, 0.01 off the column's)."""
    v = klass["manifest"]["variants"][0]
    mine = work(params(yaml.safe_load(textwrap.dedent(SPEC)), v["seed"]))
    answers = tmp_path / "answers"
    answers.mkdir()
    steps = {s: [[text3(mine[s][0][0])], ["999"], ["999"]] for s in ("norm1.mean", "norm1.var")}
    write_yaml(answers / "third.yaml", v["id"], "Third", steps)   # a third of each: 1/3 + 1/3 points
    assert main(["grade", str(klass["set"]), str(answers)]) == 0
    out = answers / "graded"
    totals = [Decimal(row["total"]) for row in read_gradebook(out / "gradebook.csv").values()]
    assert totals == [Decimal("0.66")]                        # 0.33 + 0.33 as printed
    for name in ("summary.md", "summary.html"):
        assert "mean total 0.66 of" in (out / name).read_text(encoding="utf-8"), name


def test_feedback_per_student_and_in_chinese(klass, graded):
    fb = klass["answers"] / "graded" / "feedback"
    assert len(list(fb.glob("*.md"))) == N
    text = (fb / "student01.md").read_text(encoding="utf-8")
    assert "ln_sample_variance" in text and "n−1" in text and "`norm1.std` | carried" in text
    out = klass["root"] / "zh"
    assert main(["grade", str(klass["set"]), str(klass["answers"]), "--out", str(out), "--lang", "zh"]) == 1
    zh = (out / "feedback" / "student01.md").read_text(encoding="utf-8")
    assert "批改反馈" in zh and "样本方差" in zh and "沿用" in zh
    assert "全班小结" in (out / "summary.md").read_text(encoding="utf-8")


def test_feedback_shows_an_entrys_closed_form_as_check_does(klass, graded, capsys):
    """A feedback line's expected value is check's, its exact form included (`expected 0.375 (= 3/8)`):
    the student's file said less than the checker about the same entry."""
    closed = 0
    for i in range(N):
        fb = (klass["answers"] / "graded" / "feedback" / f"student{i:02d}.md").read_text(encoding="utf-8")
        main(["check", str(klass["root"] / "spec.yaml"), str(klass["answers"] / f"student{i:02d}.yaml")])
        out = capsys.readouterr().out
        said = [line.split(" expected ", 1)[1].replace("\\*", "*").split(")")[0]   # Markdown: \\* is *
                for line in fb.splitlines() if line.startswith("- row")]
        checked = [line.split(" expected ", 1)[1].replace("  ", " ") for line in out.splitlines() if line.startswith("      row")]
        assert all(any(c.startswith(x) for c in checked) for x in said), (i, said, checked)
        closed += sum("(= " in x for x in said)
    assert closed   # some entry's exact form is shown


def test_a_rounded_task_names_its_docked_entries_as_a_slip_does(klass, graded, capsys):
    """The students who give the row means to 2 places (kind 3): each mean right only at the 2 places
    written (worked in NumPy, as the fixture credits it 9/10) is named by its row in the feedback, in
    English and Chinese, and in `check`'s report, as a slip's entries are; the others are not."""
    spec_data = yaml.safe_load(textwrap.dedent(SPEC))
    if not (klass["root"] / "zh").exists():   # else written by test_feedback_per_student_and_in_chinese
        assert main(["grade", str(klass["set"]), str(klass["answers"]), "--out", str(klass["root"] / "zh"),
                     "--lang", "zh"]) == 1
    seen = 0
    for i in range(3, N, 6):
        v = klass["manifest"]["variants"][i]
        P = params(spec_data, v["seed"])
        own = work(P, mean_places=2)["resid1"].mean(axis=1)
        true = work(P, rounding=False)["norm1.mean"].ravel()
        docked = [k for k, (o, t) in enumerate(zip(own, true)) if r(o, 2) not in (r(o, 3), r(t, 3))]
        fb = (klass["answers"] / "graded" / "feedback" / f"student{i:02d}.md").read_text(encoding="utf-8")
        zh = (klass["root"] / "zh" / "feedback" / f"student{i:02d}.md")
        main(["check", str(klass["root"] / "spec.yaml"), str(klass["answers"] / f"student{i:02d}.yaml")])
        out = capsys.readouterr().out
        for k in range(3):
            given = text3(r(own[k], 2), 2)
            assert (f"- row {k + 1}, col 1 given {given} " in fb) == (k in docked), (i, k, fb)
            assert (f"      row {k + 1}, col 1  given {given} " in out) == (k in docked), (i, k, out)
        if docked:
            seen += 1
            assert "**`norm1.mean`** — rounded" in fb
            assert sum(x.startswith("- row") and x.endswith(" rounded") for x in fb.splitlines()) == len(docked)
            text = zh.read_text(encoding="utf-8")
            assert sum(x.startswith("- 第") and x.endswith(" 少位") for x in text.splitlines()) == len(docked)
            assert f"- 第 {docked[0] + 1} 行第 1 列 你的答案 {text3(r(own[docked[0]], 2), 2)} " in text
    assert seen   # some student's mean is right only at 2 places


def test_feedback_on_a_csv_file_says_its_rows_count_from_0_there(klass, graded, tmp_path):
    """student06 hands in the CSV form; with one entry changed, the feedback names it from 1 (as the
    sheet does) and says the file counts from 0; the all-right CSV's feedback has nothing to say."""
    right = (klass["answers"] / "student06.csv").read_text(encoding="utf-8")
    assert "count them from 0" not in (klass["answers"] / "graded" / "feedback" / "student06.md").read_text(encoding="utf-8")
    lines = right.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("resid1,1,0,"))
    lines[k] = "resid1,1,0,9.999"
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "student06.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["grade", str(klass["set"]), str(answers)]) == 0   # graded, none flagged
    text = (answers / "graded" / "feedback" / "student06.md").read_text(encoding="utf-8")
    entry = next(line for line in text.splitlines() if "given 9.999" in line)
    assert entry.startswith("- row 2, col 1 ")
    assert text.count("(its row:, entries: or CSV lines) count them from 0") == 1


def test_carried_credit_is_a_flag(klass, graded):
    out = klass["root"] / "half"
    main(["grade", str(klass["set"]), str(klass["answers"]), "--out", str(out), "--carried", "1/2"])
    book = read_gradebook(out / "gradebook.csv")
    for name, exp in klass["expected"].items():
        if exp["kind"] == 1:   # σ (2 points) and the normalised rows rest on the wrong variance
            assert book[name]["norm1.std"] == "1.00", name
            assert book[name]["norm1"] == dec2(1 - Fraction(exp["carried_n1"], 24)), name
        if exp["kind"] == 4:   # ffn.act[0][0] rests on the wrong ffn.hidden[0][0]
            want = Fraction(23, 24) if exp["act00_carried"] else Fraction(1)
            assert book[name]["ffn.act"] == dec2(want), name
    assert any(e["act00_carried"] for e in klass["expected"].values())


def test_never_overwrites_without_force(klass, graded, capsys):
    assert main(["grade", str(klass["set"]), str(klass["answers"])]) == 2
    err = capsys.readouterr().err
    assert "use --force" in err and "gradebook.csv already exists (and 4 more)" in err, err
    assert main(["grade", str(klass["set"]), str(klass["answers"]), "--force"]) == 1


def test_a_folder_that_holds_no_set_is_said_before_an_earlier_gradebook(klass, graded, tmp_path, capsys):
    """`grade ANSWERS ANSWERS` (the set's folder mistyped) beside an earlier grading said `use --force`,
    which would not have helped: the missing set is what is wrong."""
    for set_dir in (klass["answers"], tmp_path / "no-such-set"):
        assert main(["grade", str(set_dir), str(klass["answers"])]) == 2
        err = capsys.readouterr().err
        assert err == (f"symblock: error: {set_dir}: no manifest.yaml (expected a folder written by "
                       "`symblock worksheet --variants N`)\n"), err


def test_a_folder_with_no_answers_files_is_refused_not_an_empty_gradebook(klass, tmp_path, capsys):
    """The wrong folder (or answers not collected yet) must not look like a graded class."""
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "notes.txt").write_text("not an answers file\n", encoding="utf-8")
    out = tmp_path / "graded"
    assert main(["grade", str(klass["set"]), str(tmp_path / "answers"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no answers files" in err and "answers" in err and "Traceback" not in err
    assert not out.exists()   # nothing written


def test_the_manifest_given_for_the_set_folder_names_the_folder(klass, tmp_path, capsys):
    """`grade SET/instructor/manifest.yaml ANSWERS` said the file had "no manifest.yaml"."""
    manifest = klass["set"] / "instructor" / "manifest.yaml"
    out = tmp_path / "graded"
    assert main(["grade", str(manifest), str(klass["answers"]), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (f"symblock: error: {manifest}: a file; expected the set's folder "
                                       f"({klass['set']}), written by `symblock worksheet --variants N`\n")
    assert not out.exists()


def test_a_re_commented_and_renamed_spec_keeps_its_ids(klass, tmp_path, capsys):
    """The ID hashes the parsed spec: comments, key order, quoting and the file name do not count."""
    ident = klass["manifest"]["variants"][0]["id"]
    other = tmp_path / "renamed.yml"
    text = textwrap.dedent(SPEC).replace("# a Post-LN block", "# edited comment").replace(
        "title: Class exercise", "title: 'Class exercise'   # quoted now")
    other.write_text(text, encoding="utf-8")
    assert main(["worksheet", str(other), "--id", ident, "--out", str(tmp_path / "again"),
                 "--format", "markdown"]) == 0
    again = (tmp_path / "again" / "key.md").read_text(encoding="utf-8")
    assert again == (klass["set"] / "instructor" / ident / "key.md").read_text(encoding="utf-8")
    changed = tmp_path / "changed.yaml"
    changed.write_text(text.replace("low: -1", "low: -2"), encoding="utf-8")
    assert main(["worksheet", str(changed), "--id", ident, "--out", str(tmp_path / "no")]) == 2
    assert "the file changed, or it is another spec" in capsys.readouterr().err
    # and `check` takes the answers' id: against the renamed file
    answers = klass["answers"] / "student00.yaml"
    assert main(["check", str(other), str(answers), "--json"]) == 0


def test_a_set_drawn_with_random_flags_is_rebuilt_from_its_manifest(tmp_path, capsys):
    """`--difficulty easy` is recorded in the manifest: grade redraws the same variants."""
    from symblock.exercises import variant, variants
    from symblock.reference import numeric
    spec_file = tmp_path / "easy.yaml"
    spec_file.write_text('title: "Easy"\nrandom: {seed: 1}\n', encoding="utf-8")
    set_dir, answers = tmp_path / "set", tmp_path / "answers"
    assert main(["worksheet", str(spec_file), "--difficulty", "easy", "--variants", "2", "--seed", "5",
                 "--format", "markdown", "--out", str(set_dir)]) == 0
    manifest = yaml.safe_load((set_dir / "instructor" / "manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["random_flags"] == {"difficulty": "easy", "generator": 2}   # a new set: the newest generator
    spec_file.unlink()   # the set needs no spec file any more
    answers.mkdir()
    data, source = variants.read(str(set_dir / "instructor" / "manifest.yaml"))
    for v in manifest["variants"]:
        from symblock.exercises.generate import merge_random
        spec, _ = variant.draw(merge_random(data["spec"], {"difficulty": "easy", "generator": 2}), "easy.yaml", v["seed"])
        T = numeric.forward(spec)
        steps = {s: [[f"{x:.3f}" for x in row] for row in T[s]] for s in manifest["asked"]}
        write_yaml(answers / f"{v['seed']}.yaml", v["id"], f"s{v['seed']}", steps)
    assert main(["grade", str(set_dir), str(answers)]) == 0
    book = read_gradebook(answers / "graded" / "gradebook.csv")
    max_total = str(len(manifest["asked"]))
    assert {r["total"] for r in book.values()} == {max_total + ".00"}


def test_check_of_a_set_answers_file_needs_no_spec_and_no_preset(tmp_path, capsys, monkeypatch):
    """A student runs `symblock check answers.yaml` inside the set they were handed: the manifest
    gives the spec and the --preset the set was made with, so only the asked steps count."""
    import json
    from symblock.engine.spec import example_text
    monkeypatch.chdir(tmp_path)
    assert main(["worksheet", "pre-ln-causal-gelu", "--preset", "norm", "--variants", "2", "--out", "set"]) == 0
    capsys.readouterr()
    X = np.array(yaml.safe_load(example_text("pre-ln-causal-gelu"))["inputs"]["X"], dtype=float)
    path = tmp_path / "set" / "students" / "pre-ln-causal-gelu.2" / "answers.yaml"
    data = yaml.safe_load(path.read_text())
    data["steps"]["norm1.mean"] = [[text3(m)] for m in X.mean(axis=1)]   # worked in NumPy, not by symblock
    path.write_text(yaml.safe_dump(data))
    assert main(["check", str(path), "--json"]) == 0
    steps = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    assert steps["norm1.mean"]["status"] == "correct"
    missing = {n for n, s in steps.items() if s["status"] == "missing" and s["asked"]}
    assert missing and all(n.startswith(("norm1", "norm2", "norm_final")) for n in missing), missing
    # a file of the set is held to the set's places, as `grade` holds it: the row variances (1.25
    # each, NumPy) to 1 place are "rounded", and the text says which key was not used
    var1 = [[text3(v, 1)] for v in r(X.var(axis=1), 1)]
    assert var1 == [["1.3"]] * 3
    path.write_text(yaml.safe_dump({**data, "decimals": 1, "steps": {"norm1.var": var1}}))
    assert main(["check", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "in no set folder" not in err, err
    assert "decimals: 3 " in out and "Judged at the 3 places the sheet asks for: decimals: 1 in this file" in out, out
    assert "≈ rounded  norm1.var" in out, out
    # the same file outside its set, without --preset, counts every step of the full preset
    (tmp_path / "loose.yaml").write_text(path.read_text())
    assert main(["check", "pre-ln-causal-gelu", str(tmp_path / "loose.yaml"), "--json"]) == 0
    loose = json.loads(capsys.readouterr().out)["steps"]
    assert any(s["status"] == "missing" and s["asked"] and s["name"].startswith("attn") for s in loose)
    main(["check", "pre-ln-causal-gelu", str(tmp_path / "loose.yaml")])   # as text: it says how it was marked
    err = capsys.readouterr().err
    assert "loose.yaml is in no set folder: marked against the variant pre-ln-causal-gelu.2 draws" in err, err
    # the set's manifest given as SPEC: said so, with the way out (not "its spec token differs")
    assert main(["check", "set/instructor/manifest.yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert "this is a set's manifest, not a spec" in err and "leave SPEC out" in err, err


def test_check_with_the_sets_spec_uses_the_manifest_and_another_spec_is_refused(tmp_path, capsys, monkeypatch):
    """`symblock check SPEC answers.yaml` in a set folder: SPEC the set's spec (same token) marks from
    the manifest (its --preset: only the norm steps count as missing); another SPEC is an error
    naming both, never a marking against a block the sheet did not show."""
    import json
    from symblock.engine.spec import example_text
    monkeypatch.chdir(tmp_path)
    assert main(["worksheet", "pre-ln-causal-gelu", "--preset", "norm", "--variants", "2", "--out", "set"]) == 0
    capsys.readouterr()
    X = np.array(yaml.safe_load(example_text("pre-ln-causal-gelu"))["inputs"]["X"], dtype=float)
    path = Path("set") / "students" / "pre-ln-causal-gelu.1" / "answers.yaml"
    data = yaml.safe_load(path.read_text())
    data["steps"]["norm1.mean"] = [[text3(m)] for m in X.mean(axis=1)]   # worked in NumPy
    path.write_text(yaml.safe_dump(data))
    assert main(["check", "pre-ln-causal-gelu", str(path), "--json"]) == 0
    steps = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    assert steps["norm1.mean"]["status"] == "correct"
    missing = {n for n, s in steps.items() if s["status"] == "missing" and s["asked"]}
    assert missing and all(n.startswith(("norm1", "norm2", "norm_final")) for n in missing), missing
    # a file of the set is held to the set's places, as `grade` holds it: the row variances (1.25
    # each, NumPy) to 1 place are "rounded", and the text says which key was not used
    var1 = [[text3(v, 1)] for v in r(X.var(axis=1), 1)]
    assert var1 == [["1.3"]] * 3
    path.write_text(yaml.safe_dump({**data, "decimals": 1, "steps": {"norm1.var": var1}}))
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "decimals: 3 " in out and "Judged at the 3 places the sheet asks for: decimals: 1 in this file" in out, out
    assert "≈ rounded  norm1.var" in out, out
    assert main(["check", "seed-post-ln", str(path)]) == 2
    err = capsys.readouterr().err
    assert "set in set/" in err and "'pre-ln-causal-gelu'" in err and "'seed-post-ln'" in err, err
    assert "leave SPEC out" in err and "Traceback" not in err


def test_one_unreadable_entry_is_that_entry_wrong_and_the_file_is_graded(klass, tmp_path):
    """student00 has everything right; with resid1[0][0] written `abc` (and student data beside
    id and name) the file is graded: that entry wrong (1 of resid1's 12: 11/12 of its point),
    the rest of resid1 right, and the later steps, worked from the true resid1[0][0], right:
    9 − 1/12 = 8.92. The feedback says why, in English and Chinese."""
    answers = tmp_path / "answers"
    answers.mkdir()
    text = (klass["answers"] / "student00.yaml").read_text(encoding="utf-8")
    head, _, rest = text.partition("  resid1: [[")
    first, _, tail = rest.partition(",")
    text = "student_id: s-0042\nemail: ada@example.org\n" + head + '  resid1: [["abc"' + "," + tail
    (answers / "student00.yaml").write_text(text, encoding="utf-8")
    assert main(["grade", str(klass["set"]), str(answers), "--out", str(tmp_path / "en")]) == 0
    row = read_gradebook(tmp_path / "en" / "gradebook.csv")["student00"]
    assert row["status"] == "graded" and row["resid1"] == "0.92" and row["norm1.mean"] == "1.00"
    assert row["total"] == "8.92"
    fb = (tmp_path / "en" / "feedback" / "student00.md").read_text(encoding="utf-8")
    assert "given abc" in fb and "(not a number: 'abc')" in fb
    assert main(["grade", str(klass["set"]), str(answers), "--out", str(tmp_path / "zh"), "--lang", "zh"]) == 0
    assert "不是数：'abc'" in (tmp_path / "zh" / "feedback" / "student00.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("flag, value", [("--carried", "1e999999999"), ("--rounded", "1e-999999999"),
                                         ("--slip", "0e99999999999999999999"), ("--carried", "1/10000000000000000000000")])
def test_credit_flags_with_huge_exponents_are_refused_at_once(klass, tmp_path, flag, value):
    import subprocess
    import sys
    import time
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "symblock", "grade", str(klass["set"]), str(klass["answers"]),
                           "--out", str(tmp_path / "o"), flag, value], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and time.monotonic() - start < 30
    assert proc.stderr.startswith(f"symblock: error: {flag}: expected a credit between 0 and 1"), proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def test_a_files_own_decimals_cannot_lower_the_places_the_set_asks_for(klass, tmp_path):
    """resid1 to 1 place on a 3-place sheet: `decimals: 1`, `sig_figs: 2` or a step's own
    `decimals: 1` in the file change nothing. Each entry is "rounded" (9/10), or correct where
    the truth's 3-place rounding is that 1-place number, as with no key at all; the feedback
    says which key was not used."""
    v = klass["manifest"]["variants"][0]
    truth = work(params(yaml.safe_load(textwrap.dedent(SPEC)), v["seed"]), rounding=False)["resid1"]
    one = grid(r(truth, 1), 1)
    want = dec2(share(1 if r(t, 1) == r(t, 3) else Fraction(9, 10) for t in truth.ravel()))
    assert want != "1.00"
    folder = tmp_path / "answers"
    folder.mkdir()
    write_yaml(folder / "plain.yaml", v["id"], "Plain", {"resid1": one}, head="")
    write_yaml(folder / "dec.yaml", v["id"], "Dec", {"resid1": one}, head="decimals: 1")
    write_yaml(folder / "sig.yaml", v["id"], "Sig", {"resid1": one}, head="sig_figs: 2")
    (folder / "step.yaml").write_text(f"id: {v['id']}\nname: Step\nsteps:\n  resid1: {{decimals: 1, value: "
                                      + "[" + ", ".join("[" + ", ".join(row) + "]" for row in one) + "]}\n",
                                      encoding="utf-8")
    out = tmp_path / "graded"
    main(["grade", str(klass["set"]), str(folder), "--out", str(out)])
    book = read_gradebook(out / "gradebook.csv")
    for name, key in (("Plain", None), ("Dec", "`decimals: 1`"), ("Sig", "`sig_figs: 2`"),
                      ("Step", "`steps.resid1.decimals: 1`")):
        assert book[name]["resid1"] == want, name
        fb = (out / "feedback" / f"{name}.md").read_text(encoding="utf-8")
        assert ("Judged at the 3 places the sheet asks for: " + key in fb) if key else "Judged at" not in fb, name


def test_grade_names_each_unknown_key_kept_as_student_data_once(klass, tmp_path, capsys):
    """As `check` does for one file: a key neither the format's nor a roster column's is kept as the
    student's data and named once, with the files that have it; student_id passes without a word."""
    answers = tmp_path / "answers"
    answers.mkdir()
    for k, f in enumerate(("stray.yaml", "other.yaml", "broken.yaml")):   # not graded: not named
        (answers / f).write_bytes((klass["answers"] / f).read_bytes())
    good = sorted(p for p in klass["answers"].glob("*.yaml") if p.name not in ("stray.yaml", "other.yaml", "broken.yaml"))
    for k, p in enumerate(good[:2]):
        text = p.read_text(encoding="utf-8").replace("\nsteps:", "\nnickname: N\nstudent_id: s1\nsteps:", 1)
        (answers / f"g{k}.yaml").write_text(text, encoding="utf-8")
    main(["grade", str(klass["set"]), str(answers), "--out", str(tmp_path / "out")])
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("warning:")]
    assert lines == ["warning: g0.yaml, g1.yaml: nickname: not a key of the answers format, kept as the student's own "
                     "data (did you mean name?); the format's keys are id, name, decimals, sig_figs, print, steps, "
                     "title, notes, and student data such as student_id, email, section"], lines


def test_a_share_of_one_in_eight_is_13_percent_everywhere_it_is_printed(klass, tmp_path, capsys):
    """12.5 % rounds half up to 13 % on the terminal and in both summaries (a float's round-half-even
    printed 12 %); a slip credit of 1/16 is 6.25 %, stated as 6.3 %."""
    spec = yaml.safe_load(textwrap.dedent(SPEC))
    answers = tmp_path / "answers"
    answers.mkdir()
    for k, v in enumerate(klass["manifest"]["variants"][:8]):   # 8 students, one used the sample variance
        mine = work(params(spec, v["seed"]), ddof=1 if k == 0 else 0)
        write_yaml(answers / f"s{k}.yaml", v["id"], f"S{k}", {s: grid(m) for s, m in mine.items()})
    capsys.readouterr()
    assert main(["grade", str(klass["set"]), str(answers), "--slip", "1/16"]) == 0
    out = capsys.readouterr().out
    assert "  norm1.var          wrong 13%  (ln_sample_variance ×1)" in out, out
    md = (answers / "graded" / "summary.md").read_text(encoding="utf-8")
    row = next(l for l in md.splitlines() if l.startswith("| `norm1.var` |"))
    assert row.split("|")[4].strip() == "13%", row
    assert "a rounding slip (one unit in the last place) 6.3%" in md
    html = (answers / "graded" / "summary.html").read_text(encoding="utf-8")
    assert "<td><code>norm1.var</code></td><td>1</td><td>0.88</td><td>13%</td>" in html


def test_percentages_round_exactly_half_up():
    from symblock.grading.lang import percent
    assert [percent(Fraction(n, d)) for n, d in ((1, 8), (3, 8), (5, 8), (1, 200), (0, 1), (1, 1), (2, 3))] == \
        ["13%", "38%", "63%", "1%", "0%", "100%", "67%"]   # 12.5, 37.5, 62.5, 0.5: up; 66.67: 67
    assert [percent(Fraction(n, d), 1) for n, d in ((1, 16), (1, 3), (1, 400))] == ["6.3%", "33.3%", "0.3%"]


def test_worksheet_writes_a_sets_variant_again_from_its_manifest_alone(tmp_path, capsys):
    """`worksheet SET/instructor/manifest.yaml --id ID`: the manifest is the set's record (read by
    grade and check), and holds the spec, flags, preset, places and language: the variant's sheet
    and key come out byte for byte as the set wrote them, with the spec file gone. What the manifest
    cannot do is said, exit 2: no --id, flags the manifest gives, an ID of no variant of the set."""
    spec_file = tmp_path / "hw.yaml"
    spec_file.write_text('title: "HW"\nrandom: {seed: 1}\n', encoding="utf-8")
    set_dir = tmp_path / "set"
    assert main(["worksheet", str(spec_file), "--difficulty", "easy", "--preset", "norm", "--decimals", "2",
                 "--lang", "zh", "--variants", "2", "--format", "markdown,latex", "--out", str(set_dir)]) == 0
    spec_file.unlink()
    man = set_dir / "instructor" / "manifest.yaml"
    ident = yaml.safe_load(man.read_text(encoding="utf-8"))["variants"][1]["id"]
    capsys.readouterr()
    assert main(["worksheet", str(man), "--id", ident, "--format", "markdown,latex", "--out", str(tmp_path / "again")]) == 0
    for name, folder in (("sheet.md", "students"), ("sheet.tex", "students"), ("key.md", "instructor"),
                         ("key.tex", "instructor")):
        assert (tmp_path / "again" / name).read_bytes() == (set_dir / folder / ident / name).read_bytes(), name
    assert "小数" in (tmp_path / "again" / "sheet.md").read_text(encoding="utf-8")   # the set's --lang zh
    for folder in (set_dir, set_dir / "instructor"):   # the set's folder stands for its manifest, as for grade
        assert main(["worksheet", str(folder), "--id", ident, "--format", "markdown", "--out", str(tmp_path / "f"),
                     "--force"]) == 0
        assert (tmp_path / "f" / "key.md").read_bytes() == (set_dir / "instructor" / ident / "key.md").read_bytes()
    for extra, words in (([], ["a set's manifest", "not a spec", "give --id ID", "(--id ", "hw.yaml)"]),
                         (["--id", ident, "--preset", "full"], ["--preset:", "gives the set's own preset", "leave them out"]),
                         (["--id", ident, "--difficulty", "hard"], ["random-section flags", "leave them out"]),
                         (["--id", ident[:-2] + ".999"], ["--id:", "is not a variant of this set (2 variants"])):
        assert main(["worksheet", str(man), *extra, "--out", str(tmp_path / "no")]) == 2, extra
        err = capsys.readouterr().err
        assert all(w in err for w in words) and "Traceback" not in err and "another spec" not in err, (extra, err)
    assert not (tmp_path / "no").exists()
