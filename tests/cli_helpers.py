"""Helpers for tests of the command line: run it in-process, check the one-line error promise,
and train the tiny run many tests start from. `token_cache` (autouse) and `corpus` are fixtures:
a test module imports them to use them."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from pathlib import Path

import pytest

from redthread.cli import main

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


def train_tiny_run(tmp_path_factory, corpus: Path, name: str = "runs") -> tuple[Path, str]:
    """Train the tiny run (12 steps, checkpoints at 6 and 12) in a fresh folder; returns (folder, stdout)."""
    os.environ["REDTHREAD_CACHE"] = str(tmp_path_factory.getbasetemp() / "token-cache")
    out = tmp_path_factory.mktemp(name) / "tiny"
    code, stdout, err = cli("train", "--data", corpus, "--out", out, *TINY_MODEL, *TINY_TRAIN)
    assert code == 0, err
    return out, stdout


@pytest.fixture(autouse=True)
def token_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("REDTHREAD_CACHE", str(tmp_path_factory.getbasetemp() / "token-cache"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "tiny.txt"
    path.write_text("to be, or not to be: that is the question.\n" * 60, encoding="utf-8")
    return path
