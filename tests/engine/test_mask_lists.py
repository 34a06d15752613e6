"""A mask given as a list (key, memory and source padding) is refused saying what is wrong with it:
its length against what it has one entry per, the index and value of an entry that is not true or
false, a whole row masked; the field is named as the spec writes it, in a block or a model."""
from __future__ import annotations

import pytest

from symblock.engine import model_spec
from symblock.engine.spec import read_spec
from symblock.errors import SpecError


def bert(**m):
    data, _ = read_spec("tiny-bert")
    return model_spec.from_mapping({**data, "model": {**data["model"], **m}}, "bert.yaml")


@pytest.mark.parametrize("mask, where, says", [
    ([False, False, 0, True], "model.key_padding_mask[2]",
     "expected true or false (true = a padding key), got 0 (write true or false, not 1 or 0)"),
    ([False, True], "model.key_padding_mask", "expected 4 entries, one per key position, got 2 entries"),
    ([False], "model.key_padding_mask", "expected 4 entries, one per key position, got 1 entry"),
    ("yes", "model.key_padding_mask",
     "expected a list of 4 booleans, one per key position (true = a padding key), got the text 'yes'"),
    ([True] * 4, "model.key_padding_mask", "every key is padding"),
])
def test_an_encoders_padding_mask_says_what_is_wrong(mask, where, says):
    with pytest.raises(SpecError) as e:
        bert(key_padding_mask=mask)
    assert e.value.where == where and e.value.message.startswith(says), e.value


def test_an_empty_prompt_is_called_empty():
    with pytest.raises(SpecError) as e:
        bert(prompt=[], key_padding_mask=[])
    assert e.value.where == "model.prompt" and e.value.message.endswith("got an empty list")


def test_the_author_sees_one_line_and_exit_2(cli, spec_file):
    path = spec_file("dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}\nblock: {cross_attention: true}\n"
                     "inputs:\n  X: [[1, 0], [0, 1]]\n  memory: [[1, 1], [2, 0], [0, 3]]\n"
                     "  memory_padding_mask: [false, true]\nrandom: {seed: 1}\n")
    code, out, err = cli("forward", path)
    assert code == 2 and "Traceback" not in err
    assert err.strip() == (f"symblock: error: {path}: inputs.memory_padding_mask: expected 3 entries, one per "
                           "memory row, got 2 entries")
