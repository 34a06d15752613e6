"""A tiny GPT's spec: the `model:` section (docs/reference/spec.md) on top of the block's own sections.

    model: {vocab: [the, cat, sat, on, mat], positions: learned, layers: 2, head: tied,
            final_norm: true, prompt: [the, cat], generate: 2, kv_cache: true}
    dims: {d_model: 4, d_ff: 8, heads: 2}            # seq_len = the prompt's length
    block: {norm_position: pre, ...}                  # every layer; causal is always on
    weights: {W_E: ..., W_P: ..., W_U: ..., ln_final: {gamma, beta}, layers: [{W_Q: ...}, ...]}
    random: {seed: 1, low: -1, high: 1}               # draws what is left out, per layer

Each layer is validated as a block spec of its own (engine.spec.from_mapping), so every block
option, default and error message carries over. Per-layer weights missing from `weights.layers[i]`
are drawn with a seed of their own per layer, so two layers never share weights by accident.
"""
from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping, NoReturn, Union

from symblock.engine import model_cost, model_norms, source_embedding, spec as specmod, unused
from symblock.engine.fields import choice, near
from symblock.engine.model_cost import with_length  # noqa: F401  (model_spec.with_length stays public)
from symblock.engine.spec import BlockSpec, Matrix
from symblock.engine.numbers import unknown_names
from symblock.engine.steps import Dims, Options
from symblock.errors import SpecError, excerpt

MODEL_KEYS = ("vocab", "positions", "layers", "head", "final_norm", "prompt", "generate", "kv_cache",
              "norm_positions", "pe_base", "kind", "key_padding_mask", "embed_norm", "source",
              "encoder_layers", "decoder_layers", "embeddings", "source_padding_mask")
KINDS = ("decoder", "encoder", "encoder-decoder")  # a GPT | BERT-like | nn.Transformer (translation)
TOP_KEYS = ("title", "layout", "model", "dims", "block", "weights", "random")
POSITIONS = ("learned", "sinusoidal", "rope", "none")  # rope: RoPE in every layer (block.rope)
HEADS = ("tied", "untied", "none")  # none: an encoder's hidden states
DIM_KEYS = ("d_model", "d_ff", "heads", "d_k", "d_v", "kv_heads")  # seq_len is the prompt's length
MAX_LAYERS = 24
MAX_VOCAB = 4096
MAX_GENERATE = 64
MIXED_WARNING = ("this stack mixes Pre-LN and Post-LN layers; the article “Encoder 块：残差、归一化与前馈网络” "
                 "warns that such a stack trains badly (the residual stream's scale jumps where the placement "
                 "changes)")


