"""The fault campaign: hostile input, failing disks, kills and bombs (docs/reliability.md).

Shared helpers: `cli` runs the command line in-process, `cli_process` in a child process (for
kills, memory ceilings and exit codes as a shell sees them), `assert_one_line_error` checks the
promise every bad input gets: one line on stderr naming the problem, a non-zero exit, no traceback.

Tests marked `slow` here are the long campaign (many kills, many fuzz examples): they run only
when asked for with `-m slow`; the default run (CI) keeps a few cases of each kind.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from redthread.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY_MODEL = ["--n-layer", "1", "--n-head", "2", "--d-model", "16", "--block-size", "16"]
TINY_TRAIN = ["--max-iters", "12", "--batch-size", "4", "--eval-interval", "6", "--eval-batches", "2",
              "--log-interval", "3", "--warmup-iters", "2", "--no-progress"]


def cli(*args) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse
            code = e.code
    return code, out.getvalue(), err.getvalue()


def cli_process(*args, timeout: float = 300, env: dict | None = None, preexec_fn=None, **kw) -> subprocess.CompletedProcess:
    """Run `python -m redthread` in a child process; returns the CompletedProcess (text mode)."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "redthread", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env, preexec_fn=preexec_fn, **kw)


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    """One line on stderr that says error and names the problem, a non-zero exit, no traceback."""
    assert code != 0, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "error" in lines[0] and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folder_digest(folder: Path) -> dict[str, str]:
    """Every file under a folder -> its sha256: compare before and after to show nothing was touched."""
    return {p.relative_to(folder).as_posix(): digest(p) for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def token_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("REDTHREAD_CACHE", str(tmp_path_factory.getbasetemp() / "token-cache"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "tiny.txt"
    path.write_text("to be, or not to be: that is the question.\n" * 60, encoding="utf-8")
    return path


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
