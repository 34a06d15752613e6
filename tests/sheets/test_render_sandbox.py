"""User templates (`--template-dir`) are hostile code: every escape found by the hostile-input
corpus is a regression test here. Each failed on the round-1 renderer (a hand-written path join,
a `fmt` filter calling `str.format` outside the sandbox, no render budget)."""
from __future__ import annotations

import os

import pytest

from symblock import cli
from symblock.sheets import render

SECRET = "symblock-test-secret-7f3a"


def _render(tmp_path, template: str, capsys, monkeypatch=None):
    tdir = tmp_path / "tpl"
    tdir.mkdir(exist_ok=True)
    (tdir / "worksheet.md.j2").write_text(template, encoding="utf-8")
    out = tmp_path / "ws"
    rc = cli.main(["worksheet", "--format", "markdown", "--out", str(out), "--template-dir", str(tdir)])
    err = capsys.readouterr().err
    return rc, out, err


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_include_cannot_leave_the_template_directories(tmp_path, capsys, secret_file, how):
    name = str(secret_file) if how == "absolute" else "../" * 30 + str(secret_file).lstrip("/")
    rc, out, err = _render(tmp_path, "{% include '" + name + "' %}", capsys)
    assert rc == 2 and "TemplateNotFound" in err
    assert not out.exists()
    assert SECRET not in err


def test_include_of_a_package_file_outside_templates_fails(tmp_path, capsys):
    # the package folder holds Python sources beside templates/: none is reachable by name
    rc, out, err = _render(tmp_path, "{% include '../symblock/cli.py' %}", capsys)
    assert rc == 2 and "TemplateNotFound" in err


def test_no_format_filter_reaches_globals(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SYMBLOCK_TEST_SECRET", SECRET)
    for template in ("{{ '{0.__init__.__globals__[os].environ}' | fmt(cycler) }}",
                     "{{ '{0.__init__.__globals__[os].environ}'.format(cycler) }}",
                     "{{ '%s' | format(cycler.__init__.__globals__) }}"):
        rc, out, err = _render(tmp_path, template, capsys)
        assert rc == 2, template
        assert SECRET not in err and not out.exists()


def test_safe_format_still_works(tmp_path, capsys):
    rc, out, err = _render(tmp_path, "{{ '{} tasks'.format(tasks | length) }}", capsys)
    assert rc == 0, err
    assert (out / "sheet.md").read_text() == "13 tasks\n"


def test_endless_loop_is_stopped_by_the_time_budget(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(render, "MAX_SECONDS", 0.5)
    loops = ["{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
             # no call, attribute or range inside: only the alarm can stop it
             "{% set s = 'x' * 1000 %}{% for a in s %}{% for b in s %}{% for c in s %}"
             "{% endfor %}{% endfor %}{% endfor %}"]
    for template in loops:
        rc, out, err = _render(tmp_path, template, capsys)
        assert rc == 2 and "longer than 0.5 s" in err, err
        assert not out.exists()


def test_huge_values_and_output_are_refused(tmp_path, capsys, monkeypatch):
    rc, _, err = _render(tmp_path, "{{ 'x' * 10**9 }}", capsys)
    assert rc == 2 and "RenderBudgetError" in err
    rc, _, err = _render(tmp_path, "{{ 2 ** (10 ** 9) }}", capsys)
    assert rc == 2 and "RenderBudgetError" in err
    monkeypatch.setattr(render, "MAX_OUTPUT", 10_000)
    rc, _, err = _render(tmp_path, "{% for i in range(1000) %}{{ 'y' * 100 }}{% endfor %}", capsys)
    assert rc == 2 and "grew past" in err


@pytest.mark.parametrize("template", ["{% include 'worksheet.md.j2' %}",
                                      "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}"])
def test_recursion_is_a_clear_error(tmp_path, capsys, template):
    rc, out, err = _render(tmp_path, template, capsys)
    assert rc == 2 and "itself without end" in err
    assert "Traceback" not in err


def test_the_alarm_is_restored_after_rendering(tmp_path, capsys):
    import signal
    before = signal.getsignal(signal.SIGALRM)
    rc, _, _ = _render(tmp_path, "ok {{ title }}", capsys)
    assert rc == 0
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


# ---------------------------------------------------------------- terminal output

ESCAPES = "\x1b]0;pwned\x07 \x1b[2J"


def test_title_escapes_are_not_printed_raw(spec_file, capsys):
    from symblock.engine import spec
    text = spec.example_text("seed-post-ln").replace('title: {en: "Post-LN block, worked by hand", zh: "Post-LN 块：手算演示"}',
                                                    'title: "T \\e]0;pwned\\a \\e[2J"')
    assert "\\e]0" in text
    assert cli.main(["forward", str(spec_file(text, "s.yaml"))]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "T \\x1b]0;pwned\\x07 \\x1b[2J" in out


def test_unknown_key_escapes_are_not_printed_raw(spec_file, capsys):
    path = str(spec_file('"bogus\\e[2J": 1\n', "s.yaml"))
    assert cli.main(["forward", path]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "bogus\\x1b[2J: unknown key" in err


def test_an_unencodable_title_is_refused_by_field_with_the_character_escaped(spec_file, capsys):
    """A lone surrogate could reach every output (UTF-8 files cannot hold it): refused, named."""
    from symblock.engine import spec
    text = spec.example_text("seed-post-ln").replace('title: {en: "Post-LN block, worked by hand", zh: "Post-LN 块：手算演示"}',
                                                    'title: "bad \\ud800 surrogate"')
    path = str(spec_file(text, "s.yaml"))
    assert cli.main(["forward", path]) == 2
    err = capsys.readouterr().err
    assert "title:" in err and "\\ud800" in err and "Traceback" not in err


def test_printable_keeps_text_and_escapes_controls():
    from symblock.errors import printable
    assert printable("σ = 3/2\tok\n中文 é") == "σ = 3/2\tok\n中文 é"
    assert printable(ESCAPES) == "\\x1b]0;pwned\\x07 \\x1b[2J"
    assert printable("\x9b\x00\x7f") == "\\x9b\\x00\\x7f"


def test_environment_has_no_fmt_filter():
    env = render.environment("markdown")
    assert "fmt" not in env.filters
    assert os.path.isdir(render.package_template_dir())
