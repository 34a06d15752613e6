"""Every worked line of a key is arithmetically true of the numbers it prints (worked_lines.py
recomputes each from its printed operands, with floats, independently of symblock), for the
gallery and for 30-variant sets of each difficulty; the checker accepts what a key's line
leads to from the rounded chain; the reader itself catches the wrong lines issue 13 found."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from symblock.engine import block, spec
from symblock.commands.gallery import GALLERY
from symblock.exercises import variant
from symblock.sheets.worksheet import documents

sys.path.insert(0, str(Path(__file__).parent))
from worked_lines import check_key, check_line  # noqa: E402


@pytest.mark.parametrize("line", [
    # issue 13: printed thirds as 3-place decimals, and the result of the exact values
    r"(Q)_{11} &= (-0.333) \cdot 0 + 1.667 \cdot 1 + (-1) \cdot 1 + (-0.333) \cdot 1 \approx 0.332",
    r"i = 1:\ & \left(\frac{0 - 0.003}{0.005}, \frac{0.01 - 0.003}{0.005}\right) \approx \left(-0.707, 1.400\right)",
    r"\sigma_{1} &= \sqrt{\sigma^2_{1}} = \sqrt{1.25} = 1.2",                     # = must be exact
    r"& \textstyle\sum = 0.3679 + 1 + 0.1353 \approx 1.513",
    r"(U)_{1\cdot} = \left(\mathrm{GELU}(1), \mathrm{ReLU}(-2)\right) \approx \left(0.841, -2\right)",
    r"\mathrm{SiLU}'(Z_{1\cdot}) &= \left(\mathrm{SiLU}'(1)\right) \approx \left(0.9291\right)",
    r"(S')_{11} = 3 / \sqrt{2} \approx 2.123",
    # the online softmax's tiles: a sum or an accumulator left unrescaled, a wrong running maximum
    r"i = 1:\ & 1.368 \cdot e^{2 - 3} + e^{3 - 3} \approx 1.368 \cdot 0.3679 + 1 \approx 2.368",
    r"i = 1:\ & 0.3679 \cdot \left(2.104, 1.632\right) + 1 \cdot \left(4, 1\right) \approx \left(6.104, 2.632\right)",
    r"i = 1:\ & \max(2, 3, -\infty) = 2",
])
def test_the_reader_catches_a_wrong_line(line):
    checked, error = check_line(line.replace("&", " ").replace(r"i = 1:\ ", ""))
    assert error is not None


@pytest.mark.parametrize("line", [
    r"(Q)_{11} &= (-\frac{1}{3}) \cdot 0 + \frac{5}{3} \cdot 1 + (-1) \cdot 1 + (-\frac{1}{3}) \cdot 1 = \frac{1}{3} \approx 0.333",
    r"\left(\frac{0 - 0.003}{0.005}\right) \approx \left(-0.600\right) \quad (\text{from exact values: } \approx \left(-0.707\right))",
    r"\sigma_{1} &= \sqrt{1.25} = \frac{\sqrt{5}}{2} \approx 1.118",
    r"(U)_{1\cdot} = \left(\mathrm{GELU}(1), \mathrm{ReLU}(-2), \dots\right) \approx \left(0.841, 0, \dots\right)",
    r"\mathrm{SiLU}'(Z_{1\cdot}) &= \left(\mathrm{SiLU}'(1)\right) \approx \left(0.9277\right)",
    r"(F)_{11} &= (-2.617 \times 10^{-7}) \cdot (-1) + 1 \approx 1.000",
    r"1.368 \cdot e^{2 - 3} + e^{3 - 3} \approx 1.368 \cdot 0.3679 + 1 \approx 1.503",
    r"0.3679 \cdot \left(2.104, 1.632\right) + 1 \cdot \left(4, 1\right) \approx \left(4.774, 1.600\right)",
    r"\max(1, -\infty, -\infty) = 1",
])
def test_the_reader_accepts_a_true_line(line):
    checked, error = check_line(line.replace("&", " "))
    assert error is None and checked >= 1


def gallery_keys():
    from symblock.exercises import variants
    from symblock.exercises.generate import load
    from symblock.engine.model import forward_any
    for name, spec_name, opts, _ in GALLERY:
        s = load(spec_name, allow_model=True)   # the decoder entry is a model
        trace = forward_any(s)
        ident = variants.make_id(variants.spec_token(spec_name), s.seed)
        docs = documents(variant.build(ident, trace, variant.Options.of(preset=opts.get("preset"))), formats=["markdown"], lang=opts.get("lang", "en"), title=opts.get("title")).files
        yield name, docs["key.md"]


def test_every_worked_line_of_the_gallery_follows_from_its_numbers():
    total, errors = 0, []
    for name, key in gallery_keys():
        n, errs = check_key(key, name)
        assert n >= 10, f"{name}: only {n} worked lines read back"
        total += n
        errors += errs
    committed = sorted((Path(__file__).parents[2] / "worksheets").glob("*/key.md"))
    assert len(committed) == len(GALLERY)
    for path in committed:                        # and the gallery as committed
        n, errs = check_key(path.read_text(), str(path))
        total += n
        errors += errs
    assert not errors, "\n".join(errors[:10])
    assert total > 300


def draw_keys(tmp_path, difficulty: str, n: int, **kw):
    path = tmp_path / f"{difficulty}.yaml"
    path.write_text(f"random: {{difficulty: {difficulty}, seed: 1}}\n")
    for v in variant.draw_set(str(path), n, 1, None, {}):
        yield v.ident, v.trace, documents(v, formats=["markdown"], **kw).files["key.md"]


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_every_worked_line_of_30_variant_sets_follows_from_its_numbers(tmp_path, difficulty):
    total, notes, errors = 0, 0, []
    for ident, _, key in draw_keys(tmp_path, difficulty, 30):
        n, errs = check_key(key, ident)
        total += n
        notes += key.count("from exact values")
        errors += errs
    assert not errors, f"{len(errors)} wrong lines:\n" + "\n".join(errors[:10])
    assert total > 500


def test_five_places_and_big_blocks_too(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("dims: {seq_len: 5, d_model: 8, d_ff: 16, heads: 2}\n"
                   "block: {norm_position: pre, norm: layernorm, activation: gelu, causal: true, "
                   "final_norm: true, bias: true}\nrandom: {seed: 11, low: -2, high: 2}\n")
    for src, places in ((str(big), 3), ("pre-ln-causal-gelu", 5), ("rmsnorm-swiglu", 4)):
        trace = block.forward(spec.load(src))
        key = documents(variant.build("t", trace), formats=["markdown"], places=places).files["key.md"]
        n, errors = check_key(key, src)
        assert not errors, "\n".join(errors[:10])
        assert n >= 20


# ---------------------------------------------------------------- the key and the checker agree

ENTRY_LINE = re.compile(r"\((?P<sym>[^()]+)\)_\{(?P<i>\d)(?P<j>\d)\} &= [^\\]*?.*? (?:=|\\approx) "
                        r"(?P<r>-?\d+\.\d+)(?: \\quad \(\\text\{[^}]*\} \\approx (?P<t>-?\d+\.\d+)\))?$")


ROW_LINE = re.compile(r"i = (?P<i>\d+):\\ & \\left\(.*\\right\) (?:=|\\approx) \\left\((?P<r>[-\d., ]+|.*?)\\right\)$")


def joined(rows: list[str]) -> list[str]:
    """Aligned rows with a tuple split over rows (`, \\right. \\\\ &\\quad \\left. ...`) or a result on
    a row of its own (`\\\\ & \\approx ...`) joined into one; a "(from exact values …)" row stays apart."""
    out: list[str] = []
    for r in rows:
        rest = r.strip().removeprefix("&").strip().removeprefix(r"\quad").strip()
        if out and r.strip().startswith("&") and rest.startswith((r"\left.", r"\approx", "=")):
            out[-1] = out[-1].strip().removesuffix(r"\right.").strip() + " " + rest.removeprefix(r"\left.").strip()
        else:
            out.append(r)
    return out


def key_entry_results(key: str) -> dict[str, dict[tuple[int, int], str]]:
    """{step: {(i, j): the result its worked line prints}} of the sum-of-products lines."""
    out: dict[str, dict] = {}
    for sec in re.split(r"^### ", key, flags=re.M)[1:]:
        name = re.search(r"`([^`]+)`", sec.splitlines()[0]).group(1)
        for line in re.findall(r"\\begin\{aligned\} (.*?) \\end\{aligned\}", sec):
            for row in joined(line.split(r" \\ ")):
                m = ENTRY_LINE.match(row.strip())
                if m:
                    out.setdefault(name, {})[(int(m["i"]) - 1, int(m["j"]) - 1)] = m["r"]
                m = ROW_LINE.match(row.strip())
                if m and re.fullmatch(r"norm\d|norm_final", name):   # a normalised row, entry by entry
                    for j, v in enumerate(m["r"].split(", ")):
                        if v != r"\dots":
                            out.setdefault(name, {})[(int(m["i"]) - 1, j)] = v
    return out


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_what_a_key_line_leads_to_the_checker_accepts_from_the_rounded_chain(tmp_path, difficulty):
    """A person who copies the key's printed (rounded) numbers forward and writes what a worked
    line gives is never marked wrong, also where the line says "(from exact values …)"."""
    from symblock.grading import answers as answers_mod, marking
    from symblock.engine.steps import step_shapes
    from symblock.exercises.presets import choose
    from symblock.engine import exact
    seen_notes = 0
    rows_seen = 0
    for ident, trace, key in draw_keys(tmp_path, difficulty, 6):
        results = key_entry_results(key)
        seen_notes += key.count("from exact values")
        asked = choose(trace).ask
        rounded = {n: [["-inf" if e is exact.NEG_INF else str(exact.real(e).decimal(3)) for e in row] for row in trace[n].value.rows] for n in asked}
        shapes = step_shapes(trace.spec.dims, trace.spec.options)
        rows_seen += sum(n.startswith("norm") for n in results)
        for name, entries in results.items():
            steps = {n: rounded[n] for n in asked[:asked.index(name)]}
            mine = [row[:] for row in rounded[name]]
            for (i, j), r in entries.items():
                mine[i][j] = r
            steps[name] = mine
            ans = answers_mod.from_mapping({"decimals": 3, "steps": steps}, "a.yaml", shapes)
            result = marking.check(trace.spec, trace, ans)
            status = {s.name: s.status for s in result.steps}
            assert status[name] != "wrong", (ident, name, entries)
    assert seen_notes > 0 and rows_seen > 0
