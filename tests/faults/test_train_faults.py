"""Training under hostile input and failing disks: nothing saved is lost, every fault is one line.

Reproductions from the reliability issue, each failing on the code before it: --overwrite that
emptied the old run before checking its inputs, a diverging resume that saved NaN weights over a
good checkpoint, a torn metrics line that broke every later --resume, SIGTERM that saved nothing,
orphaned temporary files, a run killed before its first checkpoint that could not be rerun,
out-of-range hyperparameters, and full or read-only disks reported as tracebacks.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from safetensors import SafetensorError, safe_open

from tests.cli_helpers import train_tiny_run
from tests.faults.conftest import TINY_MODEL, TINY_TRAIN, assert_one_line_error, cli, cli_process, digest, folder_digest

ENOSPC_MESSAGE = 'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, corpus) -> Path:
    """A finished tiny run (12 steps, checkpoints at 6 and 12), copied per test by `old_run`."""
    return train_tiny_run(tmp_path_factory, corpus, "good")[0]


@pytest.fixture
def old_run(good_run, tmp_path) -> Path:
    import shutil

    out = tmp_path / "runs" / "old"
    shutil.copytree(good_run, out)
    (out / "notes.txt").write_text("the user's own file")
    return out


def _weights(path: Path) -> dict:
    with safe_open(str(path / "checkpoint.safetensors"), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys() if k.startswith("model.")}


# --- 1. --overwrite touches nothing until the new run is valid ------------------------------------


@pytest.mark.parametrize("bad", [
    ["--data", "/nonexistent"], ["--data", "EMPTY"], ["--lr", "-1"], ["--n-head", "3"], ["--d-model", "31"],
    ["--lr", "inf"], ["--weight-decay", "nan"], ["--beta1", "2"], ["--beta2", "nan"], ["--device", "meta"],
    ["--seed", str(2**70)], ["--grad-clip", "nan"],
], ids=lambda b: " ".join(b))
def test_overwrite_with_bad_input_keeps_the_old_run(old_run, corpus, tmp_path, bad):
    before = folder_digest(old_run)
    if "EMPTY" in bad:
        (tmp_path / "empty.txt").write_text("")
        bad = ["--data", tmp_path / "empty.txt"]
    code, _, err = cli("train", "--data", corpus, "--out", old_run, "--overwrite", *TINY_MODEL, *TINY_TRAIN, *bad)
    assert_one_line_error(code, err)
    assert folder_digest(old_run) == before
    assert sorted(p.name for p in old_run.parent.iterdir()) == ["old"]  # no staging folder left behind


def test_overwrite_that_diverges_before_saving_keeps_the_old_run(old_run, corpus):
    before = folder_digest(old_run)
    code, _, err = cli("train", "--data", corpus, "--out", old_run, "--overwrite", *TINY_MODEL, *TINY_TRAIN,
                       "--lr", "1e6", "--min-lr", "0")
    assert_one_line_error(code, err, "diverged", "learning rate")
    assert folder_digest(old_run) == before


def test_overwrite_swaps_the_new_run_in_after_its_first_checkpoint(old_run, corpus):
    old_weights = _weights(old_run)
    code, _, err = cli("train", "--data", corpus, "--out", old_run, "--overwrite", *TINY_MODEL, *TINY_TRAIN, "--seed", "7")
    assert code == 0, err
    assert not all((old_weights[k] == v).all() for k, v in _weights(old_run).items())
    assert (old_run / "notes.txt").read_text() == "the user's own file"  # not a run file: carried over
    assert sorted(p.name for p in old_run.parent.iterdir()) == ["old"]


def test_a_swap_killed_between_its_renames_is_finished_by_the_next_start(old_run, good_run, tmp_path):
    """publish() renames out -> .out.replaced, then .out.overwrite -> out: kill it in between."""
    import shutil

    from redthread.train.run_folder import RunFolder

    staging, replaced = old_run.parent / ".old.overwrite", old_run.parent / ".old.replaced"
    shutil.copytree(good_run, staging)
    os.replace(old_run, replaced)  # the state after the first rename
    folder = RunFolder(old_run, resume=True)
    assert folder.out.is_dir() and (old_run / "checkpoint.safetensors").is_file()
    assert (old_run / "notes.txt").is_file() and not staging.exists() and not replaced.exists()


def test_a_replacing_run_killed_before_saving_leaves_the_old_run(old_run):
    from redthread.train.run_folder import RunFolder

    staging = old_run.parent / ".old.overwrite"
    staging.mkdir()
    (staging / "metrics.jsonl").write_text('{"step": 1, "loss": 3.0}\n')
    before = folder_digest(old_run)
    RunFolder(old_run, resume=True)
    assert folder_digest(old_run) == before and not staging.exists()


# --- 2. the divergence guard -----------------------------------------------------------------------


def test_diverging_resume_keeps_the_good_checkpoint(old_run):
    before = digest(old_run / "checkpoint.safetensors")
    code, out, err = cli("train", "--out", old_run, "--resume", "--max-iters", "40", "--lr", "1e6", "--min-lr", "0")
    assert_one_line_error(code, err, "diverged at step", "1e+06", "step 12")
    assert digest(old_run / "checkpoint.safetensors") == before
    assert "nan" not in out


@pytest.mark.parametrize("flag,value", [("lr", "inf"), ("min-lr", "nan"), ("weight-decay", "nan"), ("beta1", "2"),
                                        ("beta2", "nan"), ("beta2", "1"), ("grad-clip", "nan"), ("max-time", "inf"),
                                        ("seed", "-1"), ("warmup-iters", "-5")])
def test_out_of_range_hyperparameters_are_refused_up_front(tmp_path, corpus, flag, value):
    code, out, err = cli("train", "--data", corpus, "--out", tmp_path / "r", *TINY_MODEL, *TINY_TRAIN, f"--{flag}", value)
    assert_one_line_error(code, err, flag.replace("-", "_"))
    assert not (tmp_path / "r" / "checkpoint.safetensors").exists() and "model:" not in out  # nothing built


def test_library_train_never_saves_non_finite_weights(tmp_path):
    import torch

    import redthread as rt
    from redthread.errors import RedthreadError
    from redthread.train.loop import TrainConfig, train

    class Data:
        def batch(self, split, batch_size, generator):
            x = torch.randint(0, 8, (batch_size, 8), generator=generator)
            return x, x

        def eval_batches(self, split, batch_size, max_batches=None):
            yield self.batch(split, batch_size, torch.Generator().manual_seed(0))

        def tokens_per_char(self, split):
            return None

    model = rt.TransformerLM(rt.TransformerConfig(vocab_size=8, block_size=8, n_layer=1, n_head=2, d_model=16))
    with torch.no_grad():
        model.lm_head.weight[0, 0] = float("nan")  # a poisoned weight: the first loss is NaN
    cfg = TrainConfig(max_iters=4, batch_size=2, eval_interval=2, log_interval=100, device="cpu", grad_clip=0.0)
    with pytest.raises(RedthreadError, match="diverged at step 1"):
        train(model, Data(), cfg, run_dir=tmp_path / "r", progress=False)
    assert not (tmp_path / "r" / "checkpoint.safetensors").exists()


# --- 3. metrics that survive faults ----------------------------------------------------------------


def test_torn_metrics_line_is_dropped_on_resume(old_run):
    with open(old_run / "metrics.jsonl", "a") as f:
        f.write('{"step": 13, "lo')  # a crash or a full disk mid-append
    code, out, err = cli("train", "--out", old_run, "--resume", "--max-iters", "18")
    assert code == 0, err
    assert "dropped its last line" in out
    rows = [json.loads(line) for line in (old_run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 18


@pytest.mark.parametrize("garbage", [os.urandom(64) + b"\xff", b'{"step": 3}\nnot json\n{"step": 4}\n'], ids=["bytes", "middle"])
def test_unreadable_metrics_is_one_line_naming_the_file(old_run, garbage):
    with open(old_run / "metrics.jsonl", "ab") as f:
        f.write(garbage)
    before = digest(old_run / "checkpoint.safetensors")
    code, _, err = cli("train", "--out", old_run, "--resume", "--max-iters", "18")
    assert_one_line_error(code, err, "metrics.jsonl")
    assert digest(old_run / "checkpoint.safetensors") == before


def test_full_disk_during_a_metrics_append_then_resume(old_run, monkeypatch):
    """A write that stops half-way with ENOSPC: a one-line error, and the next --resume works."""
    import builtins

    from redthread.train import loop

    class FullDisk:
        def __init__(self, f):
            self.f = f

        def write(self, text):
            self.f.write(text[: len(text) // 2])
            self.f.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def failing_open(path, mode="r", *args, **kw):
        f = builtins.open(path, mode, *args, **kw)
        return FullDisk(f) if str(path).endswith("metrics.jsonl") and "a" in mode else f

    monkeypatch.setattr(loop, "open", failing_open, raising=False)
    code, _, err = cli("train", "--out", old_run, "--resume", "--max-iters", "18")
    assert_one_line_error(code, err, "metrics.jsonl", "No space left on device")
    monkeypatch.undo()
    code, out, err = cli("train", "--out", old_run, "--resume", "--max-iters", "18")
    assert code == 0, err
    assert "dropped its last line" in out


# --- 6. full and read-only disks, SIGTERM, temporary files, interrupted first runs -----------------


def test_full_disk_during_a_checkpoint_save_keeps_the_last_one(old_run, monkeypatch):
    from redthread.train import checkpoint

    real, calls = checkpoint.save_file, []

    def fill_disk(tensors, path, metadata=None):
        calls.append(path)
        Path(path).write_bytes(b"\0" * 100)  # part of the file, then the disk is full
        raise SafetensorError(ENOSPC_MESSAGE)

    monkeypatch.setattr(checkpoint, "save_file", fill_disk)
    before = digest(old_run / "checkpoint.safetensors")
    code, _, err = cli("train", "--out", old_run, "--resume", "--max-iters", "18")
    assert_one_line_error(code, err, "checkpoint.safetensors", "No space left on device", "step 12")
    assert calls and digest(old_run / "checkpoint.safetensors") == before
    assert not list(old_run.glob(".*.tmp"))
    monkeypatch.setattr(checkpoint, "save_file", real)


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a small tmpfs (needs root and mount rights; skipped where the machine gives neither)."""
    mounts = []

    def mount(name: str, size: str = "4m", read_only: bool = False) -> Path:
        where = tmp_path / name
        where.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
        mounts.append(where)
        return where

    yield mount
    for where in mounts:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.mark.slow  # mounts a tmpfs
