"""Spec and manifest files are parsed on libyaml's C parser where PyYAML has it: the data must be
exactly the pure-Python loader's (decimals as written, whole numbers bounded, duplicate keys
refused), and every error must read as the pure-Python parser says it, on every machine."""
from __future__ import annotations

from decimal import Decimal

import pytest
import yaml

from symblock.engine import files
from symblock.errors import SpecError

TEXT = """\
dims: {seq_len: 2, d_model: 2}
weights: {W_1: [[1.10, -0.5], [2, 3e-2]], b_1: [.5, 1_000]}
title: {en: "x", zh: "块"}
given: {attn.out: [[0.1000000000000000055511151231257827, 1], [2, 3]]}
"""


def test_the_c_parser_is_used_and_builds_the_same_data():
    assert yaml.__with_libyaml__ and files.FAST_LOADER is not files.ExactLoader   # CI's PyYAML has libyaml
    fast = files.parse(TEXT, "s.yaml", json_syntax=False)
    assert fast == yaml.load(TEXT, Loader=files.ExactLoader)
    assert fast["weights"]["W_1"][0][0] == Decimal("1.10") and str(fast["weights"]["W_1"][0][0]) == "1.10"
    assert fast["given"]["attn.out"][0][0] == Decimal("0.1000000000000000055511151231257827")


@pytest.mark.parametrize("text, says", [
    ("a: 1\na: 2\n", "the key 'a' appears twice in one mapping (lines 1 and 2)"),
    ("a: [1, 2\nb: 3\n", "malformed YAML"),
    ("a: " + "9" * 1001 + "\n", "a whole number of more than 1000 digits"),
])
def test_refusals_read_the_same_on_either_parser(text, says, monkeypatch):
    with pytest.raises(SpecError) as fast:
        files.parse(text, "s.yaml", json_syntax=False)
    monkeypatch.setattr(files, "FAST_LOADER", files.ExactLoader)
    with pytest.raises(SpecError) as pure:
        files.parse(text, "s.yaml", json_syntax=False)
    assert str(fast.value) == str(pure.value) and says in str(fast.value)
