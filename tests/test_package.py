"""The package is complete: the licence it declares is the one it ships, with its metadata."""

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]


def test_the_declared_licence_is_shipped():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert project["authors"] and project["readme"] == "README.md"
    assert any(c.startswith("Topic :: Scientific/Engineering") for c in project["classifiers"])