def test_read_only_output_is_refused_before_compute(tmpfs, corpus, good_run):
    ro = tmpfs("ro", read_only=True)
    code, out, err = cli("train", "--data", corpus, "--out", ro / "run", *TINY_MODEL, *TINY_TRAIN)
    assert_one_line_error(code, err, "Read-only file system")
    assert "model:" not in out
    code, _, err = cli("export", "--checkpoint", good_run, "--out", ro / "gpt2")
    assert_one_line_error(code, err, "Read-only file system")
    code, _, err = cli("attention", "--checkpoint", good_run, "--text", "to be", "--out", ro / "a.html")
    assert_one_line_error(code, err, "Read-only file system")
    code, _, err = cli("ladder", "--data", corpus, "--rungs", "unigram", "--out", ro / "ladder", "--no-progress")
    assert_one_line_error(code, err, "Read-only file system")
    t0 = time.perf_counter()
    code, _, err = cli("experiment", "regression", "--quick", "--out", ro / "xp", "--no-progress")
    assert_one_line_error(code, err, "Read-only file system")
    assert time.perf_counter() - t0 < 10  # refused before the experiment runs


@pytest.mark.slow  # mounts a tmpfs
def test_full_disk_is_refused_before_compute(tmpfs, corpus):
    small = tmpfs("small", size="1m")
    (small / "filler").write_bytes(b"\0" * (1024 * 1024 - 64 * 1024))
    code, _, err = cli("train", "--data", corpus, "--out", small / "run", *TINY_MODEL, *TINY_TRAIN, "--d-model", "64")
    assert_one_line_error(code, err, "disk")


