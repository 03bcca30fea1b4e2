"""Generation throughput: redthread `generate` vs Hugging Face `GPT2LMHeadModel.generate`, tokens/s.

Config (b) (6 layers, 6 heads, d_model 384, vocab 65), batch 1, a random prompt, 256 new
tokens with the KV cache, greedy and sampled (temperature 1, top-k 50 for both). A prompt plus
256 new tokens does not fit a context of 256, so BOTH models get a context (block_size /
n_positions) of 512 here: neither slides its window. redthread without its cache is timed
too, for reference. The peers alternate round by round (the machine is shared); each figure
is the median over rounds of new tokens / wall time of one `generate` call.

    PYTHONPATH=src .venv/bin/python benchmarks/generate_throughput.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable

import torch
from common import (
    CONFIG_B,
    count_params,
    environment,
    make_hf_gpt2,
    make_redthread,
    median,
    spread,
    verdict,
    write_json,
)

from redthread.generate.sampler import generate

TARGET = 1.5  # redthread / HF new tokens/s (issue 2)
TARGET_FAST = 2.0  # the speed issue (7)
TOP_K = 50


def redthread_call(model, prompt: torch.Tensor, sample: bool, use_cache: bool = True) -> Callable:
    def call(new: int) -> torch.Tensor:
        return generate(
            model, prompt, new, temperature=1.0 if sample else 0.0, top_k=TOP_K if sample else None,
            seed=0, use_cache=use_cache,
        )

    return call


def hf_call(model, prompt: torch.Tensor, sample: bool) -> Callable:
    kwargs = dict(do_sample=True, top_k=TOP_K, top_p=1.0, temperature=1.0) if sample else dict(do_sample=False)

    def call(new: int) -> torch.Tensor:
        torch.manual_seed(0)
        return model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=new,
            min_new_tokens=new,
            use_cache=True,
            pad_token_id=0,
            **kwargs,
        )

    return call


def timed(call: Callable, prompt_len: int, new: int) -> float:
    t0 = time.perf_counter()
    out = call(new)
    elapsed = time.perf_counter() - t0
    if out.shape != (1, prompt_len + new):
        raise RuntimeError(f"expected {new} new tokens, got output of shape {tuple(out.shape)}")
    return new / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few tokens and rounds (smoke test)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    new = 32 if args.quick else 256
    rounds, nocache_rounds = (2, 1) if args.quick else (5, 2)
    size = CONFIG_B
    context = size.block_size
    if args.prompt_len + new > context:
        context = 512
        size = dataclasses.replace(size, block_size=context)

    torch.manual_seed(0)
    rt = make_redthread(size).eval()
    hf = make_hf_gpt2(size, "sdpa").eval()
    prompt = torch.randint(size.vocab_size, (1, args.prompt_len), generator=torch.Generator().manual_seed(1234))

    setups = {
        "redthread greedy": redthread_call(rt, prompt, sample=False),
        "HF greedy": hf_call(hf, prompt, sample=False),
        "redthread sample": redthread_call(rt, prompt, sample=True),
        "HF sample": hf_call(hf, prompt, sample=True),
    }
    reference = {"redthread greedy, no cache": redthread_call(rt, prompt, sample=False, use_cache=False)}
    rates: dict[str, list[float]] = {label: [] for label in [*setups, *reference]}

    with torch.inference_mode():
        for call in [*setups.values(), *reference.values()]:
            call(8)  # warm-up
        labels = list(setups)
        for r in range(rounds):
            order = labels[r % len(labels) :] + labels[: r % len(labels)]  # rotate who goes first
            if r < nocache_rounds:
                order += list(reference)
            for label in order:
                call = setups.get(label) or reference[label]
                rates[label].append(timed(call, args.prompt_len, new))

    tps = {label: median(xs) for label, xs in rates.items()}
    ratios = {
        "greedy": tps["redthread greedy"] / tps["HF greedy"],
        "sample": tps["redthread sample"] / tps["HF sample"],
    }
    paired = {
        mode: median([a / b for a, b in zip(rates[f"redthread {mode}"], rates[f"HF {mode}"])]) for mode in ratios
    }  # same-round pairs, robust to load drift
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(
        f"config (b): n_layer {size.n_layer}, n_head {size.n_head}, d_model {size.d_model}, vocab {size.vocab_size}; "
        f"params redthread {count_params(rt):,}, HF GPT-2 {count_params(hf):,}"
    )
    if context != CONFIG_B.block_size:
        print(
            f"context: prompt {args.prompt_len} + {new} new > {CONFIG_B.block_size}, so BOTH models use a context "
            f"(block_size / n_positions) of {context}"
        )
    print(f"batch 1, {new} new tokens, KV cache on; sampling = temperature 1, top-k {TOP_K}; HF attention sdpa")
    print(f"{rounds} rounds ({nocache_rounds} for the no-cache reference) after a short warm-up call each\n")
    print(f"  {'setup':<28} {'new tokens/s (median)':>22} {'min..max':>16}")
    for label, rate in tps.items():
        print(f"  {label:<28} {rate:>22,.1f} {spread(rates[label]):>16}")
    print()
    for mode, ratio in ratios.items():
        print(
            f"  ratio redthread/HF, {mode}: {ratio:.2f}x (per-round pairs: {paired[mode]:.2f}x)  "
            f"{verdict(ratio, TARGET)}; {verdict(ratio, TARGET_FAST)}"
        )
    write_json(
        args.json,
        {
            "env": environment(),
            "quick": args.quick,
            "config": dataclasses.asdict(size),
            "context": context,
            "prompt_len": args.prompt_len,
            "new_tokens": new,
            "top_k": TOP_K,
            "tokens_per_s": tps,
            "rounds": rates,
            "ratio": ratios,
            "ratio_paired": paired,
            "target": TARGET,
        },
    )


if __name__ == "__main__":
    main()
