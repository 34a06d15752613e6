"""--format qti: a QTI 1.2 content package (Canvas dialect) with one assessment per variant and one
numerical question per asked entry; read back with lxml, every range is the trace's value ± the
checker's tolerance, and the manifest names exactly the files in the zip."""
from __future__ import annotations

import zipfile
from decimal import Decimal
from fractions import Fraction

from lxml import etree

from symblock import cli
from symblock.engine import block, exact
from symblock.exercises.generate import load
from symblock.grading.answers import parse_entry
from symblock.grading.marking import matches

NS = {"q": "http://www.imsglobal.org/xsd/ims_qtiasiv1p2",
      "cp": "http://www.imsglobal.org/xsd/imsccv1p1/imscp_v1p1"}
PARSER = etree.XMLParser(resolve_entities=False, no_network=True)


def write(tmp_path, *argv) -> zipfile.ZipFile:
    out = tmp_path / "out"
    assert cli.main(["worksheet", *argv, "--out", str(out), "--format", "qti"]) == 0
    return zipfile.ZipFile(out / "qti.zip" if (out / "qti.zip").exists() else out / "instructor" / "qti.zip")


def assessments(zf) -> list:
    manifest = etree.fromstring(zf.read("imsmanifest.xml"), PARSER)
    hrefs = [f.get("href") for f in manifest.iterfind(".//cp:resource/cp:file", namespaces=NS)]
    assert sorted(hrefs + ["imsmanifest.xml"]) == sorted(zf.namelist())  # every file listed, none missing
    qti = [r.find("cp:file", NS).get("href") for r in manifest.iterfind(".//cp:resource", NS)
           if r.get("type") == "imsqti_xmlv1p2"]
    return [etree.fromstring(zf.read(h), PARSER) for h in qti]


def entries(doc) -> dict[tuple[str, int, int], tuple[str, str | None, str | None]]:
    """{(step, i, j): (question type, low, high)} or (type, accepted text, None) for short answers."""
    out = {}
    for item in doc.iterfind(".//q:item", namespaces=NS):
        meta = {f.findtext("q:fieldlabel", namespaces=NS): f.findtext("q:fieldentry", namespaces=NS)
                for f in item.iterfind(".//q:qtimetadatafield", namespaces=NS)}
        kind = meta["question_type"]
        if kind == "text_only_question":
            continue
        i, j = map(int, meta["symblock_entry"].split(","))
        cond = item.findall(".//q:respcondition", NS)[1].find("q:conditionvar", NS)
        if kind == "numerical_question":
            low, high = cond.findtext(".//q:vargte", namespaces=NS), cond.findtext(".//q:varlte", namespaces=NS)
            out[meta["symblock_step"], i, j] = (kind, low, high)
        else:
            out[meta["symblock_step"], i, j] = (kind, ",".join(v.text for v in cond.iterfind(".//q:varequal", NS)), None)
    return out


def test_seed_ranges_are_the_hand_worked_numbers_plus_minus_half_a_unit(tmp_path):
    [doc] = assessments(write(tmp_path))
    got = entries(doc)
    # the seed article's hand-worked numbers (README): σ² = 0.811801, R₁[3][2] = 1.716, ± 0.0005
    assert (Decimal(got["norm1.var", 0, 0][1]), Decimal(got["norm1.var", 0, 0][2])) == (Decimal("0.811301"),
                                                                                     Decimal("0.812301"))
    assert (Decimal(got["resid1", 2, 1][1]), Decimal(got["resid1", 2, 1][2])) == (Decimal("1.7155"), Decimal("1.7165"))
    trace = block.forward(load("seed-post-ln"))
    assert len(got) == sum(len(r) for name in {k[0] for k in got} for r in trace[name].value.rows) == 66


