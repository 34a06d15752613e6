"""A block with the online softmax over key tiles on a worksheet: the presets ask the ordinary
steps (the tiles are proved equal to the head's out, and sheets do not work them yet), and
asking a tile step is a clear error, not a crash."""
from __future__ import annotations

import pytest

from symblock.cli import main
from symblock.engine import block, spec
from symblock.errors import SpecError
from symblock.exercises.presets import choose


def test_the_presets_leave_the_tiles_out_and_ask_the_heads_out():
    trace = block.forward(spec.load("tiled-attention"))
    assert "attn.h0.tile1.acc" in trace
    for preset in ("full", "attention"):
        ask = choose(trace, preset).ask
        assert "attn.h0.out" in ask and not any("tile" in n for n in ask), preset


def test_asking_a_tile_step_is_a_clear_error(tmp_path, capsys):
    data, src = spec.read_spec("tiled-attention")
    sp = spec.from_mapping({**data, "exercise": {"ask": ["attn.h0.tile0.sum"]}}, src)
    with pytest.raises(SpecError, match="online softmax over key tiles") as e:
        choose(block.forward(sp))
    assert e.value.where == "exercise.ask[0]"
    import json
    path = tmp_path / "ask-tile.json"
    path.write_text(json.dumps({**data, "exercise": {"ask": ["attn.h0.tiled"]}}), encoding="utf-8")
    assert main(["worksheet", str(path), "--out", str(tmp_path / "w")]) == 2
    assert "exercise.ask[0]: attn.h0.tiled is a step of the online softmax" in capsys.readouterr().err
