"""The kill campaign (issue 14): `redthread train` killed at random moments, resumed to the end,
finishes with exactly the weights of a run that was never interrupted.

A child process trains a tiny model that evaluates and saves every other step. Once it has built
its model it is killed at a moment drawn from a seeded RNG: soon after the start, a random delay
after an evaluation's log line (inside that checkpoint write or in the steps after it), or the
moment a checkpoint write is seen under way (its temporary file exists). Each time it is started
again: with --resume when a checkpoint exists, otherwise (killed before its first checkpoint) with
its first command again, which a folder without a checkpoint accepts without --overwrite. A run
that reaches its end is compared, and the campaign goes on in a new folder; the last run ends
untouched, after an orphaned temporary file is planted in its folder. Every run's final
checkpoint must hold the uninterrupted run's model and optimizer tensors bit for bit, at the same
step (metadata may differ), and no temporary file may be left. SIGKILL gives the process no
chance to clean up; SIGINT (Ctrl-C) and SIGTERM save the last completed step and exit 130 / 143.

Every test here spawns processes, so the module is slow (the full run, CI); its short cases make three SIGKILLs and
two SIGINTs, its long ones thirty SIGKILLs and ten of each stop signal. Each test prints one line saying how many kills the runs survived, and how many
landed inside a checkpoint write or before the first checkpoint.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from tests.faults.conftest import TINY_MODEL

pytestmark = pytest.mark.slow  # child processes, killed at random moments

FILENAME = "checkpoint.safetensors"
MAX_ITERS = 16
SETTINGS = [*TINY_MODEL, "--max-iters", str(MAX_ITERS), "--batch-size", "4", "--eval-interval", "2",
            "--eval-batches", "1", "--log-interval", "2", "--warmup-iters", "2", "--no-progress"]
STARTED = "model:"  # what `train` prints once the model is built, just before the loop starts
ENV = {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}  # the same threads in every run: the same sums
SEED = 14


class Training:
    """A `redthread train` child process, its output in a file that can be watched while it runs."""

    def __init__(self, args: list, log: Path):
        self.log = log
        with open(log, "w") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "redthread", "train", *map(str, args)],
                                            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **ENV})

    def output(self) -> str:
        return self.log.read_text()

    def wait_until_started(self, timeout: float = 180) -> bool:
        """True once the model is built (the loop is about to start); False if the process ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if STARTED in self.output():
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.01)
        raise TimeoutError(f"train did not start within {timeout:.0f} s:\n{self.output()}")

    def wait(self, timeout: float = 300) -> int:
        return self.process.wait(timeout=timeout)


def train_args(run: Path, corpus: Path, how: str) -> list:
    """The run's first command ("fresh"), or its continuation ("resume")."""
    if how == "resume":
        return ["--out", run, "--resume", "--no-progress"]
    return ["--data", corpus, "--out", run, *SETTINGS]


def next_start(run: Path) -> str:
    """--resume when the run has a checkpoint; a run killed before its first one is not a run yet:
    the same first command starts it again, without --overwrite (train/run_folder.py)."""
    return "resume" if (run / FILENAME).is_file() else "fresh"


def temporary_files(run: Path) -> list[str]:
    return sorted(p.name for p in run.glob(".*.tmp")) if run.is_dir() else []


def tensors_and_step(path: Path) -> tuple[dict[str, torch.Tensor], int]:
    """The model and optimizer tensors of a checkpoint, and its step (metadata may differ, tensors may not)."""
    with safe_open(str(path), framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys() if k.startswith(("model.", "optim."))}
        return tensors, int(f.metadata()["step"])


@dataclass
class Reference:
    tensors: dict[str, torch.Tensor]
    step: int


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpus) -> Reference:
    """The run never interrupted."""
    run = tmp_path_factory.mktemp("reference") / "run"
    training = Training(train_args(run, corpus, "fresh"), run.parent / "train.log")
    assert training.wait() == 0, training.output()
    tensors, step = tensors_and_step(run / FILENAME)
    assert step == MAX_ITERS
    return Reference(tensors, step)


