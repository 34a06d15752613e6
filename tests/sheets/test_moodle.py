"""--format moodle: a Moodle XML quiz that lxml parses, one Cloze question per variant in one
category per set; every answer read back out of the Cloze syntax is the trace's value, and its
tolerance accepts exactly what `symblock check` accepts."""
from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import pytest
from lxml import etree

from symblock import cli
from symblock.engine import block, exact
from symblock.exercises.generate import load
from symblock.grading.answers import parse_entry
from symblock.grading.marking import matches

SUB = re.compile(r"\{(\d+):(NUMERICAL|SHORTANSWER):((?:\\.|[^\\}])*)\}")
GRID = re.compile(r'<table class="symblock-grid" data-step="([^"]+)">(.*?)</table>', re.S)


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_quiz(path):
    """[(category path, [question element])], and per question {step: rows of sub-questions}."""
    root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
    assert root.tag == "quiz"
    return root


def grids(question) -> dict[str, list[list[tuple[str, str, str]]]]:
    """{step: rows of (type, answer, tolerance or None)} read from the question's Cloze text."""
    html = question.find("questiontext/text").text
    out = {}
    for step, body in GRID.findall(html):
        rows = []
        for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S):
            row = []
            for _, kind, inner in SUB.findall(tr):
                first = re.split(r"(?<!\\)~", inner)[0]
                answer = re.split(r"(?<!\\)#", first)[0]
                if kind == "NUMERICAL":
                    value, tol = answer.replace("%100%", "").split(":")
                    row.append((kind, unescape(value), tol))
                else:
                    row.append((kind, unescape(answer.replace("%100%", "")), None))
            rows.append(row)
        out[step] = rows
    return out


def write(tmp_path, *argv) -> "etree._Element":
    assert cli.main(["worksheet", *argv, "--out", str(tmp_path / "out"), "--format", "moodle"]) == 0
    out = tmp_path / "out"
    return parse_quiz(out / "moodle.xml" if (out / "moodle.xml").exists() else out / "instructor" / "moodle.xml")


def test_seed_article_numbers_come_back_out_of_the_cloze(tmp_path):
    root = write(tmp_path)
    cat, question = root.findall("question")
    assert cat.get("type") == "category" and question.get("type") == "cloze"
    got = grids(question)
    # the seed article's hand-worked numbers (README), exact decimals
    assert [[v for _, v, _ in row] for row in got["resid1"]] == [["2.401", "0.599"], ["1.504", "1.752"],
                                                                  ["2.576", "1.716"]]
    assert [row[0][1] for row in got["norm1.var"]] == ["0.811801", "0.015376", "0.1849"]
    assert [row[0][1] for row in got["norm1.std"]] == ["0.901", "0.124", "0.43"]
    assert {tol for rows in got.values() for row in rows for _, _, tol in row} == {"0.0005"}


def test_every_entry_is_the_trace_and_masked_scores_are_minus_inf(tmp_path):
    root = write(tmp_path, "pre-ln-causal-gelu", "--decimals", "2")
    question = root.findall("question")[1]
    got = grids(question)
    trace = block.forward(load("pre-ln-causal-gelu"))
    asked = [s.name for s in trace if s.name in got]
    assert list(got) == asked and "attn.h0.masked" in got
    kinds = set()
    for name, rows in got.items():
        value = trace[name].value
        assert (len(rows), len(rows[0])) == value.shape, name
        for i, row in enumerate(rows):
            for j, (kind, answer, tol) in enumerate(row):
                e = value.rows[i][j]
                kinds.add(kind)
                if e is exact.NEG_INF:
                    assert (kind, answer) == ("SHORTANSWER", "-inf")
                else:
                    assert kind == "NUMERICAL" and tol == "0.005"
                    assert abs(float(answer) - float(e)) < 1e-11, (name, i, j)
    assert kinds == {"NUMERICAL", "SHORTANSWER"}
    feedback = question.find("questiontext/text").text
    assert r"#= \\(\\frac{\\sqrt{2\}\}{5\}\\) ≈ 0.28}" in feedback.replace("- ", "")  # exact value named


