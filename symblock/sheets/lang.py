"""The prose of worksheets and keys, per language (`--lang en|zh`).

Every string here is trusted text written in the small subset that is valid both as LaTeX and as
Markdown: words and inline math `$...$`, nothing else (no `%`, `&`, `#`, `_` or `\\` outside
math). Templates and `sheet.py` mark these strings as safe; user text (titles, file names) never
comes from here and is always escaped. `{0}`-style fields are filled with trusted math or numbers.
"""
from __future__ import annotations

from symblock.sheets import lang_notebook, lang_tiles

LANGS = ("en", "zh")

EN = {
    "sheet": "Worksheet",
    "default_title": "Transformer block",
    "default_title_decoder": "Tiny GPT",
    "default_title_encoder": "Tiny encoder",
    "default_title_encoder-decoder": "Tiny encoder–decoder",
    "key": "Answer key",
    "id": "Worksheet ID",
    "name_line": "Name",
    "colon": ":",          # after a label that ends a line (Answer:)
    "label_sep": ": ",     # between a label and its value (Worksheet ID: …)
    "block": "The block",
    "conventions": "Conventions",
    "data": "Given",
    "data_intro": "These matrices are given; every task below uses only them and earlier answers.",
    "data_none": "Nothing is given: every task below follows from the formulas above.",
    "tasks": "Tasks",
    "task": "Task {0}",
    "shape": "shape",
    "compute": "Compute",
    "fill_in": "Write your answer in the grid.",
    "work": "Work",
    "answer": "Answer",
    "given_step": "given",
    "from_step": "step",
    "row": "Row {0}",
    "entry": "Entry",
    "first_entries": "The first entries, written out (row times column):",
    "first_entry": "The first entry, written out (row times column):",
    "last_row_entries": "The last row's first entries, written out (row times column; the last row weighs every value row):",
    "last_row_entry": "The last row's first entry, written out (row times column; the last row weighs every value row):",
    "elementwise": "Entry by entry:",
    "per_row": "Row by row:",
    "exps": "the exponentials",
    "sum": "their sum",
    "weights_row": "each divided by the sum",
    "copy": "The block's output is this step, unchanged:",
    "concat": "Put the heads side by side, in order: {0}.",
    "concat_v1": "Put the heads side by side, in order:",
    "concat_part": "${0}$ in columns {1}–{2}",
    "concat_sep": ", ",
    "mask_text": "Positions $j > i$ (later tokens) become $-\\infty$; the rest is copied.",
    "pad_text": "The columns of padding keys become $-\\infty$; the rest is copied.",
    "mask_pad_text": "Positions $j > i$ (later tokens) and the columns of padding keys become $-\\infty$; the rest is copied.",
    "dropped_text": "Multiply entry by entry by the mask $D$ and divide the kept entries by $1 - p$.",
    "s.dropped": "Dropout on ${src}$ with the given mask $D$ (inverted dropout).",
    "conv_padding": "Padding mask: key(s) {0} are padding; their columns are set to $-\\infty$ before the softmax, so no query attends to them (weight $0$).",
    "conv_dropout": "Dropout with fixed masks $D$ (given): $\\tilde{{X}} = D \\odot X / (1 - p)$, $p = {0}$.",
    "mask_pad": "padding mask",
    "scale_text": "Every score is multiplied by $1/\\sqrt{{d_k}} = {0}$.",
    "act_relu": "$\\mathrm{{ReLU}}(z) = \\max(0, z)$, entry by entry.",
    "act_gelu": "$\\mathrm{{GELU}}(z) = \\tfrac{{z}}{{2}}\\left(1 + \\operatorname{{erf}}(z/\\sqrt{{2}})\\right)$ (exact erf form), entry by entry.",
    "act_gelu_tanh": "$\\mathrm{{GELU}}_{{\\tanh}}(z) = \\tfrac{{z}}{{2}}\\left(1 + \\tanh\\left(\\sqrt{{2/\\pi}}\\,(z + 0.044715 z^3)\\right)\\right)$, entry by entry.",
    "act_silu": "$\\mathrm{{SiLU}}(z) = z / (1 + e^{{-z}})$, entry by entry.",
    "gated": "Then multiply entry by entry by the gate $G$.",
    "approx_note": "$\\approx$ marks a value rounded to {0} decimal places; $=$ is exact.",
    # conventions box
    "conv_rows": "Tokens are rows: $X$ is $n \\times d$ ($n = {0}$, $d = {1}$); a linear layer is {lin} with $W$ of shape (in, out).",
    "conv_linear": "$y = xW + b$",
    "conv_linear_nobias": "$y = xW$ (no bias)",
    "conv_attn": "Attention per head $h$: $S_h = Q_h K_h^{{\\top}}${0}, softmax along each row (subtracting the row's maximum first changes nothing and keeps every $e^x \\le 1$), $O_h = P_h V_h$; head $h$ uses columns ${1}$ of $Q$, $K$, $V$.",
    "conv_scale": " scaled by $1/\\sqrt{{d_k}}$, $d_k = {0}$",
    "conv_noscale": " (not scaled)",
    "conv_mask": "Causal mask: entries with $j > i$ are set to $-\\infty$ before the softmax, so their weight is $0$.",
    "conv_layernorm": "LayerNorm per row: $\\mu = \\frac{{1}}{{d}}\\sum_j x_j$, population variance $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$ (divide by $d$, not $d-1$), $\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma + \\beta$, with $\\varepsilon = {0}$.",
    "conv_layernorm_nobeta": "LayerNorm per row: $\\mu = \\frac{{1}}{{d}}\\sum_j x_j$, population variance $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$ (divide by $d$, not $d-1$), $\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma$ (no $\\beta$: the block has no biases), with $\\varepsilon = {0}$.",
    "conv_rmsnorm": "RMSNorm per row: $m = \\frac{{1}}{{d}}\\sum_j x_j^2$, $\\mathrm{{RMS}}(x) = \\frac{{x}}{{\\sqrt{{m + \\varepsilon}}}} \\cdot \\gamma$, with $\\varepsilon = {0}$.",
    "conv_post": "Post-LN order: $H_1 = \\mathrm{{N}}_1(X + \\mathrm{{Attn}}(X))$, $H_2 = \\mathrm{{N}}_2(H_1 + \\mathrm{{FFN}}(H_1))$.",
    "conv_pre": "Pre-LN order: $R_1 = X + \\mathrm{{Attn}}(\\mathrm{{N}}_1(X))$, $R_2 = R_1 + \\mathrm{{FFN}}(\\mathrm{{N}}_2(R_1))${0}.",
    "conv_final": ", then $Y = \\mathrm{{N}}_f(R_2)$",
    "conv_ffn": "FFN: $F = {0}$.",
    "conv_round": "Round answers to {0} decimal places (half away from zero; a number exactly halfway may be rounded either way); exact forms such as $\\tfrac{{1}}{{2}}$ or $\\sqrt{{2}}$ are welcome.",
    "conv_round_quiz": "Round answers to {0} decimal places (half away from zero; a number exactly halfway may be rounded either way) and type each answer as a decimal number: this quiz reads no fractions or roots such as 1/2 or sqrt(2).",
    "describe": "{n} tokens, $d_{{\\text{{model}}}} = {d}$, $d_{{\\text{{ff}}}} = {f}$, {heads}, {order}, {norm}, {act}, {mask}.",
    "heads_1": "one head",
    "heads_n": "{0} heads",
    "post": "Post-LN",
    "pre": "Pre-LN",
    "pre_final": "Pre-LN with a final norm",
    "mask_on": "causal mask",
    "mask_off": "no mask",
    # what each step computes
    "s.x": "The input $X$.",
    "s.attn.q": "Queries: project the input with $W^{{Q}}$.",
    "s.attn.k": "Keys: project the input with $W^{{K}}$.",
    "s.attn.v": "Values: project the input with $W^{{V}}$.",
    "s.scores": "Attention scores of head {h}: every query row against every key row.",
    "s.scaled": "Scale the scores of head {h} by $1/\\sqrt{{d_k}}$.",
    "s.masked": "Causal mask for head {h}: a token may not look at later tokens.",
    "s.masked_pad": "Padding mask for head {h}: no token looks at a padding key.",
    "s.weights": "Attention weights of head {h}: softmax of each row.",
    "s.out": "Output of head {h}: each row mixes the value rows with these weights.",
    "s.attn.concat": "Concatenate the heads' outputs.",
    "s.attn.out": "Attention output: project the heads with $W^{{O}}$.",
    "s.attn.out_noproj": "Attention output: the heads' output as it is (no output projection).",
    "s.resid1": "First residual connection: add the attention output to its input.",
    "s.resid2": "Second residual connection: add the FFN output to its input.",
    "s.mean": "Mean of each row of ${src}$ (for {norm}).",
    "s.var": "Population variance of each row of ${src}$.",
    "s.std": "Standard deviation of each row: $\\sigma = \\sqrt{{\\sigma^2 + \\varepsilon}}$.",
    "s.ms": "Mean square of each row of ${src}$ (for {norm}).",
    "s.rms": "Root mean square of each row: $r = \\sqrt{{m + \\varepsilon}}$.",
    "s.layernorm": "LayerNorm of ${src}$: subtract the mean, divide by $\\sigma$, then scale by $\\gamma$ and shift by $\\beta$.",
    "s.layernorm_nobeta": "LayerNorm of ${src}$: subtract the mean, divide by $\\sigma$, then scale by $\\gamma$ (no shift: no $\\beta$).",
    "s.rmsnorm": "RMSNorm of ${src}$: divide each row by its RMS, then scale by $\\gamma$.",
    "s.ffn.hidden": "First FFN layer: $Z = {src} W_1{b}$.",
    "s.ffn.gate": "Gate of the FFN: $G = {src} W_3{b}$.",
    "s.ffn.act": "Activation, entry by entry.",
    "s.ffn.out": "Second FFN layer: back to $d_{{\\text{{model}}}}$ columns.",
    "s.output": "The block's output.",
    # backprop worksheets (preset backprop)
    "g.loss": "The loss is ${0}$, a single number. The tasks go backwards from it: each asks $\\partial L / \\partial A$, a matrix of the shape of $A$.",
    "g.output": "Gradient of $L$ with respect to the block's output $Y$.",
    "g.step": "Gradient of $L$ with respect to ${0}$.",
    "g.param": "Gradient of $L$ with respect to the parameter ${0}$.",
    "g.through": "Back through ${0}$:",
    "g.sum": "${0}$ is read by more than one step: the contributions add up.",
    "from_exact": "\\quad (\\text{{from exact values: }} \\approx {0})",
    "softmax_max": "Row by row; first subtract the row's maximum (it cancels in the quotient and keeps every $e^x \\le 1$). The exponentials and their sum carry one more digit:",
    "gated_tag": " (gated)",
    "points": "{0} pt",
    "points_n": "{0} pts",
    "total": "Total: {0} points",
    "working": "Working:",
    "g.act_relu": "$\\mathrm{{ReLU}}'(z) = 1$ for $z > 0$, else $0$.",
    "g.act_gelu": "$\\mathrm{{GELU}}'(z) = \\Phi(z) + z\\,\\varphi(z)$ with $\\Phi(z) = \\tfrac{{1}}{{2}}\\left(1 + \\operatorname{{erf}}(z/\\sqrt{{2}})\\right)$ and $\\varphi(z) = e^{{-z^2/2}}/\\sqrt{{2\\pi}}$.",
    "g.act_gelu_tanh": "$\\mathrm{{GELU}}_{{\\tanh}}'(z) = \\tfrac{{1}}{{2}}(1 + t) + \\tfrac{{1}}{{2}} z\\,(1 - t^2)\\, c\\,(1 + 3k z^2)$ with $t = \\tanh\\left(c\\,(z + k z^3)\\right)$, $c = \\sqrt{{2/\\pi}}$, $k = 0.044715$.",
    "g.act_silu": "$\\mathrm{{SiLU}}'(z) = s(z)\\left(1 + z\\,(1 - s(z))\\right)$ with $s(z) = 1/(1 + e^{{-z}})$.",
    "g.act_value": "Back to the gate: $\\partial L / \\partial G = \\partial L / \\partial U \\odot \\mathrm{{act}}(Z)$, entry by entry.",
    "g.rows": "Every row: the local derivative at each entry (one more digit), then the product with the gradient coming back:",
    "g.colsum": "Sum the columns of $\\partial L / \\partial Y$ over the rows.",
    "conv_grad": "Gradients: $\\partial L / \\partial A$ has the shape of $A$; where $A$ feeds several steps, the contributions add up; $\\mathrm{{ReLU}}'(0) = 0$.",
    # the HTML pages' controls (sheets/html.py)
    "index_link": "all variants",
    "index_legend": "{0} variants, one per line: its worksheet ID, then a link to its worksheet",
    "index_legend_key": "{0} variants, one per line: its worksheet ID, then links to its worksheet and its answer key",
    "save_intro": "Save your answers, then check them with {0}; entries left empty are saved as blanks.",
    "save_yaml": "Save answers (YAML)",
    "save_json": "Save answers (JSON)",
    "save_blanks": "Saved. Tasks with empty entries:",
}

