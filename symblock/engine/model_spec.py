"""A tiny GPT's spec: the `model:` section (DESIGN.md) on top of the block's own sections.

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
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from symblock.engine import spec as specmod
from symblock.errors import SpecError, excerpt

MODEL_KEYS = ("vocab", "positions", "layers", "head", "final_norm", "prompt", "generate", "kv_cache",
              "norm_positions")
TOP_KEYS = ("title", "layout", "model", "dims", "block", "weights", "random")
POSITIONS = ("learned", "sinusoidal", "rope", "none")  # rope: RoPE in every layer (block.rope)
HEADS = ("tied", "untied")
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
    layers: tuple                      # BlockSpec per layer
    W_E: Any                           # vocab × d_model
    W_P: Any                           # (len(prompt) + generate) × d_model, learned positions only
    W_U: Any                           # d_model × vocab, untied head only
    final_norm: Mapping[str, Any]      # {"gamma": 1×d, "beta": 1×d} or {} when absent
    head: str
    prompt: tuple[int, ...]
    generate: int
    kv_cache: bool
    title: str = ""
    source: str = "<spec>"
    seed: int | None = None
    titles: Mapping[str, str] = field(default_factory=dict)   # per language, from `title: {en, zh}`

    @property
    def dims(self):
        return self.layers[0].dims

    @property
    def options(self):
        return self.layers[0].options

    @property
    def max_len(self) -> int:
        return len(self.prompt) + self.generate

    def describe(self) -> str:
        d, o = self.dims, self.options
        places = sorted({s.options.norm_position for s in self.layers})
        return (f"tiny GPT · vocab {len(self.vocab)} · d_model {d.d_model} · d_ff {d.d_ff} · "
                f"{d.heads} head{'s' if d.heads > 1 else ''} · {len(self.layers)} layers "
                f"({'/'.join(p + '-LN' for p in places)}) · {o.norm} · {o.activation} · positions "
                f"{self.positions} · head {self.head} · prompt {len(self.prompt)} tokens · generate "
                f"{self.generate}{' with KV cache' if self.kv_cache else ''}")


def is_model(data: Any) -> bool:
    return isinstance(data, Mapping) and "model" in data


def _layer_seed(seed: int | None, i: int) -> int | None:
    if seed is None:
        return None
    digest = hashlib.sha256(f"symblock:{seed}:layer{i}".encode()).digest()
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
            raise SpecError(source, f"{where}[{i}]", f"expected a token of model.vocab "
                                                     f"({', '.join(vocab)}) or its index, got {excerpt(tok)}")
    return tuple(out)


def _section(data: Mapping, key: str, source: str) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise SpecError(source, key, f"expected a mapping, got {specmod.kind_of(value)}")
    return value


def _choice(m: Mapping, key: str, choices: tuple, default: str, source: str) -> str:
    v = m.get(key, default)
    if v not in choices:
        raise SpecError(source, f"model.{key}", f"expected one of {', '.join(choices)}, got {excerpt(v)}")
    return v


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
    positions = _choice(m, "positions", POSITIONS, "learned", source)
    head = _choice(m, "head", HEADS, "tied", source)
    n_layers = specmod.int_field(m.get("layers", 1), source, "model.layers", lo=1, hi=MAX_LAYERS)
    generate = specmod.int_field(m.get("generate", 0), source, "model.generate", lo=0, hi=MAX_GENERATE)
    prompt = _tokens(m.get("prompt"), vocab, source, "model.prompt")
    block = _section(data, "block", source)
    if block.get("causal") is False:
        raise SpecError(source, "block.causal", "a GPT's layers are always causal; leave causal out")
    if "final_norm" in block:
        raise SpecError(source, "block.final_norm", "a model's final norm is model.final_norm")
    if "attention_tiles" in block:
        raise SpecError(source, "block.attention_tiles", "the online-softmax tiles are worked for a "
                        "single block; leave attention_tiles out of a model")
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
    specmod.check_keys(weights, ("W_E", "W_P", "W_U", "ln_final", "layers"), source, "weights")
    per_layer = weights.get("layers") or []
    if not isinstance(per_layer, list) or len(per_layer) > n_layers:
        raise SpecError(source, "weights.layers", f"expected a list of at most {n_layers} mappings (one "
                                                  "per layer), got " + specmod.kind_of(per_layer))
    rnd = data.get("random")
    seed, low, high = specmod.random_section(rnd, source) if rnd is not None else (None, -2, 2)
    layers = []
    for i in range(n_layers):
        lw = per_layer[i] if i < len(per_layer) else {}
        if not isinstance(lw, dict):
            raise SpecError(source, f"weights.layers[{i}]", f"expected a mapping, got {specmod.kind_of(lw)}")
        layer_map = {
            "layout": data.get("layout", "math"),
            "dims": {**dims, "seq_len": len(prompt)},
            "block": {**block, "causal": True, "norm_position": places[i]},
            "weights": lw,
            "inputs": {"X": [[0] * dims["d_model"]] * len(prompt)},
        }
        if seed is not None:
            layer_map["random"] = {"seed": _layer_seed(seed, i), "low": low, "high": high}
        try:
            layers.append(specmod.from_mapping(layer_map, source))
        except SpecError as e:  # name the field as the user wrote it
            where = e.where
            if where.startswith("weights."):
                where = f"weights.layers[{i}].{where[len('weights.'):]}"
            raise SpecError(source, where, e.message) from None
        if i == 0:  # the whole run's size, known now: refuse before drawing the rest
            _check_cost(layers[0], n_layers, len(vocab), len(prompt), generate, m, source)
    d = layers[0].dims.d_model
    tensors = _tensors(weights, data.get("layout", "math"), len(vocab), d, len(prompt) + generate,
                       positions, head, seed, low, high, source)
    if positions == "sinusoidal" and d not in (2, 4, 8):
        raise SpecError(source, "model.positions", f"sinusoidal positions are exact only when every "
                        f"frequency 10000^(2i/d) is rational, i.e. d_model in 2, 4, 8 (got {d}); "
                        "use learned positions")
    final = {}
    if _flag(m, "final_norm", True, source):
        final = _final_norm(weights.get("ln_final"), layers[0].options.norm, d, source)
    title, titles = specmod.title_field(data.get("title") or "", source)
    return ModelSpec(vocab=vocab, positions=positions, layers=tuple(layers), final_norm=final, head=head,
                     prompt=prompt, generate=generate, kv_cache=_flag(m, "kv_cache", False, source),
                     title=title, source=source, seed=seed, titles=titles, **tensors)


def _rope_block(block: Mapping, positions: str, source: str) -> Mapping:
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


def _check_cost(layer, n_layers: int, vocab: int, n0: int, generate: int, m: Mapping, source: str) -> None:
    """The model's cost (engine/model.py) from its first layer: every layer has its shape."""
    from symblock.engine import model
    kv_cache = m.get("kv_cache") is True
    model.refuse_cost(model.run_cost([layer] * n_layers, vocab, n0, generate, kv_cache), source)


