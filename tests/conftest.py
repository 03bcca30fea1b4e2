"""Shared test settings and fixtures.

The tests run tiny models, where handing work to a second thread costs more than it saves
(20-50x slower on a busy two-core machine), so the whole suite runs torch on one thread.

`browser`: a real browser for the explorer page (tests/viz) and the web app (tests/serve),
Debian's Chromium driven by playwright. Never `playwright install`: the browser is the system's
/usr/bin/chromium. A machine without it or without playwright skips the browser tests, saying
which is missing; in CI (CI=true) they must run, so there the same absence fails them.

Two tiers: plain `pytest` (CI) runs everything; `pytest -m "not slow"` is the contributor's fast loop. The
`slow` mark (registered in pyproject.toml, nowhere else) goes on every test that drives Chromium, builds or
executes the docs, spawns a process, trains or experiments for long, or builds the wheel: by module
(`pytestmark`), by test, or here by fixture (SLOW_FIXTURES). A test without it that starts a process fails,
naming the command, so the fast tier stays free of them (tests/test_tiers.py).
"""

import os
import subprocess
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

# the command-line tests' fixtures: an autouse token cache in the session's temp folder, a tiny corpus
pytest_plugins = ["tests.cli_helpers"]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright, missing = None, "the Python package playwright is not installed"
    else:
        missing = None if CHROMIUM.exists() else f"{CHROMIUM} is missing (apt-get install chromium)"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(f"no browser for the browser tests: {missing}")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


# a test that asks for one of these is slow wherever it lives: Chromium, the tour's executed chapters, the built
# site (tests/docs), an experiment's quick run (up to 20 s each; its report asks git for the history: tests/experiments)
SLOW_FIXTURES = {"browser", "executed_tour", "site", "quick_report"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


class ProcessInFastTest(AssertionError):
    """A test outside the slow tier started a process."""


@pytest.fixture(autouse=True)
def spawned(request, monkeypatch):
    """The processes a fast test tried to start (it is refused them, and fails at teardown); slow tests may."""
    tried: list = []
    if request.node.get_closest_marker("slow") is None:
        def refuse(self, args, *rest, **kwargs):
            tried.append(args)
            raise ProcessInFastTest(f"a test without the slow mark starts a process: {args!r}")
        monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    yield tried
    if tried:
        pytest.fail(f"started {len(tried)} process(es) but is not marked slow (@pytest.mark.slow): {tried[0]!r}")
