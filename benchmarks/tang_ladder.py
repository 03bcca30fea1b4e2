"""The ladder on the Complete Tang Poems, in bits per 字: characters against BPE, with n-gram baselines.

Issue 28, item 5. The corpus is `--data tang` (built by setup; the poems in a seeded order, so the last
10%, the validation split, is a random tenth of the poems). Two tokenizations of the same text:

- characters (8,744 distinct), and
- byte-level BPE with a vocabulary of 16,384, learned on the training split only (about 9,000 merges make
  the characters, the rest the commonest words and pairs; a rare character stays two or three byte tokens).

Every model is scored on every token of the validation split, in the ladder's windows of 64 tokens, and
reported in **bits per 字**: the validation split's total NLL in bits over its number of characters
(punctuation and line breaks included), so the two tokenizations are compared on the same text.

The rungs, fixed before any run:

- counts: interpolated Kneser–Ney n-grams (`models/kneser_ney.py`) of orders 1 (the unigram) to 4 (the
  longest a 64-bit key holds for 16,384 tokens). Order 2 is the bigram baseline; the n-gram baseline is
  the order that scores best on a development split (the last 10% of the training split, the models
  counted on the first 90%), not on validation;
- the ladder's gradient rungs (`redthread ladder`'s sizes for a stream: MLP, RNN, LSTM, GRU, Transformer),
  each trained for `--minutes` of one thread with the learning rate scheduled on that clock (warm-up,
  cosine decay to a tenth), batch 32 of 64 tokens, seed `--seed`.

Run one tokenization per process, one thread each (the two fit the machine's two cores):

    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/tang_ladder.py --tokenizer char --minutes 8 --json char.json
    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/tang_ladder.py --tokenizer bpe --minutes 8 --json bpe.json

With the character tokenizer the run also prints P(爱 | 我) and P(恨 | 我), the essay's one Chinese
example, under every model (`--quick`: a smoke test on a small slice, no figure of it means anything).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
from common import write_json

from redthread.commands.ladder import LABELS, rung_settings, LadderData
from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData, load_splits
from redthread.errors import RedthreadError
from redthread.models.kneser_ney import KneserNeyConfig, KneserNeyLM
from redthread.models.registry import build_model
from redthread.train.loop import TrainConfig, evaluate, train

BLOCK, BATCH, BPE_VOCAB = 64, 32, 16384
ORDERS = (1, 2, 3, 4)
NEURAL = ("mlp", "rnn", "lstm", "gru", "transformer")


def bits_per_char(ev: dict, split: TokenSplit) -> float:
    return ev["nll"] * ev["tokens"] / split.n_chars / math.log(2)


def count_model(source: LMData, vocab_size: int, order: int) -> KneserNeyLM:
    model = KneserNeyLM(KneserNeyConfig(vocab_size=vocab_size, block_size=BLOCK, order=order))
    for x, y in source.eval_batches("train", 1024, None):  # every training window once, as the ladder counts
        model.count(x, y)
    return model


def cut(split: TokenSplit, start: int, stop: int, name: str) -> TokenSplit:
    share = (stop - start) / len(split.tokens)
    return TokenSplit(np.asarray(split.tokens[start:stop]), round(split.n_chars * share), name)


def counts_rows(source: LMData, vocab_size: int, orders, say) -> tuple[list[dict], int, dict]:
    """Every order on validation; the n-gram baseline's order chosen on a development split of the training split."""
    train_split = source.split("train")
    c = int(len(train_split.tokens) * 0.9)
    dev = LMData(cut(train_split, 0, c, "train"), cut(train_split, c, len(train_split.tokens), "validation"), BLOCK)
    dev_nll, rows, models = {}, [], {}
    for n in orders:
        t0 = time.perf_counter()
        dev_nll[n] = evaluate(count_model(dev, vocab_size, n), dev, "val", batch_size=16)["nll"]
        model = count_model(source, vocab_size, n)
        ev = evaluate(model, source, "val", batch_size=16)
        row = {"model": f"Kneser–Ney {n}-gram" if n > 1 else "unigram counts", "rung": f"kn{n}", "params": model.num_params(),
               "dev_nll": dev_nll[n], "nll": ev["nll"], "bits_per_char": bits_per_char(ev, source.split("val")),
               "seconds": time.perf_counter() - t0}
        rows.append(row)
        models[row["rung"]] = model
        say(f"  {row['model']}: dev {dev_nll[n]:.4f}, val {ev['nll']:.4f} nats/token, {row['bits_per_char']:.4f} bits/字 "
            f"({row['seconds']:.0f} s)")
    chosen = min(dev_nll, key=dev_nll.get)
    return rows, chosen, models


