"""GPU training throughput: GPT-2 small's shape in bf16 with torch.compile — tokens/s, MFU, peak memory.

The model is redthread's `TransformerLM` at GPT-2 small's sizes (12 layers, 12 heads, d_model 768,
context 1024, vocab 50304 = 50257 rounded up to a multiple of 128, learned positions, tied
embeddings, dropout 0: 124M parameters), trained by the library's own loop
(`redthread.train.loop.train`) on random tokens, exactly as `redthread train --precision auto
--compile` would train it: bf16 autocast (fp16 with a loss scale on cards without bf16), TF32,
fused AdamW, the fused attention kernel. Target of issue 7: MFU >= 45% on an H100/H200-class card.

    MFU = tokens/s x model.flops_per_token(1024) / the card's dense bf16 peak (train/flops.py's table)

The first log intervals pay for compilation and warm-up and are dropped; the figure is the median
tokens/s of the remaining intervals, timed between the loop's own log points (each one waits for
the GPU). Peak memory is `torch.cuda.max_memory_allocated` (on a CPU: the process's peak RSS),
next to `train/memory.py`'s estimate. `--peer` also times Hugging Face `GPT2LMHeadModel` of the
same config through the same loop (same optimizer, precision and compile) and prints the ratio.

Without a GPU, or with `--tiny`, it runs a tiny config on the CPU in fp32 (uncompiled unless
`--compile`) in seconds: the code path is checked, and it says the GPU figure is still to be measured.

    PYTHONPATH=src .venv/bin/python benchmarks/gpu_train.py [--tiny] [--peer] [--batch-size B] [--steps N] [--json PATH]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import numpy as np
import torch
from common import ModelSize, environment, make_hf_gpt2, write_json
from torch import nn

from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.flops import mfu, peak_flops
from redthread.train.loop import TrainConfig, resolve_device, train
from redthread.train.memory import estimate_memory
from redthread.train.precision import choose_precision

GPT2_SMALL = ModelSize("gpt2-small", vocab_size=50304, block_size=1024, n_layer=12, n_head=12, d_model=768)
TINY = ModelSize("tiny", vocab_size=65, block_size=64, n_layer=2, n_head=2, d_model=64)
TARGET_MFU = 0.45


def model_config(size: ModelSize) -> TransformerConfig:
    return TransformerConfig(vocab_size=size.vocab_size, block_size=size.block_size, n_layer=size.n_layer,
                             n_head=size.n_head, d_model=size.d_model, pos="learned", dropout=0.0)


def random_tokens(size: ModelSize, n: int) -> LMData:
    tokens = np.random.default_rng(0).integers(0, size.vocab_size, n).astype(np.uint16)
    val = tokens[: 4 * size.block_size + 1].copy()
    return LMData(TokenSplit(tokens, n, "train"), TokenSplit(val, len(val), "validation"), size.block_size)


class Logits(nn.Module):
    """Hugging Face GPT-2 as the loop sees a model: idx -> logits."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=idx, use_cache=False).logits


class Clock:
    """The loop's progress sink: the time of every log point (after the loss sync, so the device is done)."""

    def __init__(self):
        self.times = [time.perf_counter()]

    def update(self, step: int, info: str) -> None:
        self.times.append(time.perf_counter())


