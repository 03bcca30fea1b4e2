"""Property-based fuzz of the command line: whatever the flags, no traceback.

Every flag of `train`, `sample` and `eval` gets hostile values (zero, negatives, 2**63, 2**70,
1e308, nan, inf, tiny floats, text where a number goes, NUL bytes, empty strings), ordinary ones
and random text, in random combinations. The property: the command finishes (exit 0) or says what is wrong in one line on
stderr with a non-zero exit; no exception escapes `main`. The training budget (max_iters,
max_time, eval and log intervals; and no --compile, which builds kernels for a minute) is fixed small so that a combination that is valid finishes in
a second; every other flag is fair game, including sizes that would not fit in memory.

The fast tier tries forty combinations per command; the `slow` tests (in the full run) try 600 more for train and
sample. Each test also checks that some combinations got past the checks and ran to exit 0.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.conftest import TINY_MODEL, cli

HOSTILE = ["0", "-1", "1", "2", "3", "7", str(2**31), str(2**63), str(2**70), str(-(2**63) - 1), "1e308", "-1e308",
           "nan", "inf", "-inf", "1e-308", "0.5", "1.5", "abc", "", "\x00", "1\x00", "٣", "true", "false", "none"]

TRAIN_FLAGS = ["n-layer", "n-head", "d-model", "d-ff", "dropout", "bias", "norm", "pos", "activation", "tie-weights",
               "scale-attention", "norm-eps", "embed-norm", "type-vocab-size", "block-size", "batch-size", "lr",
               "min-lr", "warmup-iters", "weight-decay", "beta1", "beta2", "grad-clip", "grad-accum", "eval-batches",
               "seed", "device", "precision", "activation-checkpointing", "peak-flops", "tokenizer",
               "vocab-size"]
SAMPLE_FLAGS = ["prompt", "max-new-tokens", "temperature", "top-k", "top-p", "min-p", "repetition-penalty",
                "num-samples", "seed", "unknown", "device"]
EVAL_FLAGS = ["split", "device"]

# values a flag may well take, so that combinations also get past the checks and run
BENIGN = ["1", "2", "4", "0.1", "0.01", "0.9", "pre", "post", "rope", "learned", "none", "relu", "gelu", "cpu",
          "auto", "fp32", "bf16", "char", "bpe", "replace", "error", "val", "train", "true", "false", "to be"]


def flags(names: list[str]):
    """A random subset of `names`, each with a hostile or an ordinary value: a flat argv list."""
    pair = st.tuples(st.sampled_from(names), st.sampled_from(HOSTILE) | st.sampled_from(BENIGN) | st.text(max_size=8))
    return st.lists(pair, max_size=6, unique_by=lambda p: p[0]).map(lambda ps: [a for n, v in ps for a in (f"--{n}", v)])


def check(code, err: str) -> bool:
    """The property for one combination; True when it ran to exit 0."""
    assert code is not None and "Traceback" not in err, err
    if code != 0:
        lines = [line for line in err.strip().splitlines() if line.strip()]
        assert len(lines) == 1 and "error" in lines[0], err
    return code == 0


def fuzz(budget: settings, names: list[str], one) -> None:
    """Runs `one(argv)` (True when the command ran to exit 0) on `budget`'s combinations of `names`, then checks
    that every combination was tried and that some got past the checks and ran, not only the refusals."""
    tried, succeeded = [], []

    @budget
    @given(argv=flags(names))
    def each(argv):
        tried.append(argv)
        succeeded.append(one(argv))

    each()
    assert len(tried) >= budget.max_examples
    assert any(succeeded), f"none of {len(tried)} combinations ran to exit 0: the fuzz only meets the checks"


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory, corpus) -> Path:
    out = tmp_path_factory.mktemp("fuzz") / "run"
    code, _, err = cli("train", "--data", corpus, "--out", out, *TINY_MODEL, "--max-iters", "4", "--eval-interval", "4",
                       "--eval-batches", "1", "--batch-size", "2", "--no-progress")
    assert code == 0, err
    return out


BUDGET = ["--max-iters", "2", "--eval-interval", "2", "--eval-batches", "1", "--log-interval", "1", "--no-progress"]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))


def _train(corpus, argv) -> bool:
    folder = tempfile.mkdtemp()
    try:
        return check(*cli("train", "--data", corpus, "--out", Path(folder) / "r", *TINY_MODEL, *argv, *BUDGET)[::2])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sample(run, argv) -> bool:
    if "--max-new-tokens" in argv:  # a valid long generation runs for minutes without fault: keep counts small
        i = argv.index("--max-new-tokens") + 1
        if argv[i].strip().isdigit() and int(argv[i]) > 8:
            argv[i] = "3"
    return check(*cli("sample", "--checkpoint", run, "--max-new-tokens", "4", *argv)[::2])


def _eval(run, argv) -> bool:
    return check(*cli("eval", "--checkpoint", run, *argv)[::2])


def test_train_flags_never_traceback(corpus):
    fuzz(FUZZ, TRAIN_FLAGS, lambda argv: _train(corpus, argv))


def test_sample_flags_never_traceback(fuzz_run):
    fuzz(FUZZ, SAMPLE_FLAGS, lambda argv: _sample(fuzz_run, argv))


def test_eval_flags_never_traceback(fuzz_run):
    fuzz(FUZZ, EVAL_FLAGS, lambda argv: _eval(fuzz_run, argv))


@pytest.mark.slow
@pytest.mark.campaign
def test_train_flags_never_traceback_long(corpus):
    fuzz(LONG, TRAIN_FLAGS, lambda argv: _train(corpus, argv))


@pytest.mark.slow
@pytest.mark.campaign
def test_sample_flags_never_traceback_long(fuzz_run):
    fuzz(LONG, SAMPLE_FLAGS, lambda argv: _sample(fuzz_run, argv))