def test_tolerance_accepts_what_the_checker_accepts(tmp_path):
    """Moodle's rule |a − v| ≤ t and symblock check's rounding rule agree on the rounded answer
    and on its neighbours one unit away, for every entry of a GELU block."""
    got = grids(write(tmp_path, "pre-ln-causal-gelu").findall("question")[1])
    trace = block.forward(load("pre-ln-causal-gelu"))
    checked = 0
    for name, rows in got.items():
        for i, row in enumerate(rows):
            for j, (kind, answer, tol) in enumerate(row):
                if kind != "NUMERICAL":
                    continue
                e = trace[name].value.rows[i][j]
                centre, t = Fraction(Decimal(answer)), Fraction(Decimal(tol))
                rounded = Decimal(float(e)).quantize(Decimal("0.001"))
                for a in (rounded - Decimal("0.001"), rounded, rounded + Decimal("0.001")):
                    entry = parse_entry(str(a), 3, "test", name)
                    moodle = abs(Fraction(a) - centre) <= t
                    assert moodle == matches(entry, e), (name, i, j, a)
                    checked += 1
    assert checked > 100


def test_one_question_per_variant_in_one_category(tmp_path):
    spec = tmp_path / "easy.yaml"
    spec.write_text("title: 'Set A/B'\nrandom: {seed: 1, difficulty: easy}\n")
    root = write(tmp_path, str(spec), "--variants", "3", "--preset", "norm")
    cat, *questions = root.findall("question")
    assert cat.find("category/text").text.startswith("$course$/top/symblock/Set A//B (h")
    assert [q.get("type") for q in questions] == ["cloze"] * 3
    ids = [q.find("idnumber").text for q in questions]
    text = cat.find("category/text").text
    token = text[text.rindex("(") + 1:-1]   # the IDs' <spec> part, with its generator version (-v2)
    assert token.endswith("-v2") and len(set(ids)) == 3 and all(i.startswith(token + ".") for i in ids)
    answers = [str(grids(q)) for q in questions]
    assert len(set(answers)) == 3  # genuinely different numbers


@pytest.mark.parametrize("title", ["]]></text></question><x>", "a & b < c", "{1:NUMERICAL:=5:0}"])
def test_user_text_cannot_break_the_xml_or_add_a_sub_question(tmp_path, title):
    root = write(tmp_path, "--title", title)
    question = root.findall("question")[1]
    assert question.find("name/text").text == f"{title} · seed-post-ln"
    trace = block.forward(load("seed-post-ln"))
    entries = sum(len(r) for name in grids(question) for r in trace[name].value.rows)
    assert len(SUB.findall(question.find("questiontext/text").text)) == entries == 66


def test_all_math_of_the_question_and_its_feedback_is_valid_tex(tmp_path):
    """Every \\(...\\) and \\[...\\] of the question text, the general feedback and (unescaped from
    the Cloze syntax) the sub-questions' exact-value feedback typesets with KaTeX."""
    import html
    from worksheet_tools import katex_check
    question = write(tmp_path, "pre-ln-causal-gelu").findall("question")[1]
    frags = []
    for where in ("questiontext/text", "generalfeedback/text"):
        text = question.find(where).text
        plain = SUB.sub("", text)
        for m in re.finditer(r"\\\((.+?)\\\)|\\\[(.+?)\\\]", plain, re.S):
            frags.append({"tex": html.unescape(m.group(1) or m.group(2)), "display": m.group(2) is not None,
                          "where": where})
        for _, _, inner in SUB.findall(text):
            feedback = unescape(html.unescape(re.split(r"(?<!\\)#", inner, maxsplit=1)[1]))
            frags += [{"tex": t, "display": False, "where": "feedback"} for t in re.findall(r"\\\((.+?)\\\)", feedback)]
    assert katex_check(frags) == len(frags) > 100
    assert any(f["where"] == "feedback" and r"\sqrt" in f["tex"] for f in frags)


