"""`redthread page RUN [RUN ...] --out DIR`: the runs as a live page that runs them in the reader's browser.

    redthread page runs/demo --out page              one run
    redthread page runs/ladder --out page            a ladder's report folder: each of its rungs that exports
                                                     (bigram, MLP, RNN, LSTM, GRU, Transformer; the count models
                                                     have no graph and are left out, saying so), side by side
    python -m http.server --directory page 8000      then open http://127.0.0.1:8000/

The folder is self-contained (viz/page.py): the page, its scripts, onnxruntime-web and the models.
"""

from __future__ import annotations

from pathlib import Path

from redthread.errors import RedthreadError
from redthread.interop.onnx_export import REFUSED, check_exportable, compare_onnx
from redthread.models.registry import RUNGS
from redthread.train.checkpoint import FILENAME, read_checkpoint
from redthread.viz.page import PageRun, check_page_folder, runtime_folder, write_page

CHECK_TOKENS = 32  # the longest prompt each exported graph is checked on in onnxruntime


def read_page_runs(runs: list[str], log=print) -> list[PageRun]:
    """The runs as the page reads them (a run folder, a checkpoint, a shipped model's name, a ladder's report folder),
    each checked to export; a RedthreadError of one line names the one that does not."""
    paths = [p for run in runs for p in _expand(Path(run), log)]
    page_runs = []
    for path, name in zip(paths, _names(paths)):
        ckpt = read_checkpoint(path)
        try:
            check_exportable(ckpt.model)
        except RedthreadError as e:
            raise RedthreadError(f"{path}: {e}") from None
        if ckpt.tokenizer is None:
            raise RedthreadError(f"{path} has no tokenizer: the page could not turn text into its token ids")
        page_runs.append(PageRun(name, ckpt.model.eval(), ckpt.tokenizer))
    return page_runs


def page_command(runs: list[str], out: str, overwrite: bool = False, runtime: str | None = None, log=print) -> dict:
    out_path = Path(out)
    runtime_folder(runtime)  # the cheap refusals first: no runtime, a foreign or taken --out
    check_page_folder(out_path, overwrite)
    page_runs = read_page_runs(runs, log)
    manifest = write_page(page_runs, out_path, overwrite=overwrite, runtime=runtime)
    for run, entry in zip(page_runs, manifest["runs"]):
        diffs = _check(run, out_path / entry["folder"] / "model.onnx")
        log(f"{entry['name']}: {entry['rung']}, {entry['params']:,} parameters, {entry['onnx_bytes'] / 1e6:.2f} MB ONNX; "
            f"onnxruntime gives PyTorch's {len(diffs)} outputs to {max(diffs.values()):.1e}")
    size = sum(p.stat().st_size for p in out_path.rglob("*") if p.is_file())
    log(f"page: {out_path}/index.html ({len(page_runs)} run{'s' if len(page_runs) != 1 else ''}, {size / 1e6:.1f} MB "
        f"with onnxruntime-web {manifest['runtime']['version']})")
    log(f"open it over http (a browser runs no WebAssembly from file://): python -m http.server --directory {out_path} "
        "8000, then http://127.0.0.1:8000/")
    return manifest


def _expand(path: Path, log) -> list[Path]:
    """A run folder or checkpoint as it is; a ladder's report folder (rungs/NAME/...) as its rungs, in the ladder's
    order, leaving out (and naming) those whose model has no graph."""
    if path.is_dir() and not (path / FILENAME).exists() and (path / "rungs").is_dir():
        found = sorted((p for p in (path / "rungs").iterdir() if (p / FILENAME).is_file()),
                       key=lambda p: (list(RUNGS).index(p.name) if p.name in RUNGS else len(RUNGS), p.name))
        kept = [p for p in found if RUNGS.get(p.name, ("",))[0] not in REFUSED]
        left = [p.name for p in found if p not in kept]
        if left:
            log(f"{path}: left out {', '.join(left)} (a count table has no ONNX graph)")
        if not kept:
            raise RedthreadError(f"{path} is a ladder report with no rung that exports to ONNX")
        return kept
    return [path]


def _names(paths: list[Path]) -> list[str]:
    """Each run's name on the page: its folder's name, or more of its path where two would share one."""
    def name(p: Path, depth: int) -> str:
        folder = p.parent if p.suffix == ".safetensors" else p
        parts = [x for x in folder.absolute().parts if x not in ("rungs", "/")]
        return "/".join(parts[-depth:])

    depth = 1
    while True:
        names = [name(p, depth) for p in paths]
        if len(set(names)) == len(names) or depth > 8:
            return names
        depth += 1


def _check(run: PageRun, path: Path) -> dict[str, float]:
    import torch

    generator = torch.Generator().manual_seed(0)
    cfg = run.model.cfg
    idx = torch.randint(cfg.vocab_size, (1, min(cfg.block_size, CHECK_TOKENS)), generator=generator)
    return compare_onnx(run.model, path, idx)
