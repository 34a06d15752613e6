"""Pages generated from the program itself at build time (mkdocs-gen-files), so they cannot drift:
every command's --help, the mistake catalogue, and the answers-file format."""
from __future__ import annotations

import os

import mkdocs_gen_files

os.environ["COLUMNS"] = "100"  # argparse wraps --help at the terminal's width: fix it


def cli_page() -> str:
    from symblock.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    lines = ["# Command-line reference", "",
             "Every command's `--help`, as the installed program prints it.", "",
             "```text", parser.format_help().rstrip(), "```", ""]
    for name, p in sub.choices.items():
        lines += [f"## `symblock {name}`", "", "```text", p.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


def mistakes_page() -> str:
    from symblock.grading.lang import EXPLANATIONS_ZH
    from symblock.grading.mistakes import CATALOGUE, MODEL_CATALOGUE, ROUNDING
    lines = ["# Mistake catalogue", "",
             "The mistakes the checker names. Each is a rule that recomputes one step the wrong way from the "
             "student's own inputs; when it reproduces their numbers, the step is marked wrong with this "
             "code and explanation. Codes are stable: reports and gradebooks use them.", "",
             "| code | where | explanation | 中文 |", "|---|---|---|---|"]
    for m in (*CATALOGUE, *MODEL_CATALOGUE):
        lines.append(f"| `{m.code}` | {m.where} | {m.explanation} | {EXPLANATIONS_ZH.get(m.code, '')} |")
    lines.append(f"| `{ROUNDING[0]}` | any decimal entry | {ROUNDING[1]} | {EXPLANATIONS_ZH.get(ROUNDING[0], '')} |")
    return "\n".join(lines).replace("\u2009", " ") + "\n"


def answers_page() -> str:
    from symblock.grading import answers
    doc = answers.__doc__.strip()
    first, rest = doc.split("\n\n", 1)
    return ("# Answers files\n\n" + first + "\n\n" + rest.replace("\n    ", "\n    ") + "\n\n"
            "`symblock worksheet` writes a blank answers file beside every sheet (`answers.yaml`, `answers.csv`); "
            "`symblock check` and `symblock grade` read it.\n")


def page_name(readme: str) -> str:
    """bench/README.md is the performance index; bench/README_X.md is the page X.md."""
    return "index.md" if readme == "README.md" else readme.removeprefix("README_")


def bench_links(text: str) -> str:
    """The bench READMEs link each other by their file names (as a repository browser shows them):
    point those links at the pages the site makes of them."""
    import re
    return re.sub(r"\]\((README(?:_\w+)?\.md)(#[^)]*)?\)",
                  lambda m: f"]({page_name(m.group(1))}{m.group(2) or ''})", text)


def performance_pages() -> None:
    """bench/README*.md, the measured figures, as pages of their own."""
    from pathlib import Path
    bench = Path(__file__).resolve().parents[1] / "bench"
    for f in sorted(bench.glob("README*.md")):
        with mkdocs_gen_files.open(f"performance/{page_name(f.name)}", "w") as out:
            out.write(bench_links(f.read_text(encoding="utf-8")))
    for f in sorted(bench.glob("*.png")):  # plots the pages show, beside them
        with mkdocs_gen_files.open(f"performance/{f.name}", "wb") as img:
            img.write(f.read_bytes())


performance_pages()
for path, page in (("reference/cli.md", cli_page), ("reference/mistakes.md", mistakes_page),
                   ("reference/answers.md", answers_page)):
    with mkdocs_gen_files.open(path, "w") as f:
        f.write(page())