# ---------------------------------------------------------------- the export marks as grade does

ANSWER = re.compile(r"(?:%(\d+(?:\.\d+)?)%|=)([^:]+):([^#]+)#")


def options(inner: str) -> list[tuple[Fraction, Fraction, Fraction]]:
    """[(credit, centre, tolerance)] of one NUMERICAL sub-question, in Moodle's order."""
    out = []
    for answer in re.split(r"(?<!\\)~", inner):
        p, v, t = ANSWER.match(answer).groups()
        out.append((Fraction(Decimal(p or 100)) / 100, Fraction(Decimal(v)), Fraction(Decimal(t))))
    return out


def short_answers(inner: str) -> list[tuple[Fraction, str]]:
    """[(credit, pattern)] of one SHORTANSWER sub-question, in Moodle's order."""
    out = []
    for answer in re.split(r"(?<!\\)~", inner):
        m = re.match(r"%(\d+(?:\.\d+)?)%((?:\\.|[^\\#])*)#", answer)
        out.append((Fraction(Decimal(m.group(1))) / 100, unescape(m.group(2))))
    return out


def moodle_short_answer_matches(response: str, pattern: str) -> bool:
    """Moodle's short-answer rule (qtype_shortanswer_question::compare_string_with_wildcard, a
    SHORTANSWER sub-question is not case-sensitive): both NFC-normalised, `*` in the pattern any
    run of characters, the rest literal, the whole trimmed response matched, any case."""
    import unicodedata
    bits = re.split(r"(?<!\\)\*+", unicodedata.normalize("NFC", pattern))
    regexp = ".*".join(re.escape(b.replace("\\*", "*")) for b in bits)
    return re.fullmatch(regexp, unicodedata.normalize("NFC", response).strip(" \t\n\r\0\x0b"), re.I) is not None


