"""Convention lines say one thing or several as English says it: "key 3 is padding; its column",
"keys 3, 4 are padding; their columns", "memory row 3 is padding", "token 4 is padding", "K and V
have one head, read by all 2 query heads" (they said "key(s) 3 are", "1 head(s)"); a batch lists
its padding keys per sequence; RoPE's pair columns say they count from 0. A version-1 sheet keeps
its words byte for byte."""
from __future__ import annotations

import pytest

from symblock.engine import block, spec
from symblock.engine.model import forward_any
from symblock.exercises import variant
from symblock.exercises.generate import load
from symblock.sheets.worksheet import documents


def key_of(source, lang="en") -> str:
    trace = forward_any(load(source, allow_model=True))
    return documents(variant.build("t", trace), formats=["markdown"], lang=lang).files["key.md"]


def padded_block(mask) -> str:
    data = {"title": "padding", "dims": {"seq_len": 4, "d_model": 3, "d_ff": 2, "heads": 1},
            "block": {"attention_scale": "none"}, "inputs": {"X": [[1, 0, 1], [0, 2, 1], [1, 1, 0], [2, 0, 1]],
                                                            "key_padding_mask": mask},
            "random": {"seed": 3, "low": -1, "high": 1}}
    trace = block.forward(spec.from_mapping(data))
    return documents(variant.build("t", trace), formats=["markdown"]).files["key.md"]


def test_one_padded_key_and_two():
    one = padded_block([False, False, False, True])
    assert "Padding mask: key 4 is padding; its column is set to $-\\infty$ before the softmax, so no query " \
           "attends to it (weight $0$)." in one
    two = padded_block([False, False, True, True])
    assert "Padding mask: keys 3, 4 are padding; their columns are set to" in two
    assert "(s)" not in one + two


def test_a_batch_lists_its_padding_keys_per_sequence():
    key = key_of("padding-batch")
    assert "Padding mask, the padding keys of each sequence: b0: —; b1: 3; their columns" in key
    assert "(s)" not in key


@pytest.mark.parametrize("example, said", [
    ("decoder-layer", "; memory row 3 is padding: its column is set to $-\\infty$ before the softmax."),
    ("tiny-bert", "Padding: token 4 is padding; its key column is set to $-\\infty$ before the softmax, so no "
                  "token attends to it. Its own row is still computed."),
    ("rope-gqa", "Grouped K/V heads: $K$ and $V$ have one head, read by all 2 query heads; query head $h$ reads"),
])
def test_a_single_thing_is_said_in_the_singular(example, said):
    key = key_of(example)
    assert said in key and "(s)" not in key


def test_chinese_says_it_of_one_head_too():
    assert "$K$、$V$ 只有 1 个头，由全部 2 个查询头共用" in key_of("rope-gqa", "zh")
    assert "softmax 之前把它的键所在的列设为" in key_of("tiny-bert", "zh")


def test_version_1_keeps_its_words(tmp_path):
    text = spec.example_text("decoder-layer").replace("random: {seed: 5, low: -1, high: 1}",
                                                      "random: {seed: 5, low: -1, high: 1, generator: 1}")
    path = tmp_path / "v1.yaml"
    path.write_text(text)
    key = key_of(str(path))
    assert "; memory row(s) 3 are padding: their columns are set to $-\\infty$ before the softmax" in key


def test_rope_says_its_pair_columns_are_counted_from_0():
    """The pair (i, i + d_k/2) counts columns from 0, as i does, while the rest of the sheet (and the
    worked rows: "the pairs of columns (counted from 1 within the head) are (1, 2)") counts from 1."""
    key = key_of("rope-gqa")
    assert "is the columns $(i,\\ i + d_k/2)$ of the head (its columns counted from 0, as $i$ is), and at" in key
    assert "（该头的列从 0 数起，与 $i$ 相同）" in key_of("rope-gqa", "zh")



def test_version_1_keeps_its_rope_words(tmp_path):
    path = tmp_path / "v1.yaml"
    path.write_text(spec.example_text("rope-gqa").replace("random: {seed: 5, low: -1, high: 1}",
                                                          "random: {seed: 5, low: -1, high: 1, generator: 1}"))
    key = key_of(str(path))
    assert "is the columns $(i,\\ i + d_k/2)$ of the head, and at position" in key
    assert "$K$ and $V$ have 1 head(s), each read by 2 query heads" in key
