"""Decoder worksheets (a model spec, the decoder preset): the tasks a sheet asks, every worked
line of the key true of the numbers it prints (worked_lines.py reads them back with floats,
independently of symblock), the formats that carry it, and the errors for those that don't."""
from __future__ import annotations

from symblock.exercises import variant

import sys
from pathlib import Path

import numpy as np
import pytest

from symblock.cli import main
from symblock.sheets.worksheet import documents

sys.path.insert(0, str(Path(__file__).parent))
from worked_lines import check_key  # noqa: E402

SPEC = "tiny-decoder"


def drawn(n: int):
    return [(v.ident, v.spec, v.trace) for v in variant.draw_set(SPEC, n, 1)]


@pytest.fixture(scope="module")
def three():
    return drawn(3)


def test_the_sheet_asks_one_cached_step_to_the_next_token(three):
    ident, spec, trace = three[0]
    ex = variant.build(ident, trace).exercise
    assert ex.ask[:3] == ("gen1.embed", "gen1.pos", "gen1.x")
    assert ex.ask[-3:] == ("gen1.logits", "gen1.probs", "gen1.next_token")
    for name in ("gen1.layer0.cache.k", "gen1.layer0.cache.v", "gen1.layer0.cache.reused",
                 "gen1.layer0.attn.h0.scores", "gen1.layer0.attn.h0.weights", "gen1.layer0.norm2"):
        assert name in ex.ask
    # the data: the weights and the prompt's cached K/V, nothing of the new row
    assert set(ex.data_steps) == {"layer0.attn.k", "layer0.attn.v"}
    assert {"W_E", "W_P", "layer0.W_Q", "layer0.W_K", "layer0.W_V"} <= set(ex.data_params)
    assert ex.extra["gen1.layer0.cache.reused"].shape == (1, 3)
    assert [float(e) for e in ex.extra["gen1.layer0.cache.reused"].rows[0]] == [1, 1, 0]
    assert all(trace[n].value.shape[0] == 1 for n in ex.ask if n in trace and ".cache." not in n)


def test_variants_differ_and_are_hand_workable(three):
    weights = set()
    for ident, spec, trace in three:
        row = [float(e) for e in trace["gen1.layer0.attn.h0.scaled"].value.rows[0]]
        assert max(abs(v) for v in row) <= 3 and len(set(row)) == len(row)
        w = [float(e) for e in trace["gen1.layer0.attn.h0.weights"].value.rows[0]]
        assert 0.02 <= min(w) and max(w) <= 0.9
        weights.add(tuple(np.round(w, 6)))
    assert len(weights) == 3


def test_every_worked_line_of_decoder_keys_follows_from_its_numbers(three):
    total, errors = 0, []
    for ident, _, trace in three:
        key = documents(variant.build(ident, trace), formats=["markdown"]).files["key.md"]
        n, errs = check_key(key, ident)
        total += n
        errors += errs
        assert r"Rows $1$ and $2$ of $K_{\text{cache}}$ were" in key
    assert not errors, "\n".join(errors[:10])
    assert total > 60


@pytest.mark.slow
def test_every_worked_line_of_a_30_variant_decoder_set_follows_from_its_numbers():
    errors, total = [], 0
    for ident, _, trace in drawn(30):
        n, errs = check_key(documents(variant.build(ident, trace), formats=["markdown"]).files["key.md"], ident)
        total, errors = total + n, errors + errs
    assert not errors, f"{len(errors)} wrong lines:\n" + "\n".join(errors[:10])
    assert total > 600


def test_the_key_names_the_token_and_the_sheet_hides_it(three):
    ident, spec, trace = three[0]
    docs = documents(variant.build(ident, trace), formats=["latex", "markdown"]).files
    tok = spec.vocab[int(float(trace["gen1.next_token"].value.rows[0][0]))]
    assert f"\\text{{“{tok}”}}" in docs["key.md"].split("gen1.next_token")[-1]
    sheet = docs["sheet.md"]
    assert "gen1.layer0.output" not in sheet      # the layer's output is asked (as norm2), never given
    assert "W_P[\\text{the token's position}]" in sheet
    task = sheet.split("`gen1.next_token`")[1]
    assert tok not in task and "\\arg\\max_j \\ell_j" in task   # the formula does not give it away


