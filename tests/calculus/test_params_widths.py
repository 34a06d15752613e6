"""Parameter counts with per-head widths d_k, d_v (issue 15), against torch modules' numel and
the exact engine's parameter shapes for the same spec."""
import pytest
import torch

from symblock.calculus.params import count
from symblock.cli import main
from symblock.engine import spec


@pytest.mark.parametrize("d, h, k, v, bias", [(3, 1, 2, 2, True), (4, 2, 3, 1, False), (3, 2, 2, 3, True)])
def test_attention_counts_are_the_projections_numel(d, h, k, v, bias):
    c = count(d, h, 5, bias=bias, d_k=k, d_v=v, seq_len=7)
    lins = [torch.nn.Linear(d, h * k, bias=bias), torch.nn.Linear(d, h * k, bias=bias),
            torch.nn.Linear(d, h * v, bias=bias), torch.nn.Linear(h * v, d, bias=bias)]
    assert c.attention == sum(p.numel() for m in lins for p in m.parameters())
    assert c.formula("attention").value(c.env) == c.attention
    assert str(c.formula("W_O")) == "h·v·d" and c.to_dict()["config"]["d_k"] == k
    # FLOPs: 2 per multiply-add of x W_Q, x W_K, x W_V, O W_O, Q Kᵀ and P V, per token
    flops = {f.name: f.count for f in c.flops}
    assert flops["attention_proj"] == 2 * (2 * d * h * k + 2 * d * h * v)
    assert flops["attention_scores"] == 2 * 7 * h * k and flops["attention_values"] == 2 * 7 * h * v
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": d, "d_ff": 5, "heads": h, "d_k": k, "d_v": v},
                           "block": {"bias": bias}, "random": {"seed": 1}})
    shapes = {p.name: p.shape for p in c.params}
    assert all(shapes[n] == s.params[n].shape for n in s.params if not n.startswith("ln"))


def test_default_widths_print_as_before():
    assert str(count(32, 4, 128).formula("attention")) == "4·d² + 4·d"
    assert count(32, 4, 128, d_k=8, d_v=8).attention == count(32, 4, 128).attention


def test_cli_takes_d_k_and_d_v(capsys):
    assert main(["params", "--d-model", "3", "--heads", "1", "--d-k", "2", "--d-v", "2", "--d-ff", "4"]) == 0
    out = capsys.readouterr().out
    assert "k = d_k = 2" in out and "d·h·k" in out
    assert main(["params", "--d-model", "3", "--heads", "2", "--d-k", "2"]) == 2
    assert "give both d_k and d_v" in capsys.readouterr().err
