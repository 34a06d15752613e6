"""Shared by tests/test_worksheet*.py: the real tools (TeX Live, KaTeX via node) and
readers of generated documents. Missing tools FAIL the tests (CI installs them), never skip."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

KATEX_DIR = Path(__file__).parent / "katex"
REPO = Path(__file__).parent.parent
OVERFULL = re.compile(r"Overfull \\hbox \(([\d.]+)pt too wide\)")


def need(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        pytest.fail(f"{program} is not installed; the worksheet tests need TeX Live and Node "
                    "(see .ci/run: apt packages texlive-latex-base texlive-latex-recommended "
                    "texlive-latex-extra texlive-xetex texlive-lang-chinese latexmk, and "
                    "`npm ci --prefix tests/katex`)")
    return path


def compile_tex(tex: Path, engine: str) -> str:
    """Compile with the real engine through symblock's own compile call; return the log text.
    Fails on errors and on any overfull box wider than 1pt."""
    from symblock.sheets.worksheet import compile_pdf
    need(engine)
    compile_pdf(tex, engine)
    log = tex.with_suffix(".log").read_text(errors="replace")
    assert tex.with_suffix(".pdf").stat().st_size > 1000
    wide = [float(m.group(1)) for m in OVERFULL.finditer(log)]
    bad = [w for w in wide if w > 1.0]
    assert not bad, f"{tex.name}: overfull boxes {bad} pt wide:\n" + "\n".join(
        line for line in log.splitlines() if "Overfull" in line)
    return log


# ---------------------------------------------------------------- Markdown math

_INLINE = re.compile(r"(?<![\\$])\$(?!\$)(.+?)(?<!\\)\$")


def math_fragments(text: str, where: str) -> list[dict]:
    """Every `$$ ... $$` block (on its own lines) and every inline `$...$` of a Markdown text."""
    out, block, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip() == "$$":
            if block is None:
                block, start = [], n
            else:
                out.append({"tex": "\n".join(block), "display": True, "where": f"{where}:{start}"})
                block = None
            continue
        if block is not None:
            block.append(line)
            continue
        for m in _INLINE.finditer(line):
            out.append({"tex": m.group(1), "display": False, "where": f"{where}:{n}"})
    assert block is None, f"{where}: unclosed $$ block from line {start}"
    return out


def katex_check(fragments: list[dict]) -> int:
    node = need("node")
    if not (KATEX_DIR / "node_modules" / "katex").is_dir():
        pytest.fail("KaTeX is not installed: run `npm ci --prefix tests/katex`")
    proc = subprocess.run([node, str(KATEX_DIR / "render.js")], input=json.dumps(fragments),
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout, proc.stderr
    result = json.loads(proc.stdout)
    assert not result["errors"], "KaTeX could not render:\n" + "\n".join(
        f"{e['where']}: {e['message']}\n    {e['tex'][:300]}" for e in result["errors"][:10])
    assert proc.returncode == 0, proc.stderr
    return result["count"]


# ---------------------------------------------------------------- reading numbers back

def parse_entry(tex: str) -> tuple[float, bool]:
    """(value, exact?) of one printed matrix entry: 3, -0.447, \\frac{1}{3}, -\\infty."""
    tex = tex.strip()
    if tex == r"-\infty":
        return float("-inf"), True
    m = re.fullmatch(r"(-?)\s*\\frac\{(\d+)\}\{(\d+)\}", tex)
    if m:
        v = Fraction(int(m.group(2)), int(m.group(3)))
        return float(-v if m.group(1) else v), True
    if re.fullmatch(r"-?\d+(\.\d+)?", tex):
        return float(tex), True
    m = re.fullmatch(r"(-?\d+\.\d+) \\times 10\^\{(-?\d+)\}", tex)   # scientific: 1.235 \times 10^{7}
    if m:
        return float(m.group(1)) * 10.0 ** int(m.group(2)), True
    return float("nan"), False  # a closed form such as \sqrt{5}: its decimal matrix follows


def matrices(math: str) -> list[list[list[str]]]:
    out = []
    bodies = re.findall(r"\\begin\{bmatrix\}(.*?)\\end\{bmatrix\}|\\begin\{array\}\{c+\}(.*?)\\end\{array\}",
                        math, re.S)
    for body in (a or b for a, b in bodies):
        out.append([[c.strip() for c in row.split("&")] for row in body.split(r"\\")])
    return out


def key_answers_md(text: str) -> dict[str, str]:
    """{step name: the answer's display math} from a Markdown key."""
    answers = {}
    for sec in re.split(r"^### ", text, flags=re.M)[1:]:
        name = re.search(r"`([^`]+)`", sec.splitlines()[0]).group(1)
        m = re.search(r"\*\*[^*]+[:：]\*\*\s*\n\s*\n\$\$\n(.*?)\n\$\$", sec, re.S)
        answers[name] = m.group(1)
    return answers


def key_answers_tex(text: str) -> dict[str, str]:
    answers = {}
    for sec in text.split(r"\subsection*{")[1:]:
        name = re.search(r"\\texttt\{((?:[^{}]|\{\\char\d+\})+)\}", sec).group(1)
        name = re.sub(r"\{\\char(\d+)\}", lambda m: chr(int(m.group(1))), name)
        m = re.search(r"\\textbf\{[^}]+[:：]\}\s*\n\\fitmath\{(.*?)\}\n", sec, re.S)
        answers[name] = m.group(1)
    return answers
