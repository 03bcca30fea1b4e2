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


def test_the_reference_data_sets_are_the_published_files():
    import hashlib

    expected = {"tinyshakespeare.txt": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
                "names.txt": "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d"}
    readme = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    for name, digest in expected.items():
        assert hashlib.sha256((ROOT / "data" / name).read_bytes()).hexdigest() == digest and digest in readme