def neural_row(rung: str, data: LadderData, minutes: float, seed: int, say) -> tuple[dict, torch.nn.Module]:
    fields, settings = rung_settings(rung, data)
    torch.manual_seed(seed)
    model = build_model(rung, **fields)
    lr = settings.get("lr", 1e-3)
    cfg = TrainConfig(max_iters=10**9, batch_size=BATCH, lr=lr, min_lr=lr / 10, weight_decay=settings.get("weight_decay", 0.1),
                      max_time=minutes * 60, eval_interval=1000, eval_batches=10, log_interval=1000, seed=seed, device="cpu")
    result = train(model, data.source, cfg, progress=False)
    ev = evaluate(model, data.source, "val", batch_size=64)
    train_ev = evaluate(model, data.source, "train", batch_size=64, max_batches=50)
    row = {"model": LABELS.get(rung, rung), "rung": rung, "params": model.num_params(), "steps": result.step,
           "seconds": result.elapsed, "nll": ev["nll"], "bits_per_char": bits_per_char(ev, data.source.split("val")),
           "train_nll_50_batches": train_ev["nll"], "evals": result.evals}
    say(f"  {row['model']}: {result.step} steps in {result.elapsed:.0f} s, val {ev['nll']:.4f} nats/token, "
        f"{row['bits_per_char']:.4f} bits/字 (train {train_ev['nll']:.4f} on 50 batches)")
    return row, model


@torch.no_grad()
def essay_example(model: torch.nn.Module, tokenizer) -> dict:
    """P(爱 | 我), P(恨 | 我) and the five likeliest characters after the one-character text 我."""
    model.eval()
    probs = model(torch.tensor([tokenizer.encode("我")])).float().softmax(-1)[0, -1]
    top = probs.topk(5)
    return {"爱": probs[tokenizer.encode("爱")[0]].item(), "恨": probs[tokenizer.encode("恨")[0]].item(),
            "top": [(tokenizer.decode([i]), p) for i, p in zip(top.indices.tolist(), top.values.tolist())]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", choices=("char", "bpe"), default="char")
    ap.add_argument("--data", default="tang", help="the corpus (default tang, the Complete Tang Poems; tang300 for a test)")
    ap.add_argument("--minutes", type=float, default=8.0, help="training minutes per gradient rung (default 8)")
    ap.add_argument("--rungs", default=",".join(NEURAL), help=f"gradient rungs (default {','.join(NEURAL)}; '' for none)")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--quick", action="store_true", help="a small slice and seconds per rung: a smoke test")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    rungs = [r for r in args.rungs.split(",") if r]
    for r in rungs:
        if r not in NEURAL:
            raise SystemExit(f"error: unknown rung {r!r}; choose from {', '.join(NEURAL)}")
    if not args.minutes > 0:
        raise SystemExit(f"error: --minutes must be > 0, got {args.minutes}")
    t0 = time.perf_counter()
    try:
        train_split, val_split, tokenizer = load_splits(args.data, args.tokenizer, BPE_VOCAB if args.tokenizer == "bpe" else None)
    except RedthreadError as e:
        raise SystemExit(f"error: {e}") from None
    if args.quick:
        train_split = cut(train_split, 0, min(60_000, len(train_split.tokens)), "train")
        val_split = cut(val_split, 0, min(8_000, len(val_split.tokens)), "validation")
    source = LMData(train_split, val_split, BLOCK)
    data = LadderData(f"{args.data} ({args.tokenizer})", source, tokenizer.vocab_size, BLOCK, tokenizer)
    ratio = len(val_split.tokens) / val_split.n_chars
    print(f"{args.data}, {args.tokenizer}: vocabulary {tokenizer.vocab_size:,}; train {len(train_split.tokens):,} "
          f"tokens, validation {len(val_split.tokens):,} tokens for {val_split.n_chars:,} characters ({ratio:.4f} tokens/字)")
    print("counts (Kneser–Ney, interpolated):")
    rows, chosen, models = counts_rows(source, tokenizer.vocab_size, ORDERS, print)
    print(f"  the n-gram baseline: order {chosen}, chosen on the development split")
    minutes = 0.1 if args.quick else args.minutes
    print(f"gradient rungs, {minutes:g} minutes each, one thread:")
    for rung in rungs:
        row, models[rung] = neural_row(rung, data, minutes, args.seed, print)
        rows.append(row)
    example = {}
    if args.tokenizer == "char":
        print("the essay's example, after the one-character text 我:")
        for name, model in models.items():
            example[name] = essay_example(model, tokenizer)
            e = example[name]
            print(f"  {name}: P(爱|我) {e['爱']:.5f}, P(恨|我) {e['恨']:.5f}; "
                  + ", ".join(f"{c!r} {p:.3f}" for c, p in e["top"]))
    print("\n| model | stored numbers / parameters | steps | val nats/token | bits/字 |")
    print("|---|---|---|---|---|")
    for r in rows:
        mark = " (n-gram baseline)" if r["rung"] == f"kn{chosen}" else ""
        print(f"| {r['model']}{mark} | {r['params']:,} | {r.get('steps', '(counts)')} | {r['nll']:.4f} | {r['bits_per_char']:.4f} |")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.json:
        write_json(args.json, {"tokenizer": args.tokenizer, "vocab_size": tokenizer.vocab_size, "minutes": minutes,
                               "val_tokens": len(val_split.tokens), "val_chars": val_split.n_chars, "chosen_order": chosen,
                               "rows": rows, "essay_example": example, "seed": args.seed, "quick": args.quick})


if __name__ == "__main__":
    main()
