"""The installed wheel finds its package data (examples, templates) without the checkout."""
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_runs(tmp_path):
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(dist), str(ROOT)], check=True, capture_output=True, text=True)
    # the packaging metadata is clean: an SPDX license string, every package-data folder a package
    said = built.stdout + built.stderr
    assert "deprecated" not in said and "is absent from the `packages`" not in said, said
    wheel = next(dist.glob("symblock-*.whl"))
    assert "symblock/py.typed" in zipfile.ZipFile(wheel).namelist()  # its users' type checkers read the hints
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    # dependencies come from this environment, appended after the wheel's own site-packages
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "_outer_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    run = dict(cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
    where = subprocess.run([str(py), "-c", "import symblock, os; print(os.path.dirname(symblock.__file__))"], **run)
    assert where.stdout.strip().startswith(str(env_dir)), where  # the wheel's copy, not the checkout
    r = subprocess.run([str(env_dir / "bin" / "symblock"), "forward"], **run)
    assert r.returncode == 0, r.stderr
    assert "Post-LN block, worked by hand" in r.stdout and "[ 2401/1000  599/1000 ]" in r.stdout
    r = subprocess.run([str(env_dir / "bin" / "symblock"), "examples"], **run)
    assert "rmsnorm-swiglu" in r.stdout
    r = subprocess.run([str(env_dir / "bin" / "symblock"), "worksheet", "--out", "ws"], **run)
    assert r.returncode == 0, r.stderr  # templates come from the wheel's package data
    assert (tmp_path / "ws" / "key.tex").read_text().startswith("%") or "documentclass" in (tmp_path / "ws" / "key.tex").read_text()
    assert "Answer key" in (tmp_path / "ws" / "key.md").read_text()
    r = subprocess.run([str(env_dir / "bin" / "symblock"), "worksheet", "--format", "html", "--out", "web"], **run)
    assert r.returncode == 0, r.stderr  # KaTeX comes from the wheel's package data
    assert (tmp_path / "web" / "katex" / "katex.min.js").stat().st_size > 200_000
    assert len(list((tmp_path / "web" / "katex" / "fonts").glob("*.woff2"))) == 20
