"""Execute the guided tour once and write each chapter's English and Chinese notebooks.

A chapter is a jupytext percent-format file, docs/tour/NN-slug.py, whose markdown cells each carry a
language (lang="en" or lang="zh") and whose code cells are shared. It runs top to bottom once, with
nbclient, in a temporary folder; then two notebooks are written with the outputs kept:

    NN-slug.ipynb      English: the lang="zh" markdown cells dropped
    NN-slug.zh.ipynb   Chinese: the lang="en" markdown cells dropped

mkdocs-jupyter shows them, and mkdocs-static-i18n takes the .zh one as the Chinese page of the chapter.
Both record the SHA-256 of the chapter they came from, so the site refuses a stale one.

    python docs/build_tour.py [--out build/tour] [CHAPTER.py ...]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import jupytext
import nbformat
import zmq
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError
from traitlets.config import Config

REPO = Path(__file__).resolve().parent.parent
TOUR = REPO / "docs" / "tour"
OUT = REPO / "build" / "tour"
CHAPTER = re.compile(r"^\d\d-[a-z0-9-]+\.py$")
LANGUAGES = ("en", "zh")
CHAPTER_TIMEOUT = 300  # seconds for a whole chapter: each is written to run in under 2 min on two cores, and a busy machine needs room


class ChapterFailed(RuntimeError):
    """A chapter raised, or ran past its time."""


def chapters(folder: Path = TOUR) -> list[Path]:
    """The chapters in a folder, in order: NN-slug.py."""
    return sorted(p for p in Path(folder).glob("*.py") if CHAPTER.match(p.name))


def source_hash(chapter: Path) -> str:
    return hashlib.sha256(Path(chapter).read_bytes()).hexdigest()


def kernel_env() -> dict:
    """The kernel's environment: this checkout's redthread first on the path, and inline figures."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"  # MPLBACKEND=Agg would drop every figure
    return env


def kernel_config() -> Config:
    """The kernel manager's settings: CurveZMQ keys for the kernel's sockets where libzmq has them.

    ipykernel 7 warns on every start of a kernel whose TCP sockets are unencrypted (one warning per chapter);
    jupyter_client (8.10 on) provisions keys when asked and the kernelspec declares "curve", which ipykernel's does.
    """
    return Config({"KernelManager": {"transport_encryption": "auto" if zmq.has("curve") else "disabled"}})


def execute(chapter: Path, timeout: float = CHAPTER_TIMEOUT) -> nbformat.NotebookNode:
    """Run a chapter top to bottom in a fresh python3 kernel, in a temporary folder; the notebook with outputs."""
    chapter = Path(chapter)
    nb = jupytext.read(chapter)
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="redthread-tour-") as cwd:
        client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": cwd}},
                                config=kernel_config())
        with client.setup_kernel(env=kernel_env()):
            info = client.wait_for_reply(client.kc.kernel_info())
            nb.metadata["language_info"] = info["content"]["language_info"]
            for index, cell in enumerate(nb.cells):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChapterFailed(f"{chapter.name}: ran past {timeout:.0f} s, at cell {index}")
                client.timeout = max(1, int(left))
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    raise ChapterFailed(f"{chapter.name}: ran past {timeout:.0f} s, in cell {index}") from None
                except CellExecutionError as e:
                    last = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                    raise ChapterFailed(f"{chapter.name}: cell {index} failed: {last}") from e
    nb.metadata["redthread"] = {"source": chapter.name, "source_sha256": source_hash(chapter)}
    return nb


def language_version(nb: nbformat.NotebookNode, lang: str) -> nbformat.NotebookNode:
    """The notebook as one language reads it: the other language's markdown cells dropped, code and outputs kept."""
    out = copy.deepcopy(nb)
    out.cells = [c for c in out.cells if c.cell_type != "markdown" or c.metadata.get("lang", lang) == lang]
    return out


def notebook_names(chapter: Path) -> dict[str, str]:
    """The two notebooks a chapter becomes: {"en": "NN-slug.ipynb", "zh": "NN-slug.zh.ipynb"}."""
    stem = Path(chapter).stem
    return {"en": f"{stem}.ipynb", "zh": f"{stem}.zh.ipynb"}


def write(nb: nbformat.NotebookNode, chapter: Path, out: Path) -> dict[str, Path]:
    """Write a chapter's executed notebook as its English and Chinese notebooks in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for lang, name in notebook_names(chapter).items():
        path = out / name
        tmp = path.with_name(path.name + ".tmp")
        nbformat.write(language_version(nb, lang), tmp)
        os.replace(tmp, path)
        paths[lang] = path
    return paths


def build(sources: list[Path], out: Path = OUT, prune: bool = False, log=print) -> dict[Path, dict[str, Path]]:
    """Execute and write every chapter; with `prune`, notebooks in `out` that no chapter makes are removed."""
    if prune:
        wanted = {name for c in sources for name in notebook_names(c).values()}
        for old in Path(out).glob("*.ipynb"):
            if old.name not in wanted:
                old.unlink()
    written = {}
    for chapter in sources:
        start = time.monotonic()
        written[chapter] = write(execute(chapter), chapter, Path(out))
        log(f"{chapter.name}: {time.monotonic() - start:.1f} s")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute the guided tour; write its English and Chinese notebooks.")
    parser.add_argument("chapters", nargs="*", type=Path, help="chapter files (default: every docs/tour/NN-slug.py)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder for the notebooks (default {OUT.relative_to(REPO)})")
    args = parser.parse_args(argv)
    sources = args.chapters or chapters()
    missing = [str(c) for c in sources if not c.is_file()]
    if missing:
        print(f"error: no such chapter: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        build(sources, args.out, prune=not args.chapters)
    except ChapterFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
