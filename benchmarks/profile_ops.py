"""Where the time goes: per-op CPU profiles of redthread vs HF GPT-2, for the throughput benchmarks.

For a training step of config (a) or (b) (forward / backward / optimizer phases, marked with
`record_function`) and for cached decoding of config (b) at batch 1, prints for each peer the
wall time per step (or per token), the number of aten op calls, and the ops with the most
self CPU time. Profiling adds overhead per op, so read the tables for where time goes, and
train_throughput.py / generate_throughput.py for the speeds.

    PYTHONPATH=src .venv/bin/python benchmarks/profile_ops.py [--what train-a train-b generate] [--threads N]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch
import torch.nn.functional as F
from common import CONFIG_A, CONFIG_B, adamw, hf_logits, make_hf_gpt2, make_redthread, unique_params
from torch.profiler import ProfilerActivity, profile, record_function

from redthread.generate.sampler import generate

PHASES = ("forward", "loss", "backward", "clip", "optimizer")


def profiled_train(size, batch_size: int, peer: str, steps: int):
    torch.manual_seed(0)
    if peer == "redthread":
        model = make_redthread(size)
        forward = model
    else:
        model = make_hf_gpt2(size, "sdpa")
        forward = hf_logits(model)
    model.train()
    params, opt = unique_params(model), adamw(model, fused=True)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(size.vocab_size, (batch_size, size.block_size + 1), generator=gen)
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        with record_function("forward"):
            logits = forward(x)
        with record_function("loss"):
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        with record_function("backward"):
            loss.backward()
        with record_function("clip"):
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    plain = (time.perf_counter() - t0) / steps
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    return prof, plain


def profiled_decode(peer: str, new: int):
    size = dataclasses.replace(CONFIG_B, block_size=512)
    torch.manual_seed(0)
    prompt = torch.randint(size.vocab_size, (1, 16), generator=torch.Generator().manual_seed(1234))
    if peer == "redthread":
        model = make_redthread(size).eval()

        def call(n):
            return generate(model, prompt, n, temperature=0.0)
    else:
        model = make_hf_gpt2(size, "sdpa").eval()

        def call(n):
            return model.generate(
                prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=n, min_new_tokens=n,
                do_sample=False, use_cache=True, pad_token_id=0,
            )

    with torch.inference_mode():
        call(8)
        t0 = time.perf_counter()
        call(new)
        plain = (time.perf_counter() - t0) / new
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            call(new)
    return prof, plain


def report(title: str, prof, plain: float, per: int, unit: str, top: int) -> None:
    events = prof.key_averages()
    aten = [e for e in events if e.key.startswith("aten::")]
    n_calls = sum(e.count for e in aten) / per
    self_total = sum(e.self_cpu_time_total for e in events) / per / 1e3
    print(f"\n== {title}: {plain * 1e3:.2f} ms/{unit} unprofiled; {n_calls:,.0f} aten calls/{unit}; "
          f"self CPU {self_total:.2f} ms/{unit} profiled")
    phases = {e.key: e.cpu_time_total / per / 1e3 for e in events if e.key in PHASES}
    if phases:
        print("   phases (ms/step, profiled): " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))
    print(f"   {'op':<44} {'self ms/' + unit:>12} {'calls/' + unit:>11}")
    for e in sorted(aten, key=lambda e: -e.self_cpu_time_total)[:top]:
        print(f"   {e.key:<44} {e.self_cpu_time_total / per / 1e3:>12.3f} {e.count / per:>11.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", nargs="+", default=["train-a", "train-b", "generate"])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for what in args.what:
        for peer in ("redthread", "HF"):
            if what == "train-a":
                steps = 10
                prof, plain = profiled_train(CONFIG_A, 12, peer, steps)
                report(f"train (a) {peer}", prof, plain, steps, "step", args.top)
            elif what == "train-b":
                steps = 2
                prof, plain = profiled_train(CONFIG_B, 8, peer, steps)
                report(f"train (b) {peer}", prof, plain, steps, "step", args.top)
            elif what == "generate":
                new = 64
                prof, plain = profiled_decode(peer, new)
                report(f"generate (b, context 512, greedy) {peer}", prof, plain, new, "token", args.top)
            else:
                raise SystemExit(f"unknown --what {what!r}")


if __name__ == "__main__":
    main()
