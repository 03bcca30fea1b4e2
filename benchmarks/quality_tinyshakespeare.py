"""Quality on tiny-Shakespeare against the published nanoGPT figure, same protocol.

Protocol: `tinyshakespeare.txt` (shipped: `--data tinyshakespeare`), first 90% train, last
10% validation, character level (vocab 65); config (a) 4 layers, 4 heads, d_model 128,
context 64, batch 12; 2000 iterations, dropout 0, learning rate 1e-3 with 100 warm-up steps
and cosine decay to 1e-4. Positions: rotary (`pos="rope"`) by default here, since they are
what meets the target; `--pos sinusoidal` (the model's default, the paper's) and `--pos learned`
(the reference's) measure the others. The score is the NLL of the whole validation split, every character
scored once, in non-overlapping windows of 64 characters. The reference implementation
reaches 1.90 nats/char on that protocol (its own 20-batch estimate says 1.88). Target: <= 1.85.

    .venv/bin/python benchmarks/quality_tinyshakespeare.py [--pos rope|sinusoidal|learned] [--seeds 1337 1338]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from redthread.data import text_path
from redthread.train.language_model import train_language_model

REFERENCE_NATS = 1.90
TARGET_NATS = 1.85
MODEL = dict(n_layer=4, n_head=4, d_model=128, block_size=64, dropout=0.0)  # config (a)
TRAIN = dict(max_iters=2000, batch_size=12, lr=1e-3, min_lr=1e-4, warmup_iters=100,
             eval_interval=500, eval_batches=20, log_interval=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(text_path("tinyshakespeare")))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1337])
    parser.add_argument("--pos", choices=("rope", "sinusoidal", "learned", "none"), default="rope")
    parser.add_argument("--max-iters", type=int, default=2000, help="2000 is the protocol; fewer for a smoke run")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    results = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            run = train_language_model(Path(out) / "run", args.data, "char", None, {**MODEL, "pos": args.pos},
                                       {**TRAIN, "max_iters": args.max_iters, "seed": seed}, progress=False)
            elapsed = time.perf_counter() - t0
        results.append({"seed": seed, "val_nats_per_char": run.final["nll"], "val_bits_per_char": run.final["bpc"],
                        "scored_chars": run.final["tokens"], "seconds": elapsed})
        print(f"seed {seed}: {run.final['nll']:.4f} nats/char on the full validation split "
              f"({run.final['tokens']:,} characters), {run.final['bpc']:.4f} bits/char, {elapsed:.0f} s")
    mean = statistics.mean(r["val_nats_per_char"] for r in results)
    print(f"\nredthread (pos={args.pos}) {mean:.4f} nats/char (mean of {len(results)} seed(s)) | reference {REFERENCE_NATS:.2f} | "
          f"ratio {mean / REFERENCE_NATS:.3f} | target <= {TARGET_NATS:.2f}: {'met' if mean <= TARGET_NATS else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"pos": args.pos, "runs": results, "mean": mean, "reference": REFERENCE_NATS, "target": TARGET_NATS}, indent=2))


if __name__ == "__main__":
    main()
