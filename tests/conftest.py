"""Shared test settings and fixtures.

The tests run tiny models, where handing work to a second thread costs more than it saves
(20-50x slower on a busy two-core machine), so the whole suite runs torch on one thread.

`browser`: a real browser for the explorer page (tests/viz) and the web app (tests/serve),
Debian's Chromium driven by playwright. Never `playwright install`: the browser is the system's
/usr/bin/chromium. A machine without it or without playwright skips the browser tests, saying
which is missing; in CI (CI=true) they must run, so there the same absence fails them.
"""

import os
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