@dataclass
class Campaign:
    """What the signals did: how many reached a live process, how many of those inside a checkpoint
    write or before the first checkpoint, and how many runs were taken to the end through them."""

    signal_name: str
    kills: int = 0
    during_writes: int = 0
    before_first_checkpoint: int = 0
    runs: int = 0

    def summary(self) -> str:
        return (f"kill campaign ({self.signal_name}, seed {SEED}): {self.kills} kill(s) survived, "
                f"{self.during_writes} inside a checkpoint write, {self.before_first_checkpoint} before the "
                f"first checkpoint; {self.runs} run(s) resumed to a bit-identical step-{MAX_ITERS} checkpoint")


def checkpoint_step(run: Path) -> int:
    return tensors_and_step(run / FILENAME)[1] if (run / FILENAME).is_file() else 0


def write_in_progress(run: Path) -> bool:
    try:
        return any(n.startswith(f".{FILENAME}.") and n.endswith(".tmp") for n in os.listdir(run))
    except FileNotFoundError:
        return False


def wait_for(training: Training, condition, poll: float = 0.005, timeout: float = 120) -> bool:
    """Poll until `condition()`; False if the process ended first or the time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and training.process.poll() is None:
        if condition():
            return True
        time.sleep(poll)
    return False


MOMENTS = ("soon after the start", "after an evaluation", "inside a checkpoint write")


def interrupt(training: Training, run: Path, saved: int, sig: signal.Signals, rng: random.Random) -> bool:
    """Send `sig` at a moment drawn from `rng`: soon after the model is built, a little after the log
    line of an evaluation still to come after step `saved` (while its checkpoint is written, or in
    the next steps), or the moment that evaluation's checkpoint write is seen under way. True if
    the signal reached a live process whose training loop had not yet logged its last step."""
    moment = rng.choice(MOMENTS)
    evaluations = range(saved + 2, MAX_ITERS, 2)  # the --eval-interval 2 steps still to come, but the last
    target = f"step {rng.choice(evaluations)}:" if evaluations else STARTED
    if not training.wait_until_started():
        return False
    if moment == "soon after the start":
        time.sleep(rng.uniform(0, 0.5))
    elif wait_for(training, lambda: target in training.output()):
        if moment == "after an evaluation":
            time.sleep(rng.uniform(0, 0.3))
        else:
            wait_for(training, lambda: write_in_progress(run), poll=0, timeout=10)  # the write lasts milliseconds
    if training.process.poll() is not None or f"step {MAX_ITERS}:" in training.output():
        return False  # the process has ended, or its loop has: a signal now would test nothing (a fast run gets here)
    training.process.send_signal(sig)
    return True


FINISHED = "validation (every token once)"  # what a run prints once its training and its final scoring are done
STOPPED = {signal.SIGINT: 130, signal.SIGTERM: 143}  # the exit codes of a stop that saves: 128 + the signal


def check_stopped_run(training: Training, sig: signal.Signals, code: int, run: Path) -> None:
    """After Ctrl-C or SIGTERM: exit 130 or 143, no traceback, and the checkpoint holds the step the
    message names, when it names one. Dying by the signal itself also counts: SIGTERM before the
    loop installs its handler, or a Ctrl-C that surfaced inside code Python ran for a C extension
    (CPython then exits by the signal, after the handler ran); a shell reports the same code."""
    output = training.output()
    assert code in (STOPPED[sig], -sig) and "Traceback" not in output, output
    saved = re.search(r"interrupted: checkpoint saved at step (\d+)", output)
    if saved:
        assert checkpoint_step(run) == int(saved.group(1)), output


def plant_orphan(run: Path) -> None:
    """What a kill inside a checkpoint write leaves, a partial temporary file, planted before the
    last start so that its cleanup is checked whatever the random kills hit."""
    partial = (run / FILENAME).read_bytes()[:1000] if (run / FILENAME).is_file() else b"\0" * 1000
    run.mkdir(parents=True, exist_ok=True)
    (run / f".{FILENAME}.planted.tmp").write_bytes(partial)


def run_campaign(folder: Path, corpus: Path, reference: Reference, sig: signal.Signals, kills: int) -> tuple[Campaign, Path]:
    """Start, interrupt with `sig`, start again, ... `kills` times; a run that reaches its end
    uninterrupted is checked and a new one started in a new folder. The last run ends (with an
    orphaned temporary file planted) untouched. Returns the campaign and the last run's folder."""
    rng = random.Random(SEED * 100 + int(sig))
    campaign, how, run = Campaign(sig.name), "fresh", folder / "run-0"
    while campaign.kills < kills:
        saved, writes_before = checkpoint_step(run), set(temporary_files(run))
        training = Training(train_args(run, corpus, how), folder / f"train-{campaign.kills}-{campaign.runs}.log")
        hit = interrupt(training, run, saved, sig, rng)
        code = training.wait()
        if hit and code == 0 and FINISHED in training.output():
            hit = False  # the signal reached a process already past its end (exiting): it tested nothing
        if not hit:  # the run reached its end before the signal
            assert code == 0, training.output()
            assert_bit_identical(run, reference)
            campaign.runs += 1
            how, run = "fresh", folder / f"run-{campaign.runs}"
            continue
        campaign.kills += 1
        campaign.during_writes += any(n.startswith(f".{FILENAME}.") for n in set(temporary_files(run)) - writes_before)
        campaign.before_first_checkpoint += not (run / FILENAME).is_file()
        if sig in STOPPED:
            check_stopped_run(training, sig, code, run)
        else:
            assert code == -signal.SIGKILL, training.output()
        how = next_start(run)
    plant_orphan(run)
    final = Training(train_args(run, corpus, how), folder / "train-final.log")
    assert final.wait() == 0, final.output()
    campaign.runs += 1
    return campaign, run


