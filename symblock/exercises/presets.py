"""What a worksheet asks: presets and the spec's `exercise:` section (variants and IDs: variants.py).

An exercise is the list of steps a student computes (`ask`, in forward order) and the data
printed for them: every parameter an asked step reads, and every step an asked step reads that is
not itself asked (printed as given). Spec section:

    exercise:
      preset: full            # full | attention | norm | ffn | cross | rope | tiles (default full;
                              #   rope: RoPE's rotated q and k and the scores they give)
      ask: [resid1, norm1]    # step names or preset names; replaces the preset
      give: [norm1.mean]      # steps printed as data instead of asked
      points: {norm1.std: 2}  # points of a task (an asked step); default 1 each

The `backprop` preset asks gradient steps instead (from `symblock/calculus/grad.py`): dL/dY, then
dL/d(step) backwards for every step that depends on a `wrt` name, then dL/d each `wrt` parameter;
the data are the forward values those backward rules read. Its options (flags --loss/--wrt of
`symblock worksheet` override them):

    exercise:
      preset: backprop
      loss: mse               # mse | sum (default mse: with `sum` dL/dY and the steps it flows
                              #   through unchanged are all-ones matrices in every variant)
      wrt: [W_2, W_1]         # parameters or steps (default [W_2, W_1])
      target: [[1, 0], ...]   # mse only: the target T (default: integers in -2..2 drawn from
                              #   random.seed, stream "exercise.target"; zeros without a seed)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from symblock.engine import fields, names
from symblock.engine.tiles import SIDE_KINDS
from symblock.errors import SpecError, did_you_mean, excerpt

PRESETS = ("full", "attention", "norm", "ffn", "backprop", "decoder", "tiles", "cross", "rope",
           "positions")  # decoder, positions: model specs
CROSS = "cross"   # a decoder layer's cross-attention (block.cross_attention), given H1 and the memory
ROPE = "rope"     # RoPE's rotations and the (grouped) scores they give (block.rope)
TILES = "tiles"   # the online softmax over key tiles (block.attention_tiles), given the scores and V
ROPE_KINDS = ("q_rot", "k_rot", "scores")   # the rope preset: the rotations and the (grouped) scores
EXERCISE_KEYS = ("preset", "ask", "give", "loss", "wrt", "target", "points")
BACKPROP_KEYS = ("loss", "wrt", "target")
BACKPROP_WRT = ("W_2", "W_1")
BACKPROP_LOSS = "mse"
TARGET_RANGE = (-2, 2)  # the drawn integer target of the default mse loss


@dataclass(frozen=True)
class Exercise:
    ask: tuple[str, ...]         # steps the student computes, forward order
    data_steps: tuple[str, ...]  # steps printed as given data, forward order
    data_params: tuple[str, ...] # parameters printed as given data (X first)
    backward: object = None      # backprop preset: the grad.Backward whose steps are asked
    target: object = None        # backprop with mse: the target T (a Mat), printed as data
    points: dict = field(default_factory=dict)  # asked step -> points (exercise.points, default 1)
    extra: dict = field(default_factory=dict)   # asked tasks that are no engine step: name -> Mat
                                                #   (the decoder's cache.reused, exercises/decoder.py)
    categorical: tuple = ()                     # asked steps with a handful of possible answers (a
                                                #   token of the vocabulary): outside the variety guarantee

    @property
    def total(self) -> int:
        return sum(self.points.values())

    def answer(self, trace, name: str):
        """The exact answer (a Mat) of the asked step `name`: a forward or model step, the
        decoder's conceptual task or a gradient of the backprop exercise (the one lookup)."""
        if name in self.extra:
            return self.extra[name]
        if self.backward is not None:
            for g in (*self.backward.steps, *self.backward.wrt.values()):
                if g.name == name:
                    return g.value
        return trace[name].value


def preset_steps(preset: str, names: list[str]) -> list[str]:
    """The steps a preset asks, among the computed step names (forward order; a batch's steps
    by their names without the b0., b1. prefix)."""
    from symblock.engine import names as vocabulary
    steps = [vocabulary.parse(n) for n in names]
    if preset == TILES:
        return [s.full for s in steps if s.kind in SIDE_KINDS]
    steps = [s for s in steps if s.kind not in SIDE_KINDS]  # the tiles: their own preset
    if preset == "full":
        return [s.full for s in steps if s.kind not in ("x", "memory", "output")]  # inputs are given
    if preset == "norm":
        return [s.full for s in steps if s.norm]
    if preset == ROPE:
        return [s.full for s in steps if s.kind in ROPE_KINDS and s.layer is None]
    part = {"attention": "attn", "ffn": "ffn", CROSS: "cross"}[preset]
    return [s.full for s in steps if s.section == part]


