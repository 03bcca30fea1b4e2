"""The live page: language-model runs exported to ONNX and run in the reader's browser, with no Python and no server.

Every rung of the ladder that reads a text prefix (bigram, MLP, RNN / LSTM / GRU, the Transformer) ends in
P(next token | text) (claims C2 and C12 of the essay). This module writes a folder that computes it in a
browser: `write_page(runs, "out/page")` exports each model with `interop.onnx_export` and lays out

    index.html                 the page, its runs listed in it as JSON (#manifest)
    assets/                    page.js, page.css, words.js (every label, in English and Chinese), tokenizer.js
                               (char and byte-level BPE, as redthread encodes), sampling.js (the logits processors
                               of generate/processors.py, and a seeded random number generator), walkthrough.js
                               (one forward pass, number by number); and, copied unchanged from viz/assets,
                               explorer.js / .css and next_token.js / .css: the code the offline explorer and the
                               web app draw attention and the next-token rows with
    ort/                       ONNX Runtime Web (the npm package onnxruntime-web, pinned by package-lock.json):
                               ort.wasm.min.js, its WebAssembly module and the .mjs that loads it
    models/N-NAME/             each run: model.onnx and model.json (interop/onnx_export.py), and walk.json: every
                               LayerNorm's weight, bias and epsilon, which the walk-through applies by hand

The page loads nothing from outside the folder (its Content-Security-Policy says so) and runs single-threaded
WebAssembly, so it needs no cross-origin isolation; it does need http (a browser refuses WebAssembly and fetch on
file://): `python -m http.server --directory out/page`. Where onnxruntime-web comes from: `runtime_folder()`.

The page computes what redthread computes: tests/viz/test_page_browser.py checks in Chromium that its logits and
intermediates equal PyTorch's, and its sampling the logits processors'.
"""

from __future__ import annotations

import html
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from redthread.data.tokenizers import Tokenizer
from redthread.errors import InvalidValue, MissingFile, RedthreadError
from redthread.files import check_not_foreign, check_writable, reason
from redthread.interop.onnx_export import check_exportable, export_onnx, rung_name
from redthread.models.transformer import TransformerLM
from redthread.viz.explorer import ASSETS, script_json

FORMAT = "redthread-page/1"
PAGE_ASSETS = ASSETS / "page"
# what a page folder is made of: an --out folder holding none of these is someone else's
PAGE_FILES = ("index.html", "assets", "ort", "models")
# viz/assets files the page shares with the offline explorer and the web app (one copy of the code)
SHARED_ASSETS = ("explorer.js", "explorer.css", "next_token.js", "next_token.css")
OWN_ASSETS = ("words.js", "tokenizer.js", "sampling.js", "walkthrough.js", "page.js", "page.css")
# onnxruntime-web's files for its WebAssembly backend: the script, the module it imports, the module's binary
RUNTIME_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
RUNTIME_ENV = "REDTHREAD_ONNXRUNTIME_WEB"
# where setup.sh installs the pinned package (npm ci), inside the virtual environment
RUNTIME_INSTALL = Path("share") / "redthread" / "web" / "node_modules" / "onnxruntime-web" / "dist"


@dataclass(frozen=True)
class PageRun:
    """One run to put on the page: the name it is shown by, its model and its tokenizer."""

    name: str
    model: nn.Module
    tokenizer: Tokenizer


def runtime_folder(given: str | os.PathLike | None = None) -> Path:
    """The folder holding onnxruntime-web's files (RUNTIME_FILES): `given`, else $REDTHREAD_ONNXRUNTIME_WEB, else
    where setup.sh installs it (.venv/share/redthread/web/node_modules/onnxruntime-web/dist), else a node_modules
    of the source tree (`npm ci` run by hand beside package.json). A one-line error says how to get it."""
    if given is None:
        given = os.environ.get(RUNTIME_ENV) or None
    if given is not None:
        candidates, told = [Path(given)], f"--runtime / ${RUNTIME_ENV} {given}"
    else:
        candidates, told = runtime_places(), None
    for folder in candidates:
        if all((folder / name).is_file() for name in RUNTIME_FILES):
            return folder
    if told is not None:
        missing = [name for name in RUNTIME_FILES if not (candidates[0] / name).is_file()]
        raise MissingFile(f"{told} lacks onnxruntime-web's {', '.join(missing)}: give the package's dist folder "
                             "(node_modules/onnxruntime-web/dist)")
    raise RedthreadError("the page needs ONNX Runtime Web (the npm package onnxruntime-web), which is not installed: "
                         "run bash setup.sh (it installs it with npm ci), or give its dist folder with --runtime DIR")


def runtime_places() -> list[Path]:
    """Where onnxruntime-web is looked for when no folder is given: setup.sh's install, then the source tree's."""
    repo = Path(__file__).resolve().parents[3]  # src/redthread/viz/page.py -> the source tree, when run from one
    return [Path(sys.prefix) / RUNTIME_INSTALL, repo / "node_modules" / "onnxruntime-web" / "dist"]


