"""The worksheet's data model: plain dicts and lists built from a Trace, shared by every format.

`build(variant, ...)` says, for each asked step, what is computed (prose), the formula,
the numbers going in, the work (entries written out: sums of products, per-row statistics,
exponentials) and the result. Answers always come from the variant (its asked answers). A line of working computes
from the operands it prints (numbers.show: exact when short, else the rounded decimal), so that
it is true of its own numbers and gives what the checker accepts from a rounded chain; where
that rounds differently from the exact value it says so. Math is LaTeX that both TeX (amsmath) and KaTeX accept; prose comes from `lang.py`; both
are marked `Safe`. Everything else (titles, file names) is user text that the writers escape.
"""
from __future__ import annotations

import re

from symblock.sheets.builder import Builder
from symblock.sheets.lang import TEXTS
from symblock.sheets.numbers import Safe, cells  # noqa: F401  (re-exported for the writers)
from symblock.sheets.work_grad import GradBuilder
from symblock.sheets.work_encoder import EncoderBuilder
from symblock.sheets.work_model import DecoderBuilder

# the builder of each kind of spec (engine: `spec.form`); a gradient sheet is a block's
BUILDERS = {"block": Builder, "model": DecoderBuilder}


def build(variant, *, lang: str = "en", places: int = 3, title: str | None = None, space: float = 0) -> dict:
    """The worksheet (and key) of a Variant (exercises/variant.py) as plain data for the templates,
    a block's or a model's decoder sheet alike. `space`: centimetres of working space under each
    task's grid on the sheet (0: none)."""
    trace, exercise, ident = variant.trace, variant.exercise, variant.ident
    backprop = getattr(exercise, "backward", None) is not None
    encoder = getattr(trace.spec, "kind", None) == "encoder"   # a model the engine built as an encoder
    b = (GradBuilder if backprop else EncoderBuilder if encoder else BUILDERS[trace.form])(trace, exercise, lang,
                                                                                       places)
    spec = trace.spec
    data = b.data()
    tasks = [b.task(i, n) for i, n in enumerate(exercise.ask, 1)]
    for task in tasks:
        if "cells" not in task:   # a decoder sheet's reused-rows task brings its own
            task["cells"] = cells(variant.answers[task["name"]], places)
    conventions, rounding = b.conventions(), b.t("conv_round", places)
    for task in tasks:   # the LMS exports share a task's points over its entries
        task["worth"] = exercise.points.get(task["name"], 1)
    return {
        "lang": lang,
        # one line in every format (a line break inside a Moodle category or a QTI title attribute splits it)
        "title": re.sub(r"[ \t\r\n]+", " ", title if title is not None else (
            spec.titles.get(lang) or spec.title or default_title(spec, lang))).strip(),
        "ident": ident,
        "describe": b.describe(),
        "loss": b.loss() if backprop else None,
        "conventions": conventions,
        # a quiz's numerical questions take decimals only: its rounding line does not invite 1/2 or √2
        "quiz_conventions": [b.t("conv_round_quiz", places) if c == rounding else c for c in conventions],
        "data": data,
        "data_rows": b.data_rows(data),
        "tasks": tasks,
        "approx_note": b.t("approx_note", places),
        "places": places,
        "space": space,
        "total": b.t("total", f"{exercise.total:g}") if spec.exercise.get("points") else None,
        "t": {**{k: Safe(v) for k, v in TEXTS[lang].items() if "{" not in v},
              **({"data_intro": Safe(TEXTS[lang]["data_none"])} if not data else {})},
        # what a checker needs to mark this sheet as `symblock check` does (the notebook's check cell)
        "marking": {"ask": list(exercise.ask), "loss": exercise.backward.loss if backprop else None,
                    "wrt": list(exercise.backward.wrt) if backprop else None},
    }


_TITLE_KEY = {"block": lambda spec: "default_title", "model": lambda spec: f"default_title_{spec.kind}"}


def default_title(spec, lang: str) -> str:
    """An untitled spec's title: what it is (a block, a tiny GPT, an encoder, ...), in `lang`."""
    return TEXTS[lang][_TITLE_KEY[spec.form](spec)]