# the presets that ask one part a block may lack: (its option, what the refusal says)
PARTS = {TILES: ("attention_tiles", "the online softmax over key tiles; this block has none (set "
                 "block.attention_tiles, e.g. 2, as the example tiled-attention does)"),
         CROSS: ("cross_attention", "a decoder layer's cross-attention; this block has none (set "
                 "block.cross_attention: true and inputs.memory, as the example decoder-layer does)"),
         ROPE: ("rope", "RoPE's rotated queries and keys; this block has none (set block.rope, as the "
                "example rope-gqa does)")}


def _require_part(spec, preset: str, where: str) -> None:
    if preset in PARTS and not getattr(spec.options, PARTS[preset][0]):
        raise SpecError(spec.source, where, f"the {preset} preset asks {PARTS[preset][1]}")


def choose(trace, preset: str | None = None, loss: str | None = None,
           wrt: list[str] | None = None) -> Exercise:
    """Validate a block's `exercise:` section and decide what is asked and given (a model's is
    decoder.choose; exercises/variant.py calls the one or the other, once per variant).
    A `preset` from the command line replaces the section's `preset` and `ask`; `loss` and `wrt`
    (backprop only) replace the section's."""
    from symblock.exercises import decoder
    spec = trace.spec
    src, ex = spec.source, dict(spec.exercise)
    for key in ex:
        if key not in EXERCISE_KEYS:
            raise SpecError(src, f"exercise.{key}", f"unknown key{fields.near(key, EXERCISE_KEYS)}; expected one of {', '.join(EXERCISE_KEYS)}")
    effective = preset if preset is not None else ex.get("preset", "full")
    if effective == decoder.POSITIONS:
        raise SpecError(src, "--preset" if preset is not None else "exercise.preset", "the positions preset "
                        "asks a model's sinusoidal position table: it needs a model spec (a `model:` section "
                        "with positions: sinusoidal); this spec is one block")
    if effective == decoder.PRESET:
        decoder.require(spec, "--preset" if preset is not None else "exercise.preset")
    _require_part(spec, effective, "--preset" if preset is not None else "exercise.preset")
    if effective == "backprop":
        return with_points(choose_backprop(trace, ex, loss, wrt), ex.get("points"), src, trace)
    for key in BACKPROP_KEYS:
        if key in ex:
            raise SpecError(src, f"exercise.{key}", f"goes with `preset: backprop` only (this exercise's "
                                                    f"preset is {excerpt(effective)})")
    if loss is not None or wrt is not None:
        raise SpecError(src, "--loss" if loss is not None else "--wrt", "goes with --preset backprop only")
    computed = [s.name for s in trace if not s.given]
    all_names = trace.names()

    def names_list(key: str) -> list[str]:
        value = ex.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise SpecError(src, f"exercise.{key}", "expected a list of step names")
        return value

    give = names_list("give")
    for i, name in enumerate(give):
        if name not in all_names:
            raise SpecError(src, f"exercise.give[{i}]", f"no step {excerpt(name)} in this block; "
                            + did_you_mean(name, all_names) + "expected one of " + ", ".join(all_names))
    if preset is None:
        preset = ex.get("preset", "full")
        if preset not in PRESETS:
            raise SpecError(src, "exercise.preset", f"expected one of {', '.join(PRESETS)}, "
                                                    f"got {excerpt(preset)}{fields.near(preset, PRESETS)}")
        asked_raw = names_list("ask")
    else:
        asked_raw = []
    asked = asked_steps(asked_raw, trace, computed) if asked_raw else preset_steps(preset, computed)
    ask = [n for n in computed if n in set(asked) and n not in give]
    if not ask:
        where = "exercise.ask" if asked_raw else "exercise"
        raise SpecError(src, where, f"nothing to ask: preset {excerpt(preset)} with these `give` steps leaves no "
                                    "computed step (this block computes " + ", ".join(computed) + ")")
    reads = set(give)
    for name in ask:
        reads.update(trace[name].inputs)
    data_steps = tuple(n for n in all_names if n in reads and n not in ask)
    data_params = tuple(p for p in trace.params if p in reads or (p == "X" and "x" in reads))
    data_params = tuple(p for p in data_params if not (p == "X" and "x" in data_steps))
    return with_points(Exercise(tuple(ask), data_steps, data_params), ex.get("points"), src, trace)