def test_every_range_matches_the_trace_and_the_checker(tmp_path):
    [doc] = assessments(write(tmp_path, "pre-ln-causal-gelu"))
    trace = block.forward(load("pre-ln-causal-gelu"))
    kinds, checked = set(), 0
    for (name, i, j), (kind, low, high) in entries(doc).items():
        e = trace[name].value.rows[i][j]
        kinds.add(kind)
        if e is exact.NEG_INF:
            assert kind == "short_answer_question" and minus_infinity_everywhere(low.split(","))
            continue
        lo, hi = Fraction(Decimal(low)), Fraction(Decimal(high))
        assert hi - lo == Fraction(1, 1000) and abs(float((lo + hi) / 2) - float(e)) < 1e-11, name
        rounded = Decimal(float(e)).quantize(Decimal("0.001"))
        for a in (rounded - Decimal("0.001"), rounded, rounded + Decimal("0.001")):
            assert (lo <= Fraction(a) <= hi) == matches(parse_entry(str(a), 3, "t", name), e), (name, i, j, a)
            checked += 1
    assert kinds == {"numerical_question", "short_answer_question"} and checked > 600


def test_one_assessment_per_variant_and_byte_identical_zips(tmp_path):
    spec = tmp_path / "easy.yaml"
    spec.write_text("random: {seed: 1, difficulty: easy}\n")
    zf = write(tmp_path, str(spec), "--variants", "2", "--preset", "norm")
    docs = assessments(zf)
    assert len(docs) == 2 and entries(docs[0]) != entries(docs[1])
    titles = [d.find("q:assessment", NS).get("title") for d in docs]
    assert all(t.endswith(".1") or t.endswith(".2") for t in titles), titles
    first = (tmp_path / "out" / "instructor" / "qti.zip").read_bytes()  # a set's exports stay with the teacher
    assert cli.main(["worksheet", str(spec), "--variants", "2", "--preset", "norm", "--out", str(tmp_path / "again"),
                     "--format", "qti"]) == 0
    assert (tmp_path / "again" / "instructor" / "qti.zip").read_bytes() == first


def test_user_title_is_escaped(tmp_path):
    title = '"/><item ident="x">&'
    [doc] = assessments(write(tmp_path, "--title", title))
    assert doc.find("q:assessment", NS).get("title") == f"{title} · seed-post-ln"
    assert doc.find(".//q:item[@ident='x']", NS) is None


def test_every_equation_image_is_valid_tex(tmp_path):
    """Canvas renders each equation image from its LaTeX: all of them typeset with KaTeX, and the
    image's address carries the same LaTeX."""
    import html
    import re
    from urllib.parse import unquote
    from worksheet_tools import katex_check
    zf = write(tmp_path, "pre-ln-causal-gelu")
    frags = []
    for doc in assessments(zf):
        for text in doc.iterfind(".//q:mattext", NS):
            for img in re.findall(r"<img [^>]*>", text.text):
                tex = html.unescape(re.search(r'data-equation-content="([^"]*)"', img).group(1))
                src = re.search(r'src="/equation_images/([^"?]*)\?scale=1"', img).group(1)
                assert unquote(html.unescape(src)) == tex
                frags.append({"tex": tex, "display": False, "where": "qti"})
    unique = list({f["tex"]: f for f in frags}.values())
    assert katex_check(unique) == len(unique) > 50


def test_qti_marks_equal_grade_for_the_key_the_printed_chain_and_a_wrong_answer(tmp_path):
    """As for Moodle: the QTI's respconditions (first range holding the response, its SCORE) times
    each item's points give `grade`'s points for the key, the printed chain and a wrong entry."""
    import numpy as np
    from test_moodle import grade_points, norm_chain, r3
    from symblock.exercises import presets
    [doc] = assessments(write(tmp_path, "--preset", "norm"))
    trace = block.forward(load("seed-post-ln"))
    exercise = presets.choose(trace, "norm")
    key = {n: r3([[float(e) for e in row] for row in trace[n].value.rows]) for n in exercise.ask}
    arr = {k: np.array([[float(e) for e in row] for row in v.rows])
           for k, v in (("x", trace["resid1"].value), ("g", trace.params["ln1.gamma"]), ("b", trace.params["ln1.beta"]))}
    chain = norm_chain(arr["x"], arr["g"], arr["b"])
    carried = dict(key, **{"norm1.mean": chain["mean"], "norm1.var": chain["var"], "norm1.std": chain["std"],
                           "norm1": chain["out"]})
    wrong = dict(key, **{"norm1.std": [["7.000"]] + key["norm1.std"][1:]})
    for answers in (key, carried, wrong):
        assert abs(qti_points(doc, answers) - grade_points(trace, exercise, answers)) < Fraction(1, 10 ** 5)


