"""Generator versions: an ID without a version rebuilds today's (version 1) sheets byte for byte,
new sets are drawn by version 2 and say so in their IDs, and version 2 avoids rounding ties and
large denominators. Ties and denominators are worked here in Fractions from the drawn X and
weights, not read from the engine's trace."""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from symblock import cli
from symblock.exercises import variant

FIXTURES = Path(__file__).parent / "generator_v1"   # rendered by the version-1 code, before version 2 existed


def run(*argv) -> int:
    return cli.main(["worksheet", *argv])


@pytest.mark.parametrize("ident", ["preset-medium.7", "preset-hard.3", "preset-easy.2"])
def test_an_id_without_version_rebuilds_the_version_1_sheet_byte_for_byte(tmp_path, ident):
    assert run("--id", ident, "--format", "markdown", "--out", str(tmp_path)) == 0
    assert (tmp_path / "key.md").read_bytes() == (FIXTURES / f"{ident}.key.md").read_bytes()
    sheet = FIXTURES / f"{ident}.sheet.md"
    if sheet.exists():
        assert (tmp_path / "sheet.md").read_bytes() == sheet.read_bytes()


def test_a_new_set_is_version_2_names_it_in_its_ids_and_rebuilds_from_them(tmp_path):
    out = tmp_path / "set"
    assert run("preset:medium", "--variants", "2", "--format", "markdown", "--out", str(out)) == 0
    manifest = yaml.safe_load((out / "instructor" / "manifest.yaml").read_text())
    assert manifest["spec_token"] == "preset-medium-v2"
    assert manifest["random_flags"] == {"generator": 2}
    assert [v["id"] for v in manifest["variants"]] == ["preset-medium-v2.1", "preset-medium-v2.2"]
    assert run("--id", "preset-medium-v2.2", "--format", "markdown", "--out", str(tmp_path / "again")) == 0
    key = (tmp_path / "again" / "key.md").read_bytes()
    assert key == (out / "instructor" / "preset-medium-v2.2" / "key.md").read_bytes()
    assert b"`preset-medium-v2.2`" in key
    # the same seed under version 1 is another exercise: the version is not decoration
    assert run("--id", "preset-medium.2", "--format", "markdown", "--out", str(tmp_path / "v1")) == 0
    assert (tmp_path / "v1" / "key.md").read_bytes() != key


def test_a_spec_file_keeps_its_hash_and_its_version_1_ids(tmp_path, capsys):
    spec = tmp_path / "medium.yaml"
    spec.write_text("title: Mine\nrandom: {seed: 1, difficulty: medium}\n")
    out = tmp_path / "set"
    assert run(str(spec), "--variants", "1", "--seed", "4", "--format", "markdown", "--out", str(out)) == 0
    assert capsys.readouterr().out.startswith("wrote 1 variant in ")   # one variant: no plural
    ident = yaml.safe_load((out / "instructor" / "manifest.yaml").read_text())["variants"][0]["id"]
    token, seed = ident.rsplit(".", 1)
    assert token.endswith("-v2") and seed == "4"
    old = token[:-len("-v2")] + ".4"         # the ID the same file gave before version 2
    pinned = tmp_path / "pinned.yaml"        # the file stating version 1: what that ID always drew
    pinned.write_text("title: Mine\nrandom: {seed: 4, difficulty: medium, generator: 1}\n")
    assert run(str(spec), "--id", old, "--format", "markdown", "--out", str(tmp_path / "old")) == 0
    assert run(str(pinned), "--format", "markdown", "--out", str(tmp_path / "pin")) == 0
    body = (tmp_path / "old" / "key.md").read_text().replace(old, "ID")
    assert body == (tmp_path / "pin" / "key.md").read_text().replace(old, "ID")
    assert old in (tmp_path / "pin" / "key.md").read_text()   # version 1 stated: no -v suffix


