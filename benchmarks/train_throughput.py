"""Training throughput: redthread `TransformerLM` vs Hugging Face `GPT2LMHeadModel`, tokens/s.

One training step = forward, cross-entropy from the logits (outside the model, for both),
backward, clip_grad_norm_(1.0), AdamW step, zero_grad. Same sizes, same batches (random ids
from a fixed generator), same threads, same AdamW (lr 1e-3, betas (0.9, 0.99), weight decay 0.1
on >= 2-D parameters). The peers alternate round by round (the machine is shared); each figure
is the median over rounds of tokens/s over N steps.

MFU = FLOPs/token x tokens/s / measured fp32 matmul peak, with FLOPs/token = 6 N + 12 n_layer d_model T
(`TransformerLM.flops_per_token`): the same model work for both peers.

    PYTHONPATH=src .venv/bin/python benchmarks/train_throughput.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from common import (
    CONFIG_A,
    CONFIG_B,
    ModelSize,
    adamw,
    count_params,
    environment,
    hf_logits,
    make_hf_gpt2,
    make_redthread,
    matmul_peak_flops,
    median,
    spread,
    unique_params,
    verdict,
    write_json,
)
from torch import nn

TARGET = 1.25  # redthread / HF tokens/s (issue 2)
TARGET_FAST = 1.4  # the speed issue (7): tokens/s ratio on both configs ...
TARGET_MFU = 0.8  # ... and MFU on config (b)


@dataclass
class Run:
    """One setup (peer + attention implementation + fused or not): its model, step and rates."""

    label: str
    model: nn.Module
    step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    rates: list[float]


@dataclass(frozen=True)
class Plan:
    batch_size: int
    warmup: int
    rounds: int
    steps: int  # timed steps per round and setup
    extra_rounds: int = 0  # rounds that also time HF eager and fused=False for both (0: none)


def train_step(forward: Callable, model: nn.Module, fused: bool) -> Callable:
    params = unique_params(model)
    opt = adamw(model, fused)

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits = forward(x)  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def make_runs(size: ModelSize, extras: bool) -> list[Run]:
    torch.manual_seed(0)
    setups = [("redthread fused", "rt", None, True), ("HF sdpa fused", "hf", "sdpa", True)]
    if extras:
        setups += [
            ("HF eager fused", "hf", "eager", True),
            ("redthread unfused", "rt", None, False),
            ("HF sdpa unfused", "hf", "sdpa", False),
        ]
    runs = []
    for label, peer, attn, fused in setups:
        if peer == "rt":
            model = make_redthread(size)
            forward = model
        else:
            model = make_hf_gpt2(size, attn)
            forward = hf_logits(model)
        model.train()
        runs.append(Run(label, model, train_step(forward, model, fused), []))
    return runs


def batches(size: ModelSize, batch_size: int, n: int = 8) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(1234)
    out = []
    for _ in range(n):
        ids = torch.randint(size.vocab_size, (batch_size, size.block_size + 1), generator=gen)
        out.append((ids[:, :-1].contiguous(), ids[:, 1:].contiguous()))  # x, y (B, T)
    return out


def bench_config(size: ModelSize, plan: Plan, peak: float) -> dict:
    runs = make_runs(size, plan.extra_rounds > 0)
    data = batches(size, plan.batch_size)
    tokens_per_step = plan.batch_size * size.block_size
    for run in runs:
        for i in range(plan.warmup):
            run.step(*data[i % len(data)])
    for r in range(plan.rounds):
        active = runs if r < plan.extra_rounds else runs[:2]
        order = active[r % len(active) :] + active[: r % len(active)]  # rotate who goes first
        for run in order:
            t0 = time.perf_counter()
            for i in range(plan.steps):
                run.step(*data[(r * plan.steps + i) % len(data)])
            run.rates.append(plan.steps * tokens_per_step / (time.perf_counter() - t0))

    rt = runs[0].model
    flops_per_token = rt.flops_per_token(size.block_size)
    rt_rate, hf_rate = median(runs[0].rates), median(runs[1].rates)
    result = {
        "config": size.__dict__ | {"batch_size": plan.batch_size},
        "params": {"redthread": count_params(rt), "HF": count_params(runs[1].model)},
        "flops_per_token": flops_per_token,
        "tokens_per_s": {run.label: median(run.rates) for run in runs},
        "rounds": {run.label: run.rates for run in runs},
        "mfu": {run.label: median(run.rates) * flops_per_token / peak for run in runs},
        "ratio": rt_rate / hf_rate,
        "ratio_paired": median([a / b for a, b in zip(runs[0].rates, runs[1].rates)]),  # same-round pairs
        "target": TARGET,
    }
    if plan.extra_rounds:
        result["ratio_vs_hf_eager"] = rt_rate / median(runs[2].rates)
        result["ratio_unfused"] = median(runs[3].rates) / median(runs[4].rates)
    return result


def print_config(res: dict, plan: Plan) -> None:
    c = res["config"]
    print(
        f"\nconfig ({c['name']}): n_layer {c['n_layer']}, n_head {c['n_head']}, d_model {c['d_model']}, "
        f"context {c['block_size']}, batch {c['batch_size']}, vocab {c['vocab_size']}"
    )
    print(
        f"  params: redthread {res['params']['redthread']:,}, HF GPT-2 {res['params']['HF']:,}; "
        f"FLOPs/token {res['flops_per_token'] / 1e6:.2f} M"
    )
    extra = f" ({plan.extra_rounds} rounds for the extra setups)" if plan.extra_rounds else ""
    print(f"  {plan.rounds} rounds x {plan.steps} steps after {plan.warmup} warm-up steps{extra}")
    print(f"  {'setup':<20} {'tokens/s (median)':>18} {'min..max':>20} {'MFU':>7}")
    for label, rate in res["tokens_per_s"].items():
        print(f"  {label:<20} {rate:>18,.0f} {spread(res['rounds'][label]):>20} {res['mfu'][label]:>7.1%}")
    print(f"  ratio redthread/HF (sdpa, fused): {res['ratio']:.2f}x  {verdict(res['ratio'], TARGET)}")
    print(f"  median of per-round ratios (same-round pairs, robust to load drift): {res['ratio_paired']:.2f}x")
    if "ratio_vs_hf_eager" in res:
        print(f"  ratio redthread/HF eager (fused): {res['ratio_vs_hf_eager']:.2f}x")
        print(f"  ratio redthread/HF sdpa, both fused=False: {res['ratio_unfused']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few steps only (smoke test)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--no-extras", action="store_true", help="skip HF eager and the fused=False setups")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help="both peers share it")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    if args.quick:
        plans = {"a": Plan(12, warmup=1, rounds=2, steps=2), "b": Plan(8, warmup=1, rounds=2, steps=1)}
    else:
        # config (b) takes seconds per step on 2 cores: fewer rounds for the extra setups
        extra_a, extra_b = (0, 0) if args.no_extras else (7, 2)
        plans = {
            "a": Plan(12, warmup=5, rounds=7, steps=10, extra_rounds=extra_a),
            "b": Plan(8, warmup=1, rounds=5, steps=2, extra_rounds=extra_b),
        }

    peak = matmul_peak_flops(repeats=3 if args.quick else 7)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; fp32 matmul peak {peak / 1e9:.1f} GFLOP/s")
    results = {}
    for size in (CONFIG_A, CONFIG_B):
        plan = plans[size.name]
        results[size.name] = bench_config(size, plan, peak)
        print_config(results[size.name], plan)

    print("\nsummary (redthread / HF GPT-2 sdpa, tokens/s, fused AdamW for both)")
    for name, res in results.items():
        print(
            f"  config ({name}): {res['ratio']:.2f}x (per-round pairs: {res['ratio_paired']:.2f}x)  "
            f"{verdict(res['ratio'], TARGET)}; {verdict(res['ratio'], TARGET_FAST)}"
        )
    mfu_b = results["b"]["mfu"]["redthread fused"]
    print(f"  config (b) redthread MFU {mfu_b:.1%}: {'MET' if mfu_b >= TARGET_MFU else 'MISSED'} (target >= {TARGET_MFU:.0%})")
    write_json(args.json, {"env": environment(), "peak_flops": peak, "quick": args.quick, "configs": results})


if __name__ == "__main__":
    main()
