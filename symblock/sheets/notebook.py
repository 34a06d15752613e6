"""Jupyter writer: `notebook.ipynb` per variant (nbformat). The first cell is the sheet (the Markdown
writer's page: tasks, data, conventions); then a cell rebuilds the block from the worksheet ID, a
cell holds the student's answers (one grid of `None` per task) and the last cell checks them with
the same marking as `symblock check`. Cell ids are fixed, so the file is byte-identical per input.
"""
from __future__ import annotations

from symblock.sheets import render

FILE = "notebook.ipynb"

LOAD = '''\
# The block of this sheet, rebuilt from its worksheet ID (exact values: symblock's engine).
import symblock
from symblock.exercises import variants

ID = {ident!r}
SPEC = None  # for the ID of a spec file (h...), the path of that file
spec_arg, seed = variants.parse_id(ID, SPEC)
spec = symblock.load(spec_arg) if seed is None else variants.with_seed(*variants.read(spec_arg), seed)
trace = symblock.forward(spec)
print(ID, "·", len(trace.steps), "steps")'''

ANSWERS = '''\
# Your answers: replace each None by a number ({places} decimal places), a fraction "1/3" or an
# exact form "sqrt(2)/2"; "-inf" for a masked score. Grids left with a None are not checked.
DECIMALS = {places}
answers = {{
{grids}
}}'''

CHECK = '''\
# Check: each step correct, wrong (with the mistake named), carried or missing.
from symblock.engine.steps import step_shapes
from symblock.grading import answers as answers_file, check, marking

filled = {{name: rows for name, rows in answers.items() if all(v is not None for row in rows for v in row)}}
if not filled:
    print("Nothing to check yet: fill in a grid above and run this cell again.")
else:
    given = answers_file.from_mapping({{"decimals": DECIMALS, "steps": filled}}, "notebook",
                                      step_shapes(spec.dims, spec.options), set(trace.names()))
    print(check.text(marking.check(spec, trace, given), trace), end="")'''

NO_CHECK = '''\
# symblock check marks forward steps; gradient answers are compared with the key by hand for now.
# trace holds the forward steps; the key (symblock worksheet --preset backprop) has the gradients.'''

KEY = '''\
# After the exercise: the worked key, every step with its formula, exact value and decimal.
# trace'''


def _grid(task: dict) -> str:
    rows = ", ".join("[" + ", ".join("None" for _ in row) + "]" for row in task["cells"])
    return f"    {task['name']!r}: [{rows}],"


def notebook(model: dict, template_dir=None) -> str:
    try:
        import nbformat
        from nbformat import v4
    except ImportError:
        from symblock.errors import UsageError
        raise UsageError("--format ipynb needs nbformat: pip install 'symblock[jupyter]'") from None
    sheet = render.render(model, "markdown", False, template_dir)
    cells = [v4.new_markdown_cell(sheet),
             v4.new_code_cell(LOAD.format(ident=str(model["ident"]))),
             v4.new_code_cell(ANSWERS.format(places=model["places"],
                                             grids="\n".join(_grid(t) for t in model["tasks"]))),
             v4.new_code_cell(NO_CHECK if model["loss"] else CHECK.format()),
             v4.new_code_cell(KEY)]
    for n, cell in enumerate(cells):
        cell["id"] = f"symblock-{n}"
    nb = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}, "symblock": {"id": str(model["ident"])}})
    nbformat.validate(nb)
    return nbformat.writes(nb)


def files(models: list[dict], *, many: bool, template_dir=None) -> dict[str, str]:
    return {(f"{m['ident']}/" if many else "") + FILE: notebook(m, template_dir) for m in models}
