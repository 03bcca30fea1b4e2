"""The fault campaign: hostile input, failing disks, kills and bombs (docs/reliability.md).

Shared helpers: `cli` runs the command line in-process, `cli_process` in a child process (for
kills, memory ceilings and exit codes as a shell sees them), `assert_one_line_error` checks the
promise every bad input gets: one line on stderr naming the problem, a non-zero exit, no traceback.

Tests marked `slow` here are the long campaign (many kills, many fuzz examples): they run only
when asked for with `-m slow`; the default run (CI) keeps a few cases of each kind.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import TINY_MODEL, TINY_TRAIN, assert_one_line_error, cli, digest  # noqa: F401 (re-exported)

ROOT = Path(__file__).resolve().parents[2]


def cli_process(*args, timeout: float = 300, env: dict | None = None, preexec_fn=None, **kw) -> subprocess.CompletedProcess:
    """Run `python -m redthread` in a child process; returns the CompletedProcess (text mode)."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "redthread", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env, preexec_fn=preexec_fn, **kw)


def folder_digest(folder: Path) -> dict[str, str]:
    """Every file under a folder -> its sha256: compare before and after to show nothing was touched."""
    return {p.relative_to(folder).as_posix(): digest(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes tens of seconds (deselect with -m 'not slow')")


def pytest_collection_modifyitems(config, items):
    """The long campaign (`slow` under tests/faults) runs only when `-m` names slow."""
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="the long fault campaign: run it with -m slow")
    here = Path(__file__).parent
    for item in items:
        if "slow" in item.keywords and here in Path(item.fspath).parents:
            item.add_marker(skip)
