"""`.ci/setup` installs each system package in one place (a second copy drifts from the first)."""
from __future__ import annotations

import re

from worksheet_tools import REPO


def test_each_debian_package_is_installed_by_one_block():
    text = (REPO / ".ci" / "setup").read_text().replace("\\\n", " ")  # join continued lines
    packages = [p for line in re.findall(r"apt-get install (.*)", text) for p in line.split()
                if not p.startswith("-") and p != ">/dev/null"]
    assert "poppler-utils" in packages and "chromium" in packages
    assert sorted(p for p in set(packages) if packages.count(p) > 1) == []
