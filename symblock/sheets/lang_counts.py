"""Prose whose grammar follows a count (one padded key or several, one K/V head or several), en and
zh, read on top of lang.TEXTS; a batch's padding keys are listed per sequence. Version-1 sheets keep
the "key(s) … are" lines of lang.py and its modules (BlockSpec.v1_words), byte for byte."""
from __future__ import annotations

EN = {
    "conv_padding_one": "Padding mask: key {0} is padding; its column is set to $-\\infty$ before the softmax, "
                        "so no query attends to it (weight $0$).",
    "conv_padding_many": "Padding mask: keys {0} are padding; their columns are set to $-\\infty$ before the "
                         "softmax, so no query attends to them (weight $0$).",
    "conv_padding_batch": "Padding mask, the padding keys of each sequence: {0}; their columns are set to "
                          "$-\\infty$ before the softmax, so no query attends to them (weight $0$).",
    "conv_cross_pad_one": "; memory row {0} is padding: its column is set to $-\\infty$ before the softmax",
    "conv_cross_pad_many": "; memory rows {0} are padding: their columns are set to $-\\infty$ before the softmax",
    "e.conv_padding_one": "Padding: token {0} is padding; its key column is set to $-\\infty$ before the "
                          "softmax, so no token attends to it. Its own row is still computed.",
    "e.conv_padding_many": "Padding: tokens {0} are padding; their key columns are set to $-\\infty$ before the "
                           "softmax, so no token attends to them. Their own rows are still computed.",
    "conv_groups_one": "Grouped K/V heads: $K$ and $V$ have one head, read by all {group} query heads; "
                       "query head $h$ reads K/V head $g = \\lfloor h / {group} \\rfloor$ (${reads}$), "
                       "that is columns $g d_k + 1, \\dots, (g + 1) d_k$ of $K$ and $V$.",
    "conv_groups_many": "Grouped K/V heads: $K$ and $V$ have {kv} heads, each read by {group} query heads; "
                        "query head $h$ reads K/V head $g = \\lfloor h / {group} \\rfloor$ (${reads}$), "
                        "that is columns $g d_k + 1, \\dots, (g + 1) d_k$ of $K$ and $V$.",
}

ZH = {
    "conv_padding_one": "填充掩码：第 {0} 个键是填充；softmax 之前把它所在的列设为 $-\\infty$，任何查询都不关注它（权重为 $0$）。",
    "conv_padding_many": "填充掩码：第 {0} 个键是填充；softmax 之前把它们所在的列设为 $-\\infty$，任何查询都不关注它们（权重为 $0$）。",
    "conv_padding_batch": "填充掩码，各序列的填充键：{0}；softmax 之前把它们所在的列设为 $-\\infty$，任何查询都不关注它们（权重为 $0$）。",
    "conv_cross_pad_one": "；第 {0} 个记忆行是填充：softmax 之前把它所在的列设为 $-\\infty$",
    "conv_cross_pad_many": "；第 {0} 个记忆行是填充：softmax 之前把它们所在的列设为 $-\\infty$",
    "e.conv_padding_one": "填充：第 {0} 个 token 是填充；softmax 之前把它的键所在的列设为 $-\\infty$，"
                          "任何 token 都不关注它。它自己的行照样计算。",
    "e.conv_padding_many": "填充：第 {0} 个 token 是填充；softmax 之前把它们的键所在的列设为 $-\\infty$，"
                           "任何 token 都不关注它们。它们自己的行照样计算。",
    "conv_groups_one": "分组的 K/V 头：$K$、$V$ 只有 1 个头，由全部 {group} 个查询头共用；"
                       "查询头 $h$ 读取 K/V 头 $g = \\lfloor h / {group} \\rfloor$（${reads}$），"
                       "即 $K$、$V$ 的第 $g d_k + 1, \\dots, (g + 1) d_k$ 列。",
    "conv_groups_many": "分组的 K/V 头：$K$、$V$ 共有 {kv} 个头，每个由 {group} 个查询头共用；"
                        "查询头 $h$ 读取 K/V 头 $g = \\lfloor h / {group} \\rfloor$（${reads}$），"
                        "即 $K$、$V$ 的第 $g d_k + 1, \\dots, (g + 1) d_k$ 列。",
}

assert set(EN) == set(ZH), sorted(set(EN) ^ set(ZH))


def counted(key: str, n: int, v1: bool) -> str:
    """The text key of a line about `n` things: `key` itself on a version-1 sheet, else its one/many form."""
    return key if v1 else f"{key}_{'one' if n == 1 else 'many'}"
