"""--format html in a real browser (headless Chromium from Debian, driven by Selenium through
chromedriver): every gallery page typesets all its math with the shipped KaTeX (no error node, no
console error, KaTeX's own fonts loaded offline), a student's typed answers download as a file
that `symblock check` marks, and a screenshot of the math is not blank."""
from __future__ import annotations

import io
import json
import re
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml
from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from symblock import cli
from symblock.commands.gallery import GALLERY
from worksheet_tools import REPO

GALLERY_DIR = REPO / "worksheets"
PAGES = [f"{g[0]}/{doc}.html" for g in GALLERY for doc in ("sheet", "key")]
KATEX_DIR = REPO / "templates" / "katex"
NPM_KATEX = REPO / "tests" / "katex" / "node_modules" / "katex"


def _program(*names: str) -> str:
    for name in names:
        if shutil.which(name):
            return shutil.which(name)
    pytest.fail(f"{names[0]} is not installed; the HTML tests need Debian's chromium and "
                "chromium-driver (bash .ci/setup installs them)")


@pytest.fixture(scope="module")
def downloads(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads):
    options = webdriver.ChromeOptions()
    options.binary_location = _program("chromium", "chromium-browser")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1000,1400", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(_program("chromedriver")), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    yield driver
    driver.quit()


