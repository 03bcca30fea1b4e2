"""Images as sequences (claim C14): the ViT on digits beside the pixel rungs, and the captioner.

Two parts, each run through the same library functions as the command line:

1. `redthread ladder --images digits`: softmax regression, an MLP and the ViT on the same split,
   steps and batches; test accuracy and NLL. Target: the ViT >= 97% test accuracy trained in
   <= 3 minutes on two CPU cores.
2. `redthread train --task caption-shapes` (and caption-digits): exact match of greedy and top-p
   captions on held-out scenes, and the grounding score against the uniform baseline. Target:
   exact match >= 95% on caption-shapes, grounding well above uniform.

Everything runs on one torch thread (a tiny model on a shared two-core machine is fastest that
way; see docs/vision.md).

    PYTHONPATH=src .venv/bin/python benchmarks/vision.py [--quick] [--digits] [--json PATH]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from common import environment, write_json

from redthread.commands.captions import report_lines, train_captioner
from redthread.commands.images import run_image_ladder

VIT_ACCURACY, VIT_SECONDS = 0.97, 180.0
CAPTION_EXACT = 0.95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps of each: checks the script, not the targets")
    parser.add_argument("--digits", action="store_true", help="also caption-digits (two digits -> two number words)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    figures: dict = {"environment": environment(), "quick": args.quick}

    steps = 20 if args.quick else 1000
    print(f"== the image ladder on digits ({steps} steps of batch 64 per rung)")
    t0 = time.perf_counter()
    rungs = run_image_ladder("digits", steps=steps, batch_size=64, say=lambda s: print("  " + s))
    figures["ladder"] = [r.row() for r in rungs]
    vit = rungs[-1]
    met = vit.test_accuracy >= VIT_ACCURACY and vit.train_seconds <= VIT_SECONDS
    print(f"ViT: test accuracy {vit.test_accuracy:.4f} in {vit.train_seconds:.0f} s "
          f"(target >= {VIT_ACCURACY:.2f} in <= {VIT_SECONDS:.0f} s: {'met' if met else 'missed'}); "
          f"ladder {time.perf_counter() - t0:.0f} s")

    tasks = ["caption-shapes"] + (["caption-digits"] if args.digits else [])
    quick = {"max_iters": 10, "eval_interval": 10} if args.quick else {}
    for task in tasks:
        print(f"\n== {task}")
        with tempfile.TemporaryDirectory() as tmp:
            r = train_captioner(task, Path(tmp) / "run", train_fields={"device": "cpu", **quick},
                                scenes=500 if args.quick else None, log=lambda s: print("  " + s))
        for line in report_lines(r):
            print(line)
        if task == "caption-shapes":
            met = r["exact_match"] >= CAPTION_EXACT
            print(f"target: exact match >= {CAPTION_EXACT:.2f}: {'met' if met else 'missed'}; grounding "
                  f"{r['grounding'] / r['uniform_baseline']:.1f}x the uniform baseline ({r['train_seconds']:.0f} s of training)")
        figures[task] = r
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
