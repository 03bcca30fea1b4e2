"""`redthread demo`: the whole thread in about three minutes on a laptop CPU.

Trains a small character-level Transformer on Shakespeare's plays by maximum likelihood,
measures its validation bits per character beside two count-based baselines fitted on the
same split (unigram: no context; bigram: one character of context), prints a few top-p
samples from the learned P(next character | context), and leaves a run folder that
`redthread sample` can use.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from pathlib import Path

import torch

from redthread.data.lm import load_splits
from redthread.errors import RedthreadError
from redthread.generate.config import SampleConfig
from redthread.generate.sampler import generate
from redthread.models.likelihoods import token_nll
from redthread.models.ngram import NGramConfig, NGramLM
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.language_model import train_language_model
from redthread.train.loop import TrainConfig, make_optimizer, resolve_device
from redthread.train.run_folder import RunFolder

MODEL = dict(n_layer=4, n_head=4, d_model=128, block_size=128, dropout=0.0, pos="rope")
TRAIN = dict(batch_size=24, lr=2e-3, min_lr=2e-4, warmup_iters=100, eval_interval=250, eval_batches=10, log_interval=10)


def steps_per_second(vocab_size: int, device: torch.device, batch_size: int) -> float:
    """Time a few training steps of the demo model on random tokens, to size the run to the budget."""
    model = TransformerLM(TransformerConfig(vocab_size=vocab_size, **MODEL)).to(device)
    opt = make_optimizer(model, TrainConfig(), device)
    x = torch.randint(vocab_size, (batch_size, MODEL["block_size"]), device=device)
    times = []
    for i in range(8):
        t = time.perf_counter()
        token_nll(model(x), x).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i >= 3:  # the first steps warm up allocators and kernels
            times.append(time.perf_counter() - t)
    return 1.0 / sorted(times)[len(times) // 2]


def run_demo(out: str | None = None, minutes: float = 3.0, device: str = "auto", progress: bool = True, say=print) -> dict:
    if not minutes > 0:
        raise RedthreadError(f"--minutes must be positive, got {minutes}")
    device_ = resolve_device(device)
    out = Path(out) if out else Path("runs") / f"demo-{datetime.now():%Y%m%d-%H%M%S}"
    RunFolder(out, resume=False, overwrite=False)  # refuses a folder that holds a run, before spending any time
    say("redthread demo: a character-level Transformer learns P(next character | previous characters)")
    say("from Shakespeare's 37 plays by maximum likelihood, then writes with it.\n")

    train_split, val_split, tokenizer = load_splits(None, "char", None)
    train_tokens, val_tokens = train_split.tokens, val_split.tokens
    say(f"corpus: {len(train_tokens):,} training / {len(val_tokens):,} validation characters "
          f"(validation = 4 whole plays), vocabulary {tokenizer.vocab_size} characters; device: {device_}")

    # leave ~20% of the budget for start-up, the final evaluation over every validation character and sampling
    budget = minutes * 60 * 0.8
    rate = steps_per_second(tokenizer.vocab_size, device_, TRAIN["batch_size"])
    max_iters = max(50, int(budget * rate))
    say(f"training for {max_iters} steps (~{max_iters / rate / 60:.1f} min at {rate:.1f} steps/s)\n")

    run = train_language_model(
        out, None, "char", None, MODEL, {**TRAIN, "max_iters": max_iters, "device": device},
        progress=progress, log=say,
    )
    ln2 = math.log(2)
    rows = []
    for order, name in ((1, "unigram counts (no context)"), (2, "bigram counts (1 character)")):
        counts = NGramLM(NGramConfig(vocab_size=tokenizer.vocab_size, order=order, k=1.0))
        nll = counts.fit_stream(train_tokens).nll_stream(val_tokens)
        rows.append((name, tokenizer.vocab_size ** order - tokenizer.vocab_size ** (order - 1), nll))
    n_params = sum(p.numel() for p in run.model.parameters())
    rows.append((f"Transformer ({MODEL['block_size']} characters)", n_params, run.final["nll"]))

    say("\nvalidation split, every character scored once:")
    say(f"{'model':34s} {'parameters':>11s} {'nats/char':>10s} {'bits/char':>10s} {'perplexity':>11s}")
    for name, n, nll in rows:
        say(f"{name:34s} {n:>11,} {nll:>10.3f} {nll / ln2:>10.3f} {math.exp(nll):>11.2f}")

    say("\nsamples (top-p 0.9, temperature 0.8; three in one batch):")
    model = run.model.eval()
    prompt = torch.tensor([run.tokenizer.encode("\n")], device=next(model.parameters()).device)  # (1, 1)
    samples = generate(model, prompt, 240, sampling=SampleConfig(temperature=0.8, top_p=0.9, seed=0), num_samples=3)
    for i, row in enumerate(samples[:, 1:].tolist()):  # (3, 240): what follows the newline
        say(f"--- sample {i + 1} ---\n{run.tokenizer.decode(row).rstrip()}\n")
    say(f"run folder: {out}  (checkpoint.safetensors, metrics.jsonl, loss.png)")
    say(f"more: redthread sample --checkpoint {out} --prompt 'ROMEO.' --top-p 0.9")
    return {"run_dir": str(out), "baselines": {r[0]: r[2] for r in rows[:2]}, "val_nll": run.final["nll"], "steps": run.result.step}