def asked_steps(asked_raw: list, trace, computed: list[str]) -> list[str]:
    """The steps `exercise.ask` names: each a computed step, or a preset standing for its steps."""
    src = trace.spec.source
    asked: list[str] = []
    for i, name in enumerate(asked_raw):
        if not isinstance(name, str):
            raise SpecError(src, f"exercise.ask[{i}]", "expected a step name")
        if name in PRESETS:
            asked += preset_steps(name, computed)
        elif name in trace and trace[name].given:
            raise SpecError(src, f"exercise.ask[{i}]", f"{name} is given in the spec (`given:`), "
                            "so it cannot be asked")
        elif name not in computed:
            raise SpecError(src, f"exercise.ask[{i}]", f"no computed step {excerpt(name)} in this block; "
                            + did_you_mean(name, [*PRESETS, *computed]) + "expected a preset ("
                            + ", ".join(PRESETS) + ") or one of " + ", ".join(computed))
        else:
            asked.append(name)
    return asked


def tiles_problem(trace) -> str | None:
    """A block with key tiles is a hand exercise of the online softmax only when each head's
    running maximum moves in some row after the first tile: else every e^(m_old − m_new) is 1, and
    the rescaling (and forgetting it) leaves no trace."""
    from symblock.engine import exact
    spec = trace.spec
    if not spec.options.attention_tiles or spec.dims.seq_len <= spec.options.attention_tiles:
        return None
    from symblock.engine.tiles import tile_name
    still: dict[str, bool] = {}   # a head's prefix (b0.attn.h1) -> its maximum has not moved yet
    for step in trace:
        p = names.parse(step.name)
        if p.kind != "tile_max":
            continue
        head = p.sibling(f"attn.h{p.head}")
        if not p.tile:
            still.setdefault(head, True)
            continue
        old = trace[p.sibling(tile_name(p.head, p.tile - 1, "max"))].value.rows
        if any(a[0] is not exact.NEG_INF and exact.sign(b[0] - a[0]) > 0 for a, b in zip(old, step.value.rows)):
            still[head] = False
    stuck = [h for h, s in still.items() if s]
    return f"tiles_rescale: the running maximum of {stuck[0]} never moves after its first key tile" if stuck else None


def with_points(ex: Exercise, points, src: str, trace) -> Exercise:
    """`exercise.points` ({STEP: N}, N a whole number 0..1000); asked steps without an entry are
    worth 1. A step of the block that this preset does not ask is ignored (a --preset may ask less)."""
    points = {} if points is None else points
    if not isinstance(points, dict):
        raise SpecError(src, "exercise.points", "expected a mapping of asked steps to points, e.g. "
                                                "{norm1.std: 2}")
    for name, n in points.items():
        if name not in ex.ask and name not in trace and not names.parse(str(name)).grad:
            raise SpecError(src, f"exercise.points.{name}", "no such step; " + did_you_mean(name, ex.ask)
                            + "expected one of the asked steps " + ", ".join(ex.ask))
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 1000:
            raise SpecError(src, f"exercise.points.{name}", f"expected a whole number 0..1000, got {excerpt(n)}")
    return replace(ex, points={name: points.get(name, 1) for name in ex.ask})


