"""Model FLOPs utilisation (MFU): how much of the hardware's peak the training step turns into model math.

    MFU = tokens/s per device x training FLOPs per token / peak FLOP/s of the device

(Chowdhery et al. 2022, PaLM, appendix B.) The FLOPs per token come from the model
(`TransformerLM.flops_per_token`: 6 N for the matmuls of forward and backward, plus the
attention scores); recomputation by activation checkpointing is not counted, by definition
of *model* FLOPs. A model without `flops_per_token` gets tokens/s only.

The peak:
- GPU: the card's dense (no 2:4 sparsity) tensor-core peak for the precision in use, from the
  table below matched on `torch.cuda.get_device_name`; fp32 on Ampere and newer counts at the
  TF32 rate, since the loop switches TF32 on there;
- CPU: a measured float32 matmul peak, best of square 1024-2048 matmuls for ~0.5 s, once per
  process (vendors' CPU peaks assume every core at full AVX-512 clock, which a shared machine
  never sees);
- either: `--peak-flops` overrides both. An unknown card without an override has no MFU.
"""

from __future__ import annotations

import functools
import math
import re
import time

import torch

TERA = 1e12

# Dense tensor-core peaks in TFLOP/s from the vendors' data sheets: (name pattern, bf16, fp16, tf32, fp32).
# bf16/tf32 None: the card has no such tensor cores. fp16 and bf16 are with float32 accumulation (what
# autocast uses), which GeForce cards run at half their fp16-accumulate rate. Most specific first.
GPU_PEAKS: list[tuple[str, float | None, float, float | None, float]] = [
    (r"\bB200\b", 2250, 2250, 1100, 75),
    (r"\bGH200\b", 989, 989, 495, 67),
    (r"\bH200 NVL\b", 835, 835, 418, 60),
    (r"\bH200\b", 989, 989, 495, 67),
    (r"\bH100 NVL\b", 835, 835, 418, 60),
    (r"\bH100 PCIe\b", 756, 756, 378, 51),
    (r"\bH100\b", 989, 989, 495, 67),  # SXM ("NVIDIA H100 80GB HBM3")
    (r"\bH800\b", 989, 989, 495, 67),
    (r"\bA100\b", 312, 312, 156, 19.5),
    (r"\bA800\b", 312, 312, 156, 19.5),
    (r"\bL40S\b", 362, 362, 183, 91.6),
    (r"\bL40\b", 181, 181, 90.5, 90.5),
    (r"\bL4\b", 121, 121, 60, 30.3),
    (r"\bA40\b", 150, 150, 74.8, 37.4),
    (r"\bA10\b", 125, 125, 62.5, 31.2),
    (r"\bRTX A6000\b", 155, 155, 77.4, 38.7),
    (r"\bRTX 4090\b", 165, 165, 82.6, 82.6),
    (r"\bRTX 3090 Ti\b", 80, 80, 40, 40),
    (r"\bRTX 3090\b", 71, 71, 35.6, 35.6),
    (r"\bV100S\b", None, 130, None, 16.4),
    (r"\bV100-PCIE\b", None, 112, None, 14),
    (r"\bV100\b", None, 125, None, 15.7),  # SXM2/SXM3
    (r"\bT4\b", None, 65, None, 8.1),
]


def gpu_peak_flops(device_name: str, precision: str) -> float | None:
    """The dense peak FLOP/s of a card (by its CUDA name) in `precision` ("fp32", "bf16", "fp16"); None if unknown."""
    for pattern, bf16, fp16, tf32, fp32 in GPU_PEAKS:
        if re.search(pattern, device_name, re.IGNORECASE):
            tflops = {"bf16": bf16, "fp16": fp16, "fp32": tf32 or fp32}[precision]
            return tflops * TERA if tflops else None
    return None


@functools.cache
def measure_cpu_peak_flops(budget_s: float = 0.5) -> float:
    """Best float32 FLOP/s of square matmuls on this process's threads, in about `budget_s` seconds.

    A 1024 matmul first sizes the machine; 2048 is timed when four of them fit the budget (big
    enough to amortise the threads' start-up). Random operands from a private generator: the
    global RNG, which dropout draws from, is untouched.
    """
    gen = torch.Generator().manual_seed(0)

    def best_rate(n: int, seconds: float) -> float:
        a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
        out = torch.empty(n, n)
        torch.mm(a, b, out=out)  # warm-up
        best, start = math.inf, time.perf_counter()
        while True:
            t0 = time.perf_counter()
            torch.mm(a, b, out=out)
            best = min(best, time.perf_counter() - t0)
            if time.perf_counter() - start > seconds:
                return 2 * n**3 / best

    rate = best_rate(1024, budget_s / 4)
    if 4 * 2 * 2048**3 / rate < budget_s:
        rate = max(rate, best_rate(2048, budget_s * 3 / 4))
    return rate


def peak_flops(device: torch.device, precision: str, override: float | None = None) -> tuple[float | None, str]:
    """(peak FLOP/s, where it comes from); (None, why not) for a GPU the table does not know."""
    if override is not None:
        return override, "--peak-flops"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = gpu_peak_flops(name, precision)
        if peak is None:
            return None, f"no {precision} peak known for {name!r}: pass --peak-flops to get MFU"
        return peak, f"{name} {precision} dense peak"
    if device.type == "cpu":
        return measure_cpu_peak_flops(), f"measured fp32 matmul peak on {torch.get_num_threads()} thread(s)"
    return None, f"no peak known for {device.type}: pass --peak-flops to get MFU"


def model_flops_per_token(model: torch.nn.Module, T: int) -> int | None:
    """Training FLOPs per token of a sequence of length T, from the model; None where it cannot say."""
    count = getattr(model, "flops_per_token", None)
    return count(T) if callable(count) else None


def mfu(tokens_per_s: float, flops_per_token: float, peak: float) -> float:
    """The fraction of `peak` spent on model FLOPs; `tokens_per_s` per device (divide by world size under DDP)."""
    return tokens_per_s * flops_per_token / peak
