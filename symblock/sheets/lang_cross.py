"""The prose of a decoder layer's cross-attention on sheets and keys (en, zh): read on top of
lang.TEXTS, in the same LaTeX-and-Markdown subset (words and inline math only)."""
from __future__ import annotations

CROSS_EN = {
    "s.memory": "The memory $H^{{\\mathrm{{enc}}}}$: the encoder's output, one row per source token.",
    "s.cross.q": "Cross-attention queries: project the decoder's rows ${src}$ with $W^{{Q}}_{{c}}$.",
    "s.cross.k": "Cross-attention keys: project the memory $H^{{\\mathrm{{enc}}}}$ (the encoder's output, not the decoder's rows) "
                 "with $W^{{K}}_{{c}}$.",
    "s.cross.v": "Cross-attention values: project the memory $H^{{\\mathrm{{enc}}}}$ with $W^{{V}}_{{c}}$.",
    "s.cross_scores": "Cross-attention scores of head {h}: every decoder query row against every memory key row.",
    "s.cross_scaled": "Scale the cross-attention scores of head {h} by $1/\\sqrt{{d_k}}$.",
    "s.cross_masked": "Memory padding mask for head {h}: no query looks at a padded memory row (cross-attention "
                      "has no causal mask).",
    "s.cross_weights": "Cross-attention weights of head {h}: softmax of each row.",
    "s.cross_head_out": "Cross-attention output of head {h}: each row mixes the memory's value rows with these "
                        "weights.",
    "s.cross.concat": "Concatenate the cross-attention heads' outputs.",
    "s.cross.out": "Cross-attention output: project the heads with $W^{{O}}_{{c}}$.",
    "s.cross.out_noproj": "Cross-attention output: the heads' output as it is (no output projection).",
    "s.dec.resid1": "First residual connection: add the self-attention output to its input.",
    "s.dec.resid2": "Second residual connection: add the cross-attention output to its input.",
    "s.dec.resid3": "Third residual connection: add the FFN output to its input.",
    "cross_mask_text": "The columns of padded memory rows become $-\\infty$; the rest is copied (no causal mask: "
                       "every decoder row may read every real memory row).",
    "cross_rows": "The row mixes all {0} value rows of the memory:",
    "cross_rows_padded": "The row mixes the {0} value rows of the memory ({1} of them padding, weighed 0):",
    "cross_rows_entries": "The last row's first entries, written out (row times column); the row mixes all {0} "
                          "value rows of the memory:",
    "cross_rows_entry": "The last row's first entry, written out (row times column); the row mixes all {0} "
                        "value rows of the memory:",
    "cross_rows_padded_entries": "The last row's first entries, written out (row times column); the row mixes the {0} "
                                 "value rows of the memory, {1} of them padding (weighed 0):",
    "cross_rows_padded_entry": "The last row's first entry, written out (row times column); the row mixes the {0} "
                               "value rows of the memory, {1} of them padding (weighed 0):",
    "conv_cross": "Cross-attention per head $h$: $S^{{c}}_h = Q^{{c}}_h (K^{{c}}_h)^{{\\top}}${0}, softmax along each "
                  "row, $O^{{c}}_h = P^{{c}}_h V^{{c}}_h$; the queries come from the decoder's rows, the keys and "
                  "values from the memory $H^{{\\mathrm{{enc}}}}$ ({1} rows, the encoder's output), and no causal mask applies{2}.",
    "conv_cross_pad": "; memory row(s) {0} are padding: their columns are set to $-\\infty$ before the softmax",
    "conv_post_cross": "Post-LN decoder layer: $H_1 = \\mathrm{{N}}_1(X + \\mathrm{{SelfAttn}}(X))$, "
                       "$H_2 = \\mathrm{{N}}_2(H_1 + \\mathrm{{CrossAttn}}(H_1, H^{{\\mathrm{{enc}}}}))$, "
                       "$H_3 = \\mathrm{{N}}_3(H_2 + \\mathrm{{FFN}}(H_2))$.",
    "conv_pre_cross": "Pre-LN decoder layer: $R_1 = X + \\mathrm{{SelfAttn}}(\\mathrm{{N}}_1(X))$, "
                      "$R_2 = R_1 + \\mathrm{{CrossAttn}}(\\mathrm{{N}}_2(R_1), H^{{\\mathrm{{enc}}}})$, "
                      "$R_3 = R_2 + \\mathrm{{FFN}}(\\mathrm{{N}}_3(R_2))${0}.",
    "conv_final_cross": ", then $Y = \\mathrm{{N}}_f(R_3)$",
    "describe_cross": " A decoder layer: after its self-attention, a cross-attention reads the memory $H^{{\\mathrm{{enc}}}}$ "
                      "({0} rows), then the FFN.",
    "describe_cross_causal": " A decoder layer: the causal mask is its self-attention's; then a cross-attention reads "
                             "the memory $H^{{\\mathrm{{enc}}}}$ ({0} rows, no causal mask), then the FFN.",
}

