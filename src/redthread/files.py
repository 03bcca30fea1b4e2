"""Safe file writes: atomic replacement, and the checks that run before any compute is spent.

`atomic_write` writes a temporary file in the same folder, flushes it to disk, then renames it
into place, so an interrupted write never leaves a half-written file and never clobbers a good
one. A write that fails (a full disk, a read-only or unwritable folder) is one `RedthreadError`
line naming the file and the reason; the temporary file is removed and the old file is untouched.
`check_writable` and `check_free_space` find the same faults before a command starts its work.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from safetensors import SafetensorError

from redthread.errors import RedthreadError

_UMASK = os.umask(0)  # read the process's umask (the only way is to set it) ...
os.umask(_UMASK)  # ... and put it back


def reason(error: BaseException) -> str:
    """The operating system's words for a failed write or read ("No space left on device")."""
    if isinstance(error, OSError):
        return error.strerror or str(error)
    found = re.search(r'message: "([^"]+)"', str(error))  # safetensors wraps the io::Error of Rust
    return found.group(1) if found else (str(error).splitlines() or ["unknown error"])[0]


def atomic_write(path: Path, write) -> None:
    """Call write(tmp_path), then rename tmp_path onto path; a failed write is a one-line error."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes files private; give them the usual permissions
        os.replace(tmp, path)
    except (OSError, SafetensorError) as e:
        _remove(tmp)
        raise RedthreadError(f"cannot write {path}: {reason(e)}") from None
    except BaseException:
        _remove(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _remove(tmp: str | None) -> None:
    if tmp is not None:
        Path(tmp).unlink(missing_ok=True)


def temporary_files(folder: Path, names: Iterable[str]) -> list[Path]:
    """The temporary files `atomic_write` leaves behind for `names` when a process dies mid-write."""
    if not folder.is_dir():
        return []
    return [p for name in names for p in folder.glob(f".{glob_escape(name)}.*.tmp") if p.is_file()]


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def check_writable(folder: Path, what: str = "output folder") -> None:
    """Write a file in `folder` (or, while it does not exist, in the nearest folder above it that
    does): a read-only, full or forbidden place is a one-line error now, before any compute is
    spent, not a traceback after it. Nothing is created."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise RedthreadError(f"{what} {folder} exists and is not a folder")
    probe = folder.absolute()
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise RedthreadError(f"cannot make the {what} {folder}: {probe} is a file")
    try:
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".redthread-write-check.", suffix=".tmp") as f:
            f.write(b"x")
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise RedthreadError(f"cannot write to the {what} {folder}: {reason(e)}") from None


def fresh_output_path(path: Path, overwrite: bool) -> Path:
    """The path of an output file about to be written, if it may be: one that exists is refused unless
    `overwrite`, a folder always; its folder is checked writable now, not after the work is done."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise RedthreadError(f"{path} already exists; pass --overwrite to replace it")
    if path.exists() and path.is_dir():
        raise RedthreadError(f"{path} is a folder, not a file")
    check_writable(path.parent)  # a read-only or full place fails now, not after the model has run
    return path


def check_not_foreign(folder: Path, ours: Iterable[str], what: str) -> None:
    """Refuse an existing, non-empty folder that holds none of the files a `what` is made of (`ours`):
    `--out docs` must not scatter a run through a folder of the user's, with or without --overwrite.
    Hidden entries (.git, .DS_Store) do not count as content."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    try:
        entries = sorted(e.name for e in folder.iterdir() if not e.name.startswith("."))
    except OSError as e:
        raise RedthreadError(f"cannot read the folder {folder}: {reason(e)}") from None
    if entries and not set(entries) & set(ours):
        raise RedthreadError(f"{folder} is not empty and holds no {what} ({len(entries)} other entries, e.g. "
                             f"{entries[0]}): give --out a new or empty folder, or one of redthread's own")


NOT_REGULAR = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def irregular_kind(path: Path) -> str | None:
    """What `path` is when it is not a regular file ("a folder", "a FIFO (named pipe)", ...), None when it
    is one: asked with stat, before any open (opening a FIFO blocks until a writer comes). A missing or
    unreadable path raises the OSError of stat (FileNotFoundError, PermissionError)."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return None
    return next((name for is_kind, name in NOT_REGULAR if is_kind(mode)), "not a regular file")


def check_free_space(folder: Path, needed: int, what: str) -> None:
    """Refuse to start when the disk holding `folder` has less room than `needed` bytes."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # no answer from the file system: the write itself will report
    if free < needed:
        raise RedthreadError(f"not enough disk space in {folder} for {what}: {_size(needed)} needed, {_size(free)} free")


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


# what `redthread ladder` writes in its report folder; its text, image and regression variants share it
LADDER_REPORT = ("ladder.csv", "ladder.md", "ladder.png", "reliability.png", "regression.csv", "regression.md",
                 "regression.png", "ladder.toml", "rungs")


def check_report_folder(out: Path, overwrite: bool, names: tuple[str, ...] = LADDER_REPORT) -> None:
    """Refuse to replace an earlier report unless asked; with `overwrite`, clear only the `names` a report writes."""
    if out.exists() and not out.is_dir():
        raise RedthreadError(f"output path {out} exists and is not a folder")
    check_not_foreign(out, names, "ladder report")
    holds = out.is_dir() and any((out / name).exists() for name in names)
    if holds and not overwrite:
        raise RedthreadError(f"output folder {out} already holds a ladder report: pass --overwrite to replace it")
    check_writable(out)  # a read-only or full place fails now, not after the work
    if holds:
        for name in names:
            path = out / name
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def write_toml(path: Path, tables: dict[str, dict], header: str = "") -> Path:
    """Settings as TOML, atomically; None values (which TOML cannot hold) are left out: they mean the default."""
    import tomli_w

    clean = {name: {k: v for k, v in table.items() if v is not None} if isinstance(table, dict) else table
             for name, table in tables.items() if table is not None}
    atomic_write_text(path, (f"# {header}\n" if header else "") + tomli_w.dumps(clean))
    return path
