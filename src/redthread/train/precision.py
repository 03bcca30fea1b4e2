"""Numeric precision of a training step: what the device can do, detected rather than assumed.

    fp32   every matmul in float32 (the CPU default; on Ampere+ GPUs through TF32 tensor cores)
    bf16   autocast to bfloat16: float32's exponent range, so no loss scaling is needed
    fp16   autocast to float16 with a dynamic loss scale (`torch.amp.GradScaler`): its 5-bit
           exponent underflows small gradients unless the loss is scaled up before backward
    auto   bf16 on GPUs that have bf16 tensor cores (compute capability >= 8.0: A100, H100,
           L4, RTX 30xx/40xx, ...), fp16 on older ones (V100, T4), fp32 on the CPU

Under autocast the weights, gradients and AdamW moments stay float32 (mixed precision,
Micikevicius et al. 2018): only the matmul inputs are cast, so checkpoints are the same in
every mode. bf16 on a CPU is allowed when asked for (torch's CPU autocast is real, and fast on
CPUs with AVX-512 BF16 or AMX) but never chosen by `auto`; fp16 needs a CUDA GPU.

The GradScaler exists in every mode, disabled except for fp16: disabled, `scale(loss)` returns
the loss itself and `step(optimizer)` is `optimizer.step()`, so the fp32 and bf16 steps are
exactly the plain loop. Its state (the current scale and growth counter) goes into the
checkpoint so a resumed fp16 run continues with the scale it had reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from redthread.errors import InvalidValue

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Precision:
    """The precision a run trains in (never "auto": that is resolved by `choose_precision`)."""

    name: str  # "fp32", "bf16" or "fp16"
    device_type: str  # "cpu" or "cuda"

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.name]

    def autocast(self) -> torch.autocast:
        """The context of the training forward and loss."""
        return torch.autocast(self.device_type, dtype=self.dtype, enabled=self.name != "fp32")

    def make_scaler(self) -> torch.amp.GradScaler:
        return torch.amp.GradScaler(self.device_type, enabled=self.name == "fp16")


def has_bf16_tensor_cores(device: torch.device) -> bool:
    """bf16 in hardware: compute capability 8.0 or newer. `is_bf16_supported()` alone also says
    yes on older GPUs, where bf16 is emulated and slower than fp16; hence including_emulation=False."""
    return torch.cuda.is_bf16_supported(including_emulation=False) and torch.cuda.get_device_capability(device) >= (8, 0)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The processor's instruction-set flags, from Linux's /proc/cpuinfo; none where there is no such file."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return {flag for line in text.splitlines() if line.startswith("flags") for flag in line.split(":", 1)[-1].split()}


def cpu_has_bf16_matmul(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """AVX-512 BF16 or AMX: bf16 dot products in hardware, so a CPU step under bf16 autocast runs faster than in
    float32 (docs/benchmarks.md, the 15-minute run). Without them bf16 is converted in software and is slower."""
    return not {"avx512_bf16", "amx_bf16"}.isdisjoint(cpu_flags(cpuinfo))


def choose_precision(requested: str, device: torch.device) -> Precision:
    """The precision to train in on `device`; asking for one the device cannot do is a RedthreadError."""
    if requested not in PRECISIONS:
        raise InvalidValue(f"precision must be one of {', '.join(PRECISIONS)}; got {requested!r}")
    if device.type == "cuda":
        bf16 = has_bf16_tensor_cores(device)
        if requested == "auto":
            return Precision("bf16" if bf16 else "fp16", "cuda")
        if requested == "bf16" and not bf16:
            name = torch.cuda.get_device_name(device)
            raise InvalidValue(f"{name} has no bf16 tensor cores (compute capability < 8.0): use --precision fp16 or fp32")
        return Precision(requested, "cuda")
    if requested in ("auto", "fp32"):
        return Precision("fp32", device.type)
    if requested == "bf16" and device.type == "cpu":
        return Precision("bf16", "cpu")
    raise InvalidValue(f"--precision {requested} needs a CUDA GPU; on {device.type} use fp32"
                         + (" or bf16" if device.type == "cpu" else ""))


def enable_tf32(device: torch.device) -> bool:
    """Let float32 matmuls use TF32 tensor cores on Ampere and newer (10-bit mantissa inputs,
    float32 accumulation: ~8x the fp32 rate, an error far below SGD noise). Process-wide, as
    torch's setting is; True when it was switched on."""
    if device.type != "cuda" or torch.cuda.get_device_capability(device) < (8, 0):
        return False
    torch.set_float32_matmul_precision("high")
    return True
