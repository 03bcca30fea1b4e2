"""How fast can a training step of this model be with torch's own kernels? A ceiling for the ratio.

A GPT-style training step must run, whatever the implementation:
- every Linear layer forward and backward (addmm with its bias, the two gradient matmuls, the
  bias-gradient sum), including the tied output head;
- causal attention forward and backward (torch's fused `scaled_dot_product_attention`);
- GELU forward and backward on the (tokens, 4 d_model) hidden layer;
- LayerNorm forward and backward (two per block and a final one);
- gradient clipping and one fused AdamW step over the model's parameters.

This script times each part alone, on inputs of the step's shapes, hot in cache, and sums them:
the floor of a step built from those kernels. Everything else (embeddings, residual adds, the
loss, layout copies, Python) counts as free, so the floor is optimistic and the ceiling it gives,
HF GPT-2's step time over that floor, is an upper bound on any redthread/HF ratio reachable
without writing kernels faster than torch's. The measured steps of both peers run in the same
rounds for comparison.

    PYTHONPATH=src .venv/bin/python benchmarks/train_ceiling.py [--rounds N] [--threads N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from common import (
    CONFIG_A,
    CONFIG_B,
    ModelSize,
    adamw,
    make_redthread,
    median,
    unique_params,
)
from train_throughput import TARGET, batches, make_runs

BATCH = {"a": 12, "b": 8}


def seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats


def linear_part(m: int, n_in: int, n_out: int, bias: bool = True) -> Callable[[], None]:
    x = torch.randn(m, n_in, requires_grad=True)
    w = torch.randn(n_out, n_in, requires_grad=True)
    b = torch.randn(n_out, requires_grad=True) if bias else None
    g = torch.randn(m, n_out)
    return lambda: F.linear(x, w, b).backward(g)


def parts(size: ModelSize, batch: int) -> dict[str, tuple[int, Callable[[], None]]]:
    """name -> (times per step, one fwd+bwd of it)."""
    m, c, L, T = batch * size.block_size, size.d_model, size.n_layer, size.block_size
    H, D = size.n_head, size.d_model // size.n_head
    q, k, v = (torch.randn(batch, H, T, D, requires_grad=True) for _ in range(3))
    dy = torch.randn(batch, H, T, D)
    hidden = torch.randn(m, 4 * c, requires_grad=True)
    ln_x = torch.randn(m, c, requires_grad=True)
    ln_w, ln_b = torch.ones(c, requires_grad=True), torch.zeros(c, requires_grad=True)
    return {
        "linear qkv": (L, linear_part(m, c, 3 * c)),
        "linear attention out": (L, linear_part(m, c, c)),
        "linear ffn in": (L, linear_part(m, c, 4 * c)),
        "linear ffn out": (L, linear_part(m, 4 * c, c)),
        "linear head (tied)": (1, linear_part(m, c, size.vocab_size, bias=False)),
        "attention (fused sdpa)": (L, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(dy)),
        "gelu": (L, lambda: F.gelu(hidden).backward(hidden.detach())),
        "layernorm": (2 * L + 1, lambda: F.layer_norm(ln_x, (c,), ln_w, ln_b).backward(ln_x.detach())),
    }


def optimizer_part(size: ModelSize) -> Callable[[], None]:
    model = make_redthread(size)  # its own copy: the timed steps clear their models' gradients
    params = unique_params(model)
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    opt = adamw(model, fused=True)

    def step() -> None:
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    return step


def bench(size: ModelSize, rounds: int) -> dict:
    batch = BATCH[size.name]
    runs = make_runs(size, extras=False)  # [redthread fused, HF sdpa fused]
    data = batches(size, batch)
    named = parts(size, batch)
    opt = optimizer_part(size)
    repeats = 10 if size.name == "a" else 2
    times: dict[str, list[float]] = {name: [] for name in named} | {"clip + AdamW (fused)": []}
    steps: dict[str, list[float]] = {run.label: [] for run in runs}
    for r in range(rounds):
        for run in runs:
            batch_xy = data[r % len(data)]
            steps[run.label].append(seconds(lambda run=run, xy=batch_xy: run.step(*xy), repeats))
        for name, (count, fn) in named.items():
            times[name].append(count * seconds(fn, repeats))
        times["clip + AdamW (fused)"].append(seconds(opt, repeats))
    part_s = {name: median(ts) for name, ts in times.items()}
    step_s = {label: median(ts) for label, ts in steps.items()}
    floor = sum(part_s.values())
    rt, hf = step_s[runs[0].label], step_s[runs[1].label]
    return {"parts_ms": {k: v * 1e3 for k, v in part_s.items()}, "floor_ms": floor * 1e3,
            "redthread_ms": rt * 1e3, "hf_ms": hf * 1e3, "ratio": hf / rt, "ceiling": hf / floor, "batch": batch}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.rounds} rounds (medians)")
    for size in (CONFIG_A, CONFIG_B):
        res = bench(size, args.rounds)
        print(f"\nconfig ({size.name}): n_layer {size.n_layer}, d_model {size.d_model}, context {size.block_size}, "
              f"batch {res['batch']}")
        print(f"  {'part (fwd + bwd, torch kernel, alone)':<40} {'ms/step':>9}")
        for name, ms in res["parts_ms"].items():
            print(f"  {name:<40} {ms:>9.2f}")
        print(f"  {'floor: the sum':<40} {res['floor_ms']:>9.2f}")
        print(f"  measured step: redthread {res['redthread_ms']:.2f} ms ({res['floor_ms'] / res['redthread_ms']:.0%} "
              f"of it is the floor), HF GPT-2 {res['hf_ms']:.2f} ms")
        print(f"  ratio redthread/HF {res['ratio']:.2f}x; ceiling HF / floor {res['ceiling']:.2f}x "
              f"(target {TARGET:.2f}x {'within' if res['ceiling'] >= TARGET else 'ABOVE'} the ceiling)")


if __name__ == "__main__":
    main()
