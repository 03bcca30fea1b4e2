"""`redthread export RUN`: a run in another format.

    redthread export RUN --format onnx [--out FILE.onnx]   an ONNX graph and its description (.json) for a page
                                                           that runs the model in a browser (default RUN/model.onnx;
                                                           for a shipped reference model, ./NAME.onnx)
    redthread export RUN --out FOLDER                      a Transformer run as a Hugging Face GPT-2 folder
                                                           (--format gpt2, the default)

RUN may also be given as --checkpoint RUN, the older spelling.
"""

from __future__ import annotations

from pathlib import Path

import torch

from redthread.data.shipped_models import MODELS_DIR
from redthread.errors import InvalidValue, RedthreadError
from redthread.interop.huggingface import export_gpt2
from redthread.interop.onnx_export import check_exportable, compare_onnx, export_onnx, meta_path
from redthread.models.transformer import TransformerLM
from redthread.train.checkpoint import read_checkpoint

FORMATS = ("gpt2", "onnx")
ONNX_FILE = "model.onnx"  # the graph's default name, inside the run folder
CHECK_TOKENS = 32  # the length of the prompt the exported graph is checked on, at most


def export_command(run: str | None, checkpoint: str | None, out: str | None, overwrite: bool, fmt: str = "gpt2") -> None:
    run = _the_run(run, checkpoint)
    if fmt not in FORMATS:
        raise InvalidValue(f"unknown export format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "gpt2" and out is None:
        raise RedthreadError("--format gpt2 (the default) writes a folder: give it with --out FOLDER, "
                             "or export an ONNX graph with --format onnx")
    ckpt = read_checkpoint(run)
    if fmt == "onnx":
        export_onnx_run(ckpt, out, overwrite)
        return
    if not isinstance(ckpt.model, TransformerLM):
        raise RedthreadError(f"{run} holds a {ckpt.model_class}: only a TransformerLM exports to GPT-2 "
                             "(every language-model rung exports with --format onnx)")
    folder = export_gpt2(ckpt.model, out, tokenizer=ckpt.tokenizer, overwrite=overwrite)
    print(f"GPT-2 folder: {folder} (load it with transformers.GPT2LMHeadModel.from_pretrained)")


def export_onnx_run(ckpt, out: str | None, overwrite: bool) -> None:
    """Write the run's graph and description, check the graph in onnxruntime against PyTorch, and say so."""
    model, name = ckpt.model, ckpt.path.parent
    if ckpt.path.parent == MODELS_DIR:  # a shipped reference model: its graph goes to this folder, never into the package
        name = Path(ckpt.path.stem)
        out = out if out is not None else f"{name}.onnx"
    check_exportable(model)  # what the model is decides first: a ViT run has no tokenizer either
    if ckpt.tokenizer is None:
        raise InvalidValue(f"{name} has no tokenizer: a page could not turn text into the model's token ids "
                           "(save the run with its tokenizer; rt.export_onnx writes one without)")
    path = export_onnx(model, Path(out) if out is not None else name / ONNX_FILE, ckpt.tokenizer, overwrite=overwrite)
    generator = torch.Generator().manual_seed(0)
    idx = torch.randint(model.cfg.vocab_size, (1, min(model.cfg.block_size, CHECK_TOKENS)), generator=generator)
    diffs = compare_onnx(model, path, idx)
    print(f"ONNX graph: {path} ({path.stat().st_size / 1e6:.2f} MB), described in {meta_path(path)}")
    print(f"{len(diffs)} outputs (logits and {len(diffs) - 1} intermediates); onnxruntime gives PyTorch's numbers "
          f"to {max(diffs.values()):.1e} at most on {idx.size(1)} tokens; lengths 1 to {model.cfg.block_size}")


def _the_run(run: str | None, checkpoint: str | None) -> str:
    if run is not None and checkpoint is not None and run != checkpoint:
        raise RedthreadError(f"two runs given ({run} and --checkpoint {checkpoint}): give one")
    if run is None and checkpoint is None:
        raise RedthreadError("which run? redthread export RUN (a run folder or its checkpoint.safetensors)")
    return run if run is not None else checkpoint