@pytest.mark.parametrize("fmt", ["html", "moodle", "qti"])
def test_web_and_lms_formats_carry_the_decoder_sheet(tmp_path, capsys, fmt):
    assert main(["worksheet", SPEC, "--out", str(tmp_path / fmt), "--format", fmt]) == 0
    written = capsys.readouterr().out
    assert written.strip()


def test_the_notebook_is_refused_by_name(tmp_path, capsys):
    assert main(["worksheet", SPEC, "--out", str(tmp_path / "nb"), "--format", "ipynb"]) == 2
    err = capsys.readouterr().err
    assert "--format ipynb" in err and "decoder" in err and not (tmp_path / "nb").exists()


def test_a_block_spec_cannot_take_the_decoder_preset(tmp_path, capsys):
    assert main(["worksheet", "seed-post-ln", "--preset", "decoder", "--out", str(tmp_path / "x")]) == 2
    assert "model spec" in capsys.readouterr().err


def test_a_model_spec_takes_no_block_preset(tmp_path, capsys):
    assert main(["worksheet", SPEC, "--preset", "attention", "--out", str(tmp_path / "x")]) == 2
    assert "decoder" in capsys.readouterr().err


def test_the_set_compiles_and_regenerates_by_id(tmp_path, capsys):
    out = tmp_path / "set"
    assert main(["worksheet", SPEC, "--variants", "2", "--seed", "1", "--out", str(out), "--allow-repeats"]) == 0
    ident = sorted(p.name for p in (out / "students").iterdir() if p.is_dir())[0]
    assert main(["worksheet", "--id", ident, "--out", str(tmp_path / "again")]) == 0
    capsys.readouterr()
    assert (tmp_path / "again" / "key.tex").read_bytes() == (out / "instructor" / ident / "key.tex").read_bytes()


def test_a_two_layer_model_key_is_worked_true_too():
    """tiny-gpt: Pre-LN, two heads (concat, W_O), two layers, a final norm, vocab 5."""
    from symblock import forward, load
    trace = forward(load("tiny-gpt"))
    docs = documents(variant.build("tiny-gpt", trace), formats=["markdown", "latex"]).files
    n, errors = check_key(docs["key.md"], "tiny-gpt")
    assert not errors, "\n".join(errors[:10])
    assert n > 60
    for name in ("gen1.layer1.cache.reused", "gen1.layer0.attn.concat", "gen1.norm_final", "gen1.layer1.attn.out"):
        assert f"`{name}`" in docs["sheet.md"]
    assert "{W^{Q}}^{[1]}" in docs["sheet.tex"]      # the second layer's weights are told apart


def test_the_decoder_sheet_is_the_block_sheets_dict(three):
    """One sheet dict for both forms: a zh decoder sheet is titled in Chinese (the spec's
    `title: {en, zh}`), and carries the `marking` a checker reads, as a block's sheet does."""
    from symblock.engine import block, spec as specmod
    from symblock.sheets import sheet
    ident, spec, trace = three[0]
    v = variant.build(ident, trace)
    ex = v.exercise
    zh = sheet.build(v, lang="zh")
    assert zh["title"] == "使用 KV 缓存的一步解码" and spec.titles["zh"] == zh["title"]
    assert sheet.build(v, lang="en")["title"] == "One decoding step with a KV cache"
    assert zh["marking"] == {"ask": list(ex.ask), "loss": None, "wrt": None}
    assert zh["total"] is None                      # no points section: no total line, as for a block
    btrace = block.forward(specmod.load("seed-post-ln"))
    assert set(zh) == set(sheet.build(variant.build("seed-post-ln", btrace)))
    md = documents(v, formats=["markdown"], lang="zh").files["sheet.md"]
    assert "使用 KV 缓存的一步解码" in md and "One decoding step" not in md


