"""The ladder on names.txt against makemore, and the Transformer against a Bayes limit.

1. `redthread ladder` on `names.txt` (shipped: `--lines names`) (one name per line) on makemore's own test
   split: `torch.randperm` seeded 3407, the LAST 1,000 names held out (makemore.py's
   `create_datasets`), every test character and end token scored once, with the ladder's budget
   (5000 steps of batch 32 per gradient rung). Each rung that makemore also has runs twice: at
   redthread's default size and at makemore's (MLP: context 16, 64-d embeddings, 64 hidden
   units, 69,147 parameters; Transformer: 4 layers, 4 heads, 64 channels, untied output,
   ~204.5k parameters; the bigram is 27 x 27 in both), with the same training recipe.
   Reference test NLLs (nats/char), makemore on the same split: bigram 2.456 and MLP 2.061
   measured with makemore.py on two CPU cores (10,000 steps of batch 32); Transformer ~1.92, the
   figure its README gives for the default 204k model after long training. makemore's own
   test loss is a mean over 11 random batches of 100 names, not every name once.
   Targets: bigram <= 2.456, MLP <= 2.061, Transformer <= 1.92, the whole ladder <= 15 minutes.
2. An order-3 Markov chain over 16 symbols (`redthread ladder --data markov`'s source, with more
   training sequences): the Transformer's validation NLL against the exact Bayes limit on the
   same tokens. Target: within 0.02 nats/token.

    PYTHONPATH=src .venv/bin/python benchmarks/ladder_names.py [--quick] [--rungs R,...] [--json PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from common import write_json

from redthread.commands.ladder import (
    Budget,
    LadderData,
    format_table,
    load_lines_data,
    make_synthetic,
    parse_rungs,
    run_ladder,
    rung_settings,
)
from redthread.data import text_path
from redthread.models.registry import build_model
from redthread.train.loop import TrainConfig, evaluate, train

NAMES = text_path("names")
TARGETS = {"bigram": 2.456, "mlp": 2.061, "transformer": 1.92}  # makemore's test NLL on the same split
# makemore's model sizes (makemore.py defaults: n_embd 64, n_embd2 64, 4 layers, 4 heads, block 16)
MAKEMORE_SIZES = {
    "mlp": {"context": 16, "d_embed": 64, "d_hidden": 64},
    "transformer": {"n_layer": 4, "n_head": 4, "d_model": 64, "tie_weights": False},
}
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
    ap.add_argument("--rungs", help="names ladder rungs at redthread's sizes, comma-separated (default: all)")
    ap.add_argument("--makemore-rungs", default=",".join(MAKEMORE_SIZES),
                    help="rungs also trained at makemore's sizes, comma-separated ('' for none; default: %(default)s)")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    payload = {}
    if not args.skip_names:
        payload["names"] = names_ladder(args)

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


def names_ladder(args) -> dict:
    """The ladder at redthread's sizes, then makemore's rungs at makemore's sizes; prints both against makemore."""
    steps = 5 if args.quick else 5000
    data = load_lines_data(args.names)
    rungs = parse_rungs(args.rungs)
    split = f"{data.source.n_sequences('train'):,} train / {data.source.n_sequences('val'):,} test names"
    print(f"\n1. names: {split} (makemore's split), vocabulary {data.vocab_size}; "
          f"{steps} steps of batch 32 per gradient rung")
    t0 = time.perf_counter()
    results = run_ladder(data, rungs, Budget(steps=steps), Path(args.out) if args.out else None, progress=False)
    minutes = (time.perf_counter() - t0) / 60
    print()
    for line in format_table(results, data):
        print(line)
    print(f"\n  whole ladder ({len(rungs)} rungs): {minutes:.1f} min  "
          f"{'MET' if minutes <= MINUTES else 'MISSED'} (target <= {MINUTES:.0f} min)")
    by_size = {"redthread": {r.rung: (total_params(r.rung, data), r.nll) for r in results}}
    print("\n  makemore's rungs at makemore's sizes, the same training recipe:")
    by_size["makemore"] = {"bigram": by_size["redthread"]["bigram"]} if "bigram" in by_size["redthread"] else {}
    for rung in [r.strip() for r in args.makemore_rungs.split(",") if r.strip()]:
        if rung not in MAKEMORE_SIZES:
            raise SystemExit(f"no makemore size for rung {rung!r}; rungs: {', '.join(MAKEMORE_SIZES)}")
        params, nll, seconds = train_sized(rung, data, Budget(steps=steps), MAKEMORE_SIZES[rung])
        by_size["makemore"][rung] = (params, nll)
        print(f"  {rung:<12} {params:>9,} parameters  test NLL {nll:.4f}  ({seconds:.0f} s)")
    print("\n  against makemore (test NLL, nats/char; every parameter counted, embeddings too, as makemore counts):")
    for size, measured in by_size.items():
        for rung, ref in TARGETS.items():
            if rung in measured:
                params, nll = measured[rung]
                print(f"  {size + ' size':<15} {rung:<12} {params:>9,} params  {nll:.4f} vs makemore {ref:.3f}: "
                      f"{nll / ref:.3f}x  {'MET' if nll <= ref else 'MISSED'} (target <= {ref})")
    return {"minutes": minutes, "rows": [r.row() for r in results], "targets": TARGETS,
            "makemore_sizes": {rung: {"params": p, "nll": n} for rung, (p, n) in by_size["makemore"].items()}}


def train_sized(rung: str, data: LadderData, budget: Budget, sizes: dict, seed: int = 1337) -> tuple[int, float, float]:
    """One rung as `redthread ladder` trains it (settings, schedule, seed), with its size fields replaced.

    Returns (every parameter, test NLL with every test token scored once, training seconds).
    """
    fields, settings = rung_settings(rung, data)
    lr = settings.get("lr", 1e-3)
    torch.manual_seed(seed)
    model = build_model(rung, **{**fields, **sizes})
    cfg = TrainConfig(
        max_iters=budget.steps, batch_size=budget.batch_size * settings.get("batch_factor", 1), lr=lr, min_lr=lr / 10,
        weight_decay=settings.get("weight_decay", 0.1), warmup_iters=min(100, budget.steps // 10),
        eval_interval=max(1, budget.steps), eval_batches=10, log_interval=max(1, min(50, budget.steps // 20)), seed=seed,
    )
    result = train(model, data.source, cfg, progress=False)
    return _count(model), evaluate(model, data.source, "val", batch_size=64)["nll"], result.elapsed


def total_params(rung: str, data: LadderData, sizes: dict | None = None) -> int:
    """Every parameter of the rung's model, embeddings included (the ladder's table counts the
    Transformer without them); for count rungs, the ladder's own count."""
    fields, _ = rung_settings(rung, data)
    return _count(build_model(rung, **{**fields, **(sizes or {})}))


def _count(model) -> int:
    params = list(model.parameters())
    return sum(p.numel() for p in params) if params else model.num_params()


if __name__ == "__main__":
    main()
