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

`--int8` adds a third peer, redthread's int8 copy of the same model (generate/quantize.py: int8 weights
per output channel, bfloat16 activations in the products), timed in the same rounds, its bytes per token
(int8 weights + their scales + the float32 parts + the KV cache) and its speed against the float32 limit
(which it can pass: it reads fewer bytes) and against its own; and what int8 costs the shipped
`shakespeare-transformer` (4 layers x 128, rotary; the float32 model it quantizes is rt.pretrained's):
validation NLL in nats/char over the whole split (reference_models.py's fixed sample with --quick) in
float32 and int8, the share of its next-token argmaxes over that split that int8 keeps, and over greedy
continuations of 4 prompts from the validation text (16 characters each, 256 new tokens), the share
of new tokens identical position by position and where the first one differs.

    PYTHONPATH=src .venv/bin/python benchmarks/decode_limit.py [--quick] [--threads N] [--profile] [--int8] [--json PATH]
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
from reference_models import BY_NAME, CHECK, load_corpus
from torch import nn
from torch.profiler import ProfilerActivity, profile

from redthread.generate.quantize import Int8Linear, quantize_int8
from redthread.generate.sampler import generate
from redthread.train.checkpoint import pretrained
from redthread.train.loop import evaluate

CONTEXT = 512  # prompt + 256 new tokens > config (b)'s 256: both models get 512, so neither slides
TARGET_HF = 2.5  # redthread / HF tokens/s (issue 27, item 3)
TARGET_LIMIT = 0.70  # redthread tokens/s / the limit
MATMULS = ("aten::addmm", "aten::mm", "aten::bmm", "aten::mv", "aten::matmul", "aten::linear",
           "aten::_weight_int8pack_mm")  # self time
REFERENCE = "shakespeare-transformer"  # the shipped model whose likelihood --int8 costs
PROMPTS, PROMPT_CHARS = 4, 16  # greedy continuations for --int8's token agreement
INT8 = "redthread int8"


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
    of its matrices, of the same size, instead of the originals). An int8 copy's Int8Linear layers hold
    their weights as buffers, read whole too: the int8 matrix, its bfloat16 scales, the float32 bias.
    """
    whole = {id(p): p for m in model.modules() if not isinstance(m, nn.Embedding) for p in m.parameters(recurse=False)}
    whole |= {id(b): b for m in model.modules() if isinstance(m, Int8Linear) for b in m.buffers(recurse=False)}
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


def int8_parts(model: nn.Module) -> dict[str, int]:
    """An int8 copy's weight bytes per token (weight_bytes_per_token) in three parts: int8 matrices, scales, float32."""
    layers = [m for m in model.modules() if isinstance(m, Int8Linear)]
    q = sum(m.weight_int8.numel() * m.weight_int8.element_size() for m in layers)
    scales = sum(m.scale.numel() * m.scale.element_size() for m in layers)
    return {"int8": q, "scales": scales, "float32": weight_bytes_per_token(model) - q - scales}


def int8_cost(quick: bool, new: int) -> dict:
    """What int8 weights cost REFERENCE (the module docstring): NLL, argmax agreement, greedy agreement."""
    fp32, _ = pretrained(REFERENCE)
    int8 = quantize_int8(fp32)
    data = load_corpus(BY_NAME[REFERENCE])  # the corpus and split it was trained and scored on
    sample = CHECK if quick else {"batch_size": 64}  # the whole split, every token once, as reference_models.py
    nll = {label: evaluate(m, data.source, "val", **sample) for label, m in (("fp32", fp32), ("int8", int8))}
    same = total = 0
    with torch.inference_mode():
        for x, _ in data.source.eval_batches("val", sample["batch_size"], sample.get("max_batches")):
            same += int((fp32(x).argmax(-1) == int8(x).argmax(-1)).sum())
            total += x.numel()
    val = data.source.split("val").tokens
    starts = [i * (len(val) - PROMPT_CHARS) // PROMPTS for i in range(1 if quick else PROMPTS)]
    greedy = []
    for start in starts:
        prompt = torch.tensor(val[start : start + PROMPT_CHARS], dtype=torch.long)[None]  # a copy: val is read-only
        a, b = (generate(m, prompt, new, temperature=0.0)[0, PROMPT_CHARS:] for m in (fp32, int8))
        differ = (a != b).nonzero()
        greedy.append({"start": start, "identical": int((a == b).sum()),
                       "first_difference": int(differ[0]) if len(differ) else None})
    return {
        "model": REFERENCE, "config": fp32.cfg.to_dict(), "sample": sample,
        "nll": {k: v["nll"] for k, v in nll.items()}, "tokens": nll["fp32"]["tokens"],
        "nll_cost": nll["int8"]["nll"] - nll["fp32"]["nll"],
        "argmax_agreement": same / total, "argmax_positions": total,
        "new_tokens": new, "greedy": greedy,
        "greedy_identical": sum(g["identical"] for g in greedy) / (new * len(greedy)),
    }


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


def last_level_cache(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """The largest cache of the first core in bytes (sysfs `index*/size`, e.g. "480M" or "32768K"), or None."""
    sizes = []
    for index in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        try:
            with open(os.path.join(root, index, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:].upper(), 1)
        digits = text[:-1] if scale > 1 else text
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None


def limit_verdict(fraction: float, per_token: float, cache: int | None) -> tuple[str, bool | None]:
    """The 70% target against the memory limit, or undecided where a step's bytes fit in the last-level cache:
    there a step need not read memory at all, and the read bandwidth is no limit."""
    if cache is not None and per_token <= cache:
        return (f"not decided: a step's {per_token / 1e6:.1f} MB fit in the {cache / 2**20:.0f} MiB last-level cache, "
                "so the memory bandwidth does not limit it"), None
    return met(fraction, TARGET_LIMIT, f"{TARGET_LIMIT:.0%}"), fraction >= TARGET_LIMIT


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few tokens and rounds (smoke test)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())  # as generate_throughput.py
    ap.add_argument("--mib", type=int, default=256, help="the bandwidth buffer in MiB")
    ap.add_argument("--profile", action="store_true", help="profile redthread's first 32 new tokens once")
    ap.add_argument("--int8", action="store_true", help="add redthread's int8 copy of the model, and its NLL cost")
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
    if args.int8:
        int8 = quantize_int8(rt)
        peers[INT8] = redthread_call(int8, prompt, sample=False)
    rates: dict[str, list[float]] = {label: [] for label in peers}
    bandwidth: list[float] = []  # bytes/s, one median of `repeats` passes per round
    with torch.inference_mode():
        for call in peers.values():
            call(8)  # warm-up (redthread builds its decoding step's matrix copies here)
        for r in range(rounds):
            order = ["redthread", "bandwidth", "HF", *([INT8] if args.int8 else [])]
            order = order[r % len(order) :] + order[: r % len(order)]  # rotate who goes first
            for label in order:
                if label == "bandwidth":
                    bandwidth.append(median(read_rates(src, repeats)))
                else:
                    rates[label].append(timed(peers[label], args.prompt_len, new))
        profiled = profiled_steps(peers["redthread"], args.prompt_len, 32) if args.profile else None
    load_end = os.getloadavg()
    cost = int8_cost(args.quick, new) if args.int8 else None  # not timed: after the rounds

    mean_len = mean_cached_length(args.prompt_len, new)
    kv = kv_bytes_per_token(size.n_layer, size.d_model, mean_len)
    weights = {"redthread": weight_bytes_per_token(rt), "HF": weight_bytes_per_token(hf)}
    if args.int8:
        weights[INT8] = weight_bytes_per_token(int8)
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
    print(f"batch 1, greedy, prompt {args.prompt_len} + {new} new tokens, KV cache on, float32; HF attention sdpa"
          + ("; redthread int8: int8 weights, bfloat16 activations in the products, float32 KV cache" if args.int8 else ""))
    print(f"{rounds} rounds ({', '.join(peers)}, bandwidth in turn) after a warm-up call each\n")
    print(f"  read bandwidth: {bw / 1e9:.2f} GB/s  (sum over {args.mib} MiB, {repeats} passes a round; "
          f"rounds {min(bandwidth) / 1e9:.2f}..{max(bandwidth) / 1e9:.2f})")
    for label in peers:
        print(f"  bytes/token {label}: {per_token[label] / 1e6:.3f} MB = weights {weights[label]:,} B "
              f"+ KV cache {kv:,.0f} B (mean cached length {mean_len:g})")
    if args.int8:
        parts = int8_parts(int8)
        print(f"  {INT8} weights: {parts['int8']:,} B int8 matrices + {parts['scales']:,} B their bfloat16 scales "
              f"+ {parts['float32']:,} B float32 (embedding rows, LayerNorms, biases, the tied output projection)")
    for label in peers:
        print(f"  limit {label}: {limit[label]:.1f} tokens/s")
    print()
    print(f"  {'peer':<14} {'tokens/s (median)':>18} {'min..max':>14} {'fraction of limit':>18} {'same-round':>11}")
    for label in peers:
        xs = rates[label]
        print(f"  {label:<14} {tps[label]:>18.1f} {f'{min(xs):.1f}..{max(xs):.1f}':>14} "
              f"{fraction[label]:>17.1%} {paired[label]:>10.1%}")
    print()
    print(f"  redthread/HF: {ratio:.2f}x (same-round pairs {paired['ratio']:.2f}x)  "
          f"{met(ratio, TARGET_HF, f'{TARGET_HF:g}x')}")
    llc = last_level_cache()
    shown, decided = limit_verdict(fraction["redthread"], per_token["redthread"], llc)
    print(f"  redthread/limit: {fraction['redthread']:.1%}  {shown}")
    print(f"  HF/limit: {fraction['HF']:.1%}")
    if args.int8:
        of_fp32 = tps[INT8] / limit["redthread"]
        int8_paired = median([t * per_token["redthread"] / w for t, w in zip(rates[INT8], bandwidth)])
        print(f"  int8/HF: {tps[INT8] / tps['HF']:.2f}x (same-round pairs "
              f"{median([a / b for a, b in zip(rates[INT8], rates['HF'])]):.2f}x)  {met(tps[INT8] / tps['HF'], TARGET_HF, f'{TARGET_HF:g}x')}")
        print(f"  int8/redthread: {tps[INT8] / tps['redthread']:.2f}x (same-round pairs "
              f"{median([a / b for a, b in zip(rates[INT8], rates['redthread'])]):.2f}x)")
        int8_shown, int8_decided = limit_verdict(of_fp32, per_token[INT8], llc)
        print(f"  int8/float32 limit: {of_fp32:.1%} (same-round {int8_paired:.1%})  {int8_shown}"
              f"; {'past' if of_fp32 > 1 else 'below'} the float32 limit")
        print(f"  int8/int8 limit: {fraction[INT8]:.1%} (same-round {paired[INT8]:.1%})")
        nll, what = cost["nll"], "whole validation split" if not args.quick else f"sample {cost['sample']}"
        print(f"\n  int8's cost on {cost['model']} (rt.pretrained), {what}, {cost['tokens']:,} tokens:")
        print(f"    validation NLL: float32 {nll['fp32']:.4f}, int8 {nll['int8']:.4f} nats/char "
              f"({cost['nll_cost']:+.4f})")
        print(f"    next-token argmax kept: {cost['argmax_agreement']:.2%} of {cost['argmax_positions']:,} positions")
        firsts = ", ".join(str(g["first_difference"]) if g["first_difference"] is not None else "none"
                           for g in cost["greedy"])
        n = len(cost["greedy"])
        print(f"    greedy, {n} prompt{'s' if n > 1 else ''} x {cost['new_tokens']} new tokens: {cost['greedy_identical']:.1%} "
              f"identical position by position; first difference at new token {firsts}")
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
            "last_level_cache_bytes": llc,
            "met": {"ratio": ratio >= TARGET_HF, "fraction_of_limit": decided},
            "profile": profiled,
            "int8": None if not args.int8 else {
                "tokens_per_s": tps[INT8], "bytes_per_token": per_token[INT8], "weights": weights[INT8],
                "weight_parts": int8_parts(int8),
                "fraction_of_fp32_limit": of_fp32, "fraction_of_int8_limit": fraction[INT8],
                "ratio_hf": tps[INT8] / tps["HF"], "ratio_redthread": tps[INT8] / tps["redthread"],
                "met": {"ratio": tps[INT8] / tps["HF"] >= TARGET_HF,
                        "fraction_of_fp32_limit": int8_decided},
                "cost": cost,
            },
        },
    )


if __name__ == "__main__":
    main()
