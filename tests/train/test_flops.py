"""MFU: the peak table matched on CUDA names, the override, the CPU measurement, and MFU in the
progress line and the metrics of a Transformer (tokens/s alone for a model that cannot count its FLOPs)."""

from __future__ import annotations

import math

import pytest
import torch

from redthread.models.mlp import MLPLM, MLPConfig
from redthread.train.flops import gpu_peak_flops, measure_cpu_peak_flops, peak_flops
from redthread.train.loop import TrainConfig, read_metrics, train

from .test_loop import fresh_model, make_data


@pytest.mark.parametrize("name, precision, tflops", [
    ("NVIDIA H100 80GB HBM3", "bf16", 989),  # SXM
    ("NVIDIA H100 PCIe", "bf16", 756),
    ("NVIDIA H100 NVL", "fp16", 835),
    ("NVIDIA H200", "bf16", 989),
    ("NVIDIA GH200 480GB", "bf16", 989),
    ("NVIDIA A100-SXM4-80GB", "bf16", 312),
    ("NVIDIA A100 80GB PCIe", "fp32", 156),  # fp32 matmuls run as TF32 on Ampere+
    ("NVIDIA A10", "bf16", 125),
    ("NVIDIA L4", "bf16", 121),
    ("NVIDIA L40S", "bf16", 362),
    ("NVIDIA GeForce RTX 4090", "bf16", 165),
    ("NVIDIA GeForce RTX 3090", "fp16", 71),
    ("Tesla V100-SXM2-16GB", "fp16", 125),
    ("Tesla V100-PCIE-32GB", "fp32", 14),
    ("Tesla T4", "fp16", 65),
])
def test_gpu_peak_table_matches_cuda_device_names(name, precision, tflops):
    assert gpu_peak_flops(name, precision) == pytest.approx(tflops * 1e12)


@pytest.mark.parametrize("name, precision", [
    ("NVIDIA A10G", "bf16"),  # not an A10 (nor an A100): unknown rather than wrong
    ("Tesla T4", "bf16"),  # Turing has no bf16 tensor cores
    ("Some Future GPU", "bf16"),
])
def test_gpu_peak_table_says_nothing_it_does_not_know(name, precision):
    assert gpu_peak_flops(name, precision) is None


def test_peak_override_wins_and_unknown_cards_say_why(monkeypatch):
    assert peak_flops(torch.device("cpu"), "fp32", 1e12) == (1e12, "--peak-flops")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA Mystery 9000")
    peak, why = peak_flops(torch.device("cuda"), "bf16")
    assert peak is None and "Mystery 9000" in why and "--peak-flops" in why
    assert peak_flops(torch.device("cuda"), "bf16", 5e14) == (5e14, "--peak-flops")


def test_cpu_peak_is_measured_once_and_is_a_positive_rate():
    peak = measure_cpu_peak_flops()
    assert math.isfinite(peak) and 1e8 < peak < 1e15
    assert measure_cpu_peak_flops() == peak  # cached: the loop pays the ~0.5 s once per process


class Lines:
    def __init__(self):
        self.lines = []

    def update(self, step, info):
        self.lines.append(info)


def test_progress_and_metrics_show_mfu_for_a_transformer(tmp_path):
    model, bar = fresh_model(), Lines()
    cfg = TrainConfig(max_iters=4, batch_size=4, eval_interval=4, eval_batches=1, log_interval=2, peak_flops=1e9)
    train(model, make_data(), cfg, run_dir=tmp_path, progress=bar)
    assert all("tok/s" in line and "MFU" in line for line in bar.lines)
    rows = [r for r in read_metrics(tmp_path / "metrics.jsonl") if "loss" in r]
    T = model.cfg.block_size  # the loop's windows fill the context
    for r in rows:
        assert r["mfu"] == pytest.approx(r["tokens_per_s"] * model.flops_per_token(T) / 1e9)


def test_a_model_without_a_flop_count_gets_tokens_per_s_only(tmp_path):
    torch.manual_seed(0)
    model, bar, said = MLPLM(MLPConfig(vocab_size=11, block_size=8, context=3, d_embed=4, d_hidden=8)), Lines(), []
    cfg = TrainConfig(max_iters=2, batch_size=4, eval_interval=2, eval_batches=1, log_interval=1)
    train(model, make_data(), cfg, run_dir=tmp_path, progress=bar, log=said.append)
    assert bar.lines and all("tok/s" in line and "MFU" not in line for line in bar.lines)
    assert all("mfu" not in r for r in read_metrics(tmp_path / "metrics.jsonl"))
    assert not any("MFU" in line for line in said)


def test_an_unknown_peak_is_explained_once(monkeypatch):
    from redthread.train import loop

    monkeypatch.setattr(loop, "peak_flops", lambda device, precision, override: (None, "no peak known for 'X'"))
    said, bar = [], Lines()
    train(fresh_model(), make_data(), TrainConfig(max_iters=2, batch_size=4, log_interval=1, eval_interval=2, eval_batches=1),
          progress=bar, log=said.append)
    assert [line for line in said if "MFU" in line] == ["MFU not shown: no peak known for 'X'"]
    assert all("MFU" not in line for line in bar.lines)
