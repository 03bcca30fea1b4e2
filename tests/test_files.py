"""Atomic writes: whole files or none, with the usual permissions (not mkstemp's private 0600)."""

import os
from pathlib import Path

import pytest

from redthread.files import atomic_write, atomic_write_text


def test_atomic_write_gives_the_usual_permissions(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    atomic_write_text(tmp_path / "a" / "page.html", "hello")
    assert (tmp_path / "a" / "page.html").read_text() == "hello"
    assert (tmp_path / "a" / "page.html").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "keep.txt"
    path.write_text("old")

    def fail(tmp):
        Path(tmp).write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(path, fail)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
