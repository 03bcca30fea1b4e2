"""Speculative sampling with the ladder: each lower rung drafts, the shipped Transformer decides (issue 27, item 4).

The target is `shakespeare-transformer` (4 layers, d_model 128, RoPE, 0.80M parameters, 1.488 nats/char on
tiny Shakespeare's validation split); the drafts are the other shipped tiny-Shakespeare rungs (bigram, 3-gram
counts, MLP, LSTM, GRU), all on the same 65 characters. No smaller Transformer is shipped, so none drafts here.

For each draft and each k (tokens drafted per round), on PROMPTS prompts (each the 64 characters that open a
stretch of the validation split, a different stretch per prompt), `speculative_generate(target, draft, prompt,
NEW, k)` and plain `generate(target, prompt, NEW)` (KV cache on, the same sampling settings) are timed in
turn, prompt by prompt, so a busy machine slows both arms alike. Reported per cell:
- acceptance a: drafts kept / drafts judged, over every round of every prompt (a draft after the first
  rejection of its round is never judged), the estimate of Leviathan et al.'s acceptance rate alpha;
- kept: drafts kept / drafts proposed (what the draft's work bought);
- tokens per target pass: new tokens / rounds (plain sampling makes 1 per pass);
- speed-up: plain wall time / speculative wall time, the median over prompts with its min..max;
- expected: the speed-up Leviathan et al. (2023, eq. 1 with Theorem 3.8) predict from the measured
  acceptance a and the draft's cost per token c (its plain tokens/s against the target's):
  (1 - a^(k+1)) / ((1 - a)(k c + 1)), which takes the target's pass over k + 1 positions to cost one step;
- verify cost: what that pass costs here, in target steps (the KV-cached forward over k + 1 new positions
  against the one-token decoding step plain generation uses, each the median of VERIFY_REPEATS calls at a
  context of 128 tokens); "expected, measured costs" puts it in the denominator: tokens per round /
  (k c + verify cost).
Two settings: sampling at temperature 1 (the exact rule keeps the target's distribution, which
tests/generate/test_speculative.py checks by total variation) and greedy (a draft is kept exactly when it is
the target's argmax; the output equals plain greedy decoding token for token, checked here on every prompt).

Nothing is tuned and no target is set: the question is how fast each rung is as a proposer, reported as it
comes, below 1 included. One thread (torch.set_num_threads(1)); the figures are those of this machine's load.

    PYTHONPATH=src .venv/bin/python benchmarks/speculative.py [--quick] [--json PATH] [--markdown]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from common import environment, write_json

import redthread as rt
from redthread.data.corpus import text_path
from redthread.generate.sampler import generate
from redthread.generate.speculative import speculative_rounds

TARGET = "shakespeare-transformer"
DRAFTS = ["shakespeare-bigram", "shakespeare-ngram", "shakespeare-mlp", "shakespeare-lstm", "shakespeare-gru"]
KS = [2, 4, 8]
PROMPT_CHARS = 64
VERIFY_REPEATS = 50
SETTINGS = {"sample": dict(temperature=1.0), "greedy": dict(temperature=0.0)}


def prompts(tok, n: int) -> list[torch.Tensor]:
    """n prompts of PROMPT_CHARS characters, opening evenly spaced stretches of the validation split (last 10%)."""
    text = text_path("tinyshakespeare").read_text(encoding="utf-8")
    val = text[int(0.9 * len(text)):]
    step = (len(val) - PROMPT_CHARS) // n
    return [torch.tensor(tok.encode(val[i * step: i * step + PROMPT_CHARS])) for i in range(n)]


def timed_plain(target, prompt, new: int, settings: dict, seed: int) -> tuple[float, torch.Tensor]:
    t0 = time.perf_counter()
    out = generate(target, prompt[None], new, seed=seed, **settings)
    return time.perf_counter() - t0, out


def timed_speculative(target, draft, prompt, new: int, k: int, settings: dict, seed: int):
    t0 = time.perf_counter()
    rounds = list(speculative_rounds(target, draft, prompt, new, k=k, seed=seed, **settings))
    seconds = time.perf_counter() - t0
    tokens = torch.cat([prompt[None], *[r.tokens for r in rounds]], dim=1)
    return seconds, tokens, rounds


def measure(target, draft, ps, new: int, k: int, mode: str) -> dict:
    settings = SETTINGS[mode]
    speedups, drafted, judged, accepted, n_rounds = [], 0, 0, 0, 0
    for seed, prompt in enumerate(ps):
        plain_s, plain_out = timed_plain(target, prompt, new, settings, seed)
        spec_s, spec_out, rounds = timed_speculative(target, draft, prompt, new, k, settings, seed)
        if mode == "greedy" and not torch.equal(plain_out, spec_out):
            raise SystemExit(f"greedy speculative decoding with {draft.__class__.__name__} differs from plain greedy")
        speedups.append(plain_s / spec_s)
        drafted += sum(r.drafted for r in rounds)
        accepted += sum(r.accepted for r in rounds)
        judged += sum(min(r.accepted + 1, r.drafted) for r in rounds)
        n_rounds += len(rounds)
    return {
        "k": k, "mode": mode, "acceptance": accepted / max(judged, 1), "kept": accepted / max(drafted, 1),
        "tokens_per_target_pass": new * len(ps) / n_rounds,
        "speedup_median": statistics.median(speedups), "speedup_min": min(speedups), "speedup_max": max(speedups),
    }


def plain_rate(model, ps, new: int) -> float:
    """Plain sampling's tokens/s (median over prompts)."""
    rates = [new / timed_plain(model, p, new, SETTINGS["sample"], seed)[0] for seed, p in enumerate(ps)]
    return statistics.median(rates)


