"""The sheets say what the block is, in each language: the line describing the block names its
mask, the conventions box and the variance task say population variance (divide by d). The
expected phrases are written here as a reader reads them, not taken from the language tables."""
from __future__ import annotations

import re

import pytest

from symblock.cli import main

# language -> (the describe line's start, its causal-mask end, its no-mask end)
DESCRIBE = {"en": (r"\d+ tokens, ", ", causal mask.", ", no mask."),
            "zh": (r"\d+ 个 token，", "，因果掩码。", "，无掩码。")}


def sheets(tmp_path, example: str, lang: str) -> dict[str, str]:
    out = tmp_path / f"{example}-{lang}"
    assert main(["worksheet", example, "--lang", lang, "--out", str(out), "--format", "markdown"]) == 0
    return {name: (out / name).read_text(encoding="utf-8") for name in ("sheet.md", "key.md")}


def describe_line(text: str, lang: str) -> str:
    lines = [l for l in text.splitlines() if re.match(DESCRIBE[lang][0], l)]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sheet_and_key_of_a_causal_block_say_causal_mask(tmp_path, lang):
    _, causal, none = DESCRIBE[lang]
    for name, text in sheets(tmp_path, "pre-ln-causal-gelu", lang).items():
        line = describe_line(text, lang)
        assert line.endswith(causal), (name, line)
        assert none[1:-1] not in line, (name, line)
    line = describe_line(sheets(tmp_path, "seed-post-ln", lang)["sheet.md"], lang)
    assert line.endswith(none), line   # and a block without a mask says so


def test_zh_sheet_states_the_causal_mask_and_the_population_variance(tmp_path):
    for name, text in sheets(tmp_path, "pre-ln-causal-gelu", "zh").items():
        assert "- 因果掩码：softmax 之前把 $j > i$ 的元素设为 $-\\infty$，它们的权重为 $0$。" in text, name
        assert "总体方差 $\\sigma_i^2 = \\frac{1}{d}\\sum_j (x_{ij} - \\mu_i)^2$（除以 $d$，不是 $d-1$）" in text, name
        assert text.count("$X$ 每一行的总体方差。") == 1 and "样本方差" not in text, name


def test_en_sheet_states_the_population_variance(tmp_path):
    for name, text in sheets(tmp_path, "pre-ln-causal-gelu", "en").items():
        assert "population variance $\\sigma_i^2 = \\frac{1}{d}\\sum_j (x_{ij} - \\mu_i)^2$ (divide by $d$, not $d-1$)" \
            in text, name
        assert text.count("Population variance of each row of $X$.") == 1, name
        assert "sample variance" not in text.lower(), name
