"""`--compile`: the training forward through `torch.compile`, where this machine can compile.

torch.compile traces the forward into a graph (TorchDynamo) and generates fused kernels for it
(TorchInductor: Triton on GPUs, C++/OpenMP on the CPU): fewer passes over memory for the
elementwise work between matmuls (LayerNorm, GELU, residual adds, dropout) and no Python per op.
The first steps pay for the compilation (tens of seconds to minutes), so it is off by default
and worth it for long runs. Only the training forward is compiled; evaluation runs the plain
module, whose batches change shape.

Where compilation cannot work (a Python version Dynamo does not support, no C++ compiler for
the CPU backend, no Triton for the GPU backend) `compile_model` says why in one line and the
run goes on uncompiled: compiling changes speed, not results, so refusing to train would help
nobody. The compiled wrapper shares its parameters with the module; checkpoints are always
written from the module itself, so their keys carry no `_orig_mod.` prefix.
"""

from __future__ import annotations

import os
import shutil
import sys

import torch
from torch import nn


def compile_unsupported(device: torch.device) -> str | None:
    """Why torch.compile cannot run here, or None when it can."""
    from torch._dynamo.eval_frame import is_dynamo_supported

    if not is_dynamo_supported():
        return f"torch {torch.__version__} cannot compile on Python {sys.version.split()[0]} / {sys.platform}"
    if device.type == "cpu":
        compilers = [os.environ["CXX"]] if os.environ.get("CXX") else ["g++", "c++", "clang++"]
        if not any(shutil.which(c) for c in compilers):
            return f"no C++ compiler found for the CPU backend (looked for {', '.join(compilers)}; set CXX)"
    elif device.type == "cuda":
        from torch.utils._triton import has_triton

        if not has_triton():
            return "Triton is not installed (pip install triton), and the GPU backend needs it"
    else:
        return f"redthread compiles for cpu and cuda, not {device.type}"
    return None


def compile_model(model: nn.Module, device: torch.device) -> tuple[nn.Module, str | None]:
    """(the module to run the training forward with, a message when it could not be compiled)."""
    reason = compile_unsupported(device)
    if reason is not None:
        return model, f"--compile: {reason}; training uncompiled"
    return torch.compile(model), None
