"""What a model reader checks before it trusts a config and a state dict (GPT-2, nanoGPT, BERT, Llama):
sizes that are whole numbers, ε and θ that are numbers, as many layers as the weights hold, token ids
inside the vocabulary, and every weight present, of the shape the config implies and finite. A config
or a state dict that disagrees with itself is refused as a SpecError naming the file and the field,
never left to fail inside NumPy as an internal error."""
from __future__ import annotations

import math
import re
from typing import Any, Mapping

import numpy as np

from symblock.errors import excerpt
from symblock.reference.exact_weights import Source, Unsupported


def dims(shape) -> str:
    return "×".join(str(n) for n in shape) if len(shape) else "a single number"


def layers(n: int) -> str:
    return f"{n} layer{'' if n == 1 else 's'}"


def whole(config: Mapping[str, Any], key: str, src: Source, default: int | None = None) -> int:
    """config[key], a whole number >= 1 (`default` when it is absent or null, if one is given)."""
    if config.get(key) is None and default is not None:
        return default
    if key not in config:
        raise src.bad_config(key, "missing; expected a whole number >= 1")
    v = config[key]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise src.bad_config(key, f"expected a whole number >= 1, got {excerpt(v)}")
    return int(v)


def number(config: Mapping[str, Any], key: str, src: Source, default: float, positive: bool = False,
           within: str = "") -> float:
    """config[key], a finite number >= 0 (> 0 when `positive`), `default` when absent; `within` is the
    field that holds `config` inside the file ("rope_parameters.")."""
    v = default if config.get(key) is None else config[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or positive and v == 0:
        want = "a number > 0" if positive else "a number >= 0"
        raise src.bad_config(within + key, f"expected {want}, got {excerpt(v)}")
    return float(v)


def declared(config: Mapping[str, Any], key: str, held: int, src: Source, what: str) -> None:
    """A size the config states (vocab_size, intermediate_size) must be the size the weights hold."""
    v = config.get(key)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v != held:
        raise src.bad_config(key, f"{v} does not match the weights in {src.weights}: {what}")


def check_tokens(tokens: list[int], vocab: int, src: Source) -> None:
    """The prompt's ids, each in the model's vocabulary 0..vocab-1, refused naming the weights they index."""
    if not tokens:
        raise Unsupported(src.weights, f"{src.prompt} has no tokens")
    bad = [t for t in tokens if not 0 <= t < vocab]
    if bad:
        ids = ", ".join(map(str, bad[:8])) + (", …" if len(bad) > 8 else "")
        raise Unsupported(src.weights, f"token id{'s' if len(bad) > 1 else ''} {ids} of {src.prompt} "
                                       f"{'are' if len(bad) > 1 else 'is'} outside the vocabulary: the model has "
                                       f"{vocab} tokens, ids 0..{vocab - 1}")


def check_layer_count(s: Mapping[str, np.ndarray], head: str, key: str, n_layers: int, src: Source) -> None:
    """config[key] must be the number of layers the weights hold, named `head`0. to `head`{n-1}."""
    held = {int(m.group(1)) for k in s if (m := re.match(re.escape(head) + r"(\d+)\.", k))}
    if held == set(range(n_layers)):
        return
    if not held:
        holds = f"no layer (no {head}0. weights)"
    elif held == set(range(len(held))):
        holds = (f"{layers(len(held))}, {head}0" + (f" to {head}{len(held) - 1}" if len(held) > 1 else ""))
    else:
        holds = f"layers numbered {excerpt(sorted(held))}"
    raise src.bad_config(key, f"{n_layers}, but the weights in {src.weights} hold {holds}")


class Checked:
    """A state dict as a reader takes weights from it: each by name with the shape the config implies,
    present, of that shape and finite. A `linear` map's shape is in math layout (in × out), stored
    so by GPT-2's Conv1D and as out × in by nn.Linear (`out_in`)."""

    def __init__(self, s: Mapping[str, np.ndarray], src: Source, out_in: bool, why: str):
        self.s, self.src, self.out_in, self.why = s, src, out_in, why

    def stored(self, shape: tuple) -> tuple:
        return tuple(reversed(shape)) if self.out_in and len(shape) == 2 else tuple(shape)

    def maybe(self, key: str, shape: tuple, linear: bool = False) -> np.ndarray | None:
        a = self.s.get(key)
        if a is None:
            return None
        want = self.stored(shape) if linear else tuple(shape)
        if a.shape != want:
            raise self.src.bad_weight(key, f"shape {dims(a.shape)}; expected {dims(want)}{self.why}")
        if not np.isfinite(a).all():
            raise self.src.bad_weight(key, "holds NaN or infinite values; expected finite numbers")
        return a

    def need(self, key: str, shape: tuple, linear: bool = False) -> np.ndarray:
        a = self.maybe(key, shape, linear)
        if a is None:
            want = self.stored(shape) if linear else tuple(shape)
            raise self.src.bad_weight(key, f"missing; expected a {dims(want)} array{self.why}")
        return a

    def linear(self, key: str, shape: tuple) -> np.ndarray:
        """A linear map's weight in math layout (in × out), however it is stored."""
        a = self.need(key, shape, linear=True)
        return a.T if self.out_in else a

    def none(self, key: str, why: str) -> None:
        if key in self.s:
            raise self.src.bad_weight(key, f"a bias, but {why}; expected biases on every linear map or on none")

    def width(self, key: str, d: int, name: str = "d_ff") -> int:
        """A layer's inner width from its first weight (d × `name` in math layout)."""
        a = self.s.get(key)
        ok = a is not None and a.ndim == 2 and self.stored(a.shape)[0] == d and a.size > 0
        if not ok:
            raise self.src.bad_weight(key, ("missing" if a is None else f"shape {dims(a.shape)}")
                                      + f"; expected {dims(self.stored((d, name)))}{self.why}")
        return int(self.stored(a.shape)[1])

    def rows(self, key: str, d: int, config_key: str) -> np.ndarray:
        """An embedding table, n × d with n >= 1; a width other than d is the config's `config_key`
        disagreeing with the weights."""
        a = self.s.get(key)
        if a is None or a.ndim != 2 or len(a) == 0:
            raise self.src.bad_weight(key, ("missing" if a is None else f"shape {dims(a.shape)}")
                                      + f"; expected n × {d} ({config_key} {d})")
        if a.shape[1] != d:
            raise self.src.bad_config(config_key, f"{d} does not match the weights: {self.src.weights_field}{key} in "
                                                  f"{self.src.weights} is {dims(a.shape)}, so {config_key} {a.shape[1]}")
        return self.need(key, a.shape)
