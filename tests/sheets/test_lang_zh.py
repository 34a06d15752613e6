"""Chinese sheets say what the block is: the line describing the block names its mask in Chinese."""
from __future__ import annotations

import re

from symblock.cli import main


def describe_line(text: str) -> str:
    """The line that describes the block ("3 个 token，…，因果掩码。")."""
    lines = [l for l in text.splitlines() if re.match(r"\d+ 个 token，", l)]
    assert len(lines) == 1, lines
    return lines[0]


def test_zh_sheet_and_key_of_a_causal_block_say_causal_mask(tmp_path):
    out = tmp_path / "zh"
    assert main(["worksheet", "pre-ln-causal-gelu", "--lang", "zh", "--out", str(out),
                 "--format", "markdown"]) == 0
    for name in ("sheet.md", "key.md"):
        text = (out / name).read_text(encoding="utf-8")
        line = describe_line(text)
        assert line.endswith("，因果掩码。"), (name, line)
        assert "无掩码" not in text, name
        assert "- 因果掩码：softmax 之前把 $j > i$ 的元素设为 $-\\infty$，它们的权重为 $0$。" in text


def test_zh_sheet_of_a_block_without_mask_says_no_mask(tmp_path):
    out = tmp_path / "zh"
    assert main(["worksheet", "seed-post-ln", "--lang", "zh", "--out", str(out), "--format", "markdown"]) == 0
    line = describe_line((out / "sheet.md").read_text(encoding="utf-8"))
    assert line.endswith("，无掩码。"), line
