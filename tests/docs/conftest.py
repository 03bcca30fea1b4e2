"""The guided tour and the docs site, executed and built once per test session.

`executed_tour.notebooks(chapter)` runs a chapter the first time it is asked for and keeps its English and
Chinese notebooks in the session's temp folder; `site` builds the whole site with `mkdocs build --strict` from
those same notebooks, so no chapter executes twice in one run. The chapters are every docs/tour/NN-slug.py
and the fixture chapter tests/docs/00-example.py, which keeps the tests meaningful before the tour exists.
REDTHREAD_TEST_SITE=site (a folder that `python docs/build.py` wrote, without the fixture chapter) tests that
site instead of building one: quick while iterating on the pages' tests.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def load(name: str, as_name: str | None = None):
    """A module of docs/ (they import each other by their bare names, as MkDocs's hooks do)."""
    as_name = as_name or name
    if as_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(as_name, DOCS / f"{name}.py")
        sys.modules[as_name] = module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(DOCS))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(DOCS))
    return sys.modules[as_name]


build_tour = load("build_tour")
build_site = load("build", as_name="docs_build")  # not `build`, the name of PyPA's package
EXAMPLE = Path(__file__).with_name("00-example.py")
CHAPTERS = [EXAMPLE, *build_tour.chapters(DOCS / "tour")]


class ExecutedTour:
    def __init__(self, out: Path):
        self.out = out
        self._done: dict[Path, dict[str, Path]] = {}

    def notebooks(self, chapter: Path) -> dict[str, Path]:
        """{"en": path, "zh": path}: the chapter executed once, on first request."""
        if chapter not in self._done:
            self._done[chapter] = build_tour.write(build_tour.execute(chapter), chapter, self.out)
        return self._done[chapter]


@pytest.fixture(scope="session")
def executed_tour(tmp_path_factory):
    return ExecutedTour(tmp_path_factory.mktemp("tour"))


@pytest.fixture(scope="session")
def site(executed_tour, tmp_path_factory):
    """The site, built with --strict from every chapter's executed notebooks (or REDTHREAD_TEST_SITE's)."""
    if os.environ.get("REDTHREAD_TEST_SITE"):
        return Path(os.environ["REDTHREAD_TEST_SITE"]).resolve()
    for chapter in CHAPTERS:
        executed_tour.notebooks(chapter)
    out = tmp_path_factory.mktemp("site") / "site"
    done = build_site.mkdocs("build", out, tour=executed_tour.out, capture_output=True, text=True)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-3000:]}{done.stderr[-6000:]}"
    return out
