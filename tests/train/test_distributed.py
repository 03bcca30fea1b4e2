"""Data-parallel training: 2 gloo processes on the CPU equal one process on the concatenated batches;
only rank 0 writes; resume under DDP continues as an uninterrupted DDP run."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from redthread.data.lm import LMData
from redthread.errors import RedthreadError
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.checkpoint import read_checkpoint
from redthread.train.loop import TrainConfig, read_metrics, train
from tests.train.test_loop import Interrupting, make_data

pytestmark = pytest.mark.slow  # DDP: processes that train together

WORLD = 2
MODEL = TransformerConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16, dropout=0.0)  # no per-rank dropout masks
CFG = TrainConfig(max_iters=6, batch_size=4, grad_accum=2, eval_interval=3, eval_batches=2, log_interval=3, warmup_iters=2)
# float32 sums in another order (gloo's average of two half-batch means vs one mean over the whole):
# gradients differ in the last bits, which AdamW's m / sqrt(v) can magnify where v is tiny; measured
# 4.4e-7 at most after six steps (lr 1e-3) that move the weights by 4e-3, so 1e-5 leaves a margin of 20
TOL = 1e-5


def fresh_model() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(MODEL)


class Concatenated(LMData):
    """One process seeing what WORLD ranks see: rank r's training windows (from seed + r), concatenated in rank order."""

    def __init__(self, base: LMData, seed: int):
        super().__init__(base.splits["train"], base.splits["val"], base.block_size)
        self.generators = [torch.Generator().manual_seed(seed + r) for r in range(WORLD)]

    def batch(self, split, batch_size, generator):
        if split != "train":
            return super().batch(split, batch_size, generator)
        xs, ys = zip(*(super(Concatenated, self).batch(split, batch_size // WORLD, g) for g in self.generators))
        return torch.cat(xs), torch.cat(ys)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, port: int, folder) -> None:
    """One torchrun-like process: a straight run in a/, an interrupted one in b/, then its resumption."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(WORLD), RANK=str(rank), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    straight = fresh_model()
    train(straight, make_data(), CFG, run_dir=folder / "a", progress=False)
    try:  # both ranks stop in step 5, after the step-3 checkpoint
        train(fresh_model(), Interrupting(make_data(), after=10), CFG, run_dir=folder / "b", progress=False)
    except KeyboardInterrupt:
        pass
    resumed = fresh_model()
    train(resumed, make_data(), CFG, run_dir=folder / "b", resume=True, progress=False)
    torch.save({"straight": straight.state_dict(), "resumed": resumed.state_dict()}, folder / f"rank{rank}.pt")


@pytest.fixture(scope="module")
def ddp_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    mp.spawn(_rank, args=(_free_port(), folder), nprocs=WORLD, join=True)
    return folder


def test_ddp_matches_one_process_on_the_concatenated_batches(ddp_runs, tmp_path):
    single = fresh_model()
    cfg = TrainConfig(**{**CFG.to_dict(), "batch_size": WORLD * CFG.batch_size})
    train(single, Concatenated(make_data(), CFG.seed), cfg, run_dir=tmp_path, progress=False)
    for r in range(WORLD):
        ddp = torch.load(ddp_runs / f"rank{r}.pt")["straight"]
        for name, p in single.state_dict().items():
            assert torch.allclose(ddp[name], p, rtol=0, atol=TOL), (r, name, (ddp[name] - p).abs().max().item())
    moved = max((ddp[n] - p).abs().max().item() for n, p in fresh_model().state_dict().items())
    assert moved > 100 * TOL  # the runs trained: the tolerance is not looser than the change it checks
    losses = [[r["loss"] for r in read_metrics(run / "metrics.jsonl") if "loss" in r] for run in (ddp_runs / "a", tmp_path)]
    assert losses[0] == pytest.approx(losses[1], rel=TOL)  # the logged loss is the whole step's, averaged over ranks


def test_ddp_only_rank_0_writes_and_saves_the_bare_model(ddp_runs):
    run = ddp_runs / "a"
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint.safetensors", "config.json", "loss.png", "metrics.jsonl"]
    steps = [r["step"] for r in read_metrics(run / "metrics.jsonl") if "loss" in r]
    assert steps == [3, 6]  # one writer: no row twice
    ckpt = read_checkpoint(run)  # no `module.` prefix: the single-process reader loads it
    straight = torch.load(ddp_runs / "rank0.pt")["straight"]
    for name, p in ckpt.model.state_dict().items():
        assert torch.equal(p, straight[name]), name
    assert int(ckpt.rng["world_size"]) == WORLD and "data.1" in ckpt.rng


def test_ddp_resume_reproduces_an_uninterrupted_ddp_run(ddp_runs):
    for r in range(WORLD):
        saved = torch.load(ddp_runs / f"rank{r}.pt")
        for name, p in saved["straight"].items():
            assert torch.equal(p, saved["resumed"][name]), (r, name)
    steps = [r["step"] for r in read_metrics(ddp_runs / "b" / "metrics.jsonl") if "loss" in r]
    assert steps == [3, 6]


def test_ddp_run_resumed_by_another_number_of_processes_is_refused(ddp_runs):
    with pytest.raises(RedthreadError, match="trained by 2 process"):
        train(fresh_model(), make_data(), CFG, run_dir=ddp_runs / "a", resume=True, progress=False)


def torchrun_train(tmp_path: Path, max_iters: int, *flags: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of `torchrun --nproc_per_node=2 -m redthread train` on a tiny run."""
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("to be, or not to be: that is the question.\n" * 60, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "REDTHREAD_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(root / "src")}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--rdzv-backend=c10d",
               f"--rdzv-endpoint=127.0.0.1:{_free_port()}", "-m", "redthread", "train", "--data", str(corpus),
               "--out", str(tmp_path / "run"), "--n-layer", "1", "--n-head", "2", "--d-model", "16", "--block-size", "16",
               "--max-iters", str(max_iters), "--batch-size", "4", "--eval-interval", "2", "--eval-batches", "2",
               "--log-interval", "2", "--device", "cpu", "--no-progress", *flags]
    return command, env


def workers_said(stderr: str) -> str:
    """What the workers wrote, before torchrun's own failure report (which fills the end of stderr)."""
    lines = [line for line in stderr.splitlines() if "torch/distributed/elastic" not in line]
    return "\n".join(lines)[:3000]


def test_torchrun_runs_the_train_command_line(tmp_path):
    """`torchrun --nproc_per_node=2 -m redthread train ...`: one report, one run folder a single process reads."""
    command, env = torchrun_train(tmp_path, 4)
    proc = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, workers_said(proc.stderr)
    assert proc.stdout.count("run folder:") == 1 and proc.stdout.count("step 4:") == 1, proc.stdout
    assert read_checkpoint(tmp_path / "run").step == 4


def test_torchrun_ctrl_c_saves_the_last_step_and_resume_continues(tmp_path):
    """Ctrl-C reaches torchrun, which signals every worker: the ranks finish the step, save it and stop."""
    command, env = torchrun_train(tmp_path, 100_000, "--eval-interval", "50")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    metrics = tmp_path / "run" / "metrics.jsonl"
    deadline = time.monotonic() + 90
    while not (metrics.is_file() and metrics.read_text().count("\n") >= 2) and time.monotonic() < deadline:
        time.sleep(0.2)  # training has logged steps 2 and 4: Ctrl-C lands mid-run, off an evaluation step
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    saved = re.findall(r"interrupted: checkpoint saved at step (\d+)", out + err)
    assert len(saved) == 1, out + err[-2000:]  # rank 0 reports, once
    step = int(saved[0])
    assert step >= 4 and read_checkpoint(tmp_path / "run").step == step
    command, env = torchrun_train(tmp_path, step + 2, "--resume")
    proc = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, workers_said(proc.stderr)
    assert read_checkpoint(tmp_path / "run").step == step + 2
