"""The notebook's words (sheets/notebook.py): its cells' comments and messages, en and zh; lang.py
merges them into its tables. Plain text (Python comments and strings), formatted with str.format."""
from __future__ import annotations

EN = {
    "nb_load": "The block of this sheet, rebuilt from its worksheet ID (exact values).",
    "nb_spec": "for the ID of a spec file (h...), the path of that file",
    "nb_spec_file": "the path of the spec file this sheet was drawn from, e.g. 'class.yaml'",
    "nb_private": "{ident} was drawn from a spec file, not a built-in example: set SPEC in this cell to that "
                  "file's path and run the cell again. If your instructor handed out the sheet, its spec may be "
                  "private (its numbers drawn with a secret): hand in your answers file and ask them to check it "
                  "(`symblock check SPEC answers.yaml`).",
    "nb_answers": "Your answers: replace each None by a number ({0} decimal places), a fraction \"1/3\" or an exact form \"sqrt(2)/2\"; \"-inf\" for a masked score. A None left in a grid is a blank.",
    "nb_check": "Check the asked steps: each is correct, wrong (with the mistake named), carried or missing.",
    "nb_nothing": "Nothing to check yet: fill in a grid above and run this cell again.",
    "nb_key": "After the exercise: the worked key, every step with its formula, exact value and decimal.",
    "nb_steps": "steps",
    "nb_asked": "The steps this sheet asks: only they count as missing.",
    "nb_self_study": "For self-study: this notebook rebuilds the exact answers from the worksheet ID inside your own Python, so it cannot be a graded test; your instructor grades the answers file of a sheet.",
}

ZH = {
    "nb_load": "这张练习题的 block，由练习编号重新构建（精确值）。",
    "nb_spec": "若练习编号来自 spec 文件（h...），填该文件的路径",
    "nb_spec_file": "抽取这张练习题的 spec 文件的路径，如 'class.yaml'",
    "nb_private": "{ident} 由 spec 文件（而非内置示例）抽取：把本单元格里的 SPEC 设为该文件的路径，再运行这个单元格。"
                  "如果练习是老师发的，它的 spec 可能是私有的（其中的数用 secret 抽取）：请交上你的答题文件，请老师替你检查"
                  "（`symblock check SPEC answers.yaml`）。",
    "nb_answers": "你的答案：把每个 None 换成一个数（{0} 位小数）、分数 \"1/3\" 或精确形式 \"sqrt(2)/2\"；被掩码的分数写 \"-inf\"。表格里留下的 None 算作空白。",
    "nb_check": "检查所问的步骤：每一步是正确、错误（并指出错误类型）、沿用前面的错误，或未作答。",
    "nb_nothing": "还没有可检查的内容：先在上面的表格里填写答案，再运行这个单元格。",
    "nb_key": "做完之后：完整的参考答案，每一步的公式、精确值和小数。",
    "nb_steps": "个步骤",
    "nb_asked": "这张练习题所问的步骤：只有它们未作答时才算缺答。",
    "nb_self_study": "仅供自学：这个笔记本在你自己的 Python 里由练习编号重建精确答案，所以不能用作计分的测验；计分的是练习题的答案文件，由老师评阅。",
}