def canvas_short_answer_matches(response: str, text: str) -> bool:
    """Canvas's rule for a short-answer (fill-in-the-blank) question: the response equals an
    answer's text, both HTML-escaped, stripped of surrounding space and lower-cased."""
    import html
    space = " \t\n\v\f\r\0"    # Ruby's String#strip
    return html.escape(response).strip(space).lower() == html.escape(text.strip(space).lower())


def qti_points(doc, answers) -> Fraction:
    """Points Canvas gives `answers`: per item, the first respcondition that takes the response (a
    numerical's range holds it, a short answer's text equals it), its SCORE times the item's points."""
    points = Fraction(0)
    for item in doc.iterfind(".//q:item", namespaces=NS):
        meta = {f.findtext("q:fieldlabel", namespaces=NS): f.findtext("q:fieldentry", namespaces=NS)
                for f in item.iterfind(".//q:qtimetadatafield", namespaces=NS)}
        if meta["question_type"] == "text_only_question":
            continue
        i, j = map(int, meta["symblock_entry"].split(","))
        response = answers[meta["symblock_step"]][i][j]
        for cond in item.findall(".//q:respcondition", NS)[1:]:
            if meta["question_type"] == "short_answer_question":
                took = any(canvas_short_answer_matches(response, v.text) for v in cond.iterfind(".//q:varequal", NS))
            else:
                a = Fraction(Decimal(response))
                low, high = (Fraction(Decimal(cond.findtext(".//q:" + t, namespaces=NS))) for t in ("vargte", "varlte"))
                took = low <= a <= high
            if took:
                points += Fraction(Decimal(meta["points_possible"])) * Fraction(Decimal(cond.findtext("q:setvar", namespaces=NS))) / 100
                break
    return points


def test_control_characters_in_the_title_are_left_out_of_the_xml(tmp_path):
    zf = write(tmp_path, "--title", "A\x01\x0b\ufffe\uffffB")
    for name in zf.namelist():
        if name.endswith(".xml"):
            etree.fromstring(zf.read(name), PARSER)   # raises on a character XML forbids
    assert 'title="AB · seed-post-ln"' in zf.read(next(n for n in zf.namelist() if n.endswith(".xml")
                                                        and "meta" not in n and "imsmanifest" not in n)).decode()


def minus_infinity_everywhere(spellings) -> bool:
    """An LMS answer list for a masked score: each is accepted by `grade` where −∞ is due (−∞, or a
    masked_fill value it reads as −∞), and the spellings a student meets (a PDF's −∞ among them) are
    all there, so the LMS and `grade` agree."""
    from symblock.grading import answers
    assert all(matches(answers.parse_entry(t, 3, "<lms>", "x", masked=True), exact.NEG_INF) for t in spellings)
    return {"-inf", "-oo", "-∞", "-infinity", "\u2212\u221e", "\u2212inf", "-1e9", "-1e+09", "-10000"} <= set(spellings)


# One masked score written each way, and whether it is right (−∞ is due there): −∞'s spellings, and
# masked_fill's large finite values, which `grade` reads as −∞ when at most −10⁴ (and not above it).
MASKED_SCORES = [("-inf", True), (" -INF ", True), ("\u2212\u221e", True), ("-oo", True), ("-Infinity", True),
                 ("-.inf", True), ("-1e9", True), ("-1E9", True), ("\u22121e9", True), ("-1e+09", True),
                 ("-1000000000", True), ("-1.0e9", True), ("-1e4", True), ("-10000", True), ("-1e+04", True),
                 ("\u221210000", True), ("-9999.99", False), ("-9999", False), ("-1e3", False), ("0", False),
                 ("1e9", False), ("inf", False)]


