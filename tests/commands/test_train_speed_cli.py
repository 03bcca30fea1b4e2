"""`redthread train` with the speed and memory flags (--precision, --compile, --peak-flops,
--activation-checkpointing), and their bad values: one line each."""

from __future__ import annotations

import pytest

from redthread.cli import build_parser
from redthread.train.loop import read_metrics
from tests.cli_helpers import (  # the token cache: an autouse fixture of tests.cli_helpers
    TINY_MODEL,
    TINY_TRAIN,
    assert_one_line_error,
    cli,
)


def test_speed_flags_parse_bare_or_with_a_value():
    args = build_parser().parse_args(["train", "--compile", "--activation-checkpointing", "false", "--precision", "bf16",
                                      "--peak-flops", "1.5e12"])
    assert (args.compile, args.activation_checkpointing, args.precision, args.peak_flops) == (True, False, "bf16", 1.5e12)


def test_train_shows_mfu_against_the_given_peak_with_checkpointed_blocks(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("to be, or not to be: that is the question.\n" * 60, encoding="utf-8")
    out = tmp_path / "run"
    code, stdout, err = cli("train", "--data", text, "--out", out, *TINY_MODEL, *TINY_TRAIN,
                            "--activation-checkpointing", "--peak-flops", "1e9", "--precision", "fp32")
    assert code == 0, err
    assert "training on cpu: fp32, activation checkpointing" in stdout
    rows = [r for r in read_metrics(out / "metrics.jsonl") if "loss" in r]
    assert rows and all(r["mfu"] > 0 for r in rows)


@pytest.mark.parametrize("flags, needle", [
    (["--precision", "fp16"], "fp16 needs a CUDA GPU"),
    (["--precision", "fp8"], "precision must be one of auto, fp32, bf16, fp16"),
    (["--peak-flops", "-3"], "peak_flops must be a positive number"),
    (["--peak-flops", "lots"], "--peak-flops"),
    (["--compile", "maybe"], "expected true or false"),
])
def test_bad_speed_flags_are_one_line_errors(tmp_path, flags, needle):
    text = tmp_path / "text.txt"
    text.write_text("to be, or not to be: that is the question.\n" * 60, encoding="utf-8")
    code, _, err = cli("train", "--data", text, "--out", tmp_path / "run", *TINY_MODEL, *TINY_TRAIN, *flags)
    assert_one_line_error(code, err, needle)
