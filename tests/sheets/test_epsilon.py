"""ε reads at a glance: 10^{-12} and 10^{-5}, not \\frac{1}{1000000000000}, in the conventions and in
each σ line; a short fraction stays a fraction, and a version-1 sheet keeps its words."""
from __future__ import annotations

from fractions import Fraction

from symblock.engine import spec
from symblock.engine.model import forward_any
from symblock.exercises import variant
from symblock.exercises.generate import load
from symblock.sheets.numbers import power_tex
from symblock.sheets.worksheet import documents


def key_of(source) -> str:
    trace = forward_any(load(source, allow_model=True))
    return documents(variant.build("t", trace), formats=["markdown"]).files["key.md"]


def test_a_power_of_ten_epsilon_is_written_as_one():
    bert = key_of("tiny-bert")   # ε = 1e-12, σ² of the first embedding row 11/16
    assert "with $\\varepsilon = 10^{-12}$." in bert and "\\sqrt{0.6875 + 10^{-12}}" in bert
    assert "1000000000000" not in bert
    assert "with $\\varepsilon = 10^{-5}$." in key_of("tiny-translate")
    assert [power_tex(Fraction(1, 10 ** k)) for k in (3, 4, 12)] == [None, "10^{-4}", "10^{-12}"]
    assert power_tex(Fraction(3, 10 ** 5)) is None and power_tex(Fraction(1, 20000)) is None


def test_version_1_keeps_the_fraction(tmp_path):
    text = spec.example_text("pre-ln-causal-gelu")
    assert "random: {seed: 7" in text
    data, source = spec.read_mapping("e.yaml", text)
    data["block"]["eps"] = "1/100000"
    import yaml
    for gen, said in ((1, "\\frac{1}{100000}"), (2, "10^{-5}")):
        data["random"] = {**data["random"], "generator": gen}
        path = tmp_path / f"g{gen}.yaml"
        path.write_text(yaml.safe_dump(data))
        assert f"with $\\varepsilon = {said}$" in key_of(str(path))
