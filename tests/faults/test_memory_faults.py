"""Bounded memory (issue 14): corpora are streamed, never held; paths that never end are refused;
every size that decides an allocation is checked against the memory there is, in one line, before
anything is allocated.

Children that a regression would let grow run under an address-space limit (`ulimit -v`, 4 GiB),
so a failure costs an error, not the machine; the limit is also the memory the checks see, which
makes the refusals the same on every machine. Children that a regression would hang run with a
timeout.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors import safe_open
from safetensors.torch import save_file

from .conftest import TINY_MODEL, TINY_TRAIN, assert_one_line_error, cli, cli_process

pytestmark = pytest.mark.slow  # child processes under memory ceilings

LIMIT = 4 * 2**30  # the address space a child may use: a regression fails in it instead of swallowing the machine
CPU = {"CUDA_VISIBLE_DEVICES": ""}  # a CUDA context reserves far more address space than LIMIT
RUN = ["--n-layer", "1", "--n-head", "2", "--d-model", "32", "--block-size", "32", "--device", "cpu", "--no-progress"]
LINE = ("First Citizen: Before we proceed any further, hear me speak — all: speak, speak. Ünïcödé 東京\n"
        "Second Citizen: One word, good citizens. We are accounted poor citizens, the patricians good.\n")


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def bounded(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI in a child process under the address-space limit, on the CPU."""
    return cli_process(*args, timeout=timeout, env=CPU, preexec_fn=limited)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, corpus) -> Path:
    out = tmp_path_factory.mktemp("runs") / "tiny"
    code, _, err = cli("train", "--data", corpus, "--out", out, *TINY_MODEL, *TINY_TRAIN, "--device", "cpu")
    assert code == 0, err
    return out


def edited_checkpoint(run: Path, folder: Path, **config) -> Path:
    """A copy of a run's checkpoint whose metadata claims `config`; the tensors are the tiny model's."""
    with safe_open(str(run / "checkpoint.safetensors"), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    meta["config"] = json.dumps({**json.loads(meta["config"]), **config})
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "checkpoint.safetensors"), metadata=meta)
    return folder


# -- paths that never end -------------------------------------------------------------------------------------


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "data.txt"
    os.mkfifo(fifo)  # opening it to read blocks until a writer comes: a regression hangs into the timeout
    for command in (["train", "--data", fifo, "--out", tmp_path / "run", *RUN, "--max-iters", "2"],
                    ["ladder", "--data", fifo, "--out", tmp_path / "ladder", "--rungs", "bigram", "--steps", "2"]):
        r = bounded(*command, timeout=60)
        assert_one_line_error(r.returncode, r.stderr, "FIFO", str(fifo))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused(tmp_path, device):
    r = bounded("train", "--data", device, "--out", tmp_path / "run", *RUN, "--max-iters", "2", timeout=60)
    assert_one_line_error(r.returncode, r.stderr, "character device", device)
    assert not (tmp_path / "run" / "checkpoint.safetensors").exists()


def test_eval_on_a_device_is_refused(tiny_run):
    r = bounded("eval", "--checkpoint", tiny_run, "--data", "/dev/zero", "--device", "cpu", timeout=60)
    assert_one_line_error(r.returncode, r.stderr, "character device")


# -- sizes that decide an allocation ------------------------------------------------------------------------


@pytest.mark.parametrize("flags, needle", [
    (["--batch-size", "100000000"], "batch_size=100000000"),
    (["--d-model", "1000000"], "d_model=1000000"),
    (["--n-layer", "1000000000"], "n_layer=1000000000"),
    (["--block-size", "1000000000000"], "block_size=1000000000000"),
])
def test_training_sizes_are_refused_before_allocating(tmp_path, corpus, flags, needle):
    r = bounded("train", "--data", corpus, "--out", tmp_path / "run", *RUN, "--max-iters", "2", *flags)
    assert_one_line_error(r.returncode, r.stderr, needle, "needs ~", "ulimit -v")
    assert not (tmp_path / "run" / "checkpoint.safetensors").exists()


@pytest.mark.parametrize("flags, needle", [
    (["--num-samples", "1000000"], "num_samples=1000000"),
    (["--max-new-tokens", "1000000000"], "max_new_tokens=1000000000"),
])
def test_sampling_sizes_are_refused_before_allocating(tiny_run, flags, needle):
    r = bounded("sample", "--checkpoint", tiny_run, "--device", "cpu", "--seed", "0", *flags)
    assert_one_line_error(r.returncode, r.stderr, needle, "to sample", "ulimit -v")
    assert r.stdout == ""  # refused before the first token


def test_sampling_a_few_sequences_still_works(tiny_run):
    code, out, err = cli("sample", "--checkpoint", tiny_run, "--device", "cpu", "--num-samples", "3", "--max-new-tokens", "20")
    assert code == 0 and out.count("--- sample") == 3, err