def _tensors(weights, layout, vocab, d, max_len, positions, head, seed, low, high, source) -> dict:
    shapes = {"W_E": (vocab, d), "W_P": (max_len, d), "W_U": (d, vocab)}
    wanted = {"W_E": True, "W_P": positions == "learned", "W_U": head == "untied"}
    out = {}
    for name, shape in shapes.items():
        raw = weights.get(name)
        if not wanted[name]:
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


def _final_norm(raw: Any, norm: str, d: int, source: str) -> dict:
    raw = raw or {}
    if not isinstance(raw, dict):
        raise SpecError(source, "weights.ln_final", f"expected a mapping, got {specmod.kind_of(raw)}")
    specmod.check_keys(raw, ("gamma", "beta") if norm == "layernorm" else ("gamma",), source,
                       "weights.ln_final")
    out = {"gamma": specmod.Matrix.ones(1, d)}
    if norm == "layernorm":
        out["beta"] = specmod.Matrix.zeros(1, d)
    for key in out:
        if raw.get(key) is not None:
            out[key] = specmod.parse_matrix(raw[key], (1, d), source, f"weights.ln_final.{key}", vector=True)
    return out


def with_length(layer, n: int):
    """A layer's BlockSpec for a sequence of n rows (the weights do not depend on the length)."""
    return replace(layer, dims=replace(layer.dims, seq_len=n))
