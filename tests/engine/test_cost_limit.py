"""The exact engine's size limit has one mechanism: `cost.limit(n)` sets it for a block of code
(the CLI's --max-cost does the same), and no function takes it as an argument."""
from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from symblock.engine import block, cost, model, spec
from symblock.errors import SpecError
from symblock.exercises import generate

ROOT = Path(__file__).resolve().parents[2] / "symblock"


def test_no_function_takes_a_max_cost_parameter():
    found = []
    for p in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
                if "max_cost" in names:
                    found.append(f"{p.relative_to(ROOT.parent)}:{node.lineno}")
    assert not found, "the limit is cost.limit(n)'s, not a parameter: " + ", ".join(found)


def test_a_limit_set_for_a_block_of_code_refuses_loads_and_forwards_over_it():
    data, source = spec.read_spec("pre-ln-causal-gelu")
    s = spec.from_mapping(data, source)
    need = cost.cost(s.dims, s.options)
    with cost.limit(need - 1):
        with pytest.raises(SpecError, match=f"limit of {need - 1:,}") as e:
            spec.from_mapping(data, source)
        assert e.value.field == "dims"
        with pytest.raises(SpecError, match="exact operations"):
            block.forward(s)
        with cost.limit(need):  # an inner block raises it, and gives the outer limit back
            assert "output" in block.forward(s)
        with pytest.raises(SpecError):
            block.forward(s)
    assert cost.current_limit() == cost.MAX_COST  # nothing left set after the block
    with cost.limit(None):  # None: the limit in force stays
        assert cost.current_limit() == cost.MAX_COST


def test_a_model_is_sized_as_a_whole_under_the_limit_in_force():
    s = generate.load("tiny-gpt", allow_model=True)
    need = model.cost(s)
    with cost.limit(need - 1), pytest.raises(SpecError, match=f"limit of {need - 1:,}"):
        model.forward(s)
    with cost.limit(need):  # its layers, each under it, are not refused one by one
        assert "next_token" in model.forward(s)
    with cost.limit(math.inf):
        assert cost.current_limit() == math.inf


def test_the_generator_buys_as_many_forwards_as_the_limit_in_force_pays_for():
    c = generate.Constraints(max_draws=20000, score_range=(100, 101))
    dims, opts = spec.Dims(seq_len=4, d_model=8, d_ff=8, heads=1), spec.Options()
    per_forward = cost.cost(dims, opts)
    with cost.limit(3 * per_forward):
        assert generate.draw_limits(c, dims, opts, ["W_Q", "W_K"], True, set())[1] == 3
    with cost.limit(per_forward // 2):  # never fewer than one
        assert generate.draw_limits(c, dims, opts, ["W_Q", "W_K"], True, set())[1] == 1


def test_a_graph_built_within_kept_leaves_the_collectors_sight_until_the_block_ends():
    import gc
    s = spec.from_mapping(*spec.read_spec("pre-ln-causal-gelu"))
    assert gc.get_freeze_count() == 0
    block.forward(s)
    assert gc.get_freeze_count() == 0          # a library call freezes nothing
    with cost.kept():
        trace = block.forward(s)
        assert gc.get_freeze_count() > 0       # the graph just built (and all before it) is frozen
        assert gc.isenabled()                  # the collector runs again for whatever comes next
        del trace
    assert gc.get_freeze_count() == 0          # given back: nothing left uncollectable


def test_the_command_line_runs_a_command_within_kept(monkeypatch, capsys):
    import contextlib
    import gc
    from symblock import cli
    seen, real = [], cost.acyclic

    @contextlib.contextmanager
    def watched():
        with real():
            yield
        seen.append(gc.get_freeze_count())   # after the forward's graph was built

    monkeypatch.setattr(cost, "acyclic", watched)
    assert cli.main(["forward", "pre-ln-causal-gelu"]) == 0
    assert seen and min(seen) > 0 and gc.get_freeze_count() == 0
