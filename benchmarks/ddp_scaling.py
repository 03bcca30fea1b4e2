"""Data-parallel scaling: training tokens/s with 1 and 2 CPU processes under DDP (gloo), one thread each.

Both settings run `redthread.train.loop.train` on the same model (CONFIG_A: 4 layers, d_model 128,
context 64) and random tokens, with the same per-process batch, so 2 processes train on twice the
tokens per step (weak scaling). Each process is started as torchrun would (WORLD_SIZE, RANK,
LOCAL_RANK, a rendezvous on 127.0.0.1) and runs on one torch thread. A short warm-up run comes
first; the figure is the loop's own tokens/s over all ranks, the median over rounds. One process
is the plain loop (WORLD_SIZE 1 switches DDP off), the baseline a user would otherwise run.

    efficiency = tokens/s with 2 processes / (2 x tokens/s with 1 process)

1.0 is perfect scaling; the all-reduce of the gradients every step, and on a shared machine any
other load on the second core, pull it below.

    PYTHONPATH=src .venv/bin/python benchmarks/ddp_scaling.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.multiprocessing as mp
from common import CONFIG_A, environment, make_redthread, median, spread, write_json

from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData
from redthread.train import distributed
from redthread.train.loop import TrainConfig, train


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, steps: int, batch_size: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    tokens = np.random.default_rng(0).integers(0, CONFIG_A.vocab_size, 50_000).astype(np.uint16)
    data = LMData(TokenSplit(tokens, len(tokens), "train"), TokenSplit(tokens[:5_000], 5_000, "validation"), CONFIG_A.block_size)
    torch.manual_seed(0)
    model = make_redthread(CONFIG_A)
    warm = TrainConfig(max_iters=2, batch_size=batch_size, eval_batches=1, device="cpu")
    train(model, data, warm, progress=False)
    cfg = TrainConfig(max_iters=steps, batch_size=batch_size, eval_interval=steps, eval_batches=1, log_interval=steps, device="cpu")
    result = train(model, data, cfg, progress=False)
    if rank == 0:
        Path(out).write_text(json.dumps({"tokens_per_s": result.tokens_per_s}))
    if world > 1:  # leave together: a rank that exits with the group alive can abort in gloo's threads at exit
        torch.distributed.barrier()
        distributed.shutdown()


def tokens_per_s(world: int, steps: int, batch_size: int, tries: int = 2) -> float:
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "figure.json")
        for attempt in range(1, tries + 1):
            try:  # the free port is only known free when asked: another process may take it before rank 0 listens
                mp.spawn(_rank, args=(world, _free_port(), steps, batch_size, out), nprocs=world, join=True)
                break
            except (mp.ProcessRaisedException, mp.ProcessExitedException) as e:
                if attempt == tries:
                    raise
                print(f"a process failed ({str(e).strip().splitlines()[-1]}); once more, on another port", file=sys.stderr)
        return json.loads(Path(out).read_text())["tokens_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few steps, one round (smoke test)")
    ap.add_argument("--steps", type=int, default=30, help="optimizer steps per measurement (default 30)")
    ap.add_argument("--batch-size", type=int, default=16, help="sequences per process per step (default 16)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = ap.parse_args()
    steps, rounds = (3, 1) if args.quick else (args.steps, args.rounds)

    figures = {1: [], 2: []}
    for _ in range(rounds):  # alternate the settings round by round: the machine is shared
        for world, rates in figures.items():
            rates.append(tokens_per_s(world, steps, args.batch_size))
    one, two = median(figures[1]), median(figures[2])
    efficiency = two / (2 * one)
    print(f"DDP scaling, gloo on CPU, one thread per process; model {CONFIG_A.name} ({CONFIG_A.n_layer} layers, "
          f"d_model {CONFIG_A.d_model}, context {CONFIG_A.block_size}), {args.batch_size} sequences per process per step")
    print(f"1 process:   {one:10,.0f} tokens/s  {spread(figures[1])}")
    print(f"2 processes: {two:10,.0f} tokens/s  {spread(figures[2])}")
    print(f"speed-up {two / one:.2f}x, efficiency {efficiency:.2f} (2 processes / (2 x 1 process))")
    write_json(args.json, {"environment": environment(), "tokens_per_s": {"1": one, "2": two},
                           "rounds": {str(k): v for k, v in figures.items()}, "efficiency": efficiency})


if __name__ == "__main__":
    main()
