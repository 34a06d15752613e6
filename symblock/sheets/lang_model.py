"""The prose of decoder worksheets (a model's generation step with the KV cache), per language.

Same rules as lang.py (trusted text valid as LaTeX and Markdown; `{0}` fields take trusted math);
the decoder builder (work_model.py) reads these on top of lang.TEXTS.
"""
from __future__ import annotations

EN = {
    "m.describe": "A tiny GPT: a vocabulary of {v} tokens, $d_{{\\text{{model}}}} = {d}$, {layers}, {heads}, "
                  "{order}, {head}. The prompt {prompt} ($m = {m}$ tokens) has been run and its keys and values "
                  "are cached; its next token {token} is now fed back in. Work this one new row.",
    "m.layers_1": "one layer",
    "m.layers_n": "{0} layers",
    "m.tied": "a tied head ($\\ell = H W_E^{{\\top}}$)",
    "m.untied": "an untied head ($\\ell = H W_U$)",
    "m.conv_rows": "Tokens are rows: the new token's vectors are $1 \\times d$ ($d = {0}$); a linear layer is "
                   "$y = xW + b$ with $W$ of shape (in, out). Rows and columns are numbered from 1.",
    "m.conv_embed": "Input: $x = E + P$, with $E$ the token's row of $W_E$ (rows in vocabulary order: {0}) and "
                    "{1}.",
    "m.pos_learned": "$P$ the row of $W_P$ for the token's position (row 1 for the first token)",
    "m.pos_sinusoidal": "$P_{{p,2i}} = \\sin(p / 10000^{{2i/d}})$, $P_{{p,2i+1}} = \\cos(p / 10000^{{2i/d}})$ "
                        "for position $p$ (from 0)",
    "m.pos_none": "no position vector ($P = 0$)",
    "m.conv_cache": "KV cache: the prompt's rows of $K$ and $V$ are kept from its pass; a new token computes only "
                    "its own $q$, $k$, $v$ rows, appends $k$ and $v$ to the cache, and attends to every row of "
                    "the cache (no later token exists, so nothing is masked).",
    "m.conv_head": "Logits {0}; $p = \\mathrm{{softmax}}(\\ell)$; the next token is the one with the largest "
                   "logit (greedy decoding).",
    "m.s.embed": "The new token's embedding: its row of $W_E$.",
    "m.s.pos": "Its position vector.",
    "m.s.x": "The layer input: $x = E + P$.",
    "m.s.cache.k": "The key cache after appending the new row $k$.",
    "m.s.cache.v": "The value cache after appending the new row $v$.",
    "m.s.reused": "Which rows of $K_{{cache}}$ were reused from the prompt's pass? Write $1$ under each reused row "
                  "and $0$ under the row computed in this step.",
    "m.s.scores": "Scores of head {h}: the new query against every row of the key cache (one row).",
    "m.s.logits": "Logits of the new token: one per token of the vocabulary.",
    "m.s.probs": "Probabilities: softmax of the logits.",
    "m.s.next_token": "The next token (greedy): write it, or its number in the vocabulary (from 0).",
    "m.s.norm_final": "Final norm of the last layer's output.",
    "m.w.embed": "The token {0} is row {1} of $W_E$:",
    "m.w.pos": "The new token is token {0} of the sequence, so it takes row {0} of $W_P$:",
    "m.w.pos_sin": "Position $p = {0}$ (counting from 0), entry by entry:",
    "m.w.cache": "The first {0} rows come from the cache unchanged; the new row is appended as row {1}:",
    "m.w.reused": "Rows $1, \\dots, {0}$ of $K_{{cache}}$ were computed when the prompt was run and are read from "
                  "the cache; only row {1} (the new token's $k$) is computed in this step. The same holds for "
                  "$V_{{cache}}$.",
    "m.w.next_token": "The largest logit is entry {0}, so the next token is {1} (number {2} from 0):",
    "m.vocab": "vocabulary: {0}",
    "m.position": "the token's position",
}

