"""Decoding against the memory limit: batch-1 greedy decoding of config (b) as a fraction of the
tokens/s that this machine's read bandwidth allows, redthread `generate` beside Hugging Face's
cached `GPT2LMHeadModel.generate` (issue 27, item 3).

At batch 1 a decoding step multiplies one row by every weight matrix: ~2 FLOPs per weight read,
far too few to keep the cores busy, so a step can go no faster than it can read its bytes. The
limit is therefore (read bandwidth) / (bytes read per token):
- bytes per token: every parameter read once per step, float32, counted from the model
  (`bytes_per_token`), plus the KV cache read at the mean context length of the run;
- read bandwidth: `src.sum()` over a 256 MiB float32 buffer (benchmarks/memory_bandwidth.py), on
  the same thread count as the decoding, measured in every round between the peers' calls, so
  the limit sees the same machine load as the decoding it bounds.

The protocol is generate_throughput.py's greedy one: config (b) (6 layers, 6 heads, d_model 384,
vocab 65) with a context of 512 for both models, a random 16-token prompt, 256 new tokens with
the KV cache; the peers and the bandwidth pass alternate round by round (the machine is shared),
each figure is the median over rounds. Targets: redthread >= 2.5x HF, and >= 70% of the limit.
`--profile` adds one torch.profiler pass over redthread's first 32 new tokens: where the time goes.

    PYTHONPATH=src .venv/bin/python benchmarks/decode_limit.py [--quick] [--threads N] [--profile] [--json PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import torch
from common import CONFIG_B, count_params, environment, make_hf_gpt2, make_redthread, median, write_json
from generate_throughput import hf_call, redthread_call, timed
from memory_bandwidth import buffer, read_rates
from torch import nn
from torch.profiler import ProfilerActivity, profile

CONTEXT = 512  # prompt + 256 new tokens > config (b)'s 256: both models get 512, so neither slides
TARGET_HF = 2.5  # redthread / HF tokens/s (issue 27, item 3)
TARGET_LIMIT = 0.70  # redthread tokens/s / the limit
MATMULS = ("aten::addmm", "aten::mm", "aten::bmm", "aten::mv", "aten::matmul", "aten::linear")  # self time


def weight_bytes_per_token(model: nn.Module) -> int:
    """Bytes of weights one decoding step reads, each tensor once, in its own dtype (float32 here).

    Every parameter is read whole by the module that uses it: the matrices and biases of the
    projections, the LayerNorm gains and biases. A lookup table (nn.Embedding) is not: a step reads
    one row of it, the new token's (token embedding) or the new position's (GPT-2's learned
    positions). With tied embeddings (both peers) the token table is also the output projection's
    weight, which reads it whole to score every token of the vocabulary: the whole (V, C) matrix
    counts once for lm_head and one more row for the lookup. redthread's sinusoidal positions are a
    buffer, not a parameter: one row of it is read too. Parameters the step never touches would be
    counted wrongly here; neither model has any (redthread's decoding step reads (in, out) copies
    of its matrices, of the same size, instead of the originals).
    """
    whole = {id(p): p for m in model.modules() if not isinstance(m, nn.Embedding) for p in m.parameters(recurse=False)}
    rows = [m.weight[0] for m in model.modules() if isinstance(m, nn.Embedding)]
    rows += [table[0] for name, table in model.named_buffers() if name.endswith("pos_emb.table")]
    return sum(t.numel() * t.element_size() for t in [*whole.values(), *rows])


def kv_bytes_per_token(n_layer: int, d_model: int, mean_length: float, element_size: int = 4) -> float:
    """Bytes of keys and values one step reads: K and V, (S, C) each per layer, S the cached length."""
    return 2 * n_layer * mean_length * d_model * element_size


def mean_cached_length(prompt_len: int, new: int) -> float:
    """The n-th new token (n = 1..new) comes from a pass attending over prompt_len + n - 1 positions."""
    return prompt_len + (new - 1) / 2


def linear_bytes(model: nn.Module) -> int:
    """Bytes of the nn.Linear weights and biases, lm_head included: what a step's matrix products read."""
    params = {id(p): p for m in model.modules() if isinstance(m, nn.Linear) for p in m.parameters(recurse=False)}
    return sum(p.numel() * p.element_size() for p in params.values())


