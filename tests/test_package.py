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
    texts = ROOT / "src" / "redthread" / "data" / "texts"
    readme = (texts / "README.md").read_text(encoding="utf-8")
    for name, digest in expected.items():
        assert hashlib.sha256((texts / name).read_bytes()).hexdigest() == digest and digest in readme


def test_the_shipped_texts_are_found_by_name_and_a_file_of_that_name_by_its_path(tmp_path, monkeypatch):
    from redthread.data import SHIPPED_TEXTS, text_path
    from redthread.data.sequences import load_lines

    assert set(SHIPPED_TEXTS) == {"tinyshakespeare", "names", "tang300"}
    assert all(text_path(name).is_file() for name in SHIPPED_TEXTS)
    data, tok = load_lines("names")
    assert tok.vocab_size == 27 and len(data._x["val"]) == 1000  # makemore's test split of names.txt
    monkeypatch.chdir(tmp_path)
    (tmp_path / "names").write_text("ab\ncd\n" * 10)
    data, tok = load_lines("./names")  # the file here, not the shipped text
    assert tok.vocab_size == 5 and text_path("./names") == Path("names")


def test_the_shipped_chinese_text_is_the_recorded_file_with_its_licence():
    import hashlib

    digest = "e1c5a9e1486924cd8cfee5331feb9033ef8fbf3484f212323740caa839f9d4e4"
    texts = ROOT / "src" / "redthread" / "data" / "texts"
    assert hashlib.sha256((texts / "tang300.txt").read_bytes()).hexdigest() == digest
    assert digest in (texts / "README.md").read_text(encoding="utf-8")
    assert (texts / "LICENSE.chinese-poetry").read_text(encoding="utf-8").lstrip().startswith("The MIT License")
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert "data/texts/*" in package_data["redthread"]  # in the wheel: `--data tang300` works from any install


def test_the_shipped_text_is_found_by_its_name():
    from redthread.data.corpus import load_corpus, text_path

    assert text_path("tang300").is_file() and text_path("tang300.txt") == Path("tang300.txt")
    corpus = load_corpus("tang300")
    assert corpus.text.startswith("西塞山怀古\n刘禹锡\n王濬楼船下益州，金陵王气黯然收。") and corpus.text.count("\n\n") == 319
