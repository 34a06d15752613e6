"""A large set's documents are compiled in parts (sets.PART variants each, at once with --jobs)
and joined: the joined sheets.pdf and keys.pdf read as one compile of the whole set does, each
variant numbered from 1 on an odd page, in the set's order; a serial run and --jobs 2 give the
same bytes. PART is made small here so that three variants make two or three parts."""
from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
from test_worksheet_sets import IDS, at, count_compiles, pages, run

from symblock.sheets import sets


def _same(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only:
        return False
    _, bad, odd = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not bad and not odd and all(_same(a / d, b / d) for d in cmp.common_dirs)


def _in_order(out: Path, doc: str, set_doc: str) -> None:
    """Every variant's pages in the set's order, footers `ID n` from 1, each on an odd page."""
    have, page = pages(at(out, f"{set_doc}.pdf")), 0
    for ident in IDS:
        own = len(pages(at(out, f"{ident}/{doc}.pdf")))
        assert page % 2 == 0, f"{ident} starts on page {page + 1} of {set_doc}.pdf (must be odd)"
        for n in range(1, own + 1):
            footer = [line for line in have[page].splitlines() if line.strip()][-1].split()
            assert footer == [ident, str(n)], (set_doc, page, footer)
            page += 1
        page += own % 2
    assert page == len(have)


@pytest.mark.slow
def test_a_set_compiled_in_parts_reads_as_one_compile_and_jobs_change_no_byte(tmp_path, monkeypatch, capsys):
    whole, serial, jobs = tmp_path / "whole", tmp_path / "serial", tmp_path / "jobs"
    assert run("--variants", "3", "--pdf", "--format", "latex", "--out", str(whole)) == 0
    monkeypatch.setattr(sets, "PART", 2)
    compiles = count_compiles(monkeypatch)
    assert run("--variants", "3", "--pdf", "--format", "latex", "--jobs", "1", "--out", str(serial)) == 0
    assert sorted(compiles) == ["keys.tex"] * 2 + ["sheets.tex"] * 2     # two parts each, no whole compile
    assert run("--variants", "3", "--pdf", "--format", "latex", "--jobs", "2", "--out", str(jobs)) == 0
    assert _same(serial, jobs), "--jobs 2 wrote other bytes than --jobs 1"
    for doc, set_doc in (("sheet", "sheets"), ("key", "keys")):
        _in_order(serial, doc, set_doc)
        assert pages(at(serial, f"{set_doc}.pdf")) == pages(at(whole, f"{set_doc}.pdf"))
        assert at(serial, f"{set_doc}.tex").read_bytes() == at(whole, f"{set_doc}.tex").read_bytes()
        for ident in IDS:
            assert pages(at(serial, f"{ident}/{doc}.pdf")) == pages(at(whole, f"{ident}/{doc}.pdf"))


@pytest.mark.slow
def test_parts_joined_out_of_order_are_caught(tmp_path, monkeypatch, capsys):
    """The check above sees a join that puts the parts in another order (a planted bug)."""
    monkeypatch.setattr(sets, "PART", 1)
    real = sets.join_pdfs
    monkeypatch.setattr(sets, "join_pdfs", lambda pdfs, dest, *rest: real(list(reversed(pdfs)), dest, *rest))
    out = tmp_path / "set"
    assert run("--variants", "3", "--pdf", "--format", "latex", "--out", str(out)) == 0
    with pytest.raises(AssertionError):
        _in_order(out, "sheet", "sheets")


def test_variants_rendered_in_processes_are_the_serial_files(tmp_path, monkeypatch, capsys):
    from symblock.commands import worksheet as command
    calls = []
    real = command.rendered_at_once
    monkeypatch.setattr(command, "rendered_at_once", lambda sets, doc, jobs: calls.append(jobs) or real(sets, doc, jobs))
    one, two = tmp_path / "one", tmp_path / "two"
    assert run("--variants", "4", "--format", "latex,markdown,html", "--jobs", "1", "--out", str(one)) == 0
    assert calls == []
    assert run("--variants", "4", "--format", "latex,markdown,html", "--jobs", "2", "--out", str(two)) == 0
    assert calls == [2]
    assert _same(one, two), "--jobs 2 rendered other files"
    assert len(list(one.rglob("sheet.tex"))) == 4