@dataclass(frozen=True)
class ModelSpec:
    """A validated tiny GPT: one BlockSpec per layer (seq_len = the prompt's length) plus the
    embedding, positions, final norm and head, all exact (ExactMatrix, math layout)."""
    vocab: tuple[str, ...]
    positions: str
    layers: tuple[BlockSpec, ...]      # one per layer
    W_E: Matrix                        # vocab × d_model
    W_P: Matrix | None                 # (len(prompt) + generate) × d_model, learned positions only
    W_U: Matrix | None                 # d_model × vocab, untied head only
    final_norm: Mapping[str, Matrix]   # {"gamma": 1×d, "beta": 1×d} or {} when absent
    head: str
    prompt: tuple[int, ...]
    generate: int
    kv_cache: bool
    title: str = ""
    source: str = "<spec>"
    seed: int | None = None
    titles: Mapping[str, str] = field(default_factory=dict)   # per language, from `title: {en, zh}`
    pe_base: Fraction = Fraction(10000)  # sinusoidal positions: sin/cos of p / pe_base^(2i/d)
    kind: str = "decoder"              # decoder (a GPT) | encoder (non-causal, no generation)
    embed_norm: Mapping[str, Any] = field(default_factory=dict)  # BERT's LayerNorm after the embeddings
    key_padding_mask: tuple = ()       # an encoder's padded prompt positions (torch semantics)
    source_tokens: tuple[int, ...] = ()  # an encoder-decoder's source sentence
    encoder: tuple = ()                # an encoder-decoder's encoder layers (BlockSpecs, non-causal)
    encoder_norm: Mapping[str, Any] = field(default_factory=dict)  # its final norm (nn.Transformer's)
    W_E_src: Matrix | None = None      # an encoder-decoder's own source embedding (None: W_E is shared)
    source_padding_mask: tuple = ()    # an encoder-decoder's padded source positions (torch semantics)
    exercise: Mapping[str, Any] = field(default_factory=dict)  # a model spec has no exercise section
    supplied: frozenset = frozenset()  # the model's own norm parameters read from `weights:` ("ln_final.beta"),
                                       #   not defaulted: a β given although block.bias is false is counted
    no_beta: frozenset = frozenset()   # β the model has not (bias: false, β not given), named as its trace's
                                       #   parameters (layer0.ln1.beta, ln_final.beta): 0 in params, never shown

    @property
    def form(self) -> str:
        """A model of tokens: a GPT, an encoder or an encoder-decoder (`kind`); BlockSpec.form says "block"."""
        return "model"

    @property
    def blocks(self) -> tuple:
        """The BlockSpecs the model runs: its layers (BlockSpec.blocks is the block itself)."""
        return self.layers

    @property
    def dims(self) -> Dims:
        return self.layers[0].dims

    @property
    def options(self) -> Options:
        return self.layers[0].options

    @property
    def max_len(self) -> int:
        return len(self.prompt) + self.generate


def form_of(data: Any) -> str:
    """The form a parsed spec mapping will load as (BlockSpec.form, ModelSpec.form): a `model:`
    section makes a tiny GPT. The one place that tells a model from a block."""
    return "model" if isinstance(data, Mapping) and "model" in data else "block"
Spec = Union[BlockSpec, ModelSpec]  # what `symblock.load` gives and `symblock.forward` works


def _layer_seed(seed: int | None, i: int, salt: str = "") -> int | None:
    if seed is None:
        return None
    digest = hashlib.sha256(f"symblock:{seed}:{salt}layer{i}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _tokens(value: Any, vocab: tuple[str, ...], source: str, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise SpecError(source, where, f"expected a non-empty list of tokens from model.vocab, got "
                                       f"{specmod.kind_of(value)}")
    out = []
    for i, tok in enumerate(value):
        if isinstance(tok, str) and tok in vocab:
            out.append(vocab.index(tok))
        elif isinstance(tok, int) and not isinstance(tok, bool) and 0 <= tok < len(vocab):
            out.append(tok)
        else:
            listed = ", ".join(vocab) if len(vocab) <= 24 else f"{len(vocab)} tokens"   # never thousands
            raise SpecError(source, f"{where}[{i}]", f"expected a token of model.vocab ({listed}) or its "
                                                     f"index 0..{len(vocab) - 1}, got {excerpt(tok)}{near(tok, vocab)}")
    return tuple(out)


def _section(data: Mapping, key: str, source: str) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise SpecError(source, key, f"expected a mapping, got {specmod.kind_of(value)}")
    return value


def _choice(m: Mapping, key: str, choices: tuple, default: str, source: str) -> str:
    return choice(m.get(key, default), choices, source, f"model.{key}")


def _flag(m: Mapping, key: str, default: bool, source: str) -> bool:
    v = m.get(key, default)
    if not isinstance(v, bool):
        raise SpecError(source, f"model.{key}", f"expected true or false, got {specmod.kind_of(v)}")
    return v


