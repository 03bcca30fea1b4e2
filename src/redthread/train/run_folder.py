"""A run folder's life: start, resume, or replace another run without ever losing it first.

    out/                      a run: checkpoint.safetensors (what makes it a run), config.json,
                              tokenizer.json, metrics.jsonl, loss.png, summary.json, results.json
    .out.overwrite/           a replacing run, until its first checkpoint is saved
    .out.replaced/            the old run, for the moment of the swap

A folder holds a run when it holds a checkpoint. Files of a run killed before its first checkpoint
(metrics, a loss curve) are not a run: the next start clears them without `--overwrite`.

`--overwrite` of a real run never deletes it up front. The new run trains in `.out.overwrite`
beside it; once its first checkpoint is saved, `publish` swaps the folders (two renames) and
removes the old run, whose other files (figures, samples of the user's) move into the new one.
Any error before that (bad data, a model that does not fit, divergence, Ctrl-C) leaves the old
run as it was. A process killed between the two renames is finished by the next start:
`RunFolder` looks for a staged run that holds a checkpoint and completes the swap.

Every start also removes the temporary files an interrupted atomic write left behind, and checks
that the folder can be written, before any compute is spent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from redthread.errors import InvalidValue, MissingFile, RedthreadError
from redthread.files import check_not_foreign, check_writable, reason, temporary_files
from redthread.train import distributed
from redthread.train.checkpoint import FILENAME

RUN_FILES = (FILENAME, "config.json", "tokenizer.json", "metrics.jsonl", "loss.png", "summary.json", "results.json")
RUN_SETTINGS = "run.toml"  # written beside a finished run: redthread train --config run.toml repeats it


class RunFolder:
    """Where a run writes (`write_dir`) and where it ends up (`out`); see the module docstring."""

    def __init__(self, out: str | os.PathLike, resume: bool = False, overwrite: bool = False):
        self.out = Path(out)
        if resume and overwrite:
            raise InvalidValue("--resume and --overwrite contradict each other: pick one")
        if self.out.exists() and not self.out.is_dir():
            raise RedthreadError(f"output path {self.out} exists and is not a folder")
        check_not_foreign(self.out, (*RUN_FILES, RUN_SETTINGS), "run")
        self.staging = self.out.parent / f".{self.out.name}.overwrite"
        self.replaced = self.out.parent / f".{self.out.name}.replaced"
        main = distributed.is_main()  # under torchrun, rank 0 alone touches files
        if main:
            self._recover()
        holds_run = (self.out / FILENAME).is_file()
        if resume and not holds_run:
            raise MissingFile(f"nothing to resume: no {FILENAME} in {self.out}")
        if holds_run and not resume and not overwrite:
            raise RedthreadError(f"output folder {self.out} already holds a run: pass --resume to continue it "
                                 f"or --overwrite to replace it")
        self.replacing = holds_run and overwrite
        self.write_dir = self.staging if self.replacing else self.out
        if main:
            # a replacing run's folder is made when it starts training; the swap renames in the parent
            check_writable(self.out.parent if self.replacing else self.out)
            if not self.replacing and not resume:
                _remove_files(self.out, RUN_FILES)  # leftovers of a run killed before its first checkpoint
            _remove_files(self.write_dir, temporary_files(self.write_dir, RUN_FILES))

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if error is not None:
            self.abandon()  # failed before its first checkpoint: an old run it was replacing stays as it was

    def publish(self) -> Path:
        """The first checkpoint is saved: a replacing run swaps in for the old run now; return `out`."""
        if self.replacing and distributed.is_main():
            try:
                os.replace(self.out, self.replaced)
                os.replace(self.staging, self.out)
                _adopt(self.replaced, self.out)
            except OSError as e:
                raise RedthreadError(f"cannot put the new run in place of {self.out}: {reason(e)}") from None
        return self.out

    def abandon(self) -> None:
        """The new run failed before its first checkpoint: remove its staging folder, keep the old run."""
        if self.replacing and distributed.is_main() and not (self.staging / FILENAME).is_file():
            shutil.rmtree(self.staging, ignore_errors=True)

    def _recover(self) -> None:
        """Finish a swap that a killed process left half done, or drop a staged run that never saved."""
        staged_run = (self.staging / FILENAME).is_file()
        try:
            if staged_run and self.out.exists() and not self.replaced.exists():
                os.replace(self.out, self.replaced)  # killed after the first save, before the swap
            if staged_run and not self.out.exists():
                os.replace(self.staging, self.out)  # killed between the two renames
            elif self.staging.exists():
                shutil.rmtree(self.staging)  # a replacing run that never saved: the old run stays
            if self.replaced.exists():
                _adopt(self.replaced, self.out)
        except OSError as e:
            raise RedthreadError(f"cannot tidy up an interrupted replacement of {self.out}: {reason(e)}") from None


def _adopt(old: Path, new: Path) -> None:
    """Move the old folder's files that are not run files into the new run; remove the rest."""
    if not new.exists():  # nothing took its place: the old run stays
        os.replace(old, new)
        return
    for entry in old.iterdir():
        if entry.name not in RUN_FILES and not entry.name.endswith(".tmp") and not (new / entry.name).exists():
            os.replace(entry, new / entry.name)
    shutil.rmtree(old)


def _remove_files(folder: Path, names) -> None:
    for name in names:  # names in `folder`, or paths
        try:
            (folder / name).unlink(missing_ok=True)
        except OSError as e:
            raise RedthreadError(f"cannot remove {folder / name}: {reason(e)}") from None