@pytest.mark.parametrize("config, needle", [
    ({"n_layer": 10**9}, "n_layer=1000000000"),
    ({"block_size": 10**12}, "block_size=1000000000000"),
    ({"vocab_size": 10**12}, "vocab_size=1000000000000"),
    ({"d_model": 10**12, "n_head": 1}, "d_model=1000000000000"),
])
def test_checkpoint_metadata_sizes_are_refused_before_building(tiny_run, tmp_path, config, needle):
    run = edited_checkpoint(tiny_run, tmp_path / "edited", **config)
    for command in (["sample", "--checkpoint", run, "--device", "cpu"], ["eval", "--checkpoint", run, "--device", "cpu"]):
        r = bounded(*command, timeout=60)
        assert_one_line_error(r.returncode, r.stderr, needle, "weights of a TransformerLM", str(run))


def test_bpe_vocab_size_is_bounded(tmp_path, corpus):
    r = bounded("train", "--data", corpus, "--out", tmp_path / "run", *RUN, "--tokenizer", "bpe",
                "--vocab-size", "1000000000", "--max-iters", "2", timeout=60)
    assert r.returncode == 1, r.stderr  # not 134: the Rust allocator used to abort the whole process
    assert_one_line_error(r.returncode, r.stderr, "1000000000", "1,048,576")


def test_vocab_size_with_the_char_tokenizer_is_refused(tmp_path, corpus):
    code, _, err = cli("train", "--data", corpus, "--out", tmp_path / "run", "--vocab-size", "500", *TINY_MODEL, *TINY_TRAIN)
    assert_one_line_error(code, err, "BPE setting", "--tokenizer bpe")


# -- memory that stays flat with the corpus ---------------------------------------------------------------


def write_corpus(path: Path, size: int) -> Path:
    block = (LINE * 2000).encode()
    with open(path, "wb") as f:
        for _ in range(max(1, size // len(block))):
            f.write(block)
    return path


def peak_rss(args: list, cache: Path, timeout: float) -> tuple[int, subprocess.CompletedProcess]:
    """Peak resident memory (bytes) of `redthread ARGS` run alone under a fresh parent, and the run."""
    wrapper = ("import resource, subprocess, sys; "
               "r = subprocess.run([sys.executable, '-m', 'redthread', *sys.argv[1:]]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)")
    env = {**os.environ, **CPU, "REDTHREAD_CACHE": str(cache), "PYTHONUNBUFFERED": "1"}
    r = subprocess.run([sys.executable, "-c", wrapper, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    return int(r.stderr.strip().splitlines()[-1]) * 1024, r


def train_args(data: Path, out: Path) -> list:
    # a context of 128 keeps the final pass over every validation token to few batches
    return ["train", "--data", data, "--out", out, "--n-layer", "1", "--n-head", "2", "--d-model", "16", "--block-size", "128",
            "--max-iters", "20", "--batch-size", "8", "--eval-interval", "1000", "--eval-batches", "2", "--device", "cpu",
            "--no-progress"]


def check_flat_memory(tmp_path: Path, size: int, timeout: float) -> tuple[int, int]:
    small = write_corpus(tmp_path / "small.txt", 1 << 20)
    big = write_corpus(tmp_path / "big.txt", size)
    try:
        base, r = peak_rss(train_args(small, tmp_path / "small-run"), tmp_path / "cache", timeout)
        assert r.returncode == 0, r.stderr
        peak, r = peak_rss(train_args(big, tmp_path / "big-run"), tmp_path / "cache", timeout)
        assert r.returncode == 0, r.stderr
        assert "bits/char" in r.stdout
    finally:
        big.unlink(missing_ok=True)
        for cached in (tmp_path / "cache").glob("*.bin"):
            cached.unlink()
    print(f"\npeak RSS training on {size / 1e6:,.0f} MB of text: {peak / 2**20:,.0f} MiB "
          f"({base / 2**20:,.0f} MiB on 1 MB)")  # shown with -s: the campaign's figure
    return base, peak


def test_training_on_a_large_file_keeps_memory_flat(tmp_path):
    """128 MB of text: reading it whole took ~17x its size (~2.2 GB); streamed, memory hardly moves."""
    base, peak = check_flat_memory(tmp_path, 128 * 10**6, timeout=900)
    assert peak < 2**30, (base, peak)
    assert peak - base < 256 * 2**20, (base, peak)


@pytest.mark.campaign
def test_training_on_a_2gb_file_stays_under_1gb(tmp_path):
    """The issue's figure: a 2 GB text file trains in under 1 GB. The final pass scores ~200 M validation tokens."""
    base, peak = check_flat_memory(tmp_path, 2 * 10**9, timeout=3 * 3600)
    assert peak < 2**30, (base, peak)
    assert peak - base < 256 * 2**20, (base, peak)