def assert_bit_identical(run: Path, reference: Reference) -> None:
    tensors, step = tensors_and_step(run / FILENAME)
    assert step == reference.step
    assert tensors.keys() == reference.tensors.keys()
    for name, t in reference.tensors.items():
        assert torch.equal(tensors[name], t), name


def report(capsys, campaign: Campaign) -> None:
    with capsys.disabled():
        print(f"\n{campaign.summary()}")




def assert_no_orphans(run: Path) -> None:
    """Every start removes the temporary files an interrupted write left (train/run_folder.py)."""
    assert temporary_files(run) == []


@pytest.mark.parametrize("kills", [3, pytest.param(30, marks=pytest.mark.campaign)])
def test_sigkill_at_random_moments_then_resume_is_bit_identical(tmp_path, corpus, reference, capsys, kills):
    campaign, run = run_campaign(tmp_path, corpus, reference, signal.SIGKILL, kills)
    assert_bit_identical(run, reference)
    report(capsys, campaign)
    assert_no_orphans(run)


@pytest.mark.parametrize("sig, kills", [
    (signal.SIGINT, 2),
    pytest.param(signal.SIGINT, 10, marks=pytest.mark.campaign),
    pytest.param(signal.SIGTERM, 10, marks=pytest.mark.campaign),
], ids=["SIGINT-2", "SIGINT-10", "SIGTERM-10"])
def test_stop_signal_at_random_moments_then_resume_is_bit_identical(tmp_path, corpus, reference, capsys, sig, kills):
    """Ctrl-C and SIGTERM save the last completed step and exit; resumed, the run ends as if never stopped."""
    campaign, run = run_campaign(tmp_path, corpus, reference, sig, kills)
    assert_bit_identical(run, reference)
    report(capsys, campaign)