def choose_backprop(trace, ex: dict, loss: str | None, wrt: list[str] | None) -> Exercise:
    """The backprop preset: the gradient steps of `grad.backward` are asked, and the forward
    values their rules read are given."""
    from symblock.calculus import grad
    src = trace.spec.source
    for key in ("ask", "give"):
        if ex.get(key):
            raise SpecError(src, f"exercise.{key}", "not with `preset: backprop`, which asks the gradient "
                                                    "steps; choose them with exercise.wrt")
    where_loss = "--loss" if loss is not None else "exercise.loss"
    loss = loss if loss is not None else ex.get("loss", BACKPROP_LOSS)
    if loss not in grad.LOSSES:
        raise SpecError(src, where_loss, f"expected one of {', '.join(grad.LOSSES)}, got {excerpt(loss)}")
    where_wrt = "--wrt" if wrt is not None else "exercise.wrt"
    if wrt is None:
        wrt = ex.get("wrt", list(BACKPROP_WRT))
        if isinstance(wrt, str):
            wrt = [wrt]
    if not isinstance(wrt, list) or not wrt:
        raise SpecError(src, where_wrt, "expected a non-empty list of parameter or step names, e.g. [W_2, W_1]")
    known = grad.wrt_names(trace)
    for i, name in enumerate(wrt):
        if name not in known:
            raise SpecError(src, f"{where_wrt}[{i}]" if where_wrt == "exercise.wrt" else where_wrt,
                            f"no parameter or step {excerpt(name)} in this block; " + did_you_mean(name, known)
                            + "expected one of " + ", ".join(known))
    target = None
    if "target" in ex:
        if loss != "mse":
            raise SpecError(src, "exercise.target", "a target only goes with loss mse")
        from symblock.engine.spec import parse_matrix
        n, d = trace["output"].value.shape
        target = parse_matrix(ex["target"], (n, d), src, "exercise.target")
    elif loss == "mse" and trace.spec.seed is not None:
        target = drawn_target(trace.spec.seed, trace["output"].value.shape)
    back = grad.backward(trace.spec, loss, list(dict.fromkeys(wrt)), target=target, trace=trace)
    ask = [g.name for g in back.steps] + [g.name for g in back.wrt.values() if g.of not in trace
                                          and not (g.of == "X" and "x" in live_names(back))]
    live = {g.of for g in back.steps}
    reads: set[str] = set()
    if loss == "mse":
        reads.add("output")
    for g in back.steps:
        for c in consumers(trace, g.of, live):
            reads.update(backward_reads(trace, c, g.of))
    for g in back.wrt.values():
        if g.of not in trace:
            for c in consumers(trace, g.of, live):
                reads.update(backward_reads(trace, c, g.of))
    data_steps = tuple(n for n in trace.names() if n in reads)
    data_params = tuple(p for p in trace.params if p in reads)
    from symblock.engine.matrix import Mat
    tmat = None
    if loss == "mse":
        tmat = Mat.from_sympy(target) if target is not None else grad.zeros(*trace["output"].value.shape)
    return with_points(Exercise(tuple(ask), data_steps, data_params, backward=back, target=tmat),
                       ex.get("points"), src, trace)


def drawn_target(seed: int, shape: tuple[int, int]):
    """The default mse target: integers drawn from the spec's seed, so each variant's gradients
    differ (dL/dY = 2 (Y − T) / (n·d))."""
    import sympy
    from symblock.exercises.draws import ints
    n, d = shape
    return sympy.ImmutableMatrix(n, d, ints(seed, "exercise.target", n * d, *TARGET_RANGE))


def live_names(back) -> set[str]:
    return {g.of for g in back.steps}


def consumers(trace, name: str, live: set[str]) -> list:
    """The live steps that read `name` (a step or parameter): dL/d`name` flows back from them."""
    return [s for s in trace if s.name in live and name in s.inputs]


def backward_reads(trace, step, target: str) -> list[str]:
    """The forward values `step`'s backward rule (grad.py) reads to pass dL/d`step` on to `target`."""
    from symblock.calculus.grad import step_kind
    kind = step_kind(step.name, trace.spec)
    ins = list(step.inputs)
    if kind in ("identity", "residual", "concat", "masked", "scaled", "mean"):
        return []
    if kind in ("softmax", "root"):
        return [step.name]
    if kind == "linear":
        src, w, b = ins
        return [w] if target == src else [src] if target == w else []
    if kind in ("activation", "gated"):
        return ins  # Z (and the gate G)
    if kind in ("scores", "head_out"):
        return [i for i in ins if i != target]
    return [i for i in ins if i != target or kind in ("var", "ms")]  # norms: x, μ, σ / r, γ


# ---------------------------------------------------------------- how long it takes by hand

# The cost model: a person writes one answer cell in about 10 s (read the inputs, round, write), does
# one multiply-add of small numbers in about 4 s, and one e^x, square root, erf or tanh on a basic
# calculator in about 20 s. Causal masks are honoured (masked scores are not computed).
SECONDS = {"cell": 10, "madd": 4, "special": 20}