ZH = {
    "sheet": "练习题",
    "default_title": "Transformer block 手算练习",
    "default_title_decoder": "微型 GPT 手算练习",
    "default_title_encoder": "微型编码器手算练习",
    "default_title_encoder-decoder": "微型编码器–解码器手算练习",
    "key": "参考答案",
    "id": "练习编号",
    "name_line": "姓名",
    "colon": "：",         # full-width, as Chinese typesetting writes it
    "label_sep": "：",
    "block": "这个 block",
    "conventions": "约定",
    "data": "已知",
    "data_intro": "下面的矩阵是已知的；每道题只用到它们和前面各题的结果。",
    "data_none": "没有给定的数据：下面每道题都由上面的公式算出。",
    "tasks": "题目",
    "task": "第 {0} 题",
    "shape": "形状",
    "compute": "计算",
    "fill_in": "把答案填进表格。",
    "work": "计算过程",
    "answer": "答案",
    "given_step": "已知",
    "from_step": "步骤",
    "row": "第 {0} 行",
    "entry": "元素",
    "first_entries": "前几个元素逐项写出（行乘列）：",
    "first_entry": "第一个元素逐项写出（行乘列）：",
    "last_row_entries": "最后一行的前几个元素逐项写出（行乘列；最后一行用到所有值行）：",
    "last_row_entry": "最后一行的第一个元素逐项写出（行乘列；最后一行用到所有值行）：",
    "elementwise": "逐元素：",
    "per_row": "逐行计算：",
    "exps": "指数",
    "sum": "求和",
    "weights_row": "各自除以总和",
    "copy": "block 的输出就是这一步，不变：",
    "concat": "按顺序把各个头并排拼接：{0}。",
    "concat_v1": "按顺序把各个头并排拼接：",
    "concat_part": "${0}$ 在第 {1}–{2} 列",
    "concat_sep": "、",
    "mask_text": "位置 $j > i$（后面的 token）变为 $-\\infty$，其余照抄。",
    "pad_text": "填充键所在的列变为 $-\\infty$，其余照抄。",
    "mask_pad_text": "位置 $j > i$（后面的 token）和填充键所在的列变为 $-\\infty$，其余照抄。",
    "dropped_text": "逐元素乘以掩码 $D$，保留的元素再除以 $1 - p$。",
    "s.dropped": "对 ${src}$ 做 dropout（给定掩码 $D$，反向缩放）。",
    "conv_padding": "填充掩码：第 {0} 个键是填充；softmax 之前把它们所在的列设为 $-\\infty$，任何查询都不关注它们（权重为 $0$）。",
    "conv_dropout": "固定掩码 $D$ 的 dropout（已给出）：$\\tilde{{X}} = D \\odot X / (1 - p)$，$p = {0}$。",
    "mask_pad": "填充掩码",
    "scale_text": "每个分数乘以 $1/\\sqrt{{d_k}} = {0}$。",
    "act_relu": "$\\mathrm{{ReLU}}(z) = \\max(0, z)$，逐元素。",
    "act_gelu": "$\\mathrm{{GELU}}(z) = \\tfrac{{z}}{{2}}\\left(1 + \\operatorname{{erf}}(z/\\sqrt{{2}})\\right)$（精确的 erf 形式），逐元素。",
    "act_gelu_tanh": "$\\mathrm{{GELU}}_{{\\tanh}}(z) = \\tfrac{{z}}{{2}}\\left(1 + \\tanh\\left(\\sqrt{{2/\\pi}}\\,(z + 0.044715 z^3)\\right)\\right)$，逐元素。",
    "act_silu": "$\\mathrm{{SiLU}}(z) = z / (1 + e^{{-z}})$，逐元素。",
    "gated": "再与门控 $G$ 逐元素相乘。",
    "approx_note": "$\\approx$ 表示四舍五入到 {0} 位小数的值；$=$ 表示精确值。",
    "conv_rows": "每个 token 是一行：$X$ 的形状是 $n \\times d$（$n = {0}$，$d = {1}$）；线性层是 {lin}，$W$ 的形状为（输入，输出）。",
    "conv_linear": "$y = xW + b$",
    "conv_linear_nobias": "$y = xW$（无偏置）",
    "conv_attn": "每个头 $h$：$S_h = Q_h K_h^{{\\top}}${0}，按行做 softmax（先减去该行最大值，结果不变，且每个 $e^x \\le 1$），$O_h = P_h V_h$；头 $h$ 使用 $Q$、$K$、$V$ 的第 ${1}$ 列。",
    "conv_scale": "，再乘以 $1/\\sqrt{{d_k}}$，$d_k = {0}$",
    "conv_noscale": "（不缩放）",
    "conv_mask": "因果掩码：softmax 之前把 $j > i$ 的元素设为 $-\\infty$，它们的权重为 $0$。",
    "conv_layernorm": "LayerNorm 逐行计算：$\\mu = \\frac{{1}}{{d}}\\sum_j x_j$，总体方差 $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$（除以 $d$，不是 $d-1$），$\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma + \\beta$，其中 $\\varepsilon = {0}$。",
    "conv_layernorm_nobeta": "LayerNorm 逐行计算：$\\mu = \\frac{{1}}{{d}}\\sum_j x_j$，总体方差 $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$（除以 $d$，不是 $d-1$），$\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma$（没有 $\\beta$：这个 block 没有偏置），其中 $\\varepsilon = {0}$。",
    "conv_rmsnorm": "RMSNorm 逐行计算：$m = \\frac{{1}}{{d}}\\sum_j x_j^2$，$\\mathrm{{RMS}}(x) = \\frac{{x}}{{\\sqrt{{m + \\varepsilon}}}} \\cdot \\gamma$，其中 $\\varepsilon = {0}$。",
    "conv_post": "Post-LN 顺序：$H_1 = \\mathrm{{N}}_1(X + \\mathrm{{Attn}}(X))$，$H_2 = \\mathrm{{N}}_2(H_1 + \\mathrm{{FFN}}(H_1))$。",
    "conv_pre": "Pre-LN 顺序：$R_1 = X + \\mathrm{{Attn}}(\\mathrm{{N}}_1(X))$，$R_2 = R_1 + \\mathrm{{FFN}}(\\mathrm{{N}}_2(R_1))${0}。",
    "conv_final": "，最后 $Y = \\mathrm{{N}}_f(R_2)$",
    "conv_ffn": "FFN：$F = {0}$。",
    "conv_round": "答案保留 {0} 位小数（四舍五入；恰好在两数正中的，向上或向下舍入都算对）；也可以写精确形式，如 $\\tfrac{{1}}{{2}}$ 或 $\\sqrt{{2}}$。",
    "conv_round_quiz": "答案保留 {0} 位小数（四舍五入；恰好在两数正中的，向上或向下舍入都算对），以小数填写：本测验不识别分数或根式，如 1/2 或 sqrt(2)。",
    "describe": "{n} 个 token，$d_{{\\text{{model}}}} = {d}$，$d_{{\\text{{ff}}}} = {f}$，{heads}，{order}，{norm}，{act}，{mask}。",
    "heads_1": "单头",
    "heads_n": "{0} 个头",
    "post": "Post-LN",
    "pre": "Pre-LN",
    "pre_final": "Pre-LN（带最终归一化）",
    "mask_on": "因果掩码",
    "mask_off": "无掩码",
    "s.x": "输入 $X$。",
    "s.attn.q": "查询 Q：用 $W^{{Q}}$ 投影输入。",
    "s.attn.k": "键 K：用 $W^{{K}}$ 投影输入。",
    "s.attn.v": "值 V：用 $W^{{V}}$ 投影输入。",
    "s.scores": "第 {h} 个头的注意力分数：每个查询行与每个键行做点积。",
    "s.scaled": "第 {h} 个头的分数乘以 $1/\\sqrt{{d_k}}$。",
    "s.masked": "第 {h} 个头的因果掩码：token 不能看后面的 token。",
    "s.masked_pad": "第 {h} 个头的填充掩码：token 不看填充键。",
    "s.weights": "第 {h} 个头的注意力权重：对每一行做 softmax。",
    "s.out": "第 {h} 个头的输出：用这些权重对值向量的行加权求和。",
    "s.attn.concat": "把各个头的输出拼接起来。",
    "s.attn.out": "注意力输出：用 $W^{{O}}$ 投影各头的输出。",
    "s.attn.out_noproj": "注意力输出：各头的输出本身（没有输出投影）。",
    "s.resid1": "第一次残差连接：把注意力输出加回它的输入。",
    "s.resid2": "第二次残差连接：把 FFN 输出加回它的输入。",
    "s.mean": "${src}$ 每一行的均值（用于 {norm}）。",
    "s.var": "${src}$ 每一行的总体方差。",
    "s.std": "每一行的标准差：$\\sigma = \\sqrt{{\\sigma^2 + \\varepsilon}}$。",
    "s.ms": "${src}$ 每一行的均方（用于 {norm}）。",
    "s.rms": "每一行的均方根：$r = \\sqrt{{m + \\varepsilon}}$。",
    "s.layernorm": "对 ${src}$ 做 LayerNorm：减去均值，除以 $\\sigma$，再乘 $\\gamma$、加 $\\beta$。",
    "s.layernorm_nobeta": "对 ${src}$ 做 LayerNorm：减去均值，除以 $\\sigma$，再乘 $\\gamma$（没有 $\\beta$，不加偏移）。",
    "s.rmsnorm": "对 ${src}$ 做 RMSNorm：每行除以它的 RMS，再乘 $\\gamma$。",
    "s.ffn.hidden": "FFN 第一层：$Z = {src} W_1{b}$。",
    "s.ffn.gate": "FFN 的门控：$G = {src} W_3{b}$。",
    "s.ffn.act": "激活函数，逐元素。",
    "s.ffn.out": "FFN 第二层：回到 $d_{{\\text{{model}}}}$ 列。",
    "s.output": "block 的输出。",
    "g.loss": "损失函数是 ${0}$，一个数。题目从它往回推：每道题求 $\\partial L / \\partial A$，一个与 $A$ 形状相同的矩阵。",
    "g.output": "$L$ 对 block 输出 $Y$ 的梯度。",
    "g.step": "$L$ 对 ${0}$ 的梯度。",
    "g.param": "$L$ 对参数 ${0}$ 的梯度。",
    "g.through": "经过 ${0}$ 往回传：",
    "g.sum": "${0}$ 被多个步骤用到：各路贡献相加。",
    "from_exact": "\\quad (\\text{{由精确值：}} \\approx {0})",
    "softmax_max": "逐行计算；先减去该行的最大值（它在商中约去，并使每个 $e^x \\le 1$）。指数及其和多保留一位小数：",
    "gated_tag": "（门控）",
    "points": "{0} 分",
    "points_n": "{0} 分",
    "total": "共 {0} 分",
    "working": "计算：",
    "g.act_relu": "当 $z > 0$ 时 $\\mathrm{{ReLU}}'(z) = 1$，否则为 $0$。",
    "g.act_gelu": "$\\mathrm{{GELU}}'(z) = \\Phi(z) + z\\,\\varphi(z)$，其中 $\\Phi(z) = \\tfrac{{1}}{{2}}\\left(1 + \\operatorname{{erf}}(z/\\sqrt{{2}})\\right)$，$\\varphi(z) = e^{{-z^2/2}}/\\sqrt{{2\\pi}}$。",
    "g.act_gelu_tanh": "$\\mathrm{{GELU}}_{{\\tanh}}'(z) = \\tfrac{{1}}{{2}}(1 + t) + \\tfrac{{1}}{{2}} z\\,(1 - t^2)\\, c\\,(1 + 3k z^2)$，其中 $t = \\tanh\\left(c\\,(z + k z^3)\\right)$，$c = \\sqrt{{2/\\pi}}$，$k = 0.044715$。",
    "g.act_silu": "$\\mathrm{{SiLU}}'(z) = s(z)\\left(1 + z\\,(1 - s(z))\\right)$，其中 $s(z) = 1/(1 + e^{{-z}})$。",
    "g.act_value": "传回门控：$\\partial L / \\partial G = \\partial L / \\partial U \\odot \\mathrm{{act}}(Z)$，逐元素。",
    "g.rows": "逐行计算：先求每个元素处的局部导数（多保留一位小数），再乘以传回的梯度：",
    "g.colsum": "把 $\\partial L / \\partial Y$ 的各列按行求和。",
    "conv_grad": "梯度：$\\partial L / \\partial A$ 与 $A$ 形状相同；$A$ 进入多个步骤时各路贡献相加；$\\mathrm{{ReLU}}'(0) = 0$。",
    "index_link": "全部练习",
    "index_legend": "共 {0} 份练习，每行一份：练习题 ID，然后是练习的链接",
    "index_legend_key": "共 {0} 份练习，每行一份：练习题 ID，然后是练习和答案的链接",
    "save_intro": "保存答案后用 {0} 检查；空着的格子保存为空白。",
    "save_yaml": "保存答案（YAML）",
    "save_json": "保存答案（JSON）",
    "save_blanks": "已保存。还有空格的题目：",
}