def test_unknown_versions_are_refused_by_name(tmp_path, capsys):
    assert run("--id", "preset-medium-v7.1", "--out", str(tmp_path / "a")) == 2
    err = capsys.readouterr().err
    assert "generator version 7" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    spec = tmp_path / "s.yaml"
    spec.write_text("random: {seed: 1, difficulty: medium, generator: 3}\n")
    assert run(str(spec), "--out", str(tmp_path / "b")) == 2
    err = capsys.readouterr().err
    assert "random.generator" in err and "expected one of 1, 2" in err


def _norm_rows(X):
    """(σ², normalised row) of each row of X: population variance, worked here."""
    out = []
    for row in X:
        mu = sum(row, Fraction(0)) / len(row)
        var = sum(((x - mu) ** 2 for x in row), Fraction(0)) / len(row)
        sd = Fraction(math.isqrt(var.numerator), math.isqrt(var.denominator))
        assert sd * sd == var   # medium's exact σ
        out.append((var, [(x - mu) / sd for x in row]))
    return out


def _set_numbers(generator: int, n: int = 30):
    """Per variant: its σ² and its scaled scores N1(X) W_Q (N1(X) W_K)ᵀ / √d_k, in Fractions."""
    from symblock.exercises.stress import spread
    from symblock.grading.mistakes import judge
    sets = variant.draw_set("preset:medium", n, 1, variant.Options(), {"generator": generator}, judge(3), spread(n))
    out = []
    for v in sets:
        X, WQ, WK = (v.spec.X.tolist(), v.spec.params["W_Q"].tolist(), v.spec.params["W_K"].tolist())
        rows = _norm_rows(X)
        N = [r for _, r in rows]
        mul = lambda A, B: [[sum((a * B[k][j] for k, a in enumerate(r)), Fraction(0)) for j in range(len(B[0]))]
                            for r in A]
        Q, K = mul(N, WQ), mul(N, WK)
        scale = Fraction(1, math.isqrt(len(WQ[0])))   # d_k = 4: 1/2
        S = [[sum((a * b for a, b in zip(q, k)), Fraction(0)) * scale for k in K] for q in Q]
        out.append(([var for var, _ in rows], [s for r in S for s in r]))
    return out


def _tie(q: Fraction, places: int = 3) -> bool:
    return (q * 10 ** places - Fraction(1, 2)).denominator == 1


def test_version_2_prefers_no_ties_and_small_denominators():
    v1, v2 = _set_numbers(1), _set_numbers(2)
    ties = {g: sum(_tie(var) for vars_, _ in s for var in vars_) for g, s in ((1, v1), (2, v2))}
    assert ties[1] >= 40            # of 60 rows: σ in quarters, σ² in sixteenths
    assert ties[2] <= ties[1] // 2  # the tie-free σ classes walked twice
    dens = {g: max(x.denominator for _, S in s for x in S) for g, s in ((1, v1), (2, v2))}
    assert dens[1] > 50 and any(x.denominator % 49 == 0 for _, S in v1 for x in S)   # σ = 7/4: 49ths
    assert dens[2] <= 50
    primes = {p for _, S in v2 for x in S for p in (7, 11, 13) if x.denominator % p == 0}
    assert not primes
    # a set still meets five σ values (the variety guarantee) under version 2
    assert len({var for vars_, _ in v2 for var in vars_}) >= 5


def test_an_id_of_the_other_version_is_named_as_such_by_grade(tmp_path, capsys):
    out, answers = tmp_path / "set", tmp_path / "answers"
    assert run("preset:medium", "--variants", "1", "--format", "markdown", "--out", str(out)) == 0
    answers.mkdir()
    (answers / "old.yaml").write_text("id: preset-medium.1\nname: Old\nsteps: {norm1.mean: [[0], [0]]}\n")
    capsys.readouterr()
    assert cli.main(["grade", str(out), str(answers), "--out", str(tmp_path / "graded")]) == 1
    printed = capsys.readouterr()
    assert "id preset-medium.1 was drawn by generator version 1, this set's variants by version 2" \
        in printed.out + printed.err
