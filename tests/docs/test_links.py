"""docs/hooks.py: where a link from docs/ to a repository file leads on the site."""

import pytest

from tests.docs.conftest import load

hooks = load("hooks")


@pytest.mark.parametrize("page, url, expected", [
    ("claims.md", "../src/redthread/layers/attention.py", "api/layers/attention.md"),
    ("experiments/index.md", "../../src/redthread/models/__init__.py", "../api/models/index.md"),
    ("architecture.md", "../src/redthread/__init__.py", "api/index.md"),
    ("benchmarks.md", "../benchmarks/common.py", "source/benchmarks/common.py.md"),
    ("tour/01-x.ipynb", "../../tests/docs/00-example.py#L3", "../source/tests/docs/00-example.py.md"),
])
def test_a_link_to_a_repository_file_leads_to_its_page(tmp_path, page, url, expected):
    assert hooks.repo_link(page, url, tmp_path) == expected


def test_a_source_page_shows_the_file(tmp_path):
    hooks.repo_link("benchmarks.md", "../benchmarks/common.py", tmp_path)
    text = (tmp_path / "source/benchmarks/common.py.md").read_text(encoding="utf-8")
    assert text.startswith("# `benchmarks/common.py`\n\n```python\n")
    assert (hooks.REPO / "benchmarks/common.py").read_text(encoding="utf-8").strip() in text


@pytest.mark.parametrize("url", [
    "../src/redthread/no_such_module.py",  # missing: left for MkDocs to report
    "claims.md", "experiments/index.md#x", "#anchor", "https://example.org/x.py", "../../outside.py", "../docs/claims.md",
])
def test_other_links_are_left_alone(tmp_path, url):
    assert hooks.repo_link("architecture.md", url, tmp_path) is None