def test_moodle_and_canvas_mark_a_masked_score_as_grade_does(tmp_path):
    """A masked score written as −∞ or as masked_fill writes it (−1e9, −1e4), or as a number above
    the −10⁴ that `grade` takes for −∞: the exported Moodle Cloze (its short-answer rule) and Canvas
    QTI (its fill-in-the-blank rule) give the same points as `grade`, full marks exactly when right."""
    from test_moodle import grade_points, moodle_points, write as write_moodle
    from symblock.exercises import presets
    trace = block.forward(load("pre-ln-causal-gelu"))
    exercise = presets.choose(trace, "attention")
    question = write_moodle(tmp_path / "m", "pre-ln-causal-gelu", "--preset", "attention").findall("question")[1]
    [doc] = assessments(write(tmp_path / "q", "pre-ln-causal-gelu", "--preset", "attention"))
    key = {n: [["-inf" if e is exact.NEG_INF else str(Decimal(repr(float(e))).quantize(Decimal("0.001")))
                for e in row] for row in trace[n].value.rows] for n in exercise.ask}
    masked = next(n for n in exercise.ask if n.endswith(".masked"))
    i, j = next((i, j) for i, row in enumerate(key[masked]) for j, t in enumerate(row) if t == "-inf")
    total = sum(exercise.points.values())
    rounding = Fraction(len(doc.findall(".//q:item", NS)), 2 * 10 ** 6)  # each item's points printed to 6 places
    for text, right in MASKED_SCORES:
        answers = dict(key, **{masked: [row[:] for row in key[masked]]})
        answers[masked][i][j] = text
        got = grade_points(trace, exercise, answers)
        assert (got == total) == right, text
        assert moodle_points(question, answers) == got, ("moodle", text)
        assert abs(qti_points(doc, answers) - got) <= rounding, ("canvas", text)


def canvas_points(doc, answers) -> Fraction:
    """Points Canvas gives `answers` as its import reads a numerical question: every answer range a
    correct answer, all or nothing (a range's SCORE is not imported)."""
    points = Fraction(0)
    for item in doc.iterfind(".//q:item", namespaces=NS):
        meta = {f.findtext("q:fieldlabel", namespaces=NS): f.findtext("q:fieldentry", namespaces=NS)
                for f in item.iterfind(".//q:qtimetadatafield", namespaces=NS)}
        if meta["question_type"] != "numerical_question":
            continue
        i, j = map(int, meta["symblock_entry"].split(","))
        a = Fraction(Decimal(answers[meta["symblock_step"]][i][j]))
        for cond in item.findall(".//q:respcondition", NS)[1:]:
            low, high = (Fraction(Decimal(cond.findtext(".//q:" + t, namespaces=NS))) for t in ("vargte", "varlte"))
            if low <= a <= high:
                points += Fraction(Decimal(meta["points_possible"]))
                break
    return points


def test_canvas_gives_a_rounding_slip_no_credit_rather_than_full_credit(tmp_path):
    """Canvas scores a numerical question all or nothing, so the export holds only the answers `grade`
    gives full credit: a slip (one unit off in the last place), ½ in `grade`, earns 0 in Canvas, never
    the full credit a slip range would earn there; the key earns full marks in both."""
    from test_moodle import grade_points, r3
    from symblock.exercises import presets
    [doc] = assessments(write(tmp_path, "--preset", "norm"))
    trace = block.forward(load("seed-post-ln"))
    exercise = presets.choose(trace, "norm")
    key = {n: r3([[float(e) for e in row] for row in trace[n].value.rows]) for n in exercise.ask}
    std = key["norm1.std"]
    slipped = f"{Decimal(std[0][0]) + Decimal('0.001'):.3f}"
    slip = dict(key, **{"norm1.std": [[slipped]] + std[1:]})
    share = Fraction(1, len(std))                           # norm1.std: one point over its entries
    near = Fraction(1, 10 ** 5)                            # an item's points are written to 6 places
    assert abs(canvas_points(doc, key) - grade_points(trace, exercise, key)) < near
    assert grade_points(trace, exercise, key) - grade_points(trace, exercise, slip) == share / 2   # a slip: ½
    assert abs(canvas_points(doc, key) - canvas_points(doc, slip) - share) < near                # Canvas: 0