def cloze_rules(question) -> tuple[Fraction, dict[str, list[list[tuple[int, str, list]]]]]:
    """The question's grade and {step: rows of (weight, type, answers)}, read from the Moodle XML
    (answers: [(credit, centre, tolerance)] of a NUMERICAL, [(credit, pattern)] of a SHORTANSWER):
    what Moodle applies to a response."""
    html = question.find("questiontext/text").text
    out = {}
    for step, body in GRID.findall(html):
        out[step] = [[(int(w), kind, options(inner) if kind == "NUMERICAL" else short_answers(inner))
                      for w, kind, inner in SUB.findall(tr)] for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    return Fraction(question.findtext("defaultgrade")), out


def moodle_points(question, answers: dict[str, list[list[str]]]) -> Fraction:
    """Points Moodle gives `answers`: per entry, the first answer that takes the response (a
    NUMERICAL's range holds it, a SHORTANSWER's pattern matches it), its credit times the entry's
    share of the question's grade (weight / Σ weights)."""
    grade, rules = cloze_rules(question)
    total_weight = sum(w for rows in rules.values() for row in rows for w, _, _ in row)
    points = Fraction(0)
    for step, rows in rules.items():
        for i, row in enumerate(rows):
            for j, (w, kind, options) in enumerate(row):
                response = answers[step][i][j]
                if kind == "SHORTANSWER":
                    credit = next((c for c, p in options if moodle_short_answer_matches(response, p)), Fraction(0))
                else:
                    a = Fraction(Decimal(response))
                    credit = next((c for c, v, t in options if abs(a - v) <= t), Fraction(0))
                points += grade * w / total_weight * credit
    return points


def grade_points(trace, exercise, answers: dict[str, list[list[str]]]) -> Fraction:
    from symblock.grading.marking import Marker
    from symblock.grading.points import Credit
    result = Marker(trace, exercise).mark({"decimals": 3, "steps": answers}, "answers.yaml")
    steps = {s.name: s for s in result.steps}
    return sum((Credit().task(steps.get(n), exercise.points[n]) for n in exercise.ask), Fraction(0))


def r3(x) -> list[list[str]]:
    return [[str(Decimal(repr(float(v))).quantize(Decimal("0.001"))) for v in row] for row in x]


def norm_chain(x, gamma, beta) -> dict[str, list[list[str]]]:
    """A student's layer norm in NumPy from the printed numbers, rounding each result to 3 places
    and working on from the rounded numbers (population variance, ε = 0)."""
    import numpy as np
    mean = np.array([[float(v)] for v in (Decimal(m[0]) for m in r3(x.mean(axis=1, keepdims=True)))])
    var = np.array([[float(v[0])] for v in r3(((x - mean) ** 2).mean(axis=1, keepdims=True))])
    std = np.array([[float(v[0])] for v in r3(np.sqrt(var))])
    return {"mean": r3(mean), "var": r3(var), "std": r3(std), "out": r3((x - mean) / std * gamma + beta)}


def test_moodle_marks_equal_grade_for_the_key_the_printed_chain_and_a_wrong_answer(tmp_path):
    """The same answers marked by `symblock grade`'s checker and by reading the exported Cloze rules
    give the same points: the exact key rounded, a student who carries the printed numbers forward
    (NumPy, rounding each step), and one wrong entry (no points for it in either)."""
    import numpy as np
    from symblock.exercises import presets
    question = write(tmp_path, "--preset", "norm").findall("question")[1]
    trace = block.forward(load("seed-post-ln"))
    exercise = presets.choose(trace, "norm")
    key = {n: r3([[float(e) for e in row] for row in trace[n].value.rows]) for n in exercise.ask}
    x = np.array([[float(e) for e in row] for row in trace["resid1"].value.rows])
    p = {k: np.array([[float(e) for e in row] for row in trace.params[k].rows]) for k in ("ln1.gamma", "ln1.beta")}
    chain = norm_chain(x, p["ln1.gamma"], p["ln1.beta"])
    carried = dict(key, **{"norm1.mean": chain["mean"], "norm1.var": chain["var"], "norm1.std": chain["std"],
                           "norm1": chain["out"]})
    assert carried != key            # the printed chain really differs from the key somewhere
    wrong = {n: [row[:] for row in rows] for n, rows in key.items()}
    wrong["norm1.std"][0][0] = "7.000"
    total = sum(exercise.points.values())
    for answers, expected in ((key, total), (carried, total), (wrong, None)):
        got = grade_points(trace, exercise, answers)
        assert moodle_points(question, answers) == got, answers
        assert got == expected if expected is not None else got < total


def test_control_characters_in_the_title_are_left_out_of_the_xml(tmp_path):
    root = write(tmp_path, "--title", "A\x01\x0b\ufffe\uffffB")   # lxml raises on a forbidden character
    assert root.findall("question")[1].find("name/text").text == "AB · seed-post-ln"


def test_a_title_with_line_breaks_is_one_line_in_the_category_and_names(tmp_path):
    root = write(tmp_path, "--title", "Week 3\nquiz\r\n  B")
    assert root.findall("question")[0].find("category/text").text == "$course$/top/symblock/Week 3 quiz B (seed-post-ln)"
    assert root.findall("question")[1].find("name/text").text == "Week 3 quiz B · seed-post-ln"


def test_a_masked_score_accepts_every_spelling_grade_reads(tmp_path):
    """The SHORTANSWER of a masked score lists the spellings of −∞ `grade` accepts: the same file
    marked in Moodle and by `grade` gets the same marks."""
    from test_qti import minus_infinity_everywhere
    html = write(tmp_path, "pre-ln-causal-gelu").findall("question")[1].find("questiontext/text").text
    shorts = [inner for _, kind, inner in SUB.findall(html) if kind == "SHORTANSWER"]
    assert shorts
    for inner in shorts:
        spellings = [unescape(re.split(r"(?<!\\)#", a)[0]).removeprefix("%100%") for a in re.split(r"(?<!\\)~", inner)]
        assert minus_infinity_everywhere(spellings), spellings


@pytest.mark.parametrize("fmt", ["moodle", "qti"])
@pytest.mark.parametrize("lang, welcome, typed", [("en", "exact forms such as", "type each answer as a decimal number"),
                                                  ("zh", "也可以写精确形式", "以小数填写")])
def test_a_quiz_does_not_invite_the_fractions_its_numerical_questions_mark_wrong(tmp_path, fmt, lang, welcome, typed):
    """The sheet welcomes exact forms (1/2, √2: the checker reads them), but a Moodle NUMERICAL or a
    Canvas numerical question takes only a number, and marks `1/2` wrong: the quiz's conventions ask
    for decimals instead."""
    import zipfile
    out = tmp_path / "out"
    assert cli.main(["worksheet", "--out", str(out), "--format", f"markdown,{fmt}", "--lang", lang]) == 0
    text = ((out / "moodle.xml").read_text("utf-8") if fmt == "moodle" else
            "".join(zipfile.ZipFile(out / "qti.zip").read(n).decode("utf-8") for n in zipfile.ZipFile(out / "qti.zip").namelist()))
    assert welcome in (out / "sheet.md").read_text("utf-8")        # the paper sheet still welcomes them
    assert welcome not in text and typed in text


def test_a_rounding_tie_gives_slip_credit_one_unit_off_either_right_rounding(tmp_path):
    """preset-medium-v2.4's norm1.var row 2 is 1.5625 (X row −3, −1, −1.5, 0.5: deviations ±1.75
    and ±0.25, 6.25/4): 1.562 and 1.563 are right, so 1.561 and 1.564, each 1.5 units from
    1.5625, are both slips at half credit, as `grade` marks them."""
    q = write(tmp_path, "--id", "preset-medium-v2.4").find("question[@type='cloze']")
    html = q.find("questiontext/text").text
    cell = re.findall(r"<td>(.*?)</td>", dict(GRID.findall(html))["norm1.var"])[1]
    answers = {a.split("#")[0] for a in re.split(r"(?<!\\)~", SUB.match(cell).group(3))}
    assert answers == {"%100%1.5625:0.0005", "%50%1.564000000000:0.0005", "%50%1.561000000000:0.0005"}


def test_moodle_marks_equal_grade_for_work_from_the_given_data_as_printed(tmp_path):
    """A sheet that gives a step rounded (N_2 ≈ -1.589 ...): a student who works from those printed
    numbers, as the key's own lines do, gets full marks from `grade` and the same points from the
    exported Cloze rules (NumPy from the printed digits, each step rounded and carried on)."""
    import math

    import numpy as np
    from symblock.exercises import presets
    question = write(tmp_path, "pre-ln-causal-gelu", "--preset", "ffn").findall("question")[1]
    trace = block.forward(load("pre-ln-causal-gelu"))
    exercise = presets.choose(trace, "ffn")
    assert exercise.data_steps == ("norm2",) and exercise.ask == ("ffn.hidden", "ffn.act", "ffn.out")

    def floats(m):
        return np.array([[float(e) for e in row] for row in m.rows])

    def printed(x):
        return np.array([[float(v) for v in row] for row in r3(x)])
    n2 = printed(floats(trace["norm2"].value))                     # the sheet's N_2, as printed
    z = printed(n2 @ floats(trace.params["W_1"]))
    u = printed(np.vectorize(lambda v: v * (1 + math.erf(v / math.sqrt(2))) / 2)(z))   # GELU, erf form
    answers = {"ffn.hidden": r3(z), "ffn.act": r3(u), "ffn.out": r3(u @ floats(trace.params["W_2"]))}
    exact_key = {n: r3(floats(trace[n].value)) for n in exercise.ask}
    assert answers != exact_key            # the printed data really lead elsewhere than the exact key
    total = sum(exercise.points.values())
    assert grade_points(trace, exercise, answers) == total
    assert moodle_points(question, answers) == total
