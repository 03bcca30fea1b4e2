"""The fault campaign: hostile input, failing disks, kills and bombs (docs/reliability.md).

Shared helpers: `cli` runs the command line in-process, `cli_process` in a child process (for
kills, memory ceilings and exit codes as a shell sees them), `assert_one_line_error` checks the
promise every bad input gets: one line on stderr naming the problem, a non-zero exit, no traceback.

Every test that spawns a process is marked `slow` (see tests/conftest.py). The long campaign (many kills,
many fuzz examples, a 2 GB file) is marked `campaign`, which pyproject.toml's addopts deselect: plain
`pytest` (CI) runs everything else, `pytest tests/faults -m campaign` runs the campaign.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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

