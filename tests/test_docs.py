"""The docs site builds with `mkdocs build --strict` (a broken link or a missing page fails), and its
generated references say what the program says: every command's --help, every mistake code, the
answers-file format, the public API, and the pictures the pages show."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return out


def text(page: Path) -> str:
    html = page.read_text(encoding="utf-8")
    return re.sub(r"<[^>]+>", "", html).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@pytest.mark.slow
def test_every_command_and_flag_is_in_the_cli_reference(site):
    from symblock.cli import COMMANDS, build_parser
    page = text(site / "reference" / "cli" / "index.html")
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        assert f"symblock {name}" in page, name
        for action in p._actions:
            for flag in action.option_strings:
                assert flag in page, (name, flag)
    assert {c[0] for c in COMMANDS} <= set(sub.choices)


@pytest.mark.slow
def test_every_mistake_code_is_in_the_catalogue_page(site):
    from symblock.grading.lang import EXPLANATIONS_ZH
    from symblock.grading.mistakes import CATALOGUE, MODEL_CATALOGUE
    page = text(site / "reference" / "mistakes" / "index.html")
    for m in (*CATALOGUE, *MODEL_CATALOGUE):
        assert m.code in page and m.explanation.split(":")[0] in page, m.code
        assert EXPLANATIONS_ZH[m.code] in page, m.code


@pytest.mark.slow
def test_the_api_reference_and_the_pages_for_each_audience(site):
    import symblock
    api = text(site / "api" / "index.html")
    for name in symblock.api.__all__:
        assert f"{name}(" in api, name
    assert "_arguments" not in api and "_REPEATED" not in api     # private by name, left out
    for page in ("get-started", "tutorials/instructor", "tutorials/student", "tutorials/author",
                 "reference/spec", "reference/steps", "reference/answers", "how-it-works",
                 "zh/get-started", "zh/tutorials/student", "performance"):
        assert (site / page / "index.html").exists(), page
    assert "学生教程" in text(site / "zh" / "tutorials" / "student" / "index.html")
    from symblock.grading.answer_files import CSV_HEADER
    from symblock.grading.answers import STEP_KEYS, TOP_KEYS
    answers = text(site / "reference" / "answers" / "index.html")
    for key in (*TOP_KEYS, *STEP_KEYS):          # the format's every key, from the reader's own tuples
        assert f"{key}:" in answers or f"`{key}`" in answers or f"{key}," in answers, key
    assert ",".join(CSV_HEADER) in answers


def test_every_picture_a_page_shows_exists():
    for md in (ROOT / "docs").rglob("*.md"):
        for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md.read_text(encoding="utf-8")):
            assert (md.parent / img).resolve().is_file(), (md, img)


def test_the_student_tutorial_lists_every_mistake_code():
    """The tutorial's table of diagnosis codes is the student's first stop: no code the checker can say is left out."""
    from symblock.grading.mistakes import CATALOGUE, MODEL_CATALOGUE
    text = (ROOT / "docs" / "tutorials" / "student.md").read_text(encoding="utf-8")
    table = {m.group(1) for m in re.finditer(r"^\| `(\w+)` \|", text, re.M)}
    assert {m.code for m in CATALOGUE + MODEL_CATALOGUE} | {"rounding"} <= table


def test_the_code_map_names_every_module():
    """docs/development.md's map of the code names each module of the package on its package's lines,
    so that a module added (or renamed) is placed in the map by the same change."""
    import re
    root = Path(__file__).resolve().parents[1]
    block = (root / "docs" / "development.md").read_text(encoding="utf-8").split("```")[1]
    lines: dict[str, str] = {}
    package = ""
    for line in block.splitlines():
        head = re.match(r"(\w+)/\s", line)
        if head or not line.startswith(" "):
            package = head.group(1) if head else ""
        lines[package] = lines.get(package, "") + " " + line
    modules = [p.relative_to(root / "symblock") for p in (root / "symblock").rglob("*.py")
               if p.stem not in ("__init__", "__main__")]
    assert len(modules) > 100
    missing = [str(m) for m in modules
               if not re.search(rf"\b{m.stem}\b", lines.get(m.parts[0] if len(m.parts) > 1 else "", ""))]
    assert not missing