def runtime_version(folder: Path) -> str:
    """The onnxruntime-web version of a dist folder (its package.json, one folder up), or "unknown"."""
    try:
        return json.loads((folder.parent / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"


def check_page_folder(out: Path, overwrite: bool) -> None:
    """Refuse an --out that is a file, someone else's folder, or a page already there (unless `overwrite`);
    and a place that cannot be written. Called before any model is exported."""
    if out.exists() and not out.is_dir():
        raise RedthreadError(f"--out {out} exists and is not a folder")
    check_not_foreign(out, PAGE_FILES, "page")
    if out.is_dir() and any((out / name).exists() for name in PAGE_FILES) and not overwrite:
        raise RedthreadError(f"{out} already holds a page: pass --overwrite to replace it")
    check_writable(out, "page folder")


def write_page(runs: list[PageRun], out: str | os.PathLike, overwrite: bool = False,
               runtime: str | os.PathLike | None = None, title: str | None = None) -> dict:
    """Write the page folder for `runs` at `out` (see the module docstring); returns its manifest (the JSON in
    index.html). Everything is built in a temporary folder beside `out` and moved in at the end, so a failure
    leaves an earlier page as it was; with `overwrite` only a page's own entries (PAGE_FILES) are replaced."""
    out = Path(out)
    if not runs:
        raise InvalidValue("no run to put on the page")
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise InvalidValue(f"two runs share a name on the page: {names}")
    for r in runs:
        check_exportable(r.model)
        if r.tokenizer is None:
            raise InvalidValue(f"{r.name} has no tokenizer: the page could not turn text into its token ids")
    source = runtime_folder(runtime)
    check_page_folder(out, overwrite)
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.absolute().parent))
    try:
        manifest = _build(stage, runs, source, title)
        out.mkdir(exist_ok=True)
        for name in PAGE_FILES:
            old = out / name
            if old.is_dir():
                shutil.rmtree(old)
            elif old.exists():
                old.unlink()
            os.replace(stage / name, old)
    except OSError as e:
        raise RedthreadError(f"cannot write the page in {out}: {reason(e)}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return manifest


def _build(folder: Path, runs: list[PageRun], runtime: Path, title: str | None) -> dict:
    (folder / "assets").mkdir()
    for name in SHARED_ASSETS:
        shutil.copyfile(ASSETS / name, folder / "assets" / name)
    for name in OWN_ASSETS:
        shutil.copyfile(PAGE_ASSETS / name, folder / "assets" / name)
    (folder / "ort").mkdir()
    for name in RUNTIME_FILES:
        if name.endswith(".js"):  # its source map is not copied: drop the comment that names it
            text = (runtime / name).read_text(encoding="utf-8")
            (folder / "ort" / name).write_text(re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", text), encoding="utf-8")
        else:
            shutil.copyfile(runtime / name, folder / "ort" / name)
    entries = []
    for i, run in enumerate(runs):
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", run.name).strip("-.") or "run"
        place = f"models/{i}-{slug}"
        (folder / place).mkdir(parents=True)
        export_onnx(run.model, folder / place / "model.onnx", run.tokenizer)
        (folder / place / "walk.json").write_text(json.dumps(walk_description(run.model)), encoding="utf-8")
        entries.append({"name": run.name, "rung": rung_name(run.model), "model_class": type(run.model).__name__,
                        "params": run.model.num_params(), "folder": place,
                        "onnx_bytes": (folder / place / "model.onnx").stat().st_size})
    manifest = {"format": FORMAT, "redthread_version": _version(), "title": title or "redthread",
                "runtime": {"package": "onnxruntime-web", "version": runtime_version(runtime), "files": list(RUNTIME_FILES)},
                "runs": entries}
    (folder / "index.html").write_text(render_index(manifest), encoding="utf-8")
    return manifest


def walk_description(model: nn.Module) -> dict:
    """What the walk-through needs besides the graph's outputs: each LayerNorm's weight, bias (None without one)
    and epsilon, by the name of the output it feeds (a Transformer's; other rungs have none)."""
    norms = {}
    if isinstance(model, TransformerLM):
        for i, block in enumerate(model.blocks):
            norms[f"blocks.{i}.self_attn_res.norm"] = _norm(block.self_attn_res.norm)
            norms[f"blocks.{i}.ffn_res.norm"] = _norm(block.ffn_res.norm)
        if isinstance(model.norm_f, nn.LayerNorm):
            norms["norm_f"] = _norm(model.norm_f)
    return {"format": FORMAT, "norms": norms}


def _version() -> str:
    try:
        return importlib.metadata.version("redthread")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def _norm(ln: nn.LayerNorm) -> dict:
    return {"weight": None if ln.weight is None else ln.weight.detach().float().cpu().tolist(),
            "bias": None if ln.bias is None else ln.bias.detach().float().cpu().tolist(), "eps": ln.eps}


def render_index(manifest: dict) -> str:
    """index.html: the template, with the explorer's markup (viz/assets/explorer_body.html) and the manifest."""
    template = (PAGE_ASSETS / "index.html").read_text(encoding="utf-8")
    parts = {"title": html.escape(manifest["title"]), "manifest": script_json(manifest),
             "explorer": (ASSETS / "explorer_body.html").read_text(encoding="utf-8")}
    return re.sub(r"\{\{(title|manifest|explorer)\}\}", lambda m: parts[m.group(1)], template)
