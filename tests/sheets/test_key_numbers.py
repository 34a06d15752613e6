"""The numbers an answer key shows, read back from the rendered Markdown and LaTeX and checked
against the NumPy float64 path (independent code): every answer entry, and the worked values of
the norm steps (σ or r per row, the normalised rows), at the key's places.

These read numbers, not layout: a step's working is whatever its section shows before the answer,
and a value counts as shown when one of the numbers printed there is it (exactly, or rounded to the
key's places). The gallery's byte comparison is no test of correctness; this is."""
from __future__ import annotations

from symblock.exercises import variant

import re

import numpy as np
import pytest

from symblock.engine import block, spec
from symblock.reference import numeric
from symblock.sheets.worksheet import documents
from worksheet_tools import matrices, parse_entry

PLACES = 3
SPECS = ["seed-post-ln", "pre-ln-causal-gelu", "rmsnorm-swiglu"]
NORM_STATS = (".std", ".rms")


@pytest.fixture(scope="module", params=SPECS)
def case(request):
    s = spec.load(request.param)
    docs = documents(variant.build("id", block.forward(s)), formats=["markdown", "latex"], places=PLACES).files
    return request.param, numeric.forward(s), docs


def sections(text: str, fmt: str) -> dict[str, tuple[str, str]]:
    """{step name: (working, answer math)} of a key in `fmt`."""
    head, label = ((r"^### ", r"\*\*Answer:\*\*") if fmt == "md" else
                   (r"\\subsection\*\{", r"\\textbf\{Answer:\}"))
    out = {}
    for sec in re.split(head, text, flags=re.M)[1:]:
        first = sec.splitlines()[0].replace(r"{\char95}", "_")  # an underscore that copies as one
        name = re.search(r"`([^`]+)`" if fmt == "md" else r"\\texttt\{([^}]+)\}", first).group(1)
        parts = re.split(label, sec, maxsplit=1)
        if len(parts) == 2:
            out[name.replace(r"\_", "_")] = (parts[0], parts[1])
    return out


_SCRIPTS = re.compile(r"[_^](\{[^{}]*\}|\d)")           # subscripts and exponents are not values
_NUMBER = re.compile(r"(-\s*)?\\frac\{(\d+)\}\{(\d+)\}|-?\d+(?:\.\d+)?")


def shown_numbers(tex: str) -> list[tuple[float, int | None]]:
    """Every number printed in a piece of math: (value, decimal places or None when exact)."""
    out = []
    for m in _NUMBER.finditer(_SCRIPTS.sub(" ", tex)):
        if m.group(2):
            v = int(m.group(2)) / int(m.group(3))
            out.append((-v if m.group(1) else v, None))
        else:
            t = m.group(0)
            out.append((float(t), len(t.split(".")[1]) if "." in t else None))
    return out


def is_shown(value: float, numbers) -> bool:
    """`value` is printed exactly, or rounded to the key's places (a decimal with fewer places is
    the exact value only if it equals it: 0.43 for 0.43, never 0.71 for 0.7071)."""
    if np.isinf(value):
        return any(v == value for v, _ in numbers)
    for v, places in numbers:
        if np.isinf(v):
            continue
        if abs(v - value) <= 1e-9 * max(1, abs(value)):
            return True
        if places == PLACES and abs(v - value) <= 0.5 * 10 ** -PLACES + 1e-9:
            return True
    return False


def answer_values(math: str) -> np.ndarray:
    """The answer's decimal matrix when it has one (`≈ [...]`), else its exact matrix."""
    mats = matrices(math)
    assert mats, math
    return np.array([[parse_entry(c)[0] for c in row] for row in mats[-1]])


def test_every_answer_entry_is_the_numpy_value(case):
    name, ref, docs = case
    for fmt in ("md", "tex"):
        secs = sections(docs[f"key.{fmt}"], fmt)
        assert len(secs) >= 5, (name, fmt, list(secs))
        for step, (_, math) in secs.items():
            got, want = answer_values(math), ref[step]
            assert got.shape == want.shape, (name, fmt, step)
            places = PLACES if "\\approx" in math else None  # decimals, or every entry exact
            for (i, j), w in np.ndenumerate(want):
                assert is_shown(w, [(got[i, j], places)]), (name, fmt, step, i, j, got[i, j], w)


def test_norm_working_shows_sigma_and_the_normalised_rows(case):
    """σ (or r) of every row and the values of the first normalised row appear in the working:
    caught when σ's line prints σ², or the rows are rounded one place short."""
    name, ref, docs = case
    for fmt in ("md", "tex"):
        secs = sections(docs[f"key.{fmt}"], fmt)
        stats = [s for s in secs if s.endswith(NORM_STATS)]
        norms = [s for s in secs if re.fullmatch(r"norm(1|2|_final)", s)]
        assert stats and norms, (name, fmt, list(secs))
        for step in stats:
            numbers = shown_numbers(secs[step][0])
            for i, (sigma,) in enumerate(ref[step]):
                assert is_shown(sigma, numbers), (name, fmt, step, i, sigma, numbers)
        for step in norms:
            numbers = shown_numbers(secs[step][0])
            for j, v in enumerate(ref[step][0]):
                assert is_shown(v, numbers), (name, fmt, step, j, v, numbers)


@pytest.mark.parametrize("name", ["decoder-layer", "rmsnorm-swiglu", "rope-gqa", "pre-ln-causal-gelu"])
def test_operands_printed_with_a_rounded_entry_are_all_decimals(cli, tmp_path, name):
    """`Q^c_0 (K^c_0)^T ≈ [0.338 1.352 √35/7 0] …` once printed √35/7 among decimals, and the lines
    under it worked with 0.845: the operands of a product are exact throughout or, once one of them is
    rounded, every entry that is not a short decimal is its rounded decimal, as the lines use them."""
    assert cli("worksheet", name, "--format", "markdown", "--out", tmp_path).code == 0
    key = (tmp_path / "key.md").read_text(encoding="utf-8")
    products = [line for line in key.splitlines() if r"\approx \begin{bmatrix}" in line and "aligned" not in line]
    assert products
    for line in products:
        operands = line.split(r"\approx \begin{bmatrix}", 1)[1]
        assert r"\frac" not in operands and r"\sqrt" not in operands, line
    if name == "decoder-layer":   # head 0's queries: the third is √35/7 = 0.8452 (by hand)
        row = next(line for line in products if line.startswith(r"S^{c}_0 = Q^{c}_0"))
        assert f"{np.sqrt(35) / 7:.3f}" in row.split(r"\end{bmatrix}")[0].split(r"\\")[0]


@pytest.mark.parametrize("name", ["pre-ln-causal-gelu", "rmsnorm-swiglu"])   # seed-post-ln gives attn.out
def test_a_head_output_says_the_entries_it_writes_out_are_the_last_rows(name):
    """The head output's working writes out the last row (it weighs every value row): its heading says
    so, not "the first entries", and the entries it names are that row's."""
    s = spec.load(name)
    docs = documents(variant.build("id", block.forward(s)), formats=["markdown"], places=PLACES).files
    working = sections(docs["key.md"], "md")["attn.h0.out"][0]
    n = s.dims.seq_len
    assert "The last row's first entries, written out" in working and "The first entries" not in working
    assert re.findall(r"\(O_0\)_\{(\d)\d\}", working) and set(re.findall(r"\(O_0\)_\{(\d)\d\}", working)) == {str(n)}
