"""What a user reads speaks of the product only: no internal issue numbers, seed file names or
project documents in help texts, built-in examples, derived facts or warnings (an article is
cited by its title)."""
import argparse
import re
from importlib import resources

import pytest

from symblock import cli
from symblock.calculus import derive
from symblock.engine.model_spec import MIXED_WARNING

INTERNAL = re.compile(r"\bissue \d+|\bseed 00\d|\bseed article|种子 00\d|DESIGN\.md|STYLE\.md", re.I)


def _help_texts() -> dict[str, str]:
    parser = cli.build_parser()
    texts = {"symblock": parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            texts.update({f"symblock {name}": sub.format_help() for name, sub in action.choices.items()})
    return texts


def test_no_help_text_names_an_internal_document():
    texts = _help_texts()
    assert len(texts) > 10          # every command's --help was read
    leaks = {name: INTERNAL.findall(text) for name, text in texts.items() if INTERNAL.search(text)}
    assert not leaks


def test_built_in_examples_cite_articles_by_title():
    files = [f for f in resources.files("symblock.examples").iterdir() if f.name.endswith(".yaml")]
    assert len(files) >= 6
    leaks = {f.name: INTERNAL.findall(f.read_text(encoding="utf-8")) for f in files
             if INTERNAL.search(f.read_text(encoding="utf-8"))}
    assert not leaks
    assert "AI Infra学习之旅-手算一个完整TransformerBlock" in \
        resources.files("symblock.examples").joinpath("seed-post-ln.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("text", [MIXED_WARNING] + [f().statement for f in (derive.fact_layernorm_2d,)])
def test_messages_and_facts_cite_no_internal_document(text):
    assert not INTERNAL.search(text)


def test_the_readme_and_the_docs_cite_no_internal_document():
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md")), *sorted((root / "bench").glob("README*.md"))]
    assert len(pages) > 10
    leaks = {p.name: INTERNAL.findall(p.read_text(encoding="utf-8")) for p in pages
             if INTERNAL.search(p.read_text(encoding="utf-8"))}
    assert not leaks


def test_the_source_and_templates_cite_no_internal_document():
    """Docstrings reach the API reference and `help()`, templates reach every sheet: the package speaks
    of its own docs pages, never of internal documents or issue numbers."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    files = [*sorted((root / "symblock").rglob("*.py")), *sorted((root / "templates").glob("*.j2"))]
    assert len(files) > 100
    leaks = {str(p.relative_to(root)): INTERNAL.findall(p.read_text(encoding="utf-8")) for p in files
             if INTERNAL.search(p.read_text(encoding="utf-8"))}
    assert not leaks