def profiled_steps(call, prompt_len: int, new: int) -> dict:
    """One profiled `generate` of `new` tokens: ms/token in matrix products, attention, other ops, outside ops."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        out = call(new)
        wall = (time.perf_counter() - t0) / new * 1e3
    if out.shape != (1, prompt_len + new):
        raise RuntimeError(f"expected {new} new tokens, got output of shape {tuple(out.shape)}")
    events = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    ms = {"matmul": 0.0, "attention": 0.0, "other ops": 0.0}
    calls = 0
    for e in events:
        group = "matmul" if e.key in MATMULS else "attention" if "attention" in e.key else "other ops"
        ms[group] += e.self_cpu_time_total / new / 1e3
        calls += e.count
    ms["outside ops (Python, dispatch)"] = max(0.0, wall - sum(ms.values()))
    return {"wall_ms": wall, "ms": ms, "aten_calls": calls / new}


def met(value: float, target: float, shown: str) -> str:
    return f"{'met' if value >= target else 'not met'} (target >= {shown})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few tokens and rounds (smoke test)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())  # as generate_throughput.py
    ap.add_argument("--mib", type=int, default=256, help="the bandwidth buffer in MiB")
    ap.add_argument("--profile", action="store_true", help="profile redthread's first 32 new tokens once")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load_start = os.getloadavg()

    new = 32 if args.quick else 256
    rounds = 2 if args.quick else 7
    repeats = 3 if args.quick else 5  # bandwidth passes per round
    size = dataclasses.replace(CONFIG_B, block_size=CONTEXT)
    torch.manual_seed(0)
    rt = make_redthread(size).eval()
    hf = make_hf_gpt2(size, "sdpa").eval()
    prompt = torch.randint(size.vocab_size, (1, args.prompt_len), generator=torch.Generator().manual_seed(1234))
    src = buffer(args.mib)

    peers = {"redthread": redthread_call(rt, prompt, sample=False), "HF": hf_call(hf, prompt, sample=False)}
    rates: dict[str, list[float]] = {label: [] for label in peers}
    bandwidth: list[float] = []  # bytes/s, one median of `repeats` passes per round
    with torch.inference_mode():
        for call in peers.values():
            call(8)  # warm-up (redthread builds its decoding step's matrix copies here)
        for r in range(rounds):
            order = ["redthread", "bandwidth", "HF"]
            order = order[r % 3 :] + order[: r % 3]  # rotate who goes first
            for label in order:
                if label == "bandwidth":
                    bandwidth.append(median(read_rates(src, repeats)))
                else:
                    rates[label].append(timed(peers[label], args.prompt_len, new))
        profiled = profiled_steps(peers["redthread"], args.prompt_len, 32) if args.profile else None
    load_end = os.getloadavg()

    mean_len = mean_cached_length(args.prompt_len, new)
    kv = kv_bytes_per_token(size.n_layer, size.d_model, mean_len)
    weights = {"redthread": weight_bytes_per_token(rt), "HF": weight_bytes_per_token(hf)}
    per_token = {label: w + kv for label, w in weights.items()}
    bw = median(bandwidth)
    limit = {label: bw / b for label, b in per_token.items()}  # tokens/s
    tps = {label: median(xs) for label, xs in rates.items()}
    ratio = tps["redthread"] / tps["HF"]
    fraction = {label: tps[label] / limit[label] for label in peers}
    paired = {  # same-round figures, robust to load drift
        "ratio": median([a / b for a, b in zip(rates["redthread"], rates["HF"])]),
        **{label: median([t * per_token[label] / w for t, w in zip(rates[label], bandwidth)]) for label in peers},
    }

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads (decoding and bandwidth alike)")
    print(f"load average {' '.join(f'{x:.2f}' for x in load_start)} at the start, "
          f"{' '.join(f'{x:.2f}' for x in load_end)} at the end (1, 5, 15 min; {os.cpu_count()} CPUs)")
    print(f"config (b): n_layer {size.n_layer}, n_head {size.n_head}, d_model {size.d_model}, vocab {size.vocab_size}, "
          f"context {CONTEXT}; params redthread {count_params(rt):,}, HF GPT-2 {count_params(hf):,}")
    print(f"batch 1, greedy, prompt {args.prompt_len} + {new} new tokens, KV cache on, float32; HF attention sdpa")
    print(f"{rounds} rounds (redthread, HF, bandwidth in turn) after a warm-up call each\n")
    print(f"  read bandwidth: {bw / 1e9:.2f} GB/s  (sum over {args.mib} MiB, {repeats} passes a round; "
          f"rounds {min(bandwidth) / 1e9:.2f}..{max(bandwidth) / 1e9:.2f})")
    for label in peers:
        print(f"  bytes/token {label}: {per_token[label] / 1e6:.3f} MB = weights {weights[label]:,} B "
              f"+ KV cache {kv:,.0f} B (mean cached length {mean_len:g})")
    for label in peers:
        print(f"  limit {label}: {limit[label]:.1f} tokens/s")
    print()
    print(f"  {'peer':<10} {'tokens/s (median)':>18} {'min..max':>14} {'fraction of limit':>18} {'same-round':>11}")
    for label in peers:
        xs = rates[label]
        print(f"  {label:<10} {tps[label]:>18.1f} {f'{min(xs):.1f}..{max(xs):.1f}':>14} "
              f"{fraction[label]:>17.1%} {paired[label]:>10.1%}")
    print()
    print(f"  redthread/HF: {ratio:.2f}x (same-round pairs {paired['ratio']:.2f}x)  "
          f"{met(ratio, TARGET_HF, f'{TARGET_HF:g}x')}")
    print(f"  redthread/limit: {fraction['redthread']:.1%}  "
          f"{met(fraction['redthread'], TARGET_LIMIT, f'{TARGET_LIMIT:.0%}')}")
    print(f"  HF/limit: {fraction['HF']:.1%}")
    if profiled:
        ms, wall = profiled["ms"], profiled["wall_ms"]
        matmul_gbs = linear_bytes(rt) / (ms["matmul"] / 1e3) / 1e9
        print(f"\n  profile, redthread, 32 new tokens: {wall:.2f} ms/token profiled "
              f"({1e3 / tps['redthread']:.2f} unprofiled, {new} tokens), {profiled['aten_calls']:.0f} aten calls/token")
        for group, t in ms.items():
            print(f"    {group:<32} {t:6.2f} ms/token  {t / wall:6.1%}")
        print(f"    matrix products stream {linear_bytes(rt) / 1e6:.1f} MB/token at {matmul_gbs:.1f} GB/s")
    write_json(
        args.json,
        {
            "env": environment(),
            "quick": args.quick,
            "config": dataclasses.asdict(size),
            "prompt_len": args.prompt_len,
            "new_tokens": new,
            "load_average": {"start": load_start, "end": load_end},
            "bandwidth_bytes_per_s": bandwidth,
            "bandwidth_gb_per_s": bw / 1e9,
            "bytes_per_token": {"weights": weights, "kv_cache": kv, "mean_cached_length": mean_len, "total": per_token},
            "limit_tokens_per_s": limit,
            "tokens_per_s": tps,
            "rounds": rates,
            "ratio": ratio,
            "fraction_of_limit": fraction,
            "paired": paired,
            "targets": {"ratio": TARGET_HF, "fraction_of_limit": TARGET_LIMIT},
            "met": {"ratio": ratio >= TARGET_HF, "fraction_of_limit": fraction["redthread"] >= TARGET_LIMIT},
            "profile": profiled,
        },
    )


if __name__ == "__main__":
    main()
