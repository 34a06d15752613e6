"""The sheets' words for the online softmax over key tiles (sheets/work_tiles.py), en and zh;
lang.py merges them into its tables. Formatted with str.format: LaTeX braces are doubled."""
from __future__ import annotations

EN = {
    "conv_tiles": "Online softmax over key tiles of {0} (as FlashAttention works it), tiles numbered from 0: "
                  "per row and tile $j$ the running maximum $m_j$, the running sum "
                  "$\\ell_j = \\ell_{{j-1}}\\, e^{{m_{{j-1}} - m_j}} + \\sum e^{{s - m_j}}$ and the accumulator "
                  "$a_j = a_{{j-1}}\\, e^{{m_{{j-1}} - m_j}} + \\sum e^{{s - m_j}} v$ over the tile's keys; "
                  "at the end $\\tilde O = a / \\ell$ row by row, which equals $\\mathrm{{softmax}}(S)\\,V$.",
    "s.tile_max": "Key tile {j} of head {h}: the running maximum $m_{{{j}}}$ of each row.",
    "s.tile_sum": "Key tile {j} of head {h}: the running sum $\\ell_{{{j}}}$ of each row.",
    "s.tile_acc": "Key tile {j} of head {h}: the running accumulator $a_{{{j}}}$ (one row of $d_v$ entries per query).",
    "s.tiled": "Tiled output of head {h}: each accumulator row divided by its sum.",
    "tile_max_first": "Per row, the largest score of keys {0} (a masked score is $-\\infty$):",
    "tile_max_text": "Per row, the larger of the earlier maximum and the scores of keys {0} (a masked score is $-\\infty$):",
    "tile_sum_first": "Per row, $e^{{s - m}}$ for each unmasked key of {0}, added (the maximum gives $e^0 = 1$); "
                      "one more digit:",
    "tile_sum_text": "Per row, the earlier sum rescaled by $e^{{m_{{\\text{{old}}}} - m_{{\\text{{new}}}}}}$ (it was "
                     "taken against the old maximum), plus $e^{{s - m_{{\\text{{new}}}}}}$ for each unmasked key "
                     "of {0}; one more digit:",
    "tile_acc_first": "Per row, the value rows of the unmasked keys of {0}, each weighted by $e^{{s - m}}$, added:",
    "tile_acc_text": "Per row, the earlier accumulator rescaled by the same "
                     "$e^{{m_{{\\text{{old}}}} - m_{{\\text{{new}}}}}}$, plus the value rows of the unmasked keys "
                     "of {0}, each weighted by $e^{{s - m_{{\\text{{new}}}}}}$:",
    "tiled_text": "Row by row, the last accumulator divided by the last sum:",
}

ZH = {
    "conv_tiles": "按键分块（每块 {0} 个键）的在线 softmax（推理引擎分块计算注意力的做法），块从 0 编号：对每一行和第 $j$ 块，"
                  "运行最大值 $m_j$、运行和 $\\ell_j = \\ell_{{j-1}}\\, e^{{m_{{j-1}} - m_j}} + \\sum e^{{s - m_j}}$ "
                  "与累加器 $a_j = a_{{j-1}}\\, e^{{m_{{j-1}} - m_j}} + \\sum e^{{s - m_j}} v$（对该块的键求和）；"
                  "最后逐行 $\\tilde O = a / \\ell$，它等于 $\\mathrm{{softmax}}(S)\\,V$。",
    "s.tile_max": "第 {h} 个头的第 {j} 块键：每行的运行最大值 $m_{{{j}}}$。",
    "s.tile_sum": "第 {h} 个头的第 {j} 块键：每行的运行和 $\\ell_{{{j}}}$。",
    "s.tile_acc": "第 {h} 个头的第 {j} 块键：运行累加器 $a_{{{j}}}$（每个查询一行，共 $d_v$ 个数）。",
    "s.tiled": "第 {h} 个头的分块输出：每行累加器除以它的和。",
    "tile_max_first": "每行取键 {0} 中最大的分数（被遮住的分数为 $-\\infty$）：",
    "tile_max_text": "每行取之前的最大值与键 {0} 的分数中较大者（被遮住的分数为 $-\\infty$）：",
    "tile_sum_first": "每行对键 {0} 中未被遮住的键求 $e^{{s - m}}$ 并相加（最大值处为 $e^0 = 1$），多保留一位：",
    "tile_sum_text": "每行把之前的和乘以 $e^{{m_{{\\text{{旧}}}} - m_{{\\text{{新}}}}}}$ 重新缩放（它是相对旧的最大值算的），"
                     "再加上键 {0} 中未被遮住的键的 $e^{{s - m_{{\\text{{新}}}}}}$，多保留一位：",
    "tile_acc_first": "每行把键 {0} 中未被遮住的键的值向量（$V$ 的行）按 $e^{{s - m}}$ 加权相加：",
    "tile_acc_text": "每行把之前的累加器乘以同一个 $e^{{m_{{\\text{{旧}}}} - m_{{\\text{{新}}}}}}$，再加上键 {0} "
                     "中未被遮住的键的值向量，按 $e^{{s - m_{{\\text{{新}}}}}}$ 加权：",
    "tiled_text": "逐行用最后的累加器除以最后的和：",
}

assert set(EN) == set(ZH), sorted(set(EN) ^ set(ZH))