def load(driver, path: Path) -> list[dict]:
    """Open a page and wait for KaTeX; returns the console messages it logged."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(path.resolve().as_uri())
    driver.execute_async_script("document.fonts.ready.then(arguments[arguments.length - 1]);")
    return driver.get_log("browser")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_gallery_page_typesets_every_formula(browser, page):
    logs = load(browser, GALLERY_DIR / page)
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == []
    js = browser.execute_script
    spans = js("return document.querySelectorAll('.math').length")
    assert spans > 20
    assert js("return document.querySelectorAll('.katex-error').length") == 0
    assert js("return [...document.querySelectorAll('.math')].filter(e => !e.querySelector('.katex')).length") == 0
    assert js("return document.fonts.check('16px KaTeX_Main') && document.fonts.check('16px KaTeX_Math')")
    assert js("return [...document.fonts].filter(f => f.status === 'loaded').length") >= 2
    if page.endswith("sheet.html"):
        grids = browser.find_elements(By.CSS_SELECTOR, "table.grid")
        tasks = browser.find_elements(By.CSS_SELECTOR, "article.task")
        assert len(grids) == len(tasks) > 0
        # answers save for symblock check, forward and gradient sheets alike
        assert browser.find_elements(By.ID, "save-yaml") and browser.find_elements(By.ID, "save-json")


def _download(downloads: Path, name: str, timeout: float = 30, settle: float = 0.3) -> Path:
    """The downloaded file, once Chromium has finished writing it: it exists, is not empty, has no
    `.crdownload` partner left and its size has not changed for `settle` seconds. (Chromium can
    show the final name before the last bytes are flushed, so its mere existence is not enough.)"""
    path, partner = downloads / name, downloads / (name + ".crdownload")
    end, seen, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < end:
        size = path.stat().st_size if path.is_file() else None
        if size != seen:
            seen, since = size, time.monotonic()
        elif size and not partner.exists() and time.monotonic() - since >= settle:
            return path
        time.sleep(0.05)
    state = ("not there" if seen is None else f"{seen} bytes") + (", still .crdownload" if partner.exists() else "")
    pytest.fail(f"the download {name} did not finish within {timeout} s ({state}); "
                f"{downloads} holds {sorted(p.name for p in downloads.iterdir())}")


def _type(browser, step: str, rows: list[list[str]]) -> None:
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            cell = browser.find_element(By.CSS_SELECTOR, f'table.grid[data-step="{step}"] '
                                                         f'input[data-row="{i}"][data-col="{j}"]')
            cell.clear()
            cell.send_keys(value)


@pytest.mark.slow
def test_typed_answers_download_as_a_file_that_symblock_check_marks(browser, downloads, capsys, tmp_path):
    load(browser, GALLERY_DIR / "seed-post-ln" / "sheet.html")
    browser.find_element(By.ID, "student-name").send_keys("Ada")
    # the seed article's numbers, with its variance divided by n − 1
    _type(browser, "resid1", [["2.401", "0.599"], ["1.504", "1.752"], ["2.576", "1.716"]])
    _type(browser, "norm1.mean", [["1.5"], ["1.628"], ["2.146"]])
    _type(browser, "norm1.var", [["1.624"], ["0.031"], ["0.370"]])
    # partly filled: the student's own σ from their variance (carried), the middle row left empty
    _type(browser, "norm1.std", [["1.274"], [""], ["0.608"]])
    for kind in ("yaml", "json"):
        browser.find_element(By.ID, f"save-{kind}").click()
        saved = _download(downloads, f"answers-seed-post-ln.{kind}")
        data = yaml.safe_load(saved.read_text()) if kind == "yaml" else json.loads(saved.read_text())
        assert data["name"] == "Ada" and data["decimals"] == 3
        assert data["id"] == "seed-post-ln"  # what `symblock grade` matches the file to its variant by
        assert list(data["steps"]) == ["resid1", "norm1.mean", "norm1.var", "norm1.std"]  # empty grids left out
        assert data["steps"]["resid1"][2] == ["2.576", "1.716"]
        assert data["steps"]["norm1.std"] == [["1.274"], [None], ["0.608"]]  # the blank is null
        capsys.readouterr()
        assert cli.main(["check", str(saved), "--json"]) == 1  # the id: alone names the block
        report = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
        assert report["resid1"]["status"] == report["norm1.mean"]["status"] == "correct"
        assert report["norm1.var"]["status"] == "wrong"
        assert "ln_sample_variance" in json.dumps(report["norm1.var"]["diagnosis"])
        std = report["norm1.std"]  # the filled entries are marked, the blank is reported
        assert std["status"] == "partly_blank" and std["blank"] == 1 and std["built_on"] == ["norm1.var"]   # ◐
        assert [(e["row"], e["mark"]) for e in std["entries"]] == [(0, "carried"), (1, "blank"), (2, "carried")]
        assert report["norm1"]["status"] == "missing" and report["norm1"]["blank"] == 0
        capsys.readouterr()
        assert cli.main(["check", str(saved)]) == 1
        assert re.search(r"◐ carried +norm1\.std +.*partly blank: 2 of 3 entries answered", capsys.readouterr().out)
    note = browser.find_element(By.ID, "save-note").text
    assert "norm1.std" in note and "norm1.var" not in note and note.startswith("Saved.")


@pytest.mark.slow
def test_a_decimal_comma_typed_in_the_page_is_saved_as_a_point(browser, downloads):
    """2,5 and -0,25 (one comma between digits, as symblock reads it) are saved as 2.5 and -0.25;
    1,234.5 (ambiguous) is saved as typed, for symblock to mark that entry wrong and say why."""
    load(browser, GALLERY_DIR / "pre-ln-causal-gelu" / "sheet.html")
    _type(browser, "norm1.mean", [["2,5"], ["-0,25"], ["1,234.5"]])
    browser.find_element(By.ID, "save-yaml").click()
    saved = _download(downloads, "answers-pre-ln-causal-gelu.7.yaml")
    assert yaml.safe_load(saved.read_text())["steps"]["norm1.mean"][:3] == [["2.5"], ["-0.25"], ["1,234.5"]]


def test_a_sheet_saved_with_nothing_typed_is_every_task_blank(browser, downloads, capsys):
    """Not `steps: {}` (which check refuses and grade leaves ungraded) but every grid as nulls, as a
    set's blank answers.yaml: nothing answered yet, graded 0."""
    load(browser, GALLERY_DIR / "tiny-llama" / "sheet.html")
    grids = [g.get_attribute("data-step") for g in browser.find_elements(By.CSS_SELECTOR, "table.grid")]
    browser.find_element(By.ID, "save-yaml").click()
    data = yaml.safe_load(_download(downloads, "answers-tiny-llama.11.yaml").read_text())
    assert grids and list(data["steps"]) == grids
    assert all(v is None for rows in data["steps"].values() for row in rows for v in row)
    capsys.readouterr()
    assert cli.main(["check", str(downloads / "answers-tiny-llama.11.yaml")]) == 1
    assert "Nothing answered yet" in capsys.readouterr().out


