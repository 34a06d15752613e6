"""`symblock depth`: the Pre-LN / Post-LN comparison seed 001 asks for, in float64 torch."""
from __future__ import annotations

import csv
import io

import pytest

from symblock import cli
from symblock.reference import depth


def test_depth_writes_a_plot_and_the_numbers(tmp_path, capsys):
    out = tmp_path / "d"
    assert cli.main(["depth", "--layers", "1..6", "--seeds", "1", "--out", str(out)]) == 0
    png = (out / "depth.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000  # a drawn figure, not an empty canvas
    rows = list(csv.DictReader(io.StringIO((out / "depth.csv").read_text())))
    assert {r["placement"] for r in rows} == {"pre", "post"}
    assert len(rows) == 2 * sum(range(1, 7))          # one row per layer of every stack
    std = {(r["placement"], int(r["layers"])): float(r["output_std"]) for r in rows}
    # Post-LN ends every layer with a LayerNorm (γ = 1, β = 0): the stream leaves with std ≈ 1 at any
    # depth; Pre-LN adds every sub-layer to an un-normalised stream, which grows with depth
    assert all(abs(std[("post", L)] - 1) < 0.05 for L in range(1, 7))
    assert std[("pre", 6)] > std[("pre", 1)]
    assert cli.main(["depth", "--layers", "1..6", "--seeds", "1", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_measure_is_deterministic_and_per_layer():
    a = depth.measure([2, 3], d_model=8, heads=2, seq_len=4, seeds=1)
    b = depth.measure([2, 3], d_model=8, heads=2, seq_len=4, seeds=1)
    assert a == b
    assert [(r.placement, r.layers, r.layer) for r in a] == [
        ("pre", 2, 0), ("pre", 2, 1), ("pre", 3, 0), ("pre", 3, 1), ("pre", 3, 2),
        ("post", 2, 0), ("post", 2, 1), ("post", 3, 0), ("post", 3, 1), ("post", 3, 2)]
    assert all(r.grad_norm > 0 for r in a)


@pytest.mark.parametrize("bad", ["0..3", "3..", "x", "1..99"])
def test_bad_layer_ranges(bad, tmp_path, capsys):
    assert cli.main(["depth", "--layers", bad, "--out", str(tmp_path / "o")]) == 2
    assert "--layers" in capsys.readouterr().err
