"""The snippets the README and the docs pages show still say what the program does: every YAML/JSON
block parses, every complete spec block (no `...` standing for elided data) loads and is worked
forward and agrees with NumPy, every answers block is read by `check` (no exit 2), every
`$ symblock …` line of a console block names a command and flags that exist, and the output shown
under a command on a built-in example is what it prints (a line `...` stands for lines left out)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from symblock import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SPEC_KEYS = {"dims", "block", "weights", "inputs", "random", "model", "given", "exercise", "layout", "dropout"}
# commands whose output a page may show for a built-in example: fast, exact, no torch, no files
SHOWN = {"forward", "grad", "derive", "params", "examples", "stress"}


def blocks(*langs: str) -> list[tuple[str, str]]:
    """(page:line, body) of every fenced block in these languages."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.M | re.S):
            if m.group(1) in langs:
                found.append((f"{page.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}", m.group(2)))
    return found


def elided(data) -> bool:
    """Whether a parsed block holds `...` in place of data (a key listing, not a whole spec)."""
    if isinstance(data, dict):
        return any(elided(k) or elided(v) for k, v in data.items())
    if isinstance(data, list):
        return any(elided(v) for v in data)
    return isinstance(data, str) and "..." in data


YAML = blocks("yaml", "json")


def test_the_pages_show_yaml_blocks_of_each_kind():
    kinds = [("steps" in d) if isinstance(d, dict) else None for d in (yaml.safe_load(b) for _, b in YAML)]
    assert kinds.count(True) >= 3 and kinds.count(False) >= 6, kinds


@pytest.mark.parametrize("where,body", YAML, ids=[w for w, _ in YAML])
def test_a_yaml_block_parses_and_a_complete_one_runs(where, body, tmp_path, capsys):
    import symblock
    data = yaml.safe_load(body)
    assert isinstance(data, dict), where
    if elided(data):
        return
    if "steps" in data:                      # an answers file: check reads it (wrong numbers are fine)
        path = tmp_path / "answers.yaml"
        path.write_text(body, encoding="utf-8")
        argv = ["check", str(path)] if "id" in data else ["check", "seed-post-ln", str(path)]
        code = cli.main(argv)
        assert code in (0, 1), (where, capsys.readouterr().err)
    elif set(data) & SPEC_KEYS:
        spec = symblock.from_mapping(data, where)
        symblock.forward(spec)
        assert symblock.verify(spec, use_torch=False).ok, where


def console_lines() -> list[tuple[str, str, list[str]]]:
    """(page:line, the command after `$ `, the lines shown under it) for every console line."""
    found = []
    for where, body in blocks("console", ""):
        lines = body.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        for k, i in enumerate(starts):
            shown = lines[i + 1:starts[k + 1] if k + 1 < len(starts) else len(lines)]
            while shown and not shown[-1].strip():
                shown.pop()
            found.append((where, lines[i][2:], shown))
    return found


def argv_of(command: str) -> tuple[list[str], int | None] | None:
    """A `symblock …` line as the argv it runs and the `| tail -N` it is cut to; None for another program."""
    words = shlex.split(command, comments=True)
    if not words or words[0] != "symblock":
        return None
    tail = None
    if "|" in words:
        k = words.index("|")
        assert words[k + 1:k + 2] == ["tail"], command
        tail = int(words[k + 2].lstrip("-"))
        words = words[:k]
    return words[1:], tail


SYMBLOCK = [(w, c, s) for w, c, s in console_lines() if argv_of(c)]


def test_the_pages_show_symblock_commands():
    assert len(SYMBLOCK) >= 40 and any(s for _, _, s in SYMBLOCK)


@pytest.mark.parametrize("where,command,shown", SYMBLOCK, ids=[f"{w} {c[:50]}" for w, c, _ in SYMBLOCK])
def test_a_console_line_names_real_flags(where, command, shown):
    argv, _ = argv_of(command)
    from symblock.commands.flags import join_values
    try:
        cli.build_parser(only=argv[0]).parse_args(join_values(argv))
    except SystemExit as e:
        pytest.fail(f"{where}: `{command}` is refused by the command line ({e})")