def test_special_tokens_print_with_angle_brackets_never_raw_html(tmp_path, capsys):
    """`<s>` and `</s>` as a vocabulary's tokens: shown ⟨s⟩ and ⟨/s⟩ (math angle brackets), never as a
    `<s>` tag a Markdown reader would swallow, and not as `?s?`."""
    from symblock.sheets.work_model import token_tex
    assert token_tex("<s>") == r"\text{“}\langle\text{s}\rangle\text{”}"
    assert token_tex("</s>") == r"\text{“}\langle\text{/s}\rangle\text{”}"
    assert token_tex("a$b") == r"\text{“a?b”}"          # other characters stay a plain ?
    assert main(["worksheet", "tiny-translate", "--out", str(tmp_path / "ws")]) == 0
    sheet = (tmp_path / "ws" / "sheet.md").read_text(encoding="utf-8")
    assert r"\langle\text{s}\rangle" in sheet and "<s" not in sheet and "?s?" not in sheet


@pytest.mark.parametrize("prompt, formula, reused", [
    (["the"], r"K_{\text{cache}} = \left[K_{1\cdot};\ K_{2\cdot}\right]", r"Row $1$ of $K_{\text{cache}}$ was computed"),
    (["the", "cat"], r"\left[K_{1\cdot};\ K_{2\cdot};\ K_{3\cdot}\right]", r"Rows $1$ and $2$ of $K_{\text{cache}}$ were"),
    (["the", "cat", "sat", "mat"], r"\left[K_{1\cdot};\ \dots;\ K_{5\cdot}\right]", r"Rows $1, \dots, 4$ of"),
])
def test_the_reused_rows_are_named_as_many_as_there_are(tmp_path, prompt, formula, reused):
    """A one-token prompt read "Rows 1, …, 1 of K_cache were computed" and "[K_1; …; K_2]"."""
    import yaml
    from symblock.engine.spec import example_text
    data = yaml.safe_load(example_text("tiny-decoder"))
    data["model"]["prompt"] = prompt
    data["model"]["generate"] = 1
    spec = tmp_path / "m.yaml"
    spec.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert main(["worksheet", str(spec), "--format", "markdown", "--out", str(tmp_path / "ws")]) == 0
    key = (tmp_path / "ws" / "key.md").read_text(encoding="utf-8")
    assert formula in key and reused in key, key.split("cache.reused")[1][:600]
    assert "1, \\dots, 1" not in key and "first 1 rows" not in key



def test_the_cross_attention_output_says_the_padded_memory_row_is_weighed_0(cli, tmp_path):
    """decoder-layer's third memory row is padding: its weight is 0, so 'mixes all 3 rows' would mislead."""
    assert cli("worksheet", "decoder-layer", "--format", "markdown", "--out", tmp_path).code == 0
    key = (tmp_path / "key.md").read_text(encoding="utf-8")
    assert "mixes the 3 value rows of the memory (1 of them padding, weighed 0)" in key and "mixes all 3" not in key


def test_the_kv_cache_is_named_upright_everywhere(tmp_path, capsys):
    """K_cache and V_cache take an upright subscript, as d_model and m_new do: `cache` is a word,
    not the product c·a·c·h·e of italic symbols (sheet, key, HTML, forward's LaTeX, zh alike)."""
    for lang in ("en", "zh"):
        out = tmp_path / lang
        assert main(["worksheet", "tiny-llama", "--lang", lang, "--format", "latex,markdown,html", "--out", str(out)]) == 0
        for f in sorted(out.glob("*.*")):
            text = f.read_text(encoding="utf-8")
            assert "_{cache}" not in text, f.name
            if f.name.startswith("key"):
                assert r"K'_{\text{cache}}" in text or r"K_{\text{cache}}" in text, f.name
    capsys.readouterr()
    assert main(["forward", "tiny-gpt", "--format", "latex", "--step", "gen1.layer0.cache.v"]) == 0
    assert capsys.readouterr().out.split("\n")[3].startswith(r"V_{\text{cache}} = [V_{\text{cache}};\ v]\ ")
