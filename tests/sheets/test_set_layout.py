"""What goes to students carries no way to the key: an HTML sheet links to its key only with
--link-key, and a set's index lists keys only then; a set's summary counts variants, not the
folders of KaTeX's files."""
from __future__ import annotations

import re

from symblock import cli

def _hrefs(path) -> list[str]:
    return re.findall(r'href="([^"]*)"', path.read_text(encoding="utf-8"))


def test_a_single_html_sheet_links_its_key_only_when_asked(tmp_path):
    plain, linked = tmp_path / "plain", tmp_path / "linked"
    assert cli.main(["worksheet", "--format", "html", "--out", str(plain)]) == 0
    assert cli.main(["worksheet", "--format", "html", "--out", str(linked), "--link-key"]) == 0
    assert not [h for h in _hrefs(plain / "sheet.html") if "key" in h], _hrefs(plain / "sheet.html")
    assert "key.html" in _hrefs(linked / "sheet.html")
    assert "sheet.html" in _hrefs(plain / "key.html")  # the instructor's key still leads back


def test_a_set_index_and_its_sheets_name_no_key_by_default(tmp_path):
    out = tmp_path / "set"
    assert cli.main(["worksheet", "--difficulty", "easy", "--variants", "2", "--format", "html", "--out", str(out)]) == 0
    pages = [out / "index.html", *out.glob("*/sheet.html")]
    assert len(pages) == 3
    for page in pages:
        assert not [h for h in _hrefs(page) if "key" in h], (page, _hrefs(page))
    assert [h for h in _hrefs(out / "index.html") if h.endswith("/sheet.html")] == [
        "preset-easy.1/sheet.html", "preset-easy.2/sheet.html"]


def test_an_html_set_summary_counts_variants_not_asset_folders(tmp_path, capsys):
    out = tmp_path / "set"
    assert cli.main(["worksheet", "--difficulty", "easy", "--variants", "3", "--format", "html", "--out", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    ids = "preset-easy.1, preset-easy.2, preset-easy.3"
    assert first.startswith(f"wrote 3 variants in {out}/ ({ids}), each: sheet.html, key.html"), first
    assert "fonts" not in first and "katex" not in first, first