def matches(shown: list[str], printed: list[str]) -> bool:
    """Whether the printed lines are the shown ones, a shown line `...` standing for any lines."""
    pattern = "".join(r"(?:[^\n]*\n)*?" if line.strip() in ("...", "…") else re.escape(line) + r"\n"
                      for line in shown)
    return re.fullmatch(pattern, "".join(line + "\n" for line in printed)) is not None


def runnable(argv: list[str]) -> bool:
    """A command on a built-in example (or none) whose output does not depend on files or torch."""
    from symblock.commands.flags import join_values
    from symblock.engine.sources import example_names
    if argv[0] not in SHOWN:
        return False
    spec = getattr(cli.build_parser(only=argv[0]).parse_args(join_values(argv)), "spec", None)
    return spec is None or spec.removeprefix("example:") in example_names()


SHOWN_RUNS = [(w, c, s) for w, c, s in SYMBLOCK if s and runnable(argv_of(c)[0])]


def test_some_shown_outputs_are_run():
    assert len(SHOWN_RUNS) >= 6


@pytest.mark.parametrize("where,command,shown", SHOWN_RUNS, ids=[f"{w} {c[:50]}" for w, c, _ in SHOWN_RUNS])
def test_a_shown_output_is_what_the_command_prints(where, command, shown, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    argv, tail = argv_of(command)
    code = cli.main(argv)
    out = capsys.readouterr()
    printed = (out.out + out.err).rstrip("\n").splitlines()
    if tail:
        printed = printed[-tail:]
    assert code == 0, (where, out.err)
    assert matches(shown, printed), (where, "\n".join(printed))


PYTHON = blocks("python")


@pytest.mark.parametrize("where,body", PYTHON, ids=[w for w, _ in PYTHON])
def test_a_python_block_compiles_and_one_on_built_in_examples_runs(where, body, tmp_path, monkeypatch, capsys):
    """Every Python block is valid Python; one that writes no files, needs no torch model and names
    only built-in examples is run as printed, and what its comments say it prints is printed."""
    code = compile(body, where, "exec")
    if re.search(r"torch|worksheet\(|grade\(|spec_from", body):
        return
    monkeypatch.chdir(tmp_path)
    exec(code, {"__name__": "__doc_snippet__"})
    printed = capsys.readouterr().out.splitlines()
    said = [m.group(1).strip() for line in body.splitlines() if line.startswith("print(")
            for m in [re.search(r"#\s*(.+)$", line)] if m]
    assert printed[:len(said)] == said, where


def inline_commands() -> list[tuple[str, str]]:
    """(page, command) of every `symblock COMMAND ARG…` span in the pages' prose (not in code blocks),
    leaving out spans that show a choice or an elision (`[--json]`, `sum|mse`, `…`)."""
    found = []
    for page in PAGES:
        prose = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        for m in re.finditer(r"`(symblock \w[^`]*)`", prose):
            command = " ".join(m.group(1).split())
            if len(command.split()) > 2 and not re.search(r"[\[\]|…]|\.\.\.", command):
                found.append((str(page.relative_to(ROOT)), command))
    return found


INLINE = inline_commands()


def test_every_command_the_prose_names_parses():
    """A command written in a sentence (`symblock worksheet tiny-bert --out bert`) runs as written:
    its command, flags and required arguments are the program's."""
    from symblock.commands.flags import join_values
    assert len(INLINE) >= 30
    refused = []
    for where, command in INLINE:
        argv = shlex.split(command)[1:]
        try:
            cli.build_parser(only=argv[0]).parse_args(join_values(argv))
        except SystemExit as e:
            if e.code:
                refused.append(f"{where}: `{command}`")
    assert not refused, refused