def peak_memory(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def measure(model: nn.Module, data: LMData, cfg: TrainConfig, skip: int, device: torch.device) -> dict:
    """Median tokens/s over the log intervals after the first `skip`, and the peak memory of the run."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    clock = Clock()
    train(model, data, cfg, progress=clock)
    tokens = cfg.log_interval * cfg.batch_size * data.block_size
    rates = [tokens / (b - a) for a, b in zip(clock.times[skip:-1], clock.times[skip + 1 :])]
    return {"tokens_per_s": statistics.median(rates), "rates": rates, "peak_memory": peak_memory(device)}


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="the tiny config on the CPU (automatic without a GPU)")
    ap.add_argument("--device", default="auto", help="auto (default), cuda or cpu")
    ap.add_argument("--batch-size", type=int, help="sequences per step (default 16; 8 with --tiny)")
    ap.add_argument("--steps", type=int, help="optimizer steps (default 60; 12 with --tiny)")
    ap.add_argument("--log-interval", type=int, help="steps per timed interval (default 10; 3 with --tiny)")
    ap.add_argument("--skip", type=int, default=2, help="first intervals dropped: compilation, warm-up (default 2)")
    ap.add_argument("--precision", default="auto", help="auto (bf16 where the card has it), bf16, fp16 or fp32")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                    help="torch.compile (default: on a GPU, off on the CPU)")
    ap.add_argument("--peak-flops", type=float, help="the card's peak FLOP/s, for a card the table does not know")
    ap.add_argument("--peer", action="store_true", help="also time Hugging Face GPT2LMHeadModel through the same loop")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = ap.parse_args()

    device = resolve_device(args.device)
    tiny = args.tiny or device.type != "cuda"
    size = TINY if tiny else GPT2_SMALL
    batch_size = args.batch_size or (8 if tiny else 16)
    steps, log_interval = args.steps or (12 if tiny else 60), args.log_interval or (3 if tiny else 10)
    if steps // log_interval <= args.skip:
        sys.exit(f"error: {steps} steps give {steps // log_interval} intervals of {log_interval}: need more than --skip {args.skip}")
    compile_ = device.type == "cuda" if args.compile is None else args.compile
    precision = choose_precision(args.precision, device).name
    cfg = TrainConfig(max_iters=steps, batch_size=batch_size, warmup_iters=2, eval_interval=steps, eval_batches=1,
                      log_interval=log_interval, device=str(device), precision=precision, compile=compile_,
                      peak_flops=args.peak_flops)
    data = random_tokens(size, max(200_000, 4 * steps * batch_size * size.block_size // 10))

    torch.manual_seed(0)
    model = TransformerLM(model_config(size))
    flops_per_token = model.flops_per_token(size.block_size)
    peak, source = peak_flops(device, precision, args.peak_flops)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    n_params = sum(p.numel() for p in model.parameters())
    print(f"device: {name}; {precision}{', compiled' if compile_ else ''}; peak "
          + (f"{peak / 1e12:,.3g} TFLOP/s ({source})" if peak else f"unknown ({source})"))
    print(f"model: {size.name} ({size.n_layer} layers, {size.n_head} heads, d_model {size.d_model}, context "
          f"{size.block_size}, vocab {size.vocab_size}), {n_params / 1e6:.1f}M parameters, {flops_per_token / 1e6:.1f} MFLOP/token")
    print(f"batch {batch_size} x {size.block_size} tokens, {steps} steps; timed: median of the {steps // log_interval - args.skip} "
          f"intervals of {log_interval} steps after the first {args.skip}")

    figures = {"redthread": measure(model, data, cfg, args.skip, device)}
    if args.peer:
        del model
        torch.manual_seed(0)
        figures["HF GPT-2"] = measure(Logits(make_hf_gpt2(size)), data, cfg, args.skip, device)
    estimate = estimate_memory(model_config(size), batch_size, precision)

    print(f"\n| {'peer':<10} | {'tokens/s':>10} | {'MFU':>6} | {'peak memory':>12} |")
    print(f"|{'-' * 12}|{'-' * 11}:|{'-' * 7}:|{'-' * 13}:|")
    for peer, f in figures.items():
        f["mfu"] = mfu(f["tokens_per_s"], flops_per_token, peak) if peak else None
        shown = f"{f['mfu']:.1%}" if f["mfu"] is not None else "n/a"
        print(f"| {peer:<10} | {f['tokens_per_s']:>10,.0f} | {shown:>6} | {gib(f['peak_memory']):>12} |")
    memory_kind = "torch.cuda.max_memory_allocated" if device.type == "cuda" else "peak RSS of the whole process"
    print(f"peak memory: {memory_kind}; train/memory.py estimates {gib(estimate.total)} for this config and batch")
    if "HF GPT-2" in figures:
        print(f"ratio redthread/HF: {figures['redthread']['tokens_per_s'] / figures['HF GPT-2']['tokens_per_s']:.2f}x")
    ours = figures["redthread"]["mfu"]
    if tiny:
        print("tiny config on the CPU: the code path is checked; the GPU figure (GPT-2 small, bf16, compiled) is still to be measured")
    elif ours is not None:
        print(f"MFU {ours:.1%}: {'MET' if ours >= TARGET_MFU else 'MISSED'} (target >= {TARGET_MFU:.0%} on an H100/H200-class card)")
    write_json(args.json, {"environment": environment(), "device": name, "precision": precision, "compile": compile_,
                           "config": size.__dict__, "batch_size": batch_size, "steps": steps, "peak_flops": peak,
                           "flops_per_token": flops_per_token, "memory_estimate": estimate.total, "figures": figures,
                           "tiny": tiny})


if __name__ == "__main__":
    main()
