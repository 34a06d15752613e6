"""What a decoder layer with cross-attention reads besides X: the memory (the encoder's output,
mem_len × d_model) and its padding mask (`inputs.memory`, `inputs.memory_padding_mask`).

The spec loader (spec.py) calls these; they say how long the memory is, check that a memory
comes with `block.cross_attention` (and the reverse), and validate the mask with torch's meaning
(`memory_key_padding_mask`: true = a memory row no query may attend to).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from symblock.engine.fields import bool_list, int_field
from symblock.engine.steps import Dims, Options
from symblock.errors import SpecError

KEYS = ("memory", "memory_padding_mask")
CROSS_WEIGHTS = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")  # weights.cross


def structure(opts: Options, dims: Mapping, inputs: Mapping, batch: int, source: str) -> Options:
    """The options with `memory_padding` set; a memory without cross-attention (or a batch with
    it) is refused naming the field."""
    if not opts.cross_attention:
        for key in KEYS:
            if inputs.get(key) is not None:
                raise SpecError(source, f"inputs.{key}", "only a decoder layer with cross-attention reads "
                                "a memory; set block.cross_attention: true")
        if "mem_len" in dims:
            raise SpecError(source, "dims.mem_len", "only a decoder layer with cross-attention has a "
                            "memory; set block.cross_attention: true")
        return opts
    if batch:
        raise SpecError(source, "inputs.X", "a decoder layer with cross-attention works one sequence "
                        "(one X and one memory); give one matrix")
    return replace(opts, memory_padding=inputs.get("memory_padding_mask") is not None)


def mem_len(dims: Mapping, inputs: Mapping, opts: Options, source: str) -> int:
    """The memory's rows: dims.mem_len, or read off inputs.memory (or its mask); 0 without one."""
    if not opts.cross_attention:
        return 0
    if "mem_len" in dims:
        return int_field(dims["mem_len"], source, "dims.mem_len")
    for key in KEYS:
        raw = inputs.get(key)
        if isinstance(raw, list) and raw:
            return len(raw)
    raise SpecError(source, "inputs.memory", "missing; a decoder layer with cross-attention needs the "
                    "memory (the encoder's output, mem_len × d_model), or dims.mem_len and a `random` section")


def padding(raw: Any, dims: Dims, source: str) -> tuple:
    """The memory's padding row as a tuple of bools, or () without a mask."""
    if raw is None:
        return ()
    where = "inputs.memory_padding_mask"
    raw = bool_list(raw, dims.mem_len, source, where, "memory row", "a padded memory row")
    if all(raw):
        raise SpecError(source, where, "every memory row is padding: the cross-attention's softmax would "
                        "have no terms (torch gives NaN); leave at least one row unpadded")
    return raw
