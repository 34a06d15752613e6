"""Exact values at the size of a real model. The construction precision (balls.PREC) holds 30 certified digits through a deep graph: a
3-layer model's every entry prints its 30 digits from the ball it was built with. At 128 bits a
third of them (1,699 of 4,808 here) were refined to 512 bits, each with its whole subgraph, which
took as long as the forward itself at d_model 64 (bench/README_scaling.md)."""
from __future__ import annotations

from symblock.engine import balls, exact, model, model_spec


def test_a_three_layer_models_30_digits_need_no_refinement(monkeypatch):
    s = model_spec.from_mapping({
        "model": {"vocab": [f"t{i}" for i in range(16)], "positions": "learned", "layers": 3,
                  "head": "tied", "final_norm": True, "prompt": [f"t{i}" for i in range(6)],
                  "generate": 1, "kv_cache": True},
        "dims": {"d_model": 8, "d_ff": 16, "heads": 2},
        "block": {"norm_position": "pre", "norm": "rmsnorm", "eps": "1/100000",
                  "activation": "swiglu", "attention_scale": "sqrt_dk"},
        "random": {"seed": 2, "low": -2, "high": 2}}, "test")
    trace = model.forward(s)
    refined = []
    real = balls.with_prec
    monkeypatch.setattr(exact, "with_prec", lambda prec, *a: refined.append(prec) or real(prec, *a))
    entries = [e for step in trace for row in step.value.rows for e in row if e is not exact.NEG_INF]
    for e in entries:
        e.digits(30)
    assert len(entries) > 4000 and refined == []


def test_drawn_small_integer_weights_are_shared_values():
    """A model's weights in −2..2 are five shared exact values, not an object each (27 MB of a
    CS336-size model); sharing never changes a value: 2 stays 2 whatever it was read from."""
    from fractions import Fraction

    from symblock.engine import spec
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 8, "d_ff": 16, "heads": 2},
                           "random": {"seed": 1, "low": -2, "high": 2}}, "test")
    from symblock.engine import block
    w = block.forward(s).params["W_1"]
    values = {id(e) for row in w.rows for e in row}
    assert len(w.rows) * len(w.rows[0]) == 128 and len(values) <= 5
    assert exact.real(2) is exact.real(Fraction(2, 1)) is exact.real(Fraction(4, 2))
    assert exact.real(17) is not exact.real(17) and exact.real(17).q == 17 and exact.real(-16).q == -16