@dataclass(frozen=True)
class Estimate:
    cells: int        # answer cells the student writes
    madds: int        # multiply-adds (additions and subtractions count as one)
    specials: int     # exponentials, square roots, erf / tanh
    per_step: tuple   # (step, cells, madds, specials) for each asked step

    @property
    def minutes(self) -> int:
        s = self.cells * SECONDS["cell"] + self.madds * SECONDS["madd"] + self.specials * SECONDS["special"]
        return -(-s // 60)

    def text(self) -> str:
        return (f"about {self.minutes} min ({self.cells} answer cells, {self.madds} multiply-adds, "
                f"{self.specials} exponentials / roots)")


def estimate(trace, exercise: Exercise) -> Estimate:
    """The time a person needs for the asked steps, by the cost model above (SECONDS)."""
    rows = []
    for name in exercise.ask:
        if names.parse(name).grad:
            cells, madds, specials = _grad_cost(trace, exercise, name)
        else:
            cells, (madds, specials) = _cells(trace[name].value), _forward_cost(trace, trace[name])
        rows.append((name, cells, madds, specials))
    return Estimate(sum(r[1] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows), tuple(rows))


def _cells(m) -> int:
    r, c = m.shape
    return r * c


def _live(m) -> list[int]:
    from symblock.engine import exact
    return [sum(e is not exact.NEG_INF for e in row) for row in m.rows]


def _forward_cost(trace, step) -> tuple[int, int]:
    """(multiply-adds, specials) of working one forward step from its inputs."""
    from symblock.calculus.grad import step_kind
    spec, v = trace.spec, step.value
    n, m = v.shape
    try:
        kind = step_kind(step.name, spec)
    except KeyError:
        return n * m, 0   # e.g. a dropout mask applied: one multiply per entry
    if kind == "side":
        return _tile_cost(trace, step)
    ins = [trace[i].value if i in trace else trace.params.get(i) for i in step.inputs]
    if kind == "linear":
        k = ins[0].shape[1]
        return n * m * k + (n * m if len(step.inputs) > 2 and step.inputs[2] in trace.params else 0), 0
    if kind in ("scores", "head_out"):
        from symblock.engine import names
        live = _live(trace[names.parse(step.name).head_step("weights")].value)  # causal: the masked entries are not worked
        return sum(live) * spec.dims.d_head, 0  # a dot product of length d_k (d_v) per live entry
    if kind == "scaled":
        from symblock.engine import names
        return sum(_live(trace[names.parse(step.name).head_step("weights")].value)), 0
    if kind == "softmax":
        live = sum(_live(ins[0]))
        return 2 * live, live
    if kind == "rope":    # x_a cos − x_b sin: two products and a sum per entry (cos, sin are given)
        return 2 * n * m, 0
    if kind in ("mean", "residual"):
        return n * (ins[0].shape[1] if kind == "mean" else m), 0
    if kind in ("var", "ms"):
        return 2 * n * ins[0].shape[1], 0
    if kind == "root":
        return n, n
    if kind in ("layernorm", "rmsnorm"):
        return 3 * n * m, 0
    if kind in ("activation", "gated"):
        smooth = spec.options.activation not in ("relu",)
        return (2 * n * m if smooth else 0) + (n * m if kind == "gated" else 0), n * m if smooth else 0
    return 0, 0  # identity, concat, masked: copying


def _tile_cost(trace, step) -> tuple[int, int]:
    """(multiply-adds, specials) of one tile step: a comparison per score read; the sum's e^(s − m)
    per live key and one rescaling e^(m_old − m_new) per row from the second tile (the accumulator
    reuses them: a multiply-add per value entry); the tiled result a division per entry."""
    from symblock.engine import exact
    from symblock.engine.tiles import key_blocks
    p = names.parse(step.name)
    n, d_v = trace.spec.dims.seq_len, trace.spec.dims.d_v
    if p.tile is None:
        return n * d_v, 0
    keys = key_blocks(n, trace.spec.options.attention_tiles)[p.tile]
    s = next(trace[i].value for i in step.inputs if names.parse(i).kind in ("scores", "scaled", "masked"))
    live = sum(s.rows[i][k] is not exact.NEG_INF for i in range(n) for k in keys)
    rescale = n if p.tile else 0
    if p.kind == "tile_max":
        return n * len(keys), 0
    if p.kind == "tile_sum":
        return live + rescale, live + rescale
    return (live + rescale) * d_v, 0


def _grad_cost(trace, exercise: Exercise, name: str) -> tuple[int, int, int]:
    """A gradient step costs what its consumers' forward products cost (the transposed products
    have as many multiply-adds), without their specials (their values are read off the data)."""
    of, live = name[5:], {g.of for g in exercise.backward.steps}   # dL/d`of`
    cells = _cells(exercise.answer(trace, name))
    users = consumers(trace, of, live)
    madds = sum(_forward_cost(trace, s)[0] for s in users) if users else cells
    return cells, madds, 0