# English words inside the formulas of the engine and of grad.py (`\text{...}`), per language
MATH_TEXT = {
    "zh": {"(each row)": "（逐行）", " where ": "，其中 ", "passes through": "原样传回",
           "copied to both summands": "复制给两个加数", "split into the heads' column blocks": "拆分到各头的列块",
           "and": "以及", "given: a constant": "已知：常数", "key ": "第 ", " is padding": " 个键是填充",
           " or key ": " 或第 "},
}

from symblock.sheets.lang_cross import CROSS_EN, CROSS_MATH_ZH, CROSS_ZH  # noqa: E402  (cross-attention)
MATH_TEXT["zh"].update(CROSS_MATH_ZH)
EN.update(CROSS_EN)
ZH.update(CROSS_ZH)
from symblock.sheets import lang_rope  # noqa: E402
EN.update(lang_rope.EN)
ZH.update(lang_rope.ZH)
EN.update(lang_tiles.EN)   # the online softmax's tiles (sheets/work_tiles.py)
ZH.update(lang_tiles.ZH)
EN.update(lang_notebook.EN)   # the notebook's cells (sheets/notebook.py)
ZH.update(lang_notebook.ZH)
TEXTS = {"en": EN, "zh": ZH}
assert set(EN) == set(ZH), sorted(set(EN) ^ set(ZH))

