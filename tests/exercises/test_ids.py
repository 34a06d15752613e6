"""A worksheet ID is cut into its spec token and seed by one function, `variants.split_id`, the
inverse of `make_id` (the gradebook, the manifest and the Moodle category all read it)."""
import re

import pytest
from hypothesis import given, strategies as st

from symblock.exercises import variants

TOKENS = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)


@given(TOKENS, st.one_of(st.none(), st.integers(min_value=0, max_value=10**30)))
def test_split_id_undoes_make_id(token, seed):
    assert variants.split_id(variants.make_id(token, seed)) == (token, seed)


def test_a_text_that_is_no_id_keeps_the_part_before_its_last_dot():
    assert variants.split_id("pre-ln-causal-gelu.7") == ("pre-ln-causal-gelu", 7)
    assert variants.split_id("h2x3k4m5q") == ("h2x3k4m5q", None)
    assert variants.split_id("spec.v2.7") == ("spec.v2", None)     # two dots: no ID, no seed read
    assert variants.split_id("my sheet") == ("my sheet", None)
    assert variants.split_id("a.seven") == ("a", None)


def test_the_gradebook_names_the_spec_an_id_was_made_from():
    from symblock.grading.gradebook import Variants
    book = Variants({"spec_token": "seed-post-ln", "spec": {},
                     "variants": [{"id": f"seed-post-ln.{s}", "seed": s} for s in (1, 2)]})
    assert book.problem("seed-post-ln.2") is None
    assert "made from another spec ('pre-ln-causal-gelu'; this set's spec is 'seed-post-ln')" \
        in book.problem("pre-ln-causal-gelu.2")
    assert "made from another spec ('spec.v2'" in book.problem("spec.v2.7")
    assert book.problem("seed-post-ln.3").startswith("id seed-post-ln.3 is not a variant of this set (2 variants")


def test_a_sets_manifest_records_each_variants_seed(tmp_path):
    import yaml
    from symblock.exercises import variant
    from symblock.grading.manifest import set_files
    sets = [variant.rebuild(ident, None) for ident in ("pre-ln-causal-gelu.4", "pre-ln-causal-gelu.11")]
    manifest = yaml.safe_load(set_files(sets, "pre-ln-causal-gelu")["manifest.yaml"])
    assert [(v["id"], v["seed"]) for v in manifest["variants"]] == [("pre-ln-causal-gelu.4", 4), ("pre-ln-causal-gelu.11", 11)]


def _built_in_sheets() -> list[str]:
    from symblock.commands.gallery import GALLERY
    return sorted({spec for _, spec, _, _ in GALLERY})


@pytest.mark.parametrize("example", _built_in_sheets())
def test_the_id_a_built_in_sheet_prints_rebuilds_it_and_checks_its_answers(example, tmp_path, capsys):
    """`worksheet SPEC` prints its seed's ID; that ID must give the same sheet and key and be
    checkable, even where a set would pass over that seed (a model whose softmax is no hand exercise)."""
    from symblock.cli import main
    from symblock.exercises import variant
    assert main(["worksheet", example, "--format", "markdown", "--out", str(tmp_path / "own")]) == 0
    ident = re.search(r"Worksheet ID: `([^`]+)`", (tmp_path / "own" / "sheet.md").read_text(encoding="utf-8"))[1]
    assert main(["worksheet", "--id", ident, "--format", "markdown", "--out", str(tmp_path / "again")]) == 0
    for doc in ("sheet.md", "key.md"):
        assert (tmp_path / "again" / doc).read_bytes() == (tmp_path / "own" / doc).read_bytes(), doc
    blank = tmp_path / "blank.yaml"
    v = variant.rebuild(ident, None)
    asked = v.exercise.ask[0]
    rows, cols = v.answers[asked].shape
    blank.write_text(f"id: {ident}\nsteps:\n  {asked}: {[[None] * cols] * rows}\n".replace("None", "null"),
                     encoding="utf-8")
    capsys.readouterr()
    assert main(["check", str(blank)]) == 1, capsys.readouterr().err
    assert "Nothing answered yet" in capsys.readouterr().out