ZH = {
    "m.describe": "一个小 GPT：词表 {v} 个 token，$d_{{\\text{{model}}}} = {d}$，{layers}，{heads}，{order}，{head}。"
                  "提示 {prompt}（$m = {m}$ 个 token）已经算过，它的键和值已缓存；它预测的下一个 token {token} "
                  "现在作为输入送回模型。请计算这新的一行。",
    "m.layers_1": "一层",
    "m.layers_n": "{0} 层",
    "m.tied": "共享输出头（$\\ell = H W_E^{{\\top}}$）",
    "m.untied": "独立输出头（$\\ell = H W_U$）",
    "m.conv_rows": "token 是行向量：新 token 的向量为 $1 \\times d$（$d = {0}$）；线性层为 $y = xW + b$，$W$ 的形状为"
                   "（输入，输出）。行和列从 1 开始编号。",
    "m.conv_embed": "输入：$x = E + P$，$E$ 是该 token 在 $W_E$ 中的行（按词表顺序：{0}），{1}。",
    "m.pos_learned": "$P$ 是该位置在 $W_P$ 中的行（第一个 token 用第 1 行）",
    "m.pos_sinusoidal": "$P_{{p,2i}} = \\sin(p / 10000^{{2i/d}})$，$P_{{p,2i+1}} = \\cos(p / 10000^{{2i/d}})$，"
                        "位置 $p$ 从 0 开始",
    "m.pos_none": "没有位置向量（$P = 0$）",
    "m.conv_cache": "KV 缓存：提示的 $K$、$V$ 各行在它那一轮里已算好并保存；新 token 只计算自己的 $q$、$k$、$v$ 行，"
                    "把 $k$、$v$ 追加到缓存末尾，再对缓存的每一行做注意力（没有更晚的 token，所以无需掩码）。",
    "m.conv_head": "logits {0}；$p = \\mathrm{{softmax}}(\\ell)$；下一个 token 取 logit 最大者（贪心解码）。",
    "m.s.embed": "新 token 的嵌入：它在 $W_E$ 中的那一行。",
    "m.s.pos": "它的位置向量。",
    "m.s.x": "该层的输入：$x = E + P$。",
    "m.s.cache.k": "追加新行 $k$ 之后的键缓存。",
    "m.s.cache.v": "追加新行 $v$ 之后的值缓存。",
    "m.s.reused": "$K_{{cache}}$ 的哪些行是从提示那一轮直接复用的？复用的行下写 $1$，本步新算的行下写 $0$。",
    "m.s.scores": "第 {h} 个头的分数：新的查询与键缓存的每一行做点积（一行）。",
    "m.s.logits": "新 token 的 logits：词表中每个 token 一个。",
    "m.s.probs": "概率：对 logits 做 softmax。",
    "m.s.next_token": "下一个 token（贪心）：写出该 token，或它在词表中的编号（从 0 开始）。",
    "m.s.norm_final": "对最后一层的输出做最终归一化。",
    "m.w.embed": "token {0} 是 $W_E$ 的第 {1} 行：",
    "m.w.pos": "新 token 是序列中的第 {0} 个 token，所以取 $W_P$ 的第 {0} 行：",
    "m.w.pos_sin": "位置 $p = {0}$（从 0 数起），逐项计算：",
    "m.w.cache": "前 {0} 行原样来自缓存；新行追加为第 {1} 行：",
    "m.w.reused": "$K_{{cache}}$ 的第 $1, \\dots, {0}$ 行在运行提示时已经算好，直接从缓存读取；本步只计算第 {1} 行"
                  "（新 token 的 $k$）。$V_{{cache}}$ 也一样。",
    "m.w.next_token": "最大的 logit 是第 {0} 项，所以下一个 token 是 {1}（从 0 数起编号 {2}）：",
    "m.vocab": "词表：{0}",
    "m.position": "该 token 的位置",
}

TEXTS = {"en": EN, "zh": ZH}