# decoder worksheets (a model's generation step with the KV cache): read on top of TEXTS
MODEL_EN = {
    "m.describe": "A tiny GPT: a vocabulary of {v} tokens, $d_{{\\text{{model}}}} = {d}$, {layers}, {heads}, "
                  "{order}, {head}. The prompt {prompt} ($m = {m}$ {tokens}) has been run and its keys and values "
                  "are cached; its next token {token} is now fed back in. Work this one new row.",
    "m.layers_1": "one layer",
    "m.layers_n": "{0} layers",
    "m.tied": "a tied head $({0})$",
    "m.untied": "an untied head $({0})$",
    "m.conv_rows": "Tokens are rows: the new token's vectors are $1 \\times d$ ($d = {0}$); a linear layer is "
                   "{lin} with $W$ of shape (in, out). Rows and columns are numbered from 1.",
    "m.conv_embed": "Input: ${2}$, with $E$ the token's row of $W_E$ (rows in vocabulary order: {0}) and "
                    "{1}.",
    "m.pos_learned": "$\\mathrm{{PE}}$ the row of $W_P$ for the token's position (row 1 for the first token)",
    "m.pos_sinusoidal": "$\\mathrm{{PE}}_{{p,2i}} = \\sin(p / {0}^{{2i/d}})$, $\\mathrm{{PE}}_{{p,2i+1}} = \\cos(p / {0}^{{2i/d}})$ "
                        "for position $p$ (from 0)",
    "m.describe_pe": "Sinusoidal positional encoding: the table $\\mathrm{{PE}}$ of positions $p = 0, \\dots, {last}$ "
                     "for $d_{{\\text{{model}}}} = {d}$ with the base $n = {n}$. Work every entry: the exact "
                     "sine or cosine of a rational angle, then rounded.",
    "m.conv_pe": "Rows are positions (from 0) and columns $0, \\dots, d - 1$: $\\mathrm{{PE}}_{{p,2i}} = \\sin(p / {0}^{{2i/d}})$, "
                 "$\\mathrm{{PE}}_{{p,2i+1}} = \\cos(p / {0}^{{2i/d}})$, angles in radians.",
    "m.pos_none": "no position vector",
    "m.conv_cache": "KV cache: the prompt's rows of $K$ and $V$ are kept from its pass; a new token computes only "
                    "its own $q$, $k$, $v$ rows, appends $k$ and $v$ to the cache, and attends to every row of "
                    "the cache (no later token exists, so nothing is masked).",
    "m.conv_head": "Logits {0}; $p = \\mathrm{{softmax}}(\\ell)$; the next token is the one with the largest "
                   "logit (greedy decoding).",
    "m.s.embed": "The new token's embedding: its row of $W_E$.",
    "m.s.pos": "The new token's position vector.",
    "m.s.pos_table": "The position vectors of the prompt's positions, one row per position.",
    "m.s.pos_table_src": "The position vectors of the source's positions, one row per position.",
    "m.s.x": "The layer input: $X = E + \\mathrm{{PE}}$.",
    "m.s.cache.k": "The key cache after appending the new row $k$.",
    "m.s.cache.v": "The value cache after appending the new row $v$.",
    "m.s.reused": "Which rows of $K_{{cache}}$ were reused from the prompt's pass? Write $1$ under each reused row "
                  "and $0$ under the row computed in this step.",
    "m.s.scores": "Scores of head {h}: the new query (one row) against every row of the key cache.",
    "m.s.logits": "Logits of the new token: one per token of the vocabulary.",
    "m.s.probs": "Probabilities: softmax of the logits.",
    "m.s.next_token": "The next token (greedy): write it, or its number in the vocabulary (from 0).",
    "m.s.norm_final": "Final norm of the last layer's output.",
    "m.w.embed": "The token {0} is row {1} of $W_E$:",
    "m.w.pos": "The new token is token {0} of the sequence, so it takes row {0} of $W_P$:",
    "m.w.pos_sin": "Position $p = {0}$ (counting from 0), entry by entry:",
    "m.w.cache": "The first {0} rows come from the cache unchanged; the new row is appended as row {1}:",
    "m.w.cache_one": "The first row comes from the cache unchanged; the new row is appended as row {1}:",
    "m.w.reused": "Rows {0} of $K_{{cache}}$ were computed when the prompt was run and are read from "
                  "the cache; only row {1} (the new token's $k$) is computed in this step. The same holds for "
                  "$V_{{cache}}$.",
    "m.w.reused_one": "Row $1$ of $K_{{cache}}$ was computed when the prompt was run and is read from "
                      "the cache; only row {1} (the new token's $k$) is computed in this step. The same holds for "
                      "$V_{{cache}}$.",
    "m.w.rows_two": "$1$ and $2$",
    "m.w.next_token": "The largest logit is entry {0} (counting from 0), so the next token is {1}:",
    "m.vocab": "vocabulary: {0}",
    "m.position": "the token's position",
}

