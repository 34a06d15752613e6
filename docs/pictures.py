"""Make the docs' pictures from the committed gallery (worksheets/), so they show what the program
writes today: a sheet's and a key's first page (pdftoppm), the HTML sheet in headless Chromium.

    python docs/pictures.py        # rewrites docs/img/*.png; run after regenerating the gallery
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
GALLERY, IMG = ROOT / "worksheets", ROOT / "docs" / "img"


def page(pdf: Path, out: Path, dpi: int = 70) -> Image.Image:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["pdftoppm", "-r", str(dpi), "-png", "-f", "1", "-l", "1", "-singlefile", str(pdf),
                        f"{tmp}/p"], check=True)
        img = Image.open(f"{tmp}/p.png").convert("RGB")
        img.load()
    img.save(out, optimize=True)
    return img


def side_by_side(a: Image.Image, b: Image.Image, out: Path, gap: int = 16) -> None:
    w, h = a.width + gap + b.width, max(a.height, b.height)
    both = Image.new("RGB", (w, h), "white")
    both.paste(a, (0, 0))
    both.paste(b, (a.width + gap, 0))
    both.save(out, optimize=True)


def screenshot(html: Path, out: Path, size: str = "1000,1100") -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("chromium is needed for the HTML screenshot (bash .ci/setup installs it)")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp}", f"--window-size={size}", f"--screenshot={out}",
                        html.as_uri()], check=True, capture_output=True)


def main() -> None:
    IMG.mkdir(parents=True, exist_ok=True)
    en, zh = GALLERY / "seed-post-ln", GALLERY / "seed-post-ln-zh"
    sheet, key = page(en / "sheet.pdf", IMG / "sheet.png"), page(en / "key.pdf", IMG / "key.png")
    side_by_side(sheet, key, IMG / "sheet-and-key.png")
    side_by_side(page(zh / "sheet.pdf", IMG / "sheet-zh.png"), page(zh / "key.pdf", IMG / "key-zh.png"),
                 IMG / "sheet-and-key-zh.png")
    screenshot(en / "sheet.html", IMG / "html.png")
    print("wrote", ", ".join(sorted(p.name for p in IMG.glob("*.png"))))


if __name__ == "__main__":
    main()