def _vocab(m: Mapping, source: str) -> tuple[str, ...]:
    vocab = m.get("vocab")
    if not isinstance(vocab, list) or not 2 <= len(vocab) <= MAX_VOCAB:
        raise SpecError(source, "model.vocab", f"expected a list of 2..{MAX_VOCAB} token strings, got "
                                               f"{specmod.kind_of(vocab)}")
    for i, tok in enumerate(vocab):
        if not isinstance(tok, str) or not tok:
            hint = (" (YAML reads on, off, yes, no, true and false as booleans: quote the token, e.g. \"on\")"
                    if isinstance(tok, bool) else "")
            raise SpecError(source, f"model.vocab[{i}]", f"expected a token string, got {excerpt(tok)}{hint}")
        specmod.check_text(tok, source, f"model.vocab[{i}]")
    if len(set(vocab)) != len(vocab):
        dup = next(t for t in vocab if vocab.count(t) > 1)
        raise SpecError(source, "model.vocab", f"token {excerpt(dup)} appears twice; tokens must be distinct")
    return tuple(vocab)


def _norm_positions(m: Mapping, block: Mapping, layers: int, source: str) -> list[str]:
    given = m.get("norm_positions")
    if given is None:
        return [block.get("norm_position", "post")] * layers
    if not isinstance(given, list) or len(given) != layers or any(p not in ("pre", "post") for p in given):
        raise SpecError(source, "model.norm_positions", f"expected a list of {layers} entries, each pre "
                                                        f"or post, got {excerpt(given)}")
    if len(set(given)) > 1:
        warnings.warn(f"{source}: model.norm_positions: {MIXED_WARNING}", stacklevel=2)
    return list(given)


def from_mapping(data: Mapping, source: str = "<spec>") -> ModelSpec:
    """Validate a parsed model spec."""
    specmod.check_keys(data, TOP_KEYS, source, "")
    m = _section(data, "model", source)
    specmod.check_keys(m, MODEL_KEYS, source, "model")
    vocab = _vocab(m, source)
    kind = _choice(m, "kind", KINDS, "decoder", source)
    positions = _choice(m, "positions", POSITIONS, "learned", source)
    head = _choice(m, "head", HEADS, "none" if kind == "encoder" else "tied", source)
    n_layers = _depth(m, kind, "decoder_layers" if kind == "encoder-decoder" else "layers", source)
    generate = specmod.int_field(m.get("generate", 0), source, "model.generate", lo=0, hi=MAX_GENERATE)
    prompt = _tokens(m.get("prompt"), vocab, source, "model.prompt")
    block = _section(data, "block", source)
    _check_kind(kind, m, block, head, generate, source)
    unused.model_block(block, source)
    places = _norm_positions(m, block, n_layers, source)
    block = _rope_block(block, positions, source)
    dims = _section(data, "dims", source)
    if "seq_len" in dims:
        raise SpecError(source, "dims.seq_len", "a model's sequence is model.prompt; leave seq_len out")
    specmod.check_keys(dims, DIM_KEYS, source, "dims")
    for key in DIM_KEYS:  # every dim checked before any matrix is built from it
        if key in dims:
            specmod.int_field(dims[key], source, f"dims.{key}")
    if "d_model" not in dims:
        raise SpecError(source, "dims.d_model", "missing; expected a whole number")
    weights = _section(data, "weights", source)
    specmod.check_keys(weights, WEIGHT_KEYS, source, "weights")
    unused.layers(weights, kind, source)
    rnd = data.get("random")
    seed, low, high = specmod.random_section(rnd, source) if rnd is not None else (None, -2, 2)
    stack = Stack(data, dims, block, places, (seed, low, high), source)

    def guard(layer: BlockSpec) -> None:  # the whole run's size, known from the first layer: refuse before drawing the rest
        _check_cost(layer, n_layers, len(vocab), len(prompt), generate, m, source)
    src: tuple[int, ...] = ()
    src_pad: tuple[bool, ...] = ()
    encoder: list[BlockSpec] = []
    enc_norm: dict[str, Matrix] = {}
    if kind == "encoder-decoder":
        src = _tokens(m.get("source"), vocab, source, "model.source")
        src_pad = source_embedding.padding(m.get("source_padding_mask"), len(src), source)
        encoder = stack.build("encoder_layers", _depth(m, kind, "encoder_layers", source), len(src),
                              {"causal": False}, {"key_padding_mask": list(src_pad)} if src_pad else {}, "encoder")
        enc_norm = model_norms.parse(weights.get("ln_encoder"), encoder[0].options.norm, dims["d_model"], source,
                               "ln_encoder")
        decoder_in = {"memory": [[0] * dims["d_model"]] * len(src),
                      **({"memory_padding_mask": list(src_pad)} if src_pad else {})}
        layers = stack.build("decoder_layers", n_layers, len(prompt), {"cross_attention": True}, decoder_in, "",
                             guard)
    else:
        pad = {"key_padding_mask": m["key_padding_mask"]} if "key_padding_mask" in m else {}
        layers = stack.build("layers", n_layers, len(prompt), {"causal": kind == "decoder"}, pad, "", guard)
    d = layers[0].dims.d_model
    tgt = source_embedding.target(m, weights, kind, (len(vocab), d), source)
    tensors = _tensors(weights, data.get("layout", "math"), len(vocab), d, max(len(prompt) + generate, len(src)),
                       positions, head, seed, low, high, source, {"W_E": tgt} if tgt is not None else {})
    pe_base = _pe_base(m, positions, d, source)
    final = {}
    if _flag(m, "final_norm", kind != "encoder", source):  # nn.Transformer has its decoder norm
        final = model_norms.parse(weights.get("ln_final"), layers[0].options.norm, d, source)
    embed_norm = model_norms.parse(weights.get("ln_embed"), layers[0].options.norm, d, source, "ln_embed") \
        if _flag(m, "embed_norm", False, source) else {}
    unused.norms(weights, {"ln_final": bool(final), "ln_embed": bool(embed_norm),
                           "ln_encoder": kind == "encoder-decoder"}, source)
    title, titles = specmod.title_field(data.get("title") or "", source)
    w_src = source_embedding.parse(m, weights, kind, (len(vocab), d), (seed, low, high), source)
    norms = {"ln_final": final, "ln_embed": embed_norm, "ln_encoder": enc_norm}
    supplied = model_norms.supplied(weights, norms)
    return ModelSpec(vocab=vocab, positions=positions, layers=tuple(layers), final_norm=final, head=head,
                     prompt=prompt, generate=generate, kv_cache=_flag(m, "kv_cache", False, source),
                     title=title, source=source, seed=seed, titles=titles, pe_base=pe_base, kind=kind,
                     embed_norm=embed_norm, key_padding_mask=layers[0].key_padding_mask[0]
                     if layers[0].key_padding_mask else (), source_tokens=src, encoder=tuple(encoder),
                     encoder_norm=enc_norm, W_E_src=w_src, source_padding_mask=src_pad, **tensors,
                     supplied=supplied, no_beta=model_norms.no_beta(block, (layers, encoder), norms, supplied))



