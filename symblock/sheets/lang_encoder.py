"""The prose of an encoder model's sheet (a BERT-like encoder: every row of the sentence, ending in
hidden states) in en and zh, read on top of lang.MODEL_TEXTS in the same LaTeX-and-Markdown subset."""
from __future__ import annotations

ENCODER_EN = {
    "e.describe": "A tiny BERT-like encoder: a vocabulary of {v} tokens, $d_{{\\text{{model}}}} = {d}$, {layers}, "
                  "{heads}, {order}, attending both ways (no causal mask). The sentence {prompt} ($n = {n}$ tokens) "
                  "is worked row by row: embeddings, {norm}then the {which}, ending in the hidden states "
                  "(no next token).",
    "e.norm": "their LayerNorm, ",
    "e.conv_rows": "Tokens are rows: $X$ is $n \\times d$ ($n = {0}$, $d = {1}$); a linear layer is "
                   "{lin} with $W$ of shape (in, out). Rows and columns are numbered from 1.",
    "e.conv_embed": "Input: $X = E + \\mathrm{{PE}}$, with row $i$ of $E$ the row of $W_E$ of token $i$ (rows in vocabulary "
                    "order: {0}) and {1}.",
    "e.pos_learned": "row $i$ of $\\mathrm{{PE}}$ the row $i$ of $W_P$ (the token's position, from 1)",
    "e.conv_embed_norm": "The embeddings are normalised before the first layer: $N_e = \\mathrm{{LayerNorm}}(X)$ "
                         "(its own $\\gamma$, $\\beta$); the layer reads $N_e$.",
    "e.conv_embed_norm_nobeta": "The embeddings are normalised before the first layer: $N_e = \\mathrm{{LayerNorm}}(X)$ "
                                "(its own $\\gamma$; no $\\beta$: the model has no biases); the layer reads $N_e$.",
    "e.conv_padding": "Padding: token(s) {0} are padding; their key columns are set to $-\\infty$ before the "
                      "softmax, so no token attends to them. Their own rows are still computed.",
    "e.s.embed": "The token embeddings: row $i$ is the row of $W_E$ of token $i$.",
    "e.s.pos": "The position vectors: row $i$ is row $i$ of $W_P$.",
    "e.s.x": "The embedding sum: $X = E + \\mathrm{{PE}}$.",
    "e.s.norm_embed": "The embeddings' LayerNorm: each row normalised, then $\\gamma$, $\\beta$.",
    "e.s.norm_embed_nobeta": "The embeddings' LayerNorm: each row normalised, then scaled by $\\gamma$ (no $\\beta$).",
    "e.w.embed": "Look each token up in the vocabulary: {0}. Its row of $W_E$ is row $i$ of $E$:",
    "e.w.pos": "Rows $1, \\dots, {0}$ of $W_P$, one per position:",
}
ENCODER_ZH = {
    "e.describe": "一个微型 BERT 式编码器：词表 {v} 个 token，$d_{{\\text{{model}}}} = {d}$，{layers}，{heads}，"
                  "{order}，双向注意（没有因果掩码）。句子 {prompt}（$n = {n}$ 个 token）逐行计算：嵌入、{norm}"
                  "然后是各层，最后得到隐藏状态（不预测下一个 token）。",
    "e.norm": "嵌入的 LayerNorm、",
    "e.conv_rows": "token 是行向量：$X$ 为 $n \\times d$（$n = {0}$，$d = {1}$）；线性层为 {lin}，"
                   "$W$ 的形状为（输入，输出）。行和列都从 1 开始编号。",
    "e.conv_embed": "输入：$X = E + \\mathrm{{PE}}$，$E$ 的第 $i$ 行是第 $i$ 个 token 在 $W_E$ 中的行（按词表顺序：{0}），{1}。",
    "e.pos_learned": "$\\mathrm{{PE}}$ 的第 $i$ 行是 $W_P$ 的第 $i$ 行（token 的位置，从 1 数起）",
    "e.conv_embed_norm": "进入第一层之前先对嵌入做归一化：$N_e = \\mathrm{{LayerNorm}}(X)$（它自己的 $\\gamma$、"
                         "$\\beta$）；第一层读取 $N_e$。",
    "e.conv_embed_norm_nobeta": "进入第一层之前先对嵌入做归一化：$N_e = \\mathrm{{LayerNorm}}(X)$（它自己的 $\\gamma$；"
                                "没有 $\\beta$：这个模型没有偏置）；第一层读取 $N_e$。",
    "e.conv_padding": "填充：第 {0} 个 token 是填充；softmax 之前把它们的键所在的列设为 $-\\infty$，"
                      "任何 token 都不关注它们。它们自己的行照样计算。",
    "e.s.embed": "token 嵌入：第 $i$ 行是第 $i$ 个 token 在 $W_E$ 中的行。",
    "e.s.pos": "位置向量：第 $i$ 行是 $W_P$ 的第 $i$ 行。",
    "e.s.x": "嵌入之和：$X = E + \\mathrm{{PE}}$。",
    "e.s.norm_embed": "嵌入的 LayerNorm：每一行归一化，再乘 $\\gamma$ 加 $\\beta$。",
    "e.s.norm_embed_nobeta": "嵌入的 LayerNorm：每一行归一化，再乘 $\\gamma$（没有 $\\beta$）。",
    "e.w.embed": "在词表中查出每个 token：{0}。它在 $W_E$ 中的行就是 $E$ 的第 $i$ 行：",
    "e.w.pos": "$W_P$ 的第 $1, \\dots, {0}$ 行，每个位置一行：",
}

# the engine's formula words (MATH_TEXT): E = W_E[tokens]
ENCODER_MATH_ZH = {"tokens": "各 token"}

assert set(ENCODER_EN) == set(ENCODER_ZH), sorted(set(ENCODER_EN) ^ set(ENCODER_ZH))