@pytest.mark.slow
def test_gradient_sheet_saves_answers_that_the_command_it_shows_marks(browser, downloads, capsys, tmp_path):
    out = tmp_path / "bp"
    assert cli.main(["worksheet", "rmsnorm-swiglu", "--preset", "backprop", "--loss", "sum", "--out", str(out),
                     "--format", "html"]) == 0
    load(browser, out / "sheet.html")
    command = browser.find_element(By.CSS_SELECTOR, ".save code").text
    assert command == "symblock check answers-rmsnorm-swiglu.3.yaml --loss sum --wrt W_2,W_1"
    # L = Σ Y: ∂L/∂Y is all ones (correct); a ∂L/∂W_2 of zeros is wrong; one row of grad.resid2
    _type(browser, "grad.output", [["1"] * 4, ["1"] * 4])
    _type(browser, "grad.W_2", [["0"] * 4] * 3)
    _type(browser, "grad.resid2", [["1", "1", "1", "1"]])
    browser.find_element(By.ID, "save-yaml").click()
    saved = _download(downloads, "answers-rmsnorm-swiglu.3.yaml")
    assert yaml.safe_load(saved.read_text())["steps"]["grad.resid2"][1] == [None] * 4
    capsys.readouterr()
    argv = command.split()[1:]
    assert cli.main([argv[0], str(saved), *argv[2:], "--json"]) == 1
    report = {s["name"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    assert report["grad.output"]["status"] == "correct" and report["grad.W_2"]["status"] == "wrong"
    assert report["grad.resid2"]["blank"] == 4 and report["grad.W_1"]["status"] == "missing"
    assert all(s["asked"] for n, s in report.items() if n.startswith("grad."))


@pytest.mark.slow
def test_screenshot_of_the_math_is_not_blank(browser, tmp_path):
    load(browser, GALLERY_DIR / "pre-ln-causal-gelu" / "key.html")
    browser.save_screenshot(str(tmp_path / "key.png"))
    page = Image.open(tmp_path / "key.png").convert("L")
    assert page.size[0] >= 900 and _ink(page) > 0.01
    math = browser.find_elements(By.CSS_SELECTOR, ".math.display")[0]  # X and the weights, side by side
    shot = Image.open(io.BytesIO(math.screenshot_as_png)).convert("L")
    shot.save(tmp_path / "math.png")
    # the typeset matrices: blocks of dark glyphs several lines tall, not an empty box or one line
    from PIL import ImageOps
    box = ImageOps.invert(shot).point(lambda v: 255 if v > 127 else 0).getbbox()
    assert box is not None, "the math is blank"
    glyphs = shot.crop(box)
    assert glyphs.size[0] > 150 and glyphs.size[1] > 40 and 0.03 < _ink(glyphs) < 0.6, (box, _ink(glyphs))
    # and KaTeX's glyphs, not the raw TeX: the text of the box is typeset characters only
    assert "\\begin" not in math.text and "bmatrix" not in math.text


def _ink(img) -> float:
    hist = img.histogram()
    return sum(hist[:128]) / (img.size[0] * img.size[1])


@pytest.mark.slow
def test_index_page_of_a_set_links_every_variant(browser, tmp_path):
    spec = tmp_path / "easy.yaml"
    spec.write_text("random: {seed: 1, difficulty: easy}\n")
    out = tmp_path / "set"
    assert cli.main(["worksheet", str(spec), "--variants", "2", "--out", str(out), "--format", "html"]) == 0
    assert load(browser, out / "instructor" / "index.html") == []  # each variant's sheet and key
    links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "ul.variants a")]
    assert len(links) == 4
    legend = browser.find_element(By.CSS_SELECTOR, "p.meta").text   # what each line holds, in words
    assert legend == "2 variants, one per line: its worksheet ID, then links to its worksheet and its answer key"
    assert (out / "students" / "index.html").read_text(encoding="utf-8").count(
        "2 variants, one per line: its worksheet ID, then a link to its worksheet<") == 1
    browser.get(links[1])  # a key, one folder down: KaTeX comes from ../katex/
    browser.execute_async_script("document.fonts.ready.then(arguments[arguments.length - 1]);")
    assert browser.execute_script("return document.querySelectorAll('.katex').length") > 20
    assert browser.execute_script("return document.querySelectorAll('.katex-error').length") == 0
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_vendored_katex_is_the_pinned_npm_release():
    """templates/katex/ is KaTeX's dist as npm installs it (tests/katex pins the version)."""
    dist = NPM_KATEX / "dist"
    assert dist.is_dir(), "run `npm ci --prefix tests/katex` (bash .ci/setup does)"
    for name in ("katex.min.js", "katex.min.css"):
        assert (KATEX_DIR / name).read_bytes() == (dist / name).read_bytes(), name
    assert (KATEX_DIR / "LICENSE").read_bytes() == (NPM_KATEX / "LICENSE").read_bytes()
    fonts = sorted(p.name for p in (dist / "fonts").glob("*.woff2"))
    assert fonts == sorted(p.name for p in (KATEX_DIR / "fonts").iterdir())
    assert all((KATEX_DIR / "fonts" / f).read_bytes() == (dist / "fonts" / f).read_bytes() for f in fonts)