@pytest.mark.slow  # a child process
def test_sigterm_saves_like_sigint(tmp_path, corpus):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [os.sys.executable, "-m", "redthread", "train", "--data", str(corpus), "--out", str(out), *TINY_MODEL,
         "--max-iters", "1000000", "--eval-interval", "20", "--eval-batches", "1", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    for line in proc.stdout:  # wait until the loop runs (its first evaluation)
        if line.startswith("step 20:"):
            break
    proc.send_signal(signal.SIGTERM)
    out_text, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "checkpoint saved at step" in out_text and "Traceback" not in err
    code, _, err = cli("train", "--out", out, "--resume", "--max-iters", "1", "--no-progress")  # already past: loads, stops
    assert (out / "checkpoint.safetensors").is_file()


def test_orphaned_temporary_files_are_removed_on_the_next_start(old_run):
    orphans = [old_run / ".checkpoint.safetensors.x1y2.tmp", old_run / ".metrics.jsonl.abc.tmp"]
    for p in orphans:
        p.write_bytes(b"\0" * 10)
    code, _, err = cli("train", "--out", old_run, "--resume", "--max-iters", "14")
    assert code == 0, err
    assert not any(p.exists() for p in orphans)


def test_a_run_killed_before_its_first_checkpoint_can_be_rerun(tmp_path, corpus):
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"step": 3, "loss": 4.0}\n')  # what such a run leaves
    (out / "loss.png").write_bytes(b"")
    code, _, err = cli("train", "--data", corpus, "--out", out, *TINY_MODEL, *TINY_TRAIN)
    assert code == 0, err
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(r.get("loss") != 4.0 for r in rows) and rows[-1]["step"] == 12