CROSS_ZH = {
    "s.memory": "记忆 $H^{{\\mathrm{{enc}}}}$：编码器的输出，每个源 token 一行。",
    "s.cross.q": "交叉注意力的查询：用 $W^{{Q}}_{{c}}$ 投影解码器的行 ${src}$。",
    "s.cross.k": "交叉注意力的键：用 $W^{{K}}_{{c}}$ 投影记忆 $H^{{\\mathrm{{enc}}}}$（编码器的输出，不是解码器的行）。",
    "s.cross.v": "交叉注意力的值：用 $W^{{V}}_{{c}}$ 投影记忆 $H^{{\\mathrm{{enc}}}}$。",
    "s.cross_scores": "第 {h} 个头的交叉注意力分数：每个解码器查询行与记忆的每个键行做点积。",
    "s.cross_scaled": "第 {h} 个头的交叉注意力分数乘以 $1/\\sqrt{{d_k}}$。",
    "s.cross_masked": "第 {h} 个头的记忆填充掩码：查询不看填充的记忆行（交叉注意力没有因果掩码）。",
    "s.cross_weights": "第 {h} 个头的交叉注意力权重：对每一行做 softmax。",
    "s.cross_head_out": "第 {h} 个头的交叉注意力输出：用这些权重对记忆的值向量行加权求和。",
    "s.cross.concat": "按顺序拼接交叉注意力各个头的输出。",
    "s.cross.out": "交叉注意力输出：用 $W^{{O}}_{{c}}$ 投影各个头。",
    "s.cross.out_noproj": "交叉注意力输出：各个头的输出原样使用（没有输出投影）。",
    "s.dec.resid1": "第一个残差连接：把自注意力输出加到它的输入上。",
    "s.dec.resid2": "第二个残差连接：把交叉注意力输出加到它的输入上。",
    "s.dec.resid3": "第三个残差连接：把 FFN 输出加到它的输入上。",
    "cross_mask_text": "填充的记忆行所在的列变为 $-\\infty$，其余照抄（没有因果掩码：解码器的每一行都可以读所有真实的记忆行）。",
    "cross_rows": "这一行对记忆的全部 {0} 个值向量行加权求和：",
    "cross_rows_padded": "这一行对记忆的 {0} 个值向量行加权求和（其中 {1} 行是填充，权重为 0）：",
    "cross_rows_entries": "最后一行的前几个元素逐项写出（行乘列）；这一行对记忆的全部 {0} 个值向量行加权求和：",
    "cross_rows_entry": "最后一行的第一个元素逐项写出（行乘列）；这一行对记忆的全部 {0} 个值向量行加权求和：",
    "cross_rows_padded_entries": "最后一行的前几个元素逐项写出（行乘列）；这一行对记忆的 {0} 个值向量行加权求和（其中 {1} 行是填充，权重为 0）：",
    "cross_rows_padded_entry": "最后一行的第一个元素逐项写出（行乘列）；这一行对记忆的 {0} 个值向量行加权求和（其中 {1} 行是填充，权重为 0）：",
    "conv_cross": "交叉注意力，每个头 $h$：$S^{{c}}_h = Q^{{c}}_h (K^{{c}}_h)^{{\\top}}${0}，按行做 softmax，"
                  "$O^{{c}}_h = P^{{c}}_h V^{{c}}_h$；查询来自解码器的行，键和值来自记忆 $H^{{\\mathrm{{enc}}}}$（{1} 行，编码器的输出），"
                  "没有因果掩码{2}。",
    "conv_cross_pad": "；第 {0} 个记忆行是填充：softmax 之前把它们所在的列设为 $-\\infty$",
    "conv_post_cross": "Post-LN 解码器层：$H_1 = \\mathrm{{N}}_1(X + \\mathrm{{SelfAttn}}(X))$，"
                       "$H_2 = \\mathrm{{N}}_2(H_1 + \\mathrm{{CrossAttn}}(H_1, H^{{\\mathrm{{enc}}}}))$，"
                       "$H_3 = \\mathrm{{N}}_3(H_2 + \\mathrm{{FFN}}(H_2))$。",
    "conv_pre_cross": "Pre-LN 解码器层：$R_1 = X + \\mathrm{{SelfAttn}}(\\mathrm{{N}}_1(X))$，"
                      "$R_2 = R_1 + \\mathrm{{CrossAttn}}(\\mathrm{{N}}_2(R_1), H^{{\\mathrm{{enc}}}})$，"
                      "$R_3 = R_2 + \\mathrm{{FFN}}(\\mathrm{{N}}_3(R_2))${0}。",
    "conv_final_cross": "，最后 $Y = \\mathrm{{N}}_f(R_3)$",
    "describe_cross": "这是一个解码器层：自注意力之后，交叉注意力读取记忆 $H^{{\\mathrm{{enc}}}}$（{0} 行），然后是 FFN。",
    "describe_cross_causal": "这是一个解码器层：因果掩码属于它的自注意力；之后交叉注意力读取记忆 $H^{{\\mathrm{{enc}}}}$"
                             "（{0} 行，没有因果掩码），然后是 FFN。",
}

