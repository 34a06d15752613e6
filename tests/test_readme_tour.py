"""The README's tour runs as printed: the class set it writes holds the student folder its `check`
line names, and that line checks the blank answers file there (a smaller set, in Markdown, for
speed: the folder names do not depend on the count or the format)."""
from __future__ import annotations

import re
import shlex

from symblock import cli
from worksheet_tools import REPO


def tour() -> list[list[str]]:
    """The `$ symblock …` lines of the README's console block, without their comments."""
    lines = re.findall(r"^\$ symblock (.*)$", (REPO / "README.md").read_text(encoding="utf-8"), re.M)
    return [shlex.split(line.split("#")[0]) for line in lines]


def test_the_tours_check_line_names_a_folder_its_class_set_writes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    worksheet = next(a for a in tour() if a[0] == "worksheet" and "--variants" in a)
    check = next(a for a in tour() if a[0] == "check")
    k = worksheet.index("--variants")
    small = worksheet[:k + 1] + ["8"] + [a for a in worksheet[k + 2:] if a != "--pdf"] + ["--format", "markdown"]
    assert cli.main(small) == 0
    capsys.readouterr()
    assert (tmp_path / check[1]).is_file(), f"the README checks {check[1]}, which the set does not hold"
    assert cli.main(check) == 1   # nothing answered is not "nothing wrong"
    assert "Nothing answered yet" in capsys.readouterr().out
