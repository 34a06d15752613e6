"""Weights a spec gives for a part its configuration does not have, and a model's block options that
the model sets itself: refused, naming the field and what has that part, as a memory without
cross-attention is (engine/memory.py), never silently dropped.

A block (spec.py) refuses a cross-attention's weights and a third norm without
`block.cross_attention`, and a final norm's weights without `block.final_norm`; a model (model_spec.py) refuses them in layers that have no cross-attention
(a GPT's, an encoder's, an encoder-decoder's encoder), a layer's own final norm, another kind's
stacks and the encoder's final norm outside an encoder-decoder, and each of its final norms without
the option that adds it (as `weights.ln_embed` without `model.embed_norm`). Weights of a part the
block has but an option turns off (W_O under `out_proj: false`) or that feed only given steps are
left unread, as `given:` promises.
"""
from __future__ import annotations

from typing import Mapping

from symblock.engine.steps import Options
from symblock.errors import SpecError

CROSS_ONLY = "only a decoder layer with block.cross_attention: true"
SET_BY_MODEL = {"final_norm": "a model's final norm is model.final_norm",  # block options a model sets or lacks
                "attention_tiles": "the online-softmax tiles are worked for a single block; leave them out of a model",
                "cross_attention": "a model's decoder layers attend to the encoder's output when model.kind is "
                                   "encoder-decoder, which sets it; leave cross_attention out"}


def model_block(block: Mapping, source: str) -> None:
    """A model's `block:` section: the options a model sets itself (causal, its final norm, the
    decoder layers' cross-attention) or does not work (tiles) are refused by name."""
    if block.get("causal") is False:
        raise SpecError(source, "block.causal", "a GPT's layers are always causal; leave causal out")
    for key in (k for k in SET_BY_MODEL if k in block):
        raise SpecError(source, f"block.{key}", SET_BY_MODEL[key])


def block(weights: Mapping, opts: Options, source: str) -> None:
    """Refuse a cross-attention's weights and a third norm in a block without cross-attention, and
    a final norm's weights in a block without one (as a model refuses them without model.final_norm)."""
    if weights.get("ln_final") is not None and not opts.final_norm:
        raise SpecError(source, "weights.ln_final", "not used: only a Pre-LN block with block.final_norm: "
                        "true has a final norm; set it, or leave weights.ln_final out")
    if not opts.cross_attention:
        if weights.get("cross") is not None:
            raise SpecError(source, "weights.cross", f"{CROSS_ONLY} has a cross-attention (over "
                            "inputs.memory); set block.cross_attention: true, or leave weights.cross out")
        if weights.get("ln3") is not None:
            raise SpecError(source, "weights.ln3", f"{CROSS_ONLY} has a third norm (its ln2 is the "
                            "cross-attention's, ln3 the FFN's); set block.cross_attention: true, or leave "
                            "weights.ln3 out")


def layers(weights: Mapping, kind: str, source: str) -> None:
    """A model's per-layer weights `weights.<stack>[i]`, before any layer is built: cross-attention
    weights only in an encoder-decoder's decoder layers, and no layer with a final norm of its own
    (a model's is weights.ln_final). Another kind's stacks are refused here too."""
    stacks = ("encoder_layers", "decoder_layers") if kind == "encoder-decoder" else ("layers",)
    for stack in ("layers", "encoder_layers", "decoder_layers"):
        per_layer = weights.get(stack)
        if per_layer is not None and stack not in stacks:
            what = "an encoder-decoder's per-layer weights are weights.encoder_layers and weights.decoder_layers" \
                if stack == "layers" else "only an encoder-decoder has two stacks; use weights.layers"
            raise SpecError(source, f"weights.{stack}", what)
        for i, lw in enumerate(per_layer if isinstance(per_layer, list) else []):
            if isinstance(lw, dict):  # model_spec.Stack names any other shape
                _layer(lw, f"weights.{stack}[{i}]", kind, stack == "decoder_layers", source)


def _layer(lw: Mapping, where: str, kind: str, cross: bool, source: str) -> None:
    if lw.get("ln_final") is not None:
        raise SpecError(source, f"{where}.ln_final", "a layer has no final norm of its own; a model's "
                        "final norm is weights.ln_final (model.final_norm)")
    if cross:
        return
    whose = {"decoder": "a GPT's layers", "encoder": "an encoder's layers"}.get(kind, "the encoder's layers")
    hint = "give it in weights.decoder_layers" if kind == "encoder-decoder" else \
        "leave it out (only an encoder-decoder's decoder layers, model.kind: encoder-decoder, have one)"
    for key, what in (("cross", "cross-attention weights"), ("ln3", "third norm (ln3)")):
        if lw.get(key) is not None:
            raise SpecError(source, f"{where}.{key}", f"{whose} have no cross-attention, so no {what}; {hint}")


def norms(weights: Mapping, norms: Mapping[str, bool], source: str) -> None:
    """A model's own final norms, each only with the option that adds it (`norms`: ln_final,
    ln_embed, ln_encoder → whether the model has that norm)."""
    how = {"ln_final": "set model.final_norm: true", "ln_embed": "set model.embed_norm: true",
           "ln_encoder": "only an encoder-decoder's encoder has a final norm of its own (model.kind: encoder-decoder)"}
    for key, has in norms.items():
        if weights.get(key) is not None and not has:
            raise SpecError(source, f"weights.{key}", f"not used: {how[key]}")
