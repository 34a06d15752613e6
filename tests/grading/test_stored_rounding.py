"""A set's identity check rounds every variant's entries from the manifest's stored answers (a
rational exactly, a closed form by its certified ball, a decimal by its 40 digits) instead of drawing
each variant. Here that reading is checked on whole sets, entry by entry and at several places,
against two other paths: the variant drawn again and worked exactly, and an independent NumPy
float64 forward of its spec (where the float is clear of a rounding boundary)."""
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from symblock.cli import main
from symblock.exercises.variant import UNDECIDED, matrix_entries, stored_rounded
from symblock.engine import exact
from symblock.engine.numbers import closed_tree
from symblock.grading import gradebook, manifest
from symblock.grading.students import variant_rounded
from symblock.reference import numeric

PLACES = (0, 1, 3, 5, 12, 30, 45)   # 45: past the 40 stored digits and the balls' width


def half_away(x: float, places: int) -> Decimal | None:
    """x rounded half away from zero at `places`, or None when x is within 1e-9 of a boundary
    (a float cannot say which side an exact value is on)."""
    scaled = abs(x) * 10 ** places
    if abs(scaled - np.floor(scaled) - 0.5) < 1e-9 * max(1.0, scaled):
        return None
    q = Decimal(abs(x)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return -q if x < 0 else q


def near_boundary(value, places: int) -> bool:
    """Whether an exact value lies within 10^-25 of a rounding boundary at `places` (worked to 30
    more places), so that 40 stored digits or a ball might not say which side it is on."""
    d = abs(value.decimal(places + 30)).scaleb(places)
    return abs(d - d.to_integral_value(rounding="ROUND_FLOOR") - Decimal("0.5")) < Decimal("1e-25")


@pytest.mark.parametrize("how", [["--difficulty", "medium"], ["--difficulty", "hard"], ["pre-ln-causal-gelu"],
                                 ["rmsnorm-swiglu"], ["rope-gqa"]])
def test_stored_answers_round_as_the_drawn_variant_and_numpy_do(how, tmp_path):
    assert main(["worksheet", *how, "--variants", "4", "--format", "markdown", "--out", str(tmp_path / "set")]) == 0
    man = manifest.read(tmp_path / "set")
    pool = gradebook.Variants(man)
    compared = 0
    for v in man["variants"]:
        drawn = pool.variant(v["id"])
        floats = numeric.forward(drawn.spec)
        for step, text in v["exercise"]["answers"].items():
            for i, row in enumerate(matrix_entries(text)):
                for j, entry in enumerate(row):
                    value = exact.real(drawn.answers[step].rows[i][j])
                    for places in PLACES:
                        truth = variant_rounded(drawn, step, i, j, places)
                        stored = stored_rounded(entry, places, f"{step}[{i}][{j}]")
                        if stored is UNDECIDED and places <= 30:   # only a form outside the fast subset, or a near tie
                            assert (closed_tree(entry) is None and "." not in entry) or (
                                value is not exact.NEG_INF and near_boundary(value, places)), (step, entry, places)
                        elif stored is not UNDECIDED:   # past the stored digits: decided only where certain
                            assert stored == truth, (v["id"], step, i, j, places, entry)
                        f = float(floats[step][i][j]) if step in floats else None
                        want = None if f is None or not np.isfinite(f) else half_away(f, places)
                        if want is not None:
                            assert truth == want, (v["id"], step, i, j, places, f)
                            compared += 1
    assert compared > 400