MODEL_ZH = {
    "m.describe": "一个小 GPT：词表 {v} 个 token，$d_{{\\text{{model}}}} = {d}$，{layers}，{heads}，{order}，{head}。"
                  "提示 {prompt}（$m = {m}$ 个 token）已经算过，它的键和值已缓存；它预测的下一个 token {token} "
                  "现在作为输入送回模型。请计算这新的一行。",
    "m.layers_1": "一层",
    "m.layers_n": "{0} 层",
    "m.tied": "共享输出头（${0}$）",
    "m.untied": "独立输出头（${0}$）",
    "m.conv_rows": "token 是行向量：新 token 的向量为 $1 \\times d$（$d = {0}$）；线性层为 {lin}，$W$ 的形状为"
                   "（输入，输出）。行和列从 1 开始编号。",
    "m.conv_embed": "输入：${2}$，$E$ 是该 token 在 $W_E$ 中的行（按词表顺序：{0}），{1}。",
    "m.pos_learned": "$\\mathrm{{PE}}$ 是该位置在 $W_P$ 中的行（第一个 token 用第 1 行）",
    "m.pos_sinusoidal": "$\\mathrm{{PE}}_{{p,2i}} = \\sin(p / {0}^{{2i/d}})$，$\\mathrm{{PE}}_{{p,2i+1}} = \\cos(p / {0}^{{2i/d}})$，"
                        "位置 $p$ 从 0 开始",
    "m.describe_pe": "正弦位置编码：求位置 $p = 0, \\dots, {last}$ 的表 $\\mathrm{{PE}}$，$d_{{\\text{{model}}}} = {d}$，"
                     "底数 $n = {n}$。逐项计算：先写出有理数角的正弦或余弦的精确值，再四舍五入。",
    "m.conv_pe": "行是位置（从 0 数起），列为 $0, \\dots, d - 1$：$\\mathrm{{PE}}_{{p,2i}} = \\sin(p / {0}^{{2i/d}})$，"
                 "$\\mathrm{{PE}}_{{p,2i+1}} = \\cos(p / {0}^{{2i/d}})$，角用弧度。",
    "m.pos_none": "没有位置向量",
    "m.conv_cache": "KV 缓存：提示的 $K$、$V$ 各行在它那一轮里已算好并保存；新 token 只计算自己的 $q$、$k$、$v$ 行，"
                    "把 $k$、$v$ 追加到缓存末尾，再对缓存的每一行做注意力（没有更晚的 token，所以无需掩码）。",
    "m.conv_head": "logits {0}；$p = \\mathrm{{softmax}}(\\ell)$；下一个 token 取 logit 最大者（贪心解码）。",
    "m.s.embed": "新 token 的嵌入：它在 $W_E$ 中的那一行。",
    "m.s.pos": "新 token 的位置向量。",
    "m.s.pos_table": "提示各位置的位置向量，每个位置一行。",
    "m.s.pos_table_src": "源序列各位置的位置向量，每个位置一行。",
    "m.s.x": "该层的输入：$X = E + \\mathrm{{PE}}$。",
    "m.s.cache.k": "追加新行 $k$ 之后的键缓存。",
    "m.s.cache.v": "追加新行 $v$ 之后的值缓存。",
    "m.s.reused": "$K_{{cache}}$ 的哪些行是从提示那一轮直接复用的？复用的行下写 $1$，本步新算的行下写 $0$。",
    "m.s.scores": "第 {h} 个头的分数：新的查询（一行）与键缓存的每一行做点积。",
    "m.s.logits": "新 token 的 logits：词表中每个 token 一个。",
    "m.s.probs": "概率：对 logits 做 softmax。",
    "m.s.next_token": "下一个 token（贪心）：写出该 token，或它在词表中的编号（从 0 开始）。",
    "m.s.norm_final": "对最后一层的输出做最终归一化。",
    "m.w.embed": "token {0} 是 $W_E$ 的第 {1} 行：",
    "m.w.pos": "新 token 是序列中的第 {0} 个 token，所以取 $W_P$ 的第 {0} 行：",
    "m.w.pos_sin": "位置 $p = {0}$（从 0 数起），逐项计算：",
    "m.w.cache": "前 {0} 行原样来自缓存；新行追加为第 {1} 行：",
    "m.w.cache_one": "第 1 行原样来自缓存；新行追加为第 {1} 行：",
    "m.w.reused": "$K_{{cache}}$ 的第 {0} 行在运行提示时已经算好，直接从缓存读取；本步只计算第 {1} 行"
                  "（新 token 的 $k$）。$V_{{cache}}$ 也一样。",
    "m.w.reused_one": "$K_{{cache}}$ 的第 $1$ 行在运行提示时已经算好，直接从缓存读取；本步只计算第 {1} 行"
                      "（新 token 的 $k$）。$V_{{cache}}$ 也一样。",
    "m.w.rows_two": "$1$、$2$",
    "m.w.next_token": "最大的 logit 是第 {0} 项（从 0 数起），所以下一个 token 是 {1}：",
    "m.vocab": "词表：{0}",
    "m.position": "该 token 的位置",
}

from symblock.sheets.lang_cross import MODEL_CROSS_EN, MODEL_CROSS_ZH  # noqa: E402
MODEL_EN.update(MODEL_CROSS_EN)
MODEL_ZH.update(MODEL_CROSS_ZH)
from symblock.sheets.lang_encoder import ENCODER_EN, ENCODER_MATH_ZH, ENCODER_ZH  # noqa: E402  (an encoder)
MATH_TEXT["zh"].update(ENCODER_MATH_ZH)
MODEL_EN.update(ENCODER_EN)
MODEL_ZH.update(ENCODER_ZH)
MODEL_EN.update(lang_rope.MODEL_EN)
MODEL_ZH.update(lang_rope.MODEL_ZH)
MODEL_TEXTS = {"en": MODEL_EN, "zh": MODEL_ZH}
assert set(MODEL_EN) == set(MODEL_ZH), sorted(set(MODEL_EN) ^ set(MODEL_ZH))