@pytest.mark.parametrize("title", ["<script>alert(1)</script>", "</title><b>x"])
def test_user_text_is_escaped(tmp_path, title):
    out = tmp_path / "h"
    assert cli.main(["worksheet", "--title", title, "--out", str(out), "--format", "html"]) == 0
    text = (out / "sheet.html").read_text()
    assert title not in text and "&lt;" in text
    assert text.count("<script") == 2  # KaTeX's and the page's own


def _page_prose(page: str) -> list[str]:
    """The English words a reader of an HTML page sees: its text outside <script>, <style> and
    <code>, with KaTeX's spans read as `$...$` math, plus the script's own message to the reader."""
    import html as htmllib
    sys.path.insert(0, str(Path(__file__).parent))
    from prose import prose_words
    words = []
    for note in re.findall(r'blanks: ("(?:[^"\\]|\\.)*")', page):
        words += prose_words(json.loads(note))
    text = re.sub(r"<(script|style|code)\b.*?</\1>", " ", page, flags=re.S)
    text = re.sub(r'<(span|div) class="math[^"]*">(.*?)</\1>', lambda m: f" ${m.group(2)}$ ", text, flags=re.S)
    text = htmllib.unescape(re.sub(r"<[^>]+>", " ", text))
    return words + prose_words(text)


def test_chinese_pages_have_no_english_prose(tmp_path):
    """The zh pages: sheet, key and index, generated now and as committed in the gallery."""
    spec = tmp_path / "easy.yaml"
    spec.write_text("random: {seed: 1, difficulty: easy}\n")
    out = tmp_path / "zh"
    assert cli.main(["worksheet", str(spec), "--variants", "2", "--out", str(out), "--format", "html",
                     "--lang", "zh"]) == 0
    pages = sorted(out.glob("**/*.html")) + sorted(GALLERY_DIR.glob("*-zh/*.html"))
    zh = [g for g in GALLERY if g[2].get("lang") == "zh"]
    assert len(pages) == 6 + 2 * len(zh)  # 2 sheets, 2 keys, the students' and the instructor's index, each zh entry's 2
    for page in pages:
        assert _page_prose(page.read_text()) == [], page
    en = (GALLERY_DIR / "seed-post-ln" / "sheet.html").read_text()
    assert {"Save", "answers", "Saved", "Row"} & set(_page_prose(en)) >= {"Save", "answers", "Saved"}


def test_pages_print_points_and_pack_the_given_data_as_paper_does(tmp_path):
    spec = tmp_path / "pts.yaml"
    spec.write_text("random: {seed: 3, difficulty: easy}\nexercise: {points: {norm1.std: 2}}\n")
    out = tmp_path / "h"
    assert cli.main(["worksheet", str(spec), "--out", str(out), "--format", "html"]) == 0
    for doc in ("sheet", "key"):
        page = (out / f"{doc}.html").read_text()
        headings = re.findall(r"<h3>(.*?)</h3>", page)
        points = [re.search(r'class="points">\((\d+) pts?\)', h) for h in headings]
        assert all(points) and len(points) > 5, headings
        assert [int(p.group(1)) for p, h in zip(points, headings) if "norm1.std" in h] == [2]
        assert f"Total: {len(headings) + 1} points" in page  # every task 1 point, norm1.std 2
        labels = re.findall(r'<div class="item">\n<p>(.*?)</p>', page)
        # γ and β of a norm on one line; the small X, W_1, W_2 side by side
        assert any("ln1.gamma" in l and "ln1.beta" in l for l in labels), labels
        assert any("<code>x</code>" in l and "<code>W_1</code>" in l for l in labels), labels