WEIGHT_KEYS = ("W_E", "W_P", "W_U", "ln_final", "ln_embed", "layers", "encoder_layers", "decoder_layers",
               "ln_encoder", "W_E_src", "W_E_tgt")


def _depth(m: Mapping, kind: str, key: str, source: str) -> int:
    """How many layers a stack has: model.layers (a GPT, an encoder) or model.encoder_layers /
    model.decoder_layers (an encoder-decoder), each refused where it does not belong."""
    other = ("encoder_layers", "decoder_layers") if kind != "encoder-decoder" else ("layers",)
    for wrong in other:
        if wrong in m:
            what = "an encoder-decoder's stacks are model.encoder_layers and model.decoder_layers" \
                if wrong == "layers" else "only an encoder-decoder has two stacks; use model.layers"
            raise SpecError(source, f"model.{wrong}", what)
    return specmod.int_field(m.get(key, 1), source, f"model.{key}", lo=1, hi=MAX_LAYERS)


class Stack:
    """Builds a stack's layers, each validated as a block spec of its own (so every block option,
    default and error message carries over), with weights `weights.<key>[i]` and, missing ones
    drawn, a seed of its own per layer."""

    def __init__(self, data: Mapping, dims: Mapping, block: Mapping, places: list, rnd: tuple, source: str):
        self.data, self.dims, self.block, self.places, self.rnd, self.source = data, dims, block, places, rnd, source

    def build(self, key: str, n: int, seq_len: int, block: Mapping, inputs: Mapping, salt: str,
              first: Callable[[BlockSpec], None] | None = None) -> list[BlockSpec]:
        """The n layers; `first(layer)` runs on layer 0 before the others are drawn (the size guard)."""
        source, (seed, low, high) = self.source, self.rnd
        per_layer = (self.data.get("weights") or {}).get(key) or []
        if not isinstance(per_layer, list) or len(per_layer) > n:
            raise SpecError(source, f"weights.{key}", f"expected a list of at most {n} mappings (one per "
                            "layer), got " + specmod.kind_of(per_layer))
        out = []
        for i in range(n):
            lw = per_layer[i] if i < len(per_layer) else {}
            if not isinstance(lw, dict):
                raise SpecError(source, f"weights.{key}[{i}]", f"expected a mapping, got {specmod.kind_of(lw)}")
            layer_map = {"layout": self.data.get("layout", "math"), "dims": {**self.dims, "seq_len": seq_len},
                         "block": {**self.block, **block, "norm_position": self.places[min(i, len(self.places) - 1)]},
                         "weights": lw, "inputs": {"X": [[0] * self.dims["d_model"]] * seq_len, **inputs}}
            if seed is not None:
                layer_map["random"] = {"seed": _layer_seed(seed, i, salt), "low": low, "high": high}
            try:
                out.append(specmod.from_mapping(layer_map, source))
            except SpecError as e:  # name the field as the user wrote it
                where = e.where
                if where.startswith("weights."):
                    where = f"weights.{key}[{i}].{where[len('weights.'):]}"
                where = "model" + where[len("inputs"):] if where.startswith("inputs.key_padding_mask") else where
                raise SpecError(source, where, e.message) from None
            if i == 0 and first is not None:
                first(out[0])
        return out


