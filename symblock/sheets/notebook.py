"""Jupyter writer: `notebook.ipynb` per variant (nbformat). The first cell is the sheet (the Markdown
writer's page: tasks, data, conventions), under a line saying the notebook is for self-study (it can
rebuild the key); then a cell rebuilds the block from the worksheet ID, a
cell holds the student's answers (one grid of `None` per task; a `None` left is a blank) and the
next cell marks the asked steps through grading.marking, as `symblock check` does (gradient steps
too). Comments and messages are in the sheet's language (sheets/lang). Cell ids are fixed, so the
file is byte-identical per input.
"""
from __future__ import annotations

import textwrap

from symblock.sheets import render

FILE = "notebook.ipynb"
FORMS = ("block",)   # the spec forms a notebook marks (its check cell marks one block's steps)

LOAD = '''\
# {t[nb_load]}
import symblock
from symblock.exercises import variants

ID = {ident!r}
SPEC = None  # {t[nb_spec]}
spec_arg, seed = variants.parse_id(ID, SPEC)
spec = symblock.load(spec_arg) if seed is None else variants.with_seed(*variants.read(spec_arg), seed)
trace = symblock.forward(spec)
print(ID, "·", len(trace.steps), {steps!r})'''

# an ID that names a generator version (`-v2`) rebuilds with it (exercises/variants.py); an ID
# without one keeps the cell it always had
LOAD_VERSIONED = LOAD.replace(
    "variants.with_seed(*variants.read(spec_arg), seed)",
    "variants.with_seed(*variants.read(spec_arg, variants.id_flags(ID, spec_arg, None)), seed)")


# the ID of a sheet drawn from a spec file (h…) rebuilds only with that file, which may be private
# (drawn with a secret): the cell asks for its path, and says in the sheet's language what to do
# without it, instead of stopping on the command line's "--id" message
NEEDS_SPEC = ("SPEC = None  # {t[nb_spec]}\n",
              "SPEC = None  # {t[nb_spec_file]}\nif SPEC is None:\n    raise FileNotFoundError({private!r})\n")


def load_cell(t, ident: str, steps) -> str:
    from symblock.exercises import variants
    versioned = variants.split_version(variants.split_id(ident)[0])[1] > 1
    cell = LOAD_VERSIONED if versioned else LOAD
    if variants.names_spec_file(ident):
        cell = cell.replace(*NEEDS_SPEC)
    return cell.format(t=t, ident=ident, steps=steps, private=t["nb_private"].format(ident=ident))


ANSWERS = '''\
{answers}
DECIMALS = {places}
answers = {{
{grids}
}}'''

CHECK = '''\
# {t[nb_check]}
from symblock.exercises import presets
from symblock.grading import report
from symblock.grading.marking import Marker

{exercise}
if all(v is None for rows in answers.values() for row in rows for v in row):
    print({nothing!r})
else:
    result = Marker(trace, exercise).mark({{"decimals": DECIMALS, "steps": answers}}, "notebook")
    print(report.text(result, trace, lang={lang!r}), end="")'''

ASKED = '''\
# {t[nb_asked]}
ASKED = (
{ask}
)
exercise = presets.Exercise(ask=ASKED, data_steps=(), data_params=())'''

BACKPROP = '''\
exercise = presets.choose(trace, "backprop", loss={loss!r}, wrt={wrt!r})'''

KEY = '''\
# {t[nb_key]}
# trace'''


def _comment(text: str) -> str:
    return textwrap.fill(text, 100, initial_indent="# ", subsequent_indent="# ", break_long_words=False)


def _grid(task: dict) -> str:
    rows = ", ".join("[" + ", ".join("None" for _ in row) + "]" for row in task["cells"])
    return f"    {task['name']!r}: [{rows}],"


def _check(model: dict, t: dict) -> str:
    """The check cell: the asked steps marked through grading.marking, as `symblock check` does."""
    how = model["marking"]
    exercise = (BACKPROP.format(loss=how["loss"], wrt=how["wrt"]) if how["loss"] is not None
                else ASKED.format(t=t, ask=textwrap.fill(" ".join(f"{n!r}," for n in how["ask"]), 100,
                                                         initial_indent="    ", subsequent_indent="    ")))
    return CHECK.format(t=t, exercise=exercise, nothing=t["nb_nothing"], lang=model["lang"])


def notebook(model: dict, template_dir=None) -> str:
    try:
        import nbformat
        from nbformat import v4
    except ImportError:
        from symblock.errors import UsageError
        raise UsageError("--format ipynb needs nbformat: pip install 'symblock[jupyter]'") from None
    from symblock.sheets.lang import TEXTS
    t = TEXTS[model["lang"]]
    # the kernel can print the key, so the notebook says first that it is for practice, not a test
    sheet = f"> {t['nb_self_study']}\n\n" + render.render(model, "markdown", False, template_dir)
    cells = [v4.new_markdown_cell(sheet),
             v4.new_code_cell(load_cell(t, str(model["ident"]), t["nb_steps"])),
             v4.new_code_cell(ANSWERS.format(answers=_comment(t["nb_answers"].format(model["places"])),
                                             places=model["places"],
                                             grids="\n".join(_grid(task) for task in model["tasks"]))),
             v4.new_code_cell(_check(model, t)),
             v4.new_code_cell(KEY.format(t=t))]
    for n, cell in enumerate(cells):
        cell["id"] = f"symblock-{n}"
    nb = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}, "symblock": {"id": str(model["ident"])}})
    nbformat.validate(nb)
    return nbformat.writes(nb)


def files(models: list[dict], *, many: bool, template_dir=None) -> dict[str, str]:
    return {(f"{m['ident']}/" if many else "") + FILE: notebook(m, template_dir) for m in models}
