"""The ladder on names.txt against published figures, and the Transformer against a Bayes limit.

1. `redthread ladder` on `../shared/data/names.txt` (one name per line; the names are shuffled
   with a fixed seed and min(1000, 10%) held out as the test split, every test character and end
   token scored once), with its default budget (5000 steps of batch 32 per gradient rung).
   Reference test NLLs (nats/char): a well-known single-file implementation on two CPU cores,
   10,000 steps of batch 32: bigram 2.456, MLP (context 16, 69k parameters) 2.061; its author
   reports ~1.92 for its ~200K-parameter Transformer after long training.
   Targets: bigram <= 2.456, MLP <= 2.06, Transformer <= 1.92, the whole ladder <= 15 minutes.
2. An order-3 Markov chain over 16 symbols (`redthread ladder --data markov`'s source, with more
   training sequences): the Transformer's validation NLL against the exact Bayes limit on the
   same tokens. Target: within 0.02 nats/token.

    PYTHONPATH=src .venv/bin/python benchmarks/ladder_names.py [--quick] [--json PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from common import write_json

from redthread.commands.ladder import (
    Budget,
    format_table,
    load_lines_data,
    make_synthetic,
    run_ladder,
)

NAMES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "names.txt"
TARGETS = {"bigram": 2.456, "mlp": 2.06, "transformer": 1.92}
MINUTES = 15.0
MARKOV_GAP = 0.02


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few steps only (smoke test)")
    ap.add_argument("--names", default=str(NAMES), help="path of names.txt")
    ap.add_argument("--out", help="also write the names ladder report here")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--skip-markov", action="store_true")
    ap.add_argument("--skip-names", action="store_true")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    payload = {}
    if not args.skip_names:
        steps = 5 if args.quick else 5000
        data = load_lines_data(args.names)
        split = f"{data.source.n_sequences('train'):,} train / {data.source.n_sequences('val'):,} test names"
        print(f"\n1. names: {split}, vocabulary {data.vocab_size}; {steps} steps of batch 32 per gradient rung")
        t0 = time.perf_counter()
        results = run_ladder(data, ["unigram", "ngram", "bigram", "mlp", "rnn", "lstm", "gru", "transformer"],
                             Budget(steps=steps), Path(args.out) if args.out else None, progress=False)
        minutes = (time.perf_counter() - t0) / 60
        print()
        for line in format_table(results, data):
            print(line)
        by_rung = {r.rung: r for r in results}
        print(f"\n  whole ladder: {minutes:.1f} min  {'MET' if minutes <= MINUTES else 'MISSED'} (target <= {MINUTES:.0f} min)")
        for rung, ref in TARGETS.items():
            nll = by_rung[rung].nll
            print(f"  {rung:<12} test NLL {nll:.4f} vs reference {ref:.3f}: {nll / ref:.3f}x  "
                  f"{'MET' if nll <= ref else 'MISSED'} (target <= {ref})")
        payload["names"] = {"minutes": minutes, "rows": [r.row() for r in results], "targets": TARGETS}

    if not args.skip_markov:
        n_train, markov_steps = (200, 5) if args.quick else (32000, 3000)
        markov = make_synthetic("markov", n_train=n_train, n_val=1000, length=64)
        print(f"\n2. {markov.name}: {n_train:,} training sequences of 64; Transformer, {markov_steps} steps of batch 32")
        t0 = time.perf_counter()
        (r,) = run_ladder(markov, ["transformer"], Budget(steps=markov_steps), progress=False)
        gap = r.nll - markov.bayes_nll
        print(f"  Bayes limit {markov.bayes_nll:.4f}, Transformer {r.nll:.4f} nats/token: gap {gap:+.4f}  "
              f"{'MET' if gap <= MARKOV_GAP else 'MISSED'} (target <= {MARKOV_GAP}); {time.perf_counter() - t0:.0f} s")
        payload["markov"] = {"bayes_nll": markov.bayes_nll, "transformer_nll": r.nll, "gap": gap, "target": MARKOV_GAP}
    write_json(args.json, payload)


if __name__ == "__main__":
    main()
