"""Difficulties (`random.difficulty`: easy, medium, hard): the dims, block options and `random:`
constraints a difficulty fills in where the spec is silent (the spec's own values win)."""
from __future__ import annotations

import copy
import math
from typing import Any, Mapping

from symblock.exercises.constraints import Constraints
from symblock.exercises.draws import ints

# What each difficulty fills in. Each fixes the dims for the whole set (every student works the same size)
# and states a time budget in minutes for its default exercise (`full`), checked by the cost model
# of presets.estimate. Block options and random constraints fill whatever the spec leaves out (the
# spec's own values win; a constraint set to false is off). Generator 2's defaults: softmax inputs
# within ±3 and every live weight in [0.02, 0.9] where the softmax is asked, σ >= 1/2 in every norm
# row, no two catalogued mistakes alike on an asked step.
BUDGETS = {"easy": 20, "medium": 50, "hard": 90}
SETTINGS: dict[str, dict[str, Any]] = {
    "easy": {   # the shape of the article "AI Infra学习之旅-手算一个完整TransformerBlock": Post-LN, integer scores, A(X) given to 2 decimals
        "dims": {"seq_len": (2,), "d_model": (3,), "d_ff": (2,), "heads": (1,)},
        "block": {"norm_position": "post", "norm": "layernorm", "eps": 0, "activation": "relu",
                  "causal": False, "bias": False},
        "random": {"ranges": {"X": [-2, 2], "weights": [-1, 1]}, "integer_scores": True,
                   "exact_scale": True, "softmax_distinct": True, "score_range": [-6, 6],
                   "no_degenerate_rows": True, "norm_min": "1/2", "relu_mixed": "rows", "norm_params": ["norm1"],
                   "distinct_mistakes": True, "staged": {"step": "attn.out", "decimals": 2}},
    },
    "medium": {  # Pre-LN, exact σ for the first norm (half-integer X), rational scale, small e^x
        "dims": {"seq_len": (2,), "d_model": (4,), "d_ff": (2,), "heads": (1,)},
        "block": {"norm_position": "pre", "norm": "layernorm", "eps": 0, "activation": "relu",
                  "attention_scale": "sqrt_dk", "causal": False, "bias": False},
        "random": {"ranges": {"X": [-3, 3], "weights": [-1, 1]}, "x_step": "1/2", "exact_scale": True,
                   "exact_norm": ["norm1"], "no_degenerate_rows": True, "norm_min": "1/2",
                   "softmax_distinct": True, "scaled_range": [-3, 3], "softmax_weights": ["0.02", "0.9"],
                   "relu_mixed": "rows", "distinct_mistakes": True},
    },
    "hard": {    # GPT-2's block: Pre-LN, two causal heads, exact GELU, biases, drawn γ/β (GPT-2's final
                 # norm ln_f follows the last block, so it is not part of this one)
        "dims": {"seq_len": (3,), "d_model": (4,), "d_ff": (2,), "heads": (2,)},
        "block": {"norm_position": "pre", "norm": "layernorm", "eps": 0, "activation": "gelu",
                  "attention_scale": "sqrt_dk", "causal": True, "bias": True, "final_norm": False},
        "random": {"ranges": {"X": [-3, 3], "weights": [-1, 1], "biases": [-1, 1]}, "x_step": "1/2",
                   "exact_norm": ["norm1"], "no_degenerate_rows": True, "norm_min": "1/2",
                   "norm_params": ["norm2"], "softmax_distinct": True, "scaled_range": [-3, 3],
                   "softmax_weights": ["0.02", "0.9"], "relu_mixed": "rows", "distinct_mistakes": True},
    },
}

# Generator 2 (random.generator: 2) draws the Pre-LN difficulties' half-integer X in -4..4 (not
# -3..3): its rows then reach σ = 5/2 and 3 besides 3/4, 5/4, 3/2, so the generator can keep five
# σ classes with no 7 or 9 in σ (7/4 gives scores in 49ths) and favour the three whose σ² is no
# rounding tie (draws.preferred_classes).
GENERATOR2 = {"medium": {"ranges": {"X": [-4, 4]}}, "hard": {"ranges": {"X": [-4, 4]}}}


def difficulty_random(difficulty: str, generator: int) -> dict:
    """The random constraints a difficulty fills in, as the generator version draws them."""
    rnd = copy.deepcopy(SETTINGS[difficulty]["random"])
    for key, value in (GENERATOR2.get(difficulty, {}) if generator >= 2 else {}).items():
        rnd[key] = {**rnd.get(key, {}), **value} if isinstance(value, dict) else value
    return rnd


def apply_difficulty(data: dict, c: Constraints, source: str) -> tuple[dict, dict]:
    """The mapping with the difficulty's dims and block options filled in where the spec is silent,
    and the difficulty's random constraints under the spec's own."""
    if c.difficulty is None:
        return data, {}
    from symblock.engine.spec import CHOICES, FLAGS, check_keys, int_field
    settings = SETTINGS[c.difficulty]
    data = copy.deepcopy(data)
    dims = data.get("dims") or {}
    check_keys(dims, ("seq_len", "d_model", "d_ff", "heads", "d_k", "d_v", "kv_heads"), source, "dims")
    dims = dict(dims)
    for key, value in dims.items():  # validated before the difficulty reads them
        int_field(value, source, f"dims.{key}")
    check_keys(data.get("block") or {}, tuple(CHOICES) + FLAGS + ("eps", "attention_tiles", "rope"), source, "block")
    for key, choices in settings["dims"].items():
        if key not in dims:
            dims[key] = choices[ints(c.seed, f"dims.{key}", 1, 0, len(choices) - 1)[0]]
    data["dims"] = dims
    block = dict(data.get("block") or {})
    for key, value in settings["block"].items():
        block.setdefault(key, value)
    if "attention_scale" not in block:  # easy: exact scale by choosing `none` when d_head is not square
        d_head = dims.get("d_k") or dims["d_model"] // dims.get("heads", 1)
        block["attention_scale"] = "sqrt_dk" if math.isqrt(d_head) ** 2 == d_head else "none"
    data["block"] = block
    return data, difficulty_random(c.difficulty, c.generator)



def dims_choices(data: Mapping, c: Constraints) -> int:
    """How many dims random.dims and the difficulty can pick for this spec."""
    own = math.prod(len(set(ch)) for ch in c.dims.values())   # random.dims
    if not c.difficulty:
        return own
    given = {**(data.get("dims") or {}), **c.dims}
    return own * math.prod(len(ch) for k, ch in SETTINGS[c.difficulty]["dims"].items() if k not in given)