def _refuse(source: str, where: str, message: str) -> NoReturn:
    raise SpecError(source, where, message)


def _check_kind(kind: str, m: Mapping, block: Mapping, head: str, generate: int, source: str) -> None:
    """What an encoder (BERT-like) or an encoder-decoder cannot have, and a GPT cannot either."""
    for key in ("source", "source_padding_mask"):
        if key in m and kind != "encoder-decoder":
            raise SpecError(source, f"model.{key}", "only an encoder-decoder reads a source; set model.kind: "
                            "encoder-decoder")
    if kind == "encoder-decoder":
        for key, why in (("key_padding_mask", "an encoder-decoder's padded source is model.source_padding_mask"),
                         ("embed_norm", "an encoder model's (BERT's) option")):
            if key in m:
                raise SpecError(source, f"model.{key}", why)
        if "causal" in block:
            raise SpecError(source, "block.causal", "the decoder layers are causal and the encoder's are not; "
                            "leave causal out")
        if head == "none":
            raise SpecError(source, "model.head", "a translation needs its head (tied or untied) to generate")
        return
    if kind == "decoder":
        for key, why in (("key_padding_mask", "a GPT's prompt has no padding"),):
            if key in m:
                raise SpecError(source, f"model.{key}", f"{why}; it is for model.kind: encoder")
        if head == "none":
            raise SpecError(source, "model.head", "a GPT needs its head (tied or untied) to generate")
        return
    if "causal" in block:
        raise SpecError(source, "block.causal", "an encoder's layers are never causal; leave causal out")
    if generate or m.get("kv_cache"):
        key = "generate" if generate else "kv_cache"
        raise SpecError(source, f"model.{key}", "an encoder does not generate; leave it out")