def expected_speedup(a: float, k: int, c: float, verify: float = 1.0) -> float:
    """Leviathan et al.'s improvement factor for acceptance a, k drafts and a draft costing c target steps,
    the target's verifying pass costing `verify` steps (1 in the paper)."""
    kept = k + 1 if a >= 1 else (1 - a ** (k + 1)) / (1 - a)  # expected tokens per round
    return kept / (k * c + verify)


@torch.inference_mode()
def verify_cost(target, prompt: torch.Tensor, k: int) -> float:
    """The KV-cached forward over k + 1 new positions, in one-token decoding steps (medians of wall time)."""
    context = prompt[None, :PROMPT_CHARS]  # (1, 64)
    cache = target.make_cache(1, target.block_size)
    target(context, cache=cache)
    step = target.decoder_step()
    length = cache[0].self_attn.length

    def timed(call) -> float:
        times = []
        for _ in range(VERIFY_REPEATS):
            for layer in cache:
                layer.self_attn.length = length  # the same context every call
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    new = context[:, : k + 1]
    one = timed(lambda: step(new[:, :1], cache))
    return timed(lambda: target(new, cache=cache)) / one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 prompts, 40 new tokens, k = 4 only (smoke test)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown (docs/benchmarks.md)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    n_prompts, new, ks = (2, 40, [4]) if args.quick else (8, 200, KS)

    target, tok = rt.pretrained(TARGET)
    ps = prompts(tok, n_prompts)
    print(f"target {TARGET}: {sum(p.numel() for p in target.parameters()):,} parameters; "
          f"{n_prompts} prompts of {PROMPT_CHARS} characters, {new} new tokens each, one thread")
    base = plain_rate(target, ps, new)
    print(f"plain generate (KV cache, temperature 1): {base:,.0f} tokens/s")
    rows = []
    costs = {}
    for name in DRAFTS:
        draft, _ = rt.pretrained(name)
        costs[name] = base / plain_rate(draft, ps, new)
        print(f"{name}: cost per token {costs[name]:.2f} of the target's")
    verify = {k: verify_cost(target, ps[0], k) for k in ks}
    print("verify pass, in target steps: " + ", ".join(f"k={k}: {v:.2f}" for k, v in verify.items()))
    print(f"{'draft':<22}{'mode':<8}{'k':>3}{'acceptance':>12}{'kept':>7}{'tokens/pass':>13}{'speed-up':>10}  min..max   expected  measured costs")
    for name in DRAFTS:
        draft, _ = rt.pretrained(name)
        for mode in SETTINGS:
            for k in ks:
                row = {"draft": name, "cost": costs[name], **measure(target, draft, ps, new, k, mode)}
                row["expected"] = expected_speedup(row["acceptance"], k, costs[name])
                row["expected_measured"] = expected_speedup(row["acceptance"], k, costs[name], verify[k])
                rows.append(row)
                print(f"{name:<22}{mode:<8}{k:>3}{row['acceptance']:>12.3f}{row['kept']:>7.3f}{row['tokens_per_target_pass']:>13.2f}"
                      f"{row['speedup_median']:>9.2f}x  {row['speedup_min']:.2f}..{row['speedup_max']:.2f}"
                      f"{row['expected']:>9.2f}x{row['expected_measured']:>10.2f}x")
    if args.markdown:
        print("\n| draft (cost per token) | mode | k | acceptance | kept | tokens per target pass | speed-up: median (min..max) | expected | expected, measured costs |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['draft'].split('-')[1]} ({r['cost']:.2f}) | {r['mode']} | {r['k']} | {r['acceptance']:.3f} | {r['kept']:.3f} | "
                  f"{r['tokens_per_target_pass']:.2f} | {r['speedup_median']:.2f}x ({r['speedup_min']:.2f}..{r['speedup_max']:.2f}) "
                  f"| {r['expected']:.2f}x | {r['expected_measured']:.2f}x |")
    write_json(args.json, {"environment": environment(), "target": TARGET, "prompts": n_prompts, "new_tokens": new,
                           "plain_tokens_per_s": base, "verify_cost": verify, "rows": rows})


if __name__ == "__main__":
    main()
