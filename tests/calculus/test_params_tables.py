"""`symblock params` prints a model's count as it prints a block's: a title line naming what is
counted, column titles over rules, one row per component with its share, the total; and a count
of one K/V head says "1 K/V head"."""
from __future__ import annotations

import pytest


def table(cli, *argv) -> list[str]:
    code, out, err = cli("params", *argv)
    assert code == 0 and err == ""
    return out.rstrip("\n").splitlines()


def columns(lines):
    assert lines[1] == "" and lines[2].split() == ["parameters", "formula", "count", "share"]
    assert set(lines[3].replace(" ", "")) == {"-"}   # a rule under each column title
    return {line[:20].strip(): line.split()[-2:] for line in lines[4:]}


@pytest.mark.parametrize("argv, title, rows", [
    # tiny-translate: nn.Transformer(4, 2, 1, 1, 8, bias=False) with an 8-token table: 32 + 136 + 204 + 8 = 380
    (["tiny-translate"], "Encoder-decoder (nn.Transformer): vocab = 8, 1 encoder layer and 1 decoder layer, "
     "d = d_model = 4, heads = 2 (d_head = 2), f = d_ff = 8",
     {"token embedding W_E": ["32", "8.42%"], "1 encoder layer": ["136", "35.79%"],
      "1 decoder layer": ["204", "53.68%"], "total": ["380", "100.00%"]}),
    # tiny-bert: 6·4 + 4·4 + 2·4 + 136 = 184
    (["tiny-bert"], "Encoder model (BERT-like): vocab = 6, 1 layer, d = d_model = 4, heads = 1 (d_head = 4), "
     "f = d_ff = 4", {"token embedding W_E": ["24", "13.04%"], "1 block": ["136", "73.91%"],
                      "total": ["184", "100.00%"]}),
])
def test_a_models_table_has_a_title_and_column_titles(cli, argv, title, rows):
    lines = table(cli, *argv)
    assert lines[0] == title
    got = columns(lines)
    assert {k: got[k] for k in rows} == rows


def test_one_kv_head_is_singular_in_the_model_and_the_block(cli):
    lines = table(cli, "tiny-llama")   # 2 query heads over 1 K/V head, 2 layers of d_k = d_v = 2
    assert "g = 1 K/V head)" in lines[0] and lines[0].startswith("Decoder model (GPT-like): vocab = 5, 2 layers")
    assert lines[-1].startswith("KV cache per token over 2 layers: L·g·(k + v) = 2·1·(2 + 2) = 8 entries "
                                "(K and V rows of 1 K/V head);")
    block = table(cli, "--d-model", "8", "--heads", "4", "--kv-heads", "1")
    assert "; g = 1 K/V head)" in block[0] and "(K and V rows of 1 K/V head)" in block[-1]
    two = table(cli, "--d-model", "8", "--heads", "4", "--kv-heads", "2")
    assert "; g = 2 K/V heads)" in two[0] and "(K and V rows of 2 K/V heads)" in two[-1]
