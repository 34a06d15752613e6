"""The public API: its docstring examples run as doctests (so the documented calls and outputs are
real), `import symblock` stays light, and the names it exposes are the documented ones."""
from __future__ import annotations

import doctest
import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import yaml

import symblock
from symblock import api
from symblock.cli import main
from symblock.engine.spec import example_text
from symblock.errors import SpecError, UsageError


def test_the_api_docstring_examples_run():
    for module in (api, symblock):
        result = doctest.testmod(module, extraglobs={"symblock": symblock}, optionflags=doctest.ELLIPSIS)
        assert result.attempted >= 1 and result.failed == 0, (module.__name__, result)


def test_import_symblock_loads_no_engine_numpy_sympy_or_torch():
    code = ("import sys, symblock; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'sympy', 'torch', 'flint') or m.startswith('symblock.engine')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_public_names():
    assert set(symblock.__all__) == {"load", "from_mapping", "forward", "verify", "check", "worksheet", "grade",
                                     "spec_from", "SpecError"}
    for name in symblock.__all__:
        assert getattr(symblock, name).__doc__, name


# ---------------------------------------------------------------- check, worksheet, grade

SEED_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])                  # the seed example's X and
SEED_A = np.array([[1.401, 0.599], [1.504, 0.752], [1.576, 0.716]])      # its given attention output


def test_check_marks_hand_numbers_and_names_the_sample_variance_mistake():
    """The seed block's norm1 worked here in NumPy: population variance is right, the n−1 one is
    wrong and diagnosed, as `symblock check --json` says of the same file."""
    r1 = SEED_X + SEED_A
    std = np.sqrt(r1.var(axis=1, ddof=0))[:, None]
    assert symblock.check("seed-post-ln", {"decimals": 3, "steps": {"norm1.std": np.round(std, 3).tolist()}}).ok
    sample = np.round(np.sqrt(r1.var(axis=1, ddof=1))[:, None], 3).tolist()
    result = symblock.check("seed-post-ln", {"decimals": 3, "steps": {"norm1.std": sample}})
    step = next(s for s in result.steps if s.name == "norm1.std")
    assert not result.ok and result.first_break == "norm1.std" and step.status == "wrong"
    assert any("sample" in d or "n−1" in d or "n-1" in d for d in step.diagnosis), step.diagnosis


def test_check_reads_a_file_in_a_set_as_the_command_does(tmp_path, capsys):
    paths = symblock.worksheet("preset:easy", tmp_path / "set", variants=2, format="markdown")
    blank = sorted(p for p in paths if p.name == "answers.yaml")[0]
    data = yaml.safe_load(blank.read_text())
    result = symblock.check(None, blank, max_cost=10 ** 6)   # its id: and its set's manifest name the variant
    assert result.ident == data["id"] and not result.ok and not result.answered
    assert main(["check", str(blank), "--json"]) == 1
    import json
    said = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["status"]) for s in said["steps"]] == [(s.name, s.status) for s in result.steps]


def test_worksheet_in_memory_is_what_the_command_writes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = symblock.worksheet("seed-post-ln", format="html,markdown", lang="zh", preset="norm")
    assert list(tmp_path.iterdir()) == []                # nothing written
    assert main(["worksheet", "seed-post-ln", "--format", "html,markdown", "--lang", "zh", "--preset", "norm",
                 "--out", "cli"]) == 0
    on_disk = {p.relative_to(tmp_path / "cli").as_posix(): p.read_bytes() for p in (tmp_path / "cli").rglob("*")
               if p.is_file()}
    assert {k: (v.encode() if isinstance(v, str) else v) for k, v in files.items()} == on_disk
    assert "sheet.html" in files and files["sheet.md"] != files["key.md"]


