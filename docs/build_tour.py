"""Execute the guided tour once and write each chapter's English and Chinese notebooks.

A chapter is a jupytext percent-format file, docs/tour/NN-slug.py, whose markdown cells each carry a
language (lang="en" or lang="zh") and whose code cells are shared. It runs top to bottom once, with
nbclient, in a temporary folder, in a kernel that speaks both languages (docs/tour_kernel.py: every
`say(en, zh)` keeps both texts, and every figure is drawn in both); then two notebooks are written with
the outputs kept, each in its own language:

    NN-slug.ipynb      English: the lang="zh" markdown cells dropped, outputs in English
    NN-slug.zh.ipynb   Chinese: the lang="en" markdown cells dropped, outputs in Chinese

mkdocs-jupyter shows them, and mkdocs-static-i18n takes the .zh one as the Chinese page of the chapter.
Both record the SHA-256 of the chapter they came from, so the site refuses a stale one.

    python docs/build_tour.py [--out build/tour] [CHAPTER.py ...]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
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

from redthread.lang import LANGUAGES, has_pairs, resolve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tour_kernel import ZH_PNG, ZH_TEXTS  # noqa: E402

sys.path.pop(0)

REPO = Path(__file__).resolve().parent.parent
TOUR = REPO / "docs" / "tour"
OUT = REPO / "build" / "tour"
CHAPTER = re.compile(r"^\d\d-[a-z0-9-]+\.py$")
CHAPTER_TIMEOUT = 300  # seconds for a whole chapter: each is written to run in under 2 min on two cores, and a busy machine needs room


SETUP = ("import sys\nsys.path.insert(0, {docs!r})\nimport tour_kernel\ntour_kernel.install()\n"
         "sys.path.pop(0)\ndel sys.modules['tour_kernel'], tour_kernel, sys")  # run first, then dropped


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
            setup = nbformat.v4.new_code_cell(SETUP.format(docs=str(REPO / "docs")))
            nb.cells.insert(0, setup)
            try:
                client.execute_cell(setup, 0, store_history=False)
            except CellExecutionError as e:
                raise ChapterFailed(f"{chapter.name}: the kernel's setup failed: {str(e).strip().splitlines()[-1]}") from e
            finally:
                nb.cells.pop(0)
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
    check_languages(nb, chapter)
    nb.metadata["redthread"] = {"source": chapter.name, "source_sha256": source_hash(chapter)}
    return nb


def language_version(nb: nbformat.NotebookNode, lang: str) -> nbformat.NotebookNode:
    """The notebook as one language reads it: the other language's markdown cells dropped, code kept, and each
    output in `lang` (its printed pairs resolved, its figures the drawing in `lang`)."""
    out = copy.deepcopy(nb)
    out.cells = [c for c in out.cells if c.cell_type != "markdown" or c.metadata.get("lang", lang) == lang]
    for cell in out.cells:
        if cell.cell_type == "code":
            cell.source = comments_in(cell.source, lang)
        for output in cell.get("outputs", []):
            in_language(output, lang)
    return out


# A code comment in both languages: "# the slope ‖ 斜率" is "# the slope" on the English page, "# 斜率" on the Chinese
BILINGUAL_COMMENT = re.compile(r"#(?P<space>[ \t]*)(?P<en>[^\n‖]*?)[ \t]*‖[ \t]*(?P<zh>[^\n]*)")
# and a one-line docstring: """Fit the line. ‖ 拟合直线。"""
BILINGUAL_DOCSTRING = re.compile(r'"""(?P<en>[^\n‖]*?)[ \t]*‖[ \t]*(?P<zh>[^\n]*?)"""')


def comments_in(source: str, lang: str) -> str:
    """A code cell's source with each bilingual docstring and comment in `lang`."""
    source = BILINGUAL_DOCSTRING.sub(lambda m: f'"""{m[lang]}"""', source)
    return BILINGUAL_COMMENT.sub(lambda m: f"#{m['space']}{m[lang]}", source)


def in_language(output: nbformat.NotebookNode, lang: str) -> None:
    """One output of a code cell as `lang` reads it, in place."""
    if "text" in output:
        output.text = resolve(output.text, lang)
    data = output.get("data", {})
    chinese_png, chinese_texts = data.pop(ZH_PNG, None), data.pop(ZH_TEXTS, None)
    if lang == "zh" and chinese_png is not None:
        data["image/png"] = chinese_png
        output.setdefault("metadata", {})["redthread"] = {"figure_texts": chinese_texts or []}  # for the checks
    for mime, value in data.items():
        if isinstance(value, str):
            data[mime] = resolve(value, lang)
        elif isinstance(value, list):
            data[mime] = [resolve(v, lang) if isinstance(v, str) else v for v in value]


def check_languages(nb: nbformat.NotebookNode, chapter: Path) -> None:
    """Refuse a chapter whose outputs would show both languages: a pair that `resolve` cannot split (a repr
    that escaped its markers, say) or a figure with no Chinese drawing."""
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data and ZH_PNG not in data:
                raise ChapterFailed(f"{chapter.name}: cell {index} shows an image with no Chinese drawing")
            for lang in LANGUAGES:
                shown = copy.deepcopy(output)
                in_language(shown, lang)
                if has_pairs(json.dumps(shown, ensure_ascii=False)):
                    raise ChapterFailed(f"{chapter.name}: cell {index} prints text that keeps both languages "
                                        f"(a repr of say()'s result?)")


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
