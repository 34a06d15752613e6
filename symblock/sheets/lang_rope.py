"""The prose of RoPE's rotations and of grouped K/V heads on sheets and keys (merged into lang.py's
tables; the same LaTeX-and-Markdown subset: words and inline math only)."""
from __future__ import annotations

EN = {
    "conv_rope": "RoPE: each head's rows of $Q$ and $K$ are turned pair by pair before the scores; pair $i$ "
                 "($0 \\le i < d_k/2 = {half}$) is the columns ${pairs}$ of the head{from0}, and at position $m$ it turns "
                 "by $\\phi = m\\,\\theta^{{-2i/d_k}}$, $\\theta = {theta}$: "
                 "$x'_a = x_a \\cos\\phi - x_b \\sin\\phi$, $x'_b = x_b \\cos\\phi + x_a \\sin\\phi$. "
                 "The rows are at positions ${pos}$; the angles $\\Phi$ (one row per position, "
                 "one column per pair), $\\cos\\Phi$ and $\\sin\\Phi$ are given.",
    "rope_from0": " (its columns counted from 0, as $i$ is)",
    "conv_groups": "Grouped K/V heads: $K$ and $V$ have {kv} head(s), each read by {group} query heads; "
                   "query head $h$ reads K/V head $g = \\lfloor h / {group} \\rfloor$ (${reads}$), "
                   "that is columns $g d_k + 1, \\dots, (g + 1) d_k$ of $K$ and $V$.",
    "rope_work": "Row {row} is at position $m = {m}$; the pairs of columns (counted from 1 within the head) "
                 "are {pairs}. Each entry from its pair and the given $\\cos\\Phi$, $\\sin\\Phi$:",
    "group_reads": "Query head {h} reads K/V head {g}.",
    "s.attn.q_rot": "Rotate the queries with RoPE, pair by pair, by the angles of each row's position.",
    "s.attn.k_rot": "Rotate the keys with RoPE, pair by pair, by the angles of each row's position.",
}

ZH = {
    "conv_rope": "RoPE：在计算分数之前，把每个头的 $Q$、$K$ 的各行按列对旋转；第 $i$ 对"
                 "（$0 \\le i < d_k/2 = {half}$）是该头的第 ${pairs}$ 列{from0}，位置 $m$ 处的旋转角为 "
                 "$\\phi = m\\,\\theta^{{-2i/d_k}}$，$\\theta = {theta}$："
                 "$x'_a = x_a \\cos\\phi - x_b \\sin\\phi$，$x'_b = x_b \\cos\\phi + x_a \\sin\\phi$。"
                 "各行的位置是 ${pos}$；角度 $\\Phi$（每个位置一行，每对一列）及 $\\cos\\Phi$、$\\sin\\Phi$ 已给出。",
    "rope_from0": "（该头的列从 0 数起，与 $i$ 相同）",
    "conv_groups": "分组的 K/V 头：$K$、$V$ 共有 {kv} 个头，每个由 {group} 个查询头共用；"
                   "查询头 $h$ 读取 K/V 头 $g = \\lfloor h / {group} \\rfloor$（${reads}$），"
                   "即 $K$、$V$ 的第 $g d_k + 1, \\dots, (g + 1) d_k$ 列。",
    "rope_work": "第 {row} 行的位置是 $m = {m}$；（头内从 1 数起的）列对为 {pairs}。"
                 "每个元素由它的列对和给定的 $\\cos\\Phi$、$\\sin\\Phi$ 算出：",
    "group_reads": "查询头 {h} 读取 K/V 头 {g}。",
    "s.attn.q_rot": "用 RoPE 旋转查询：按每行的位置对应的角度，逐对旋转。",
    "s.attn.k_rot": "用 RoPE 旋转键：按每行的位置对应的角度，逐对旋转。",
}

MODEL_EN = {
    "copy_embed": "No position vector is added: $x$ is the token's embedding $E$.",
    "m.pos_rope": "no position vector: RoPE turns each layer's $q$ and $k$ by the token's "
                  "position instead (counted from 0)",
}

MODEL_ZH = {
    "copy_embed": "不加位置向量：$x$ 就是该 token 的嵌入 $E$。",
    "m.pos_rope": "没有位置向量：改由 RoPE 按 token 的位置（从 0 数起）旋转每一层的 $q$ 和 $k$",
}
