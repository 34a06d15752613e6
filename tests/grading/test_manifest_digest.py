"""A set's content hash over a canonical JSON text (fast to take), while a set written before it,
whose hash is over a canonical YAML dump, still grades as it did and is still refused when edited."""
from __future__ import annotations

import hashlib
import shutil
from decimal import Decimal
from pathlib import Path

import yaml

from symblock.grading import manifest

OLD = Path(__file__).parent / "data" / "set_format2_yaml_digest"   # written by symblock before the JSON hash


def test_a_set_written_before_the_json_hash_grades_as_it_did(tmp_path, cli):
    """The gradebook is the one the older symblock wrote for the same set and answers (stored), byte
    for byte, but for the last column, `feedback` (each row's feedback file), which it did not write."""
    shutil.copytree(OLD, tmp_path / "set")
    code, out, err = cli("grade", tmp_path / "set", tmp_path / "set" / "answers", "--out", tmp_path / "g")
    assert code == 0, err
    rows = (tmp_path / "g" / "gradebook.csv").read_bytes().split(b"\r\n")
    assert rows[0].endswith(b",feedback") and all(r.rsplit(b",", 1)[1].startswith(b"feedback/") for r in rows[1:-1])
    assert b"\r\n".join(r.rsplit(b",", 1)[0] for r in rows[:-1]) + b"\r\n" == (OLD / "gradebook.csv").read_bytes()


def test_the_older_hash_is_the_yaml_one_and_still_guards_edits(tmp_path, cli):
    text = (OLD / "instructor" / manifest.NAME).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    given = data.pop("content_sha256")
    canon = yaml.safe_dump(data, sort_keys=True, allow_unicode=True, width=100)   # the older rule, written out here
    assert given == hashlib.sha256(canon.encode("utf-8")).hexdigest() != manifest.digest(data)
    shutil.copytree(OLD, tmp_path / "set")
    edited = text.replace("seed: 1\n", "seed: 2\n", 1)
    assert edited != text
    (tmp_path / "set" / "instructor" / manifest.NAME).write_text(edited, encoding="utf-8")
    code, _, err = cli("grade", tmp_path / "set", tmp_path / "set" / "answers", "--out", tmp_path / "g")
    assert code == 2 and "content_sha256" in err and "edited" in err


def test_a_new_set_carries_the_json_hash(tmp_path, cli):
    code, _, err = cli("worksheet", "--difficulty", "easy", "--variants", "2", "--format", "markdown",
                       "--out", tmp_path / "set")
    assert code == 0, err
    data = yaml.load((tmp_path / "set" / "instructor" / manifest.NAME).read_text(encoding="utf-8"),
                     Loader=yaml.SafeLoader)
    given = data.pop("content_sha256")
    assert given == hashlib.sha256(manifest.canonical(data).encode("utf-8")).hexdigest()


def test_the_canonical_text_tells_types_apart_and_ignores_key_order():
    c = manifest.canonical
    assert c({"a": 1, "b": [1, 2]}) == c({"b": [1, 2], "a": 1})
    assert c({1: "x"}) != c({"1": "x"})
    assert c({"k": Decimal("1.5")}) != c({"k": "1.5"})
    assert c({"k": 1}) != c({"k": True}) != c({"k": "1"})
    assert c({"k": Decimal("1.50")}) != c({"k": Decimal("1.5")})   # decimals as written, as the spec keeps them
