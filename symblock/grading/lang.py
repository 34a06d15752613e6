"""The words of the checker's and grader's reports, in English and Chinese (`--lang zh`).

One table per language; `words(lang)` returns it. Mistake explanations in English live with the
catalogue (mistakes.EXPLANATIONS); the Chinese ones are here, keyed by the same stable codes. At the end, how a report prints a value (`show`: at an
entry's places, its significant digits or as a whole number; `closed_form`).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

LANGS = ("en", "zh")

EN = {
    "status": {"correct": "correct", "wrong": "wrong", "carried": "carried", "missing": "missing",
               "given": "given", "rounded": "rounded", "slip": "slip"},
    "mark": {"correct": "ok", "carried": "carried", "rounded": "rounded", "slip": "slip",
             "wrong": "wrong", "blank": "blank"},
    "header": "symblock check: {answers} against {spec}",
    "decimals": "decimals: {n} (an entry written with more places is judged at its own)",
    "overruled": "Judged at the {n} places the sheet asks for: {keys} in this file asks for fewer and was not used",
    "missing": "not answered",
    "given": "given in the spec",
    "carried": "right from your own {names} (error carried forward)",
    "rests": "(other entries right from your own {names}: error carried forward)",
    "first_break": "← the chain first breaks here",
    "rounded": "correct, rounded to fewer places than asked",
    "slip": "a rounding slip (one unit in the last place)",
    "partial": "partly blank: {n} of {total} entries answered",
    "blanks": "{n} blank: {cells}",
    "cell": "row {row} col {col}",
    "counted": "Rows and columns are counted from 1 here, as on the sheet; your file's row and col (its "
               "row:, entries: or CSV lines) count them from 0 (row 1, col 1 here is its row 0, col 0).",
    "partly_blank": "partly blank",
    "run": "{first} … {last}  ({n} steps not answered)",
    "entry": "row {row}, col {col}  given {given:<10} expected {expected}{own}  {mark}",
    "own": "; from your own answers {own}",
    "tie": "{a} or {b}", "halfway": "exactly halfway: either rounding is right",
    "why": "  ({reason})",
    "reason": {"number": "not a number: '{text}'", "large": "too large to read: '{text}'",
               "comma": "ambiguous comma: '{text}' (write the decimal with a point: 1234.5)",
               "inf": "-inf only in a masked step: '{text}'",
               "shape": "written as a {text} matrix, not in this step's shape: each of its entries counts wrong"},
    "diagnosis": "diagnosis: {code} — {explanation}",
    "no_diagnosis": "diagnosis: none of the catalogued mistakes reproduces these numbers",
    "mask_fill": "note: the masked score written {given} is read as −∞ (as masked_fill writes it): its "
                 "softmax weight is 0 to far below any printed place",
    "mask_fills": "note: {n} masked scores written as large finite values ({given}, …) are read as −∞ (as "
                  "masked_fill writes them): their softmax weights are 0 to far below any printed place",
    "ok": "OK: nothing wrong ({counts}).",
    "ok_so_far": "Nothing wrong so far ({counts}): answer the missing steps and check again.",
    "ok_blanks": "Nothing wrong so far ({counts}), but {n} entries of answered steps are blank: fill them in and "
                 "check again.",
    "ok_blank": "Nothing wrong so far ({counts}), but 1 entry of an answered step is blank: fill it in and check "
                "again.",
    "blank": "Nothing answered yet ({counts}): fill in the answers file and check again.",
    "not_ok": "NOT OK ({counts}). The chain first breaks at {step}.",
    "wrong_id": "warning: {answers} {why}: check that its id: is the worksheet ID printed on your sheet (it was "
                "marked against {ident}; `grade` flags such a file)",
    "count": "{n} {status}",
    "sep": ", ",
    "unknown_key": "warning: {where}: {key}: not a key of the answers format, kept as the student's own "
                   "data{hint}; the format's keys are {keys}, and student data such as {columns}",
    "near_key": " (did you mean {near}?)",
    "no_set": "note: {answers} is in no set folder: marked against the variant {ident} draws, at the places the "
              "file states; a set's answers file is marked as `grade` marks it when checked inside the set "
              "(SET/students/<ID>/)",
    "other_id": "note: checked against --id {ident}; {answers} says id: {theirs}",
    "private_id": "{where}: {ident} cannot be checked without the spec it was made from: it is the ID of a "
                  "worksheet drawn from a spec file (not a built-in example), either a spec of your own or a "
                  "private one (an instructor's, whose numbers are drawn with a secret; the ID cannot tell "
                  "which). If your instructor handed out the sheet, ask them to check it. With the spec (the "
                  "instructor): `symblock check SPEC {answers}`, or check the file inside its set "
                  "(SET/students/{ident}/, beside SET/instructor/manifest.yaml, which holds the spec)",
}

ZH = {
    "status": {"correct": "正确", "wrong": "错误", "carried": "沿用", "missing": "未答",
               "given": "已给", "rounded": "少位", "slip": "小错"},
    "mark": {"correct": "对", "carried": "沿用", "rounded": "少位", "slip": "小错",
             "wrong": "错", "blank": "空"},
    "header": "symblock 批改：{answers}，对照 {spec}",
    "decimals": "小数位数：{n}（多写位数的答案按所写位数评判）",
    "overruled": "按题目要求的 {n} 位小数评判：文件中的 {keys} 要求的位数更少，未采用",
    "missing": "未作答",
    "given": "题目已给出",
    "carried": "由你自己的 {names} 推得正确（误差传递，不重复扣分）",
    "rests": "（其余的数由你自己的 {names} 推得正确：误差传递）",
    "first_break": "← 计算链从这里开始出错",
    "rounded": "正确，但保留的小数位数少于要求",
    "slip": "舍入失误（末位差一个单位）",
    "partial": "部分未答：答了 {n}/{total} 个数",
    "blanks": "{n} 个数未答：{cells}",
    "cell": "第 {row} 行第 {col} 列",
    "counted": "这里的行、列从 1 开始数（与练习题一致）；你的文件中的 row、col（row:、entries: 或 CSV 的行）从 0 开始数（这里的第 1 行第 1 列即文件中的 row 0、col 0）。",
    "partly_blank": "部分未答",
    "run": "{first} … {last}（{n} 步未作答）",
    "entry": "第 {row} 行第 {col} 列  你的答案 {given:<10} 应为 {expected}{own}  {mark}",
    "own": "；按你自己前面的答案应为 {own}",
    "tie": "{a} 或 {b}", "halfway": "恰好在两者正中：两种舍入都算对",
    "why": "（{reason}）",
    "reason": {"number": "不是数：'{text}'", "large": "数太大，无法读取：'{text}'",
               "comma": "逗号有歧义：'{text}'（小数请用小数点，如 1234.5）",
               "inf": "只有被遮住的分数可以是 -inf：'{text}'",
               "shape": "写成了 {text} 矩阵，与该步的形状不同：其中每个数都算错"},
    "diagnosis": "诊断：{code} — {explanation}",
    "no_diagnosis": "诊断：已知的常见错误都不能得到这些数",
    "mask_fill": "说明：被遮住的分数写成了 {given}，按 −∞ 计（masked_fill 的写法）：它在 softmax 中的权重"
                 "在任何保留位数下都是 0",
    "mask_fills": "说明：{n} 个被遮住的分数写成了很大的有限负数（{given} 等），按 −∞ 计（masked_fill 的写法）："
                  "它们在 softmax 中的权重在任何保留位数下都是 0",
    "ok": "通过：没有错误（{counts}）。",
    "ok_so_far": "目前没有错误（{counts}）：请完成缺少的步骤，再检查。",
    "ok_blanks": "目前没有错误（{counts}），但已答步骤中还有 {n} 个数未填：请填上，再检查。",
    "ok_blank": "目前没有错误（{counts}），但已答步骤中还有 1 个数未填：请填上，再检查。",
    "blank": "还没有作答（{counts}）：请先填写答案文件，再检查。",
    "not_ok": "未通过（{counts}）。计算链从 {step} 开始出错。",
    "wrong_id": "警告：{answers} {why}：请核对它的 id: 是否为练习上印的 ID（已按 {ident} 批改；"
                "`grade` 会标出这样的文件）",
    "count": "{status} {n}",
    "sep": "，",
    "unknown_key": "警告：{where}：{key}：不是答题文件格式中的键，已作为学生自己的信息保留{hint}；格式中的键有 {keys}，"
                   "学生信息可以写 {columns} 等",
    "near_key": "（是不是想写 {near}？）",
    "no_set": "说明：{answers} 不在题组文件夹中：按 {ident} 抽出的练习、以文件中写明的位数批改；在题组中"
              "（SET/students/<ID>/）检查时，题组的答题文件按 `grade` 的方式批改",
    "other_id": "说明：按 --id {ident} 检查；{answers} 中写的是 id: {theirs}",
    "private_id": "{where}：没有生成它的 spec，无法检查 {ident}：这是由 spec 文件（而非内置示例）抽取的练习的 ID，"
                  "那份 spec 可能是你自己的，也可能是私有的（老师的 spec，其中的数用 secret 抽取；ID 本身分辨不出是哪一种）。"
                  "如果练习是老师发的，请老师替你检查。有 spec 的人（老师）：运行 `symblock check SPEC {answers}`，"
                  "或在题组中检查这个文件（SET/students/{ident}/，与含有 spec 的 SET/instructor/manifest.yaml 同在一个题组）",
}

EXPLANATIONS_ZH = {
    "tile_sum_not_rescaled": "在线 softmax：行的最大值变了，之前的运行和却没有乘以 e^(m_旧 − m_新) 重新缩放",
    "tile_acc_not_rescaled": "在线 softmax：行的最大值变了，之前的累加器却没有乘以 e^(m_旧 − m_新) 重新缩放",
    "cache_not_appended": "新 token 的分数和权重是对未追加它自己的键和值的缓存算的（只关注了前面的行）",
    "position_reused": "新 token 用了前面某个 token 的位置（位置表中更早的一行，例如第一个或最后一个提示位置），而不是它自己的位置",
    "logits_untied_transpose": "输出头用反了：共享头写成 H W_E（应为 H W_Eᵀ），或独立头写成 H W_Uᵀ（应为 H W_U）",
    "ln_sample_variance": "LayerNorm 的方差除以了 n−1（样本方差），应除以 n",
    "rope_other_style": "RoPE 用了另一种配对方式：要求 (i, i + d_k/2) 却用了 (2i, 2i+1)，或者反过来",
    "rope_positions_from_one": "RoPE 的位置从 1 开始数了，应从 0 开始（每行多转了一步）",
    "rope_sign_flipped": "RoPE 转反了方向：写成 x_a cos + x_b sin 与 x_b cos − x_a sin（sin 的符号反了）",
    "causal_mask_added": "在没有因果掩码的注意力上加了因果掩码（编码器是双向的：每个 token 都看得到其他所有 token）",
    "rope_on_v": "把 RoPE 也用在了值 V 上：只旋转查询和键",
    "rope_unrotated": "分数用了未旋转的键或查询（用 K 代替 K′、用 Q 代替 Q′）：RoPE 在计算分数之前要把两者都旋转",
    "gqa_wrong_head": "查询头 h 读了第 h mod kv_heads 个 K/V 头，应读第 ⌊h·kv_heads/heads⌋ 个（相邻的查询头共用一个 K/V 头）",
    "ln_eps_outside_sqrt": "ε 加在了平方根外面：sqrt(σ²) + ε，应为 sqrt(σ² + ε)",
    "norm_no_sqrt": "直接除以方差（或均方），忘了开平方",
    "norm_affine_missing": "归一化之后没有乘 γ、加 β",
    "rms_as_layernorm": "要求 RMSNorm，却先减去了均值（按 LayerNorm 算了）",
    "layernorm_as_rms": "要求 LayerNorm，却没有减去均值（按 RMSNorm 算了）",
    "attn_no_scale": "注意力分数没有除以 sqrt(d_k)",
    "attn_scale_d_model": "分数除以了 sqrt(d_model)，应除以 sqrt(d_k)（每个头的查询和键的宽度）",
    "attn_scale_no_sqrt": "分数除以了 d_k，应除以 sqrt(d_k)",
    "scores_transposed": "分数算成了 K Qᵀ，应为 Q Kᵀ",
    "softmax_wrong_axis": "softmax 沿列做了，应沿每一行做",
    "mask_after_softmax": "因果掩码放在了 softmax 之后（被遮住的权重置 0，行和不再为 1）",
    "mask_zero_not_inf": "被遮住的分数设成了 0，应为 −∞（未来位置仍分到了权重）",
    "mask_missing": "没有加因果掩码（看到了未来位置）",
    "scale_approximated": "分数除以了四舍五入后的 sqrt(d_k)（例如 √3 ≈ 1.73），应除以精确的平方根",
    "padding_mask_missing": "没有加键填充掩码（关注了填充 token）",
    "padding_on_queries": "填充掩码加在了查询（行）上，应加在键（列）上",
    "pe_sin_cos_swapped": "正弦位置编码的 sin 与 cos 弄反了：偶数列（2i）用了 cos、奇数列（2i + 1）用了 sin，应先 sin(p / n^(2i/d)) 再 cos",
    "pe_base_10000": "正弦位置编码用了原论文的底数 n = 10000，应使用本表给出的底数（model.pe_base）",
    "cross_kv_from_decoder": "交叉注意力的键和值由解码器的行投影得到，应由记忆（编码器的输出）投影",
    "cross_causal_mask": "交叉注意力加了因果掩码，它只应屏蔽填充的记忆行",
    "cross_padding_mask_missing": "交叉注意力没有加记忆填充掩码（关注了填充的记忆行）",
    "cross_queries_from_memory": "交叉注意力的查询由记忆投影得到，应由解码器的行投影",
    "cross_norm_as_pre_ln": "Post-LN 解码器层中，交叉注意力的归一化按 Pre-LN 放置（先用 N2 归一化输入，残差之后没有归一化）",
    "dropout_no_rescale": "用了 dropout 掩码，但保留的数没有乘以 1/(1 − p)",
    "weight_transposed": "权重矩阵用成了转置（x Wᵀ，应为 x W）",
    "bias_missing": "没有加偏置向量",
    "missing_residual": "忘了残差连接：只有子层输出，没有加上它的输入",
    "norm_order_swapped": "Pre-LN 与 Post-LN 弄反了（归一化放在了子层之前/之后）",
    "activation_missing": "FFN 中没有用激活函数",
    "gelu_instead_of_relu": "要求 ReLU，却用了 GELU",
    "relu_instead_of_gelu": "要求 GELU，却用了 ReLU",
    "rounding": "末位最多差一个单位：舍入方向错了，或截断而非四舍五入",
}


def counted_from(indexed: bool, cited: bool, w: dict, after: str | None = None) -> list[str]:
    """The line saying that rows and columns are counted from 1 here, when some line named an entry
    so (`cited`) and the file placed entries by row and col (`indexed`: row:, entries:, the CSV
    form), which count from 0: a student would otherwise look up another entry of the file.
    `after`: a line to follow it (Markdown's blank)."""
    if not (cited and indexed):
        return []
    return [w["counted"]] + ([after] if after is not None else [])


def partly_blank(step) -> bool:
    """Whether a step (a marking.StepResult) is answered with some, not all, of its entries blank:
    shown as partly blank (◐ in `check`, "partly blank" in feedback), never as fully right."""
    n = sum(e.mark == "blank" for e in step.entries)
    return 0 < n < len(step.entries)


def blanks(step, w: dict, shown: int = 8) -> str | None:
    """The line naming a partly blank step's blank entries (rows and columns from 1), or None."""
    if not partly_blank(step):
        return None
    cells = [w["cell"].format(row=e.row + 1, col=e.col + 1) for e in step.entries if e.mark == "blank"]
    return w["blanks"].format(n=len(cells), cells=w["sep"].join(cells[:shown]) + (", …" if len(cells) > shown else ""))


def words(lang: str = "en") -> dict:
    return ZH if lang == "zh" else EN


def why(entry, lang: str = "en") -> str:
    """Why an entry (a marking.EntryResult) is wrong when it could not be read; else ""."""
    w = words(lang)
    if getattr(entry, "reason", None) is None:
        return ""
    return w["why"].format(reason=w["reason"][entry.reason].format(text=entry.given))


def explanation(code: str, lang: str = "en") -> str:
    from symblock.grading.mistakes import EXPLANATIONS
    return EXPLANATIONS_ZH[code] if lang == "zh" else EXPLANATIONS[code]


# What a gradebook flag says (an identity flag: students.Flag), in each language.
FLAG_TEXT = {
    "en": {"fits": "fits {other} better than its own id ({theirs} entries match {other}, {mine} its own, "
                   "among those where the two differ)",
           "blank": "answers nothing (the blank answers file handed in?)",
           "same_id": "same id as {other}", "same_name": "same name as {other}",
           "same_answers": "same answers as {other}",
           "same_student_id": "same student ID {value} as {other} (an LMS import matches both rows to one student)",
           "same_email": "same email {value} as {other} (an LMS import matches both rows to one student)"},
    "zh": {"fits": "与 {other} 的吻合程度明显高于它自己的 ID（在两份练习不同的数中，{theirs} 个与 {other} 相符，"
                   "{mine} 个与自己的相符）",
           "blank": "一个数也没有填（交的是空白的答题文件？）",
           "same_id": "与 {other} 的 ID 相同", "same_name": "与 {other} 的姓名相同",
           "same_answers": "与 {other} 的答案完全相同",
           "same_student_id": "与 {other} 的学号 {value} 相同（LMS 导入时两行会对应到同一名学生）",
           "same_email": "与 {other} 的邮箱 {value} 相同（LMS 导入时两行会对应到同一名学生）"},
}


def describe(flag, lang: str = "en") -> str:
    return FLAG_TEXT["zh" if lang == "zh" else "en"][flag.kind].format(**vars(flag))   # other, mine, theirs, value


# Why a file was not graded (gradebook.Rejected), in one form: the file and the name are printed
# beside it, so a reason names neither, nor any path; an error in the file is its field and what
# was expected (the reader's words, in English, inside the Chinese frame).
NOT_GRADED = {
    "en": {"no_id": "no id: (the worksheet ID printed on the sheet) in the file",
           "version": "id {ident} was drawn by generator version {g}, this set's variants by version {mine} "
                      "({token}): another sheet",
           "spec": "id {ident} was made from another spec ({token!r}; this set's spec is {own!r})",
           "variant": "id {ident} is not a variant of this set ({n} variants, {first} … {last})",
           "input": "{where}{message}",
           "internal": "internal error while grading this file ({error}); please report it"},
    "zh": {"no_id": "文件中没有 id:（练习上印的 ID）",
           "version": "ID {ident} 由第 {g} 版生成器抽取，本题组的练习由第 {mine} 版抽取（{token}）：是另一份练习",
           "spec": "ID {ident} 来自另一份 spec（{token!r}；本题组的 spec 是 {own!r}）",
           "variant": "ID {ident} 不是本题组的练习（共 {n} 份，{first} … {last}）",
           "input": "文件有误：{where}{message}",
           "internal": "批改此文件时出现内部错误（{error}），请报告此问题"},
}


def flag_note(cls) -> str:
    """The key of the summaries' line over the flagged files: it names the files not graded among them."""
    return "flagged_note_ungraded" if any(r.flags for r in cls.rejected) else "flagged_note"


def left_out(cls, lang: str = "en") -> str | None:
    """The summaries' note on the flagged files the task table does not count (gradebook.Class.counted)."""
    t, k = TABLE_TEXT["zh" if lang == "zh" else "en"], len(cls.graded) - len(cls.counted)
    return t["left_out"].format(k=k, files=t["file" if k == 1 else "files"]) if k else None


def not_graded(kind: str, values: dict, lang: str = "en") -> str:
    if kind == "input":
        values = {**values, "message": input_error(values["message"], lang)}
    return NOT_GRADED["zh" if lang == "zh" else "en"][kind].format(**values)


# What an answers file's readers say is wrong with it (answers.py, answer_files.py, students.py, and the
# file and YAML readers below them), in Chinese: (the English message, whole, as a pattern; its words,
# each {n} a group: what is quoted of the file, or a list of keys, stays as written).
INPUT_ERRORS_ZH = (
    (r"unknown key \(did you mean (.+)\?\); expected one of (.+), or student data such as student_id or email",
     "未知的键（是不是想写 {0}？）；应为 {1} 之一，或 student_id、email 等学生信息"),
    (r"unknown key \(a step goes under steps: \(in CSV, with its row and col\)\); expected one of (.+), or "
     r"student data such as student_id or email",
     "未知的键（步骤要写在 steps: 下面；CSV 中写明行和列）；应为 {0} 之一，或 student_id、email 等学生信息"),
    (r"student data: expected text, got (.+)", "学生信息：应为文字，实际是 {0}"),
    (r"(\d+) keys of student data; expected at most (\d+)", "学生信息有 {0} 个键；最多 {1} 个"),
    (r"expected a mapping of step names to answers, e\.g\. (`.+`), got (.+)", "应为步骤名到答案的映射，例如 {0}，实际是 {1}"),
    (r"no such step in this block; did you mean (.+)\? expected one of (.+)",
     "这个结构中没有这一步（是不是想写 {0}？）；应为以下之一：{1}"),
    (r"no such step in this block; expected one of (.+)", "这个结构中没有这一步；应为以下之一：{0}"),
    (r"this step is not worked in this spec \(it only feeds a step the spec gives\), so there is nothing to "
     r"check it against", "这份 spec 不计算这一步（它只用于计算 spec 已给出的一步），没有可以对照的答案"),
    (r"unknown key; expected one of (.+)", "未知的键；应为 {0} 之一"), (r"unknown key \(did you mean (.+)\?\); expected one of (.+)", "未知的键（是不是想写 {0}？）；应为 {1} 之一"),
    (r"expected a number, a fraction or an exact expression such as (\"sqrt\(2\)/2\"), got (.+)",
     "应为一个数、分数或精确表达式（例如 {0}），实际是 {1}"),
    (r"expected text, got (.+)", "应为文字，实际是 {0}"),
    (r"give either entries or value \(with row/col\), not both", "entries 和 value（及 row/col）只能给一种"),
    (r"expected a map of cells to entries, e\.g\. (.+)", "应为单元格到数的映射，例如 {0}"),
    (r"row (\d+), col (\d+) is outside (.+)'s (\d+) × (\d+) grid \(row 0\.\.(\d+), col 0\.\.(\d+), from 0\)",
     "row {0}、col {1} 超出了 {2} 的 {3} × {4} 网格（row 0..{5}，col 0..{6}，从 0 数）"),
    (r"expected a cell \"\[i\]\[j\]\" or \"i,j\" with i in 0\.\.(\d+) and j in 0\.\.(\d+)",
     "应为单元格 \"[i][j]\" 或 \"i,j\"，其中 i 为 0..{0}，j 为 0..{1}"),
    (r"missing; expected the step's matrix", "缺少：应给出这一步的矩阵"),
    (r"goes with row (\(one entry: .+\))", "col 要与 row 一起给出（一个数：{0}）"),
    (r"expected one row of (\d+) entries, got (.+)", "应为一行 {0} 个数，实际是 {1}"),
    (r"expected a whole number 0\.\.(\d+) \(counted from 0\), got (.+)", "应为 0..{0} 的整数（从 0 数），实际是 {1}"),
    (r"−∞ only appears in a `\.masked` step; expected a finite number", "只有 `.masked` 步骤中才有 −∞；这里应为有限的数"),
    (r"the number is too large to read, got (.+)", "数太大，无法读取：{0}"),
    (r"expected a finite number, got (.+)", "应为有限的数，实际是 {0}"),
    (r"cannot use (.+) exactly: (.+)", "无法精确地使用 {0}：{1}"),
    (r"expected a whole number (-?\d+)\.\.(-?\d+), got (.+)", "应为 {0}..{1} 的整数，实际是 {2}"),
    (r"expected one of (.+), got (.+) \(did you mean (.+)\?\)", "应为 {0} 之一，实际是 {1}（是不是想写 {2}？）"),
    (r"expected one of (.+), got (.+)", "应为 {0} 之一，实际是 {1}"),
    (r"not a readable CSV table: (.+)", "不是可读的 CSV 表格：{0}"),
    (r"expected the header step,row,col,value \(or step;row;col;value, as a spreadsheet of a decimal-comma "
     r"locale saves it\)", "第一行应为表头 step,row,col,value（或小数逗号地区的电子表格保存的 step;row;col;value）"),
    (r"expected whole-number row and col \(from 0\), got (.+)", "row 和 col 应为整数（从 0 数），实际是 {0}"),
    (r"one row of (\d+) for a (\d+)×(\d+) step: say which, e\.g\. (.+)", "{1}×{2} 的步骤只给了一行 {0} 个数：请写明是哪一行，例如 {3}"),
    (r"expected a (\d+)×(\d+) matrix: a list of rows, e\.g\. (.+), got (.+)", "应为 {0}×{1} 矩阵：行的列表，例如 {2}，实际是 {3}"),
    (r"expected shape (\d+)×(\d+), got (\d+) rows", "形状应为 {0}×{1}，实际有 {2} 行"),
    (r"expected shape (\d+)×(\d+), got a row of (\d+) \(a 1-column step is a list of one-entry rows: (.+)\)",
     "形状应为 {0}×{1}，这一行却有 {2} 个数（只有 1 列的步骤写成每行一个数的列表：{3}）"),
    (r"expected shape (\d+)×(\d+), got a row of (\d+)", "形状应为 {0}×{1}，这一行却有 {2} 个数"),
    (r"no such file", "没有这个文件"), (r"is not UTF-8 text", "不是 UTF-8 文本"),
    (r"cannot be read: (.+)", "无法读取：{0}"), (r"is a binary file, expected (.+)", "是二进制文件，应为 {0}"),
    (r"is larger than (\d+) MiB; expected (.+)", "大于 {0} MiB；应为 {1}"),
    (r"malformed YAML: (.+)", "YAML 格式有误：{0}"), (r"malformed JSON: (.+)", "JSON 格式有误：{0}"),
    (r"nested (?:too deeply; expected at most|more than) (\d+) levels(?: deep)?", "嵌套过深：最多 {0} 层"),
)


def input_error(message: str, lang: str = "en") -> str:
    """An input error's message (what was expected, without file and field) in `lang`: in Chinese by
    the first pattern of INPUT_ERRORS_ZH it matches whole; one no pattern knows is said in English."""
    import re
    for pattern, zh in INPUT_ERRORS_ZH if lang == "zh" else ():
        if (m := re.fullmatch(pattern, message, re.S)):
            return zh.format(*m.groups())
    return message


# the class summary's, the feedback files' and the summary page's own words (grading/report.py)
TABLE_TEXT = {
    "en": {"title": "Class summary", "graded": "{n} graded, {r} not graded · set {token} · mean total "
           "{mean} of {max}", "graded_none": "no file graded, {r} not graded · set {token}", "task": "task", "points": "points", "mean": "mean", "wrong": "wrong",
           "missing": "blank entries", "codes": "most frequent diagnoses", "rejected": "Not graded",
           "policy": "Scoring", "none": "—",
           "left_out": "Not counted in this table and the most common mistakes: {k} flagged {files} (another "
                       "variant fits better, or nothing answered: see the flagged files). The mean total and "
                       "the plots count every graded file.", "file": "file", "files": "files"},
    "zh": {"title": "全班小结", "graded": "已批改 {n} 份，未批改 {r} 份 · 题组 {token} · 平均总分 {mean}/{max}",
           "graded_none": "没有批改任何文件，未批改 {r} 份 · 题组 {token}",
           "task": "题目", "points": "分值", "mean": "平均得分", "wrong": "错误比例", "missing": "未答数占比",
           "codes": "最常见的诊断", "rejected": "未批改的文件", "policy": "计分规则", "none": "—",
           "left_out": "本表和最常见的错误未计入 {k} {files}需要核对的文件（另一份练习与之更吻合，或一个数也没填：见“"
                       "需要核对的文件”）。平均总分和分布图计入全部已批改的文件。", "file": "份", "files": "份"},
}

FEEDBACK = {
    "en": {"title": "Feedback for {name}", "sheet": "Worksheet {ident} · {total} of {max} points",
           "task": "task", "status": "status", "points": "points",
           "fits": "**Check your worksheet ID.** This file {why}. The marks below are against the ID in "
                   "your file, {ident}; your instructor will look at it."},
    "zh": {"title": "{name} 的批改反馈", "sheet": "练习 {ident} · 得分 {total}/{max}",
           "task": "题目", "status": "结果", "points": "得分",
           "fits": "**请核对练习编号。** 这份文件{why}。以下得分是按文件中的 ID（{ident}）批改的，老师会人工核对。"},
}

SUMMARY_TEXT = {
    "en": {"mistakes": "Most common mistakes", "students": "{k} of {n} students", "flagged": "Flagged files",
           "flagged_note": "graded against their own ID, but a person should look:", "none": "none",
           "flagged_note_ungraded": "graded against their own ID (or not graded: see Not graded), but a person should look:",
           "plots": "Distributions", "totals": "totals", "tasks": "points per task",
           "no_plots": "No plots: matplotlib is not installed (pip install 'symblock[plot]')."},
    "zh": {"mistakes": "最常见的错误", "students": "{n} 名学生中有 {k} 名", "flagged": "需要核对的文件",
           "flagged_note": "已按各自的 ID 批改，但请人工核对：", "none": "无",
           "flagged_note_ungraded": "已按各自的 ID 批改（或未批改：见“未批改的文件”），但请人工核对：",
           "plots": "分布", "totals": "总分", "tasks": "各题得分",
           "no_plots": "没有图：未安装 matplotlib（pip install 'symblock[plot]'）。"},
}


# ---------------------------------------------------------------- values as a report prints them

def percent(share, places: int = 0) -> str:
    """A share (a Fraction: 1/8 of the class) as a percentage at `places` decimals, rounded exactly and
    half up: 1/8 is "13%" (a float's round-half-even on 12.5 would print "12%")."""
    v = Fraction(share) * 100 * 10 ** places
    n = int(abs(v) + Fraction(1, 2))   # floor of a non-negative Fraction: half up, exactly
    digits = str(n).rjust(places + 1, "0")
    digits = f"{digits[:-places]}.{digits[-places:]}" if places else digits
    return f"{'-' if v < 0 and n else ''}{digits}%"


def show(value, places: int | None, entry=None) -> str:
    from symblock.engine import exact   # here, not at the top: `symblock --help` reads this module's words
    if value is exact.NEG_INF:
        return "-inf"
    if entry is not None and entry.tol is not None:
        return value.digits(17 if entry.tol < Fraction(1, 10 ** 10) else 9)
    if entry is not None and entry.sig_figs is not None:
        return value.digits(entry.sig_figs) if value.sign() else "0"
    if entry is not None and entry.whole and getattr(value, "q", None) is not None and value.q.q == 1:
        return str(int(value.q))   # a whole number written for a whole number (a 0/1 flag, a count): "1", not "1.000"
    if places is not None:
        from symblock.engine import printed
        try:
            return printed.fixed(value, places)
        except exact.UndecidableError:  # a rounding tie: show more digits
            return value.digits(places + 3)
    form = exact.text(value, 40)  # written from the graph: no SymPy expression per entry
    if form is not None and len(form) <= 40:
        return form
    return "≈" + value.digits(10)


def expected_text(e, w: dict, closed: bool = False) -> str:
    """An entry's expected value as a report prints it: both roundings of an exact tie (and that
    either is right), with its closed form (`closed`)."""
    notes = ([f"= {e.exact}"] if closed else []) + ([w["halfway"]] if e.tie else [])
    return (w["tie"].format(a=e.expected, b=e.tie) if e.tie else e.expected) + (f" ({w['sep'].join(notes)})" if notes else "")


@dataclass(frozen=True)
class EntryStyle:
    """What `show` reads of an entry (hashable, for the memo)."""
    tol: Fraction | None
    sig_figs: int | None
    whole: bool      # written as a whole number, no point

    def __init__(self, e):
        object.__setattr__(self, "tol", e.tol)
        object.__setattr__(self, "sig_figs", e.sig_figs)
        object.__setattr__(self, "whole", e.decimal is not None and not e.written and e.text.lstrip("+-").isdigit())


def closed_form(value) -> str | None:
    from symblock.engine import exact
    if value is exact.NEG_INF:
        return "-oo"
    return exact.text(value, 40)