def test_worksheet_paths_never_overwrite_and_bad_options_name_the_flag(tmp_path):
    written = symblock.worksheet("seed-post-ln", tmp_path / "ws", format="markdown")
    assert sorted(p.name for p in written) == ["key.md", "sheet.md"] and all(p.is_file() for p in written)
    before = (tmp_path / "ws" / "key.md").read_bytes()
    with pytest.raises(UsageError, match="already exists"):
        symblock.worksheet("seed-post-ln", tmp_path / "ws", format="markdown", decimals=2)
    assert (tmp_path / "ws" / "key.md").read_bytes() == before
    with pytest.raises(UsageError, match="--decimals"):
        symblock.worksheet("seed-post-ln", decimals="lots")
    with pytest.raises(UsageError, match="no option formats="):
        symblock.worksheet("seed-post-ln", formats="markdown")
    with pytest.raises(UsageError, match="give out="):
        symblock.worksheet("preset:easy", variants=3)


def test_grade_scores_by_the_policy_and_writes_what_the_command_writes(tmp_path, capsys):
    paths = symblock.worksheet("preset:easy", tmp_path / "set", variants=2, format="markdown")
    blank = sorted(p for p in paths if p.name == "answers.yaml")[0]
    data = yaml.safe_load(blank.read_text())
    man = yaml.safe_load((tmp_path / "set" / "instructor" / "manifest.yaml").read_text())
    first = man["asked"][0]            # resid1: X + attn.out, rational, stored exactly by the set
    stored = next(v for v in man["variants"] if v["id"] == data["id"])["exercise"]["answers"][first]
    right = [[_round3(Fraction(e.strip())) for e in row.split(",")] for row in stored.split(";")]
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "ada.yaml").write_text(yaml.safe_dump({**data, "steps": {first: right}}))
    (tmp_path / "answers" / "bo.yaml").write_text(blank.read_text())
    cls = symblock.grade(tmp_path / "set", tmp_path / "answers", tmp_path / "api")
    totals = {g.name: g.total for g in cls.graded}
    assert totals == {"ada": Fraction(man["points"].get(first, 1)), "bo": 0}, totals
    assert main(["grade", str(tmp_path / "set"), str(tmp_path / "answers"), "--out", str(tmp_path / "cli")]) in (0, 1)
    for name in ("gradebook.csv", "summary.md", "feedback/ada.md"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    with pytest.raises(UsageError, match="already exists"):
        symblock.grade(tmp_path / "set", tmp_path / "answers", tmp_path / "api")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="symbolic link"):
        symblock.grade(tmp_path / "set", tmp_path / "answers", tmp_path / "link")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def _round3(x: Fraction) -> str:
    """Half away from zero at 3 places, as a person rounds (the answers file's `decimals: 3`)."""
    from decimal import ROUND_HALF_UP, Decimal
    return str((Decimal(x.numerator) / Decimal(x.denominator)).quantize(Decimal("0.001"), ROUND_HALF_UP))


def test_forward_and_verify_take_a_name_a_path_or_an_id(tmp_path, capsys):
    """symblock.forward("seed-post-ln") raised AttributeError, and symblock.load refused the IDs the
    command line takes; an ID's variant is the one `symblock forward ID` works (its --json floats)."""
    t = symblock.forward("seed-post-ln")
    # the article's Post-LN block, worked by hand: R_1 = X + A, row 1 = [1 + 1.401, 0 + 0.599]
    assert [float(e) for e in t["resid1"].value.rows[0]] == [2.401, 0.599]
    path = tmp_path / "s.yaml"
    path.write_text(example_text("seed-post-ln"), encoding="utf-8")
    assert [float(e) for e in symblock.forward(path)["resid1"].value.rows[0]] == [2.401, 0.599]
    assert symblock.verify(str(path), use_torch=False).ok
    ident = "preset-easy-v2.1"
    spec = symblock.load(ident)
    assert spec.dims.seq_len == 2 and spec.dims.d_model == 3
    assert main(["forward", ident, "--json"]) == 0
    steps = {s["name"]: s["float"] for s in json.loads(capsys.readouterr().out)["steps"]}
    for trace in (symblock.forward(ident), symblock.forward(spec)):
        assert np.allclose(trace["output"].value.floats(), steps["output"], atol=1e-15)
    assert symblock.verify(ident, use_torch=False).ok
    assert main(["verify", ident, "--no-torch"]) == 0
    with pytest.raises(SpecError):
        symblock.load("preset-easy-v9.1x")