def test_a_truncated_token_cache_is_rebuilt_not_used(tmp_path, corpus, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("REDTHREAD_CACHE", str(cache))
    code, first, err = cli("eval", "--checkpoint", _tiny_run(tmp_path, corpus), "--data", corpus)
    assert code == 0, err
    for f in cache.glob("*.bin"):  # cut every cache file short by a whole number of ids
        f.write_bytes(f.read_bytes()[:-8])
    code, again, err = cli("eval", "--checkpoint", tmp_path / "run", "--data", corpus)
    assert code == 0, err
    assert again == first  # the same tokens scored: the cache was rebuilt


def _tiny_run(tmp_path: Path, corpus: Path) -> Path:
    code, _, err = cli("train", "--data", corpus, "--out", tmp_path / "run", *TINY_MODEL, *TINY_TRAIN)
    assert code == 0, err
    return tmp_path / "run"


@pytest.mark.parametrize("args,needle", [
    (["train", "--task", "vit-digits", "--upscale", "3"], "upscale"),
    (["ladder", "--images", "digits", "--upscale", "3"], "upscale"),
    (["sample", "--checkpoint", "x", "--seed", str(2**70)], "seed"),
    (["experiment", "regression", "--seed", "-1"], "seed"),
])
def test_bad_flag_values_are_one_line(args, needle):
    code, _, err = cli(*args)
    assert_one_line_error(code, err, needle)


@pytest.mark.slow  # a child process
def test_console_script_bad_input_has_no_traceback(tmp_path):
    proc = cli_process("train", "--out", tmp_path / "r", "--data", tmp_path / "missing.txt", timeout=120)
    assert_one_line_error(proc.returncode, proc.stderr, "missing.txt")