def _pe_base(m: Mapping, positions: str, d: int, source: str) -> Fraction:
    """The base of sinusoidal positions (10000 in "Attention is all you need"): any positive
    rational, so that every frequency base^(−2i/d) is an exact power (engine/exact.power)."""
    if "pe_base" in m and positions != "sinusoidal":
        raise SpecError(source, "model.pe_base", f"a base is for sinusoidal positions (positions is {positions})")
    if positions == "sinusoidal" and d % 2:
        raise SpecError(source, "dims.d_model", f"sinusoidal positions pair a sine and a cosine column: "
                        f"expected an even d_model, got {d}")
    want = "expected a positive rational number such as 10000 or 100"
    raw = m.get("pe_base", 10000)
    if isinstance(raw, str) and (bad := unknown_names(raw)):   # not the generic "such as sqrt(2)"
        raise SpecError(source, "model.pe_base", f"{want}, got {excerpt(raw)} (unknown name {', '.join(bad)})")
    base = specmod.parse_exact(raw, source, "model.pe_base")
    if not isinstance(base, Fraction) or base <= 0:
        raise SpecError(source, "model.pe_base", f"{want}, got {excerpt(raw)}")
    return base


def _rope_block(block: dict, positions: str, source: str) -> dict:
    """`model.positions: rope` turns q and k in every layer (block.rope gives θ and style; RoPE
    with θ 10000, half, when it is left out); block.rope without it is a contradiction."""
    if positions == "rope":
        if block.get("rope") is False:
            raise SpecError(source, "block.rope", "model.positions is rope, so every layer uses RoPE; "
                            "leave block.rope out, or give {theta, style}")
        return {**block, "rope": block.get("rope", True)}
    if block.get("rope") not in (None, False):
        raise SpecError(source, "block.rope", f"a model places RoPE by model.positions; set "
                        f"model.positions: rope (got {positions}), or leave block.rope out")
    return block


def _check_cost(layer: BlockSpec, n_layers: int, vocab: int, n0: int, generate: int, m: Mapping,
                source: str) -> None:
    """The model's cost (engine/model.py) from its first layer: every layer has its shape."""
    kv_cache = m.get("kv_cache") is True
    model_cost.refuse_cost(model_cost.run_cost([layer] * n_layers, vocab, n0, generate, kv_cache), source)


def _tensors(weights: Mapping, layout: str, vocab: int, d: int, max_len: int, positions: str, head: str,
             seed: int | None, low: int, high: int, source: str, given: Mapping = {}) -> dict[str, Any]:
    """W_E, W_P, W_U: the matrix, or None where the model has no such table (W_E always has one);
    `given` holds tables already parsed under another name (an encoder-decoder's W_E_tgt)."""
    shapes = {"W_E": (vocab, d), "W_P": (max_len, d), "W_U": (d, vocab)}
    wanted = {"W_E": True, "W_P": positions == "learned", "W_U": head == "untied"}
    out: dict[str, Matrix | None] = {}
    for name, shape in shapes.items():
        raw = weights.get(name)
        if name in given:
            out[name] = given[name]
        elif not wanted[name]:
            if raw is not None:
                raise SpecError(source, f"weights.{name}", f"not used with this model "
                                f"({'positions' if name == 'W_P' else 'head'} is not "
                                f"{'learned' if name == 'W_P' else 'untied'})")
            out[name] = None
        elif raw is not None and name == "W_P":  # a context table: at least the rows this run uses
            m = specmod.parse_matrix(raw, None, source, "weights.W_P")
            if m.shape[1] != d or m.shape[0] < max_len:
                raise SpecError(source, "weights.W_P", f"expected at least {max_len} rows (prompt + "
                                f"generate) of {d} entries, got {m.shape[0]}×{m.shape[1]}")
            out[name] = m[:max_len, :]
        elif raw is not None:
            # W_E and W_P are lookup tables (rows per token/position) in both layouts; W_U is a
            # weight like the block's: (out, in) = vocab × d in torch layout
            torch_like = layout == "torch" and name == "W_U"
            m = specmod.parse_matrix(raw, shape[::-1] if torch_like else shape, source, f"weights.{name}")
            out[name] = m.T if torch_like else m
        elif seed is not None:
            out[name] = specmod.draw(seed, name, shape, low, high)
        else:
            raise SpecError(source, f"weights.{name}", f"missing; expected a {shape[0]}×{shape[1]} matrix "
                                                       "(or a `random: {seed: 1}` section to draw it)")
    return out
