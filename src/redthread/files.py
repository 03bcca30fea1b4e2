"""Atomic file writes: a temporary file in the same folder, flushed to disk, then renamed into
place, so an interrupted write never leaves a half-written file, and never clobbers a good one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0)  # read the process's umask (the only way is to set it) ...
os.umask(_UMASK)  # ... and put it back


def atomic_write(path: Path, write) -> None:
    """Call write(tmp_path), then rename tmp_path onto path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes files private; give them the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