# an encoder-decoder's translation step (read on top of lang.MODEL_TEXTS)
MODEL_CROSS_EN = {
    "m.describe_translate": "An encoder-decoder (a translation model): a vocabulary of {v} tokens, "
                            "$d_{{\\text{{model}}}} = {d}$, {stacks}, {heads}, {order}, "
                            "{head}. The source {source} has been encoded once into its memory $H^{{\\mathrm{{enc}}}}$ ({n} rows), and the "
                            "cross-attention's keys and values of $H^{{\\mathrm{{enc}}}}$ are given. The target prefix {prompt} "
                            "($m = {m}$ {tokens}) has been run and its self-attention keys and values are cached; its "
                            "next token {token} is now fed back in. Work this one new row to the next token.",
}
MODEL_CROSS_ZH = {
    "m.describe_translate": "一个编码器-解码器（翻译模型）：词表 {v} 个 token，$d_{{\\text{{model}}}} = {d}$，"
                            "{enc} 层编码器、{dec} 层解码器，{heads}，{order}，{head}。源句 {source} 已编码一次："
                            "得到记忆 $H^{{\\mathrm{{enc}}}}$（{n} 行），交叉注意力由 $H^{{\\mathrm{{enc}}}}$ 算出的键和值已给出。目标前缀 {prompt}"
                            "（$m = {m}$ 个 token）已经算过，自注意力的键和值已缓存；它预测的下一个 token {token} "
                            "现在作为输入送回模型。请把这新的一行一直算到下一个 token。",
}

# a translation step's words for what a decoder sheet calls the prompt: the target prefix (read over
# MODEL_TEXTS by an encoder-decoder's sheet)
TRANSLATE_EN = {
    "m.conv_cache": "KV cache: the target prefix's rows of the self-attention's $K$ and $V$ are kept from its pass; "
                    "a new token computes only its own $q$, $k$, $v$ rows, appends $k$ and $v$ to the cache, and "
                    "attends to every row of the cache (no later token exists, so nothing is masked).",
    "m.s.pos_table": "The position vectors of the target prefix's positions, one row per position.",
    "m.s.reused": "Which rows of $K_{{cache}}$ were reused from the target prefix's pass? Write $1$ under each reused "
                  "row and $0$ under the row computed in this step.",
    "m.w.reused": "Rows {0} of $K_{{cache}}$ were computed when the target prefix was run and are read from "
                  "the cache; only row {1} (the new token's $k$) is computed in this step. The same holds for "
                  "$V_{{cache}}$.",
    "m.w.reused_one": "Row $1$ of $K_{{cache}}$ was computed when the target prefix was run and is read from "
                      "the cache; only row {1} (the new token's $k$) is computed in this step. The same holds for "
                      "$V_{{cache}}$.",
}
TRANSLATE_ZH = {
    "m.conv_cache": "KV 缓存：目标前缀的自注意力 $K$、$V$ 各行在它那一轮里已算好并保存；新 token 只计算自己的 $q$、$k$、$v$ 行，"
                    "把 $k$、$v$ 追加到缓存末尾，再对缓存的每一行做注意力（没有更晚的 token，所以无需掩码）。",
    "m.s.pos_table": "目标前缀各位置的位置向量，每个位置一行。",
    "m.s.reused": "$K_{{cache}}$ 的哪些行是从目标前缀那一轮直接复用的？复用的行下写 $1$，本步新算的行下写 $0$。",
    "m.w.reused": "$K_{{cache}}$ 的第 {0} 行在运行目标前缀时已经算好，直接从缓存读取；本步只计算第 {1} 行"
                  "（新 token 的 $k$）。$V_{{cache}}$ 也一样。",
    "m.w.reused_one": "$K_{{cache}}$ 的第 $1$ 行在运行目标前缀时已经算好，直接从缓存读取；本步只计算第 {1} 行"
                      "（新 token 的 $k$）。$V_{{cache}}$ 也一样。",
}
TRANSLATE = {"en": TRANSLATE_EN, "zh": TRANSLATE_ZH}
assert set(TRANSLATE_EN) == set(TRANSLATE_ZH)

# the engine's formula words (MATH_TEXT): "−∞ where memory row j is padding"
CROSS_MATH_ZH = {" where memory row ": "，记忆的第 "}

assert set(CROSS_EN) == set(CROSS_ZH), sorted(set(CROSS_EN) ^ set(CROSS_ZH))
