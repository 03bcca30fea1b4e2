"""Precision: chosen from the device's capabilities (faked here: the suite has no GPU); fp32 is the
plain step bit for bit; the loss scale changes nothing but the scale, and is checkpointed and resumed."""

from __future__ import annotations

import math

import pytest
import torch

from redthread.errors import RedthreadError
from redthread.models.likelihoods import token_nll
from redthread.train import loop
from redthread.train.checkpoint import read_checkpoint
from redthread.train.loop import TrainConfig, lr_at, make_optimizer, read_metrics, train
from redthread.train.precision import Precision, choose_precision, cpu_has_bf16_matmul, enable_tf32

from .test_loop import Interrupting, fresh_model, make_data

CUDA = torch.device("cuda")


def fake_gpu(monkeypatch, capability: tuple[int, int], name: str = "NVIDIA Fake GPU") -> None:
    """torch.cuda reports a GPU of this compute capability (bf16 in hardware from 8.0, as torch says)."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation or capability >= (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)


def test_auto_precision_is_fp32_on_cpu_and_bf16_only_when_asked():
    cpu = torch.device("cpu")
    assert choose_precision("auto", cpu) == Precision("fp32", "cpu")
    assert choose_precision("bf16", cpu) == Precision("bf16", "cpu")
    with pytest.raises(RedthreadError, match="fp16 needs a CUDA GPU"):
        choose_precision("fp16", cpu)
    with pytest.raises(RedthreadError, match="precision must be one of"):
        TrainConfig(precision="fp8")


def test_auto_precision_is_bf16_on_ampere_and_newer(monkeypatch):
    fake_gpu(monkeypatch, (9, 0))
    assert choose_precision("auto", CUDA) == Precision("bf16", "cuda")
    assert choose_precision("fp16", CUDA).name == "fp16" and choose_precision("fp32", CUDA).name == "fp32"


def test_auto_precision_is_fp16_where_bf16_would_be_emulated(monkeypatch):
    fake_gpu(monkeypatch, (7, 0), "Tesla V100-SXM2-16GB")  # torch.cuda.is_bf16_supported() alone says yes
    assert choose_precision("auto", CUDA) == Precision("fp16", "cuda")
    with pytest.raises(RedthreadError, match="V100.*no bf16 tensor cores.*fp16"):
        choose_precision("bf16", CUDA)


def test_tf32_is_switched_on_from_ampere_only(monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "set_float32_matmul_precision", calls.append)
    assert not enable_tf32(torch.device("cpu"))
    fake_gpu(monkeypatch, (7, 5))
    assert not enable_tf32(CUDA)
    fake_gpu(monkeypatch, (8, 0))
    assert enable_tf32(CUDA) and calls == ["high"]


def test_only_fp16_scales_the_loss():
    assert Precision("fp16", "cpu").make_scaler().is_enabled()
    assert not Precision("bf16", "cpu").make_scaler().is_enabled()
    assert not Precision("fp32", "cpu").make_scaler().is_enabled()
    assert Precision("bf16", "cpu").autocast().fast_dtype == torch.bfloat16


def plain_steps(model, data, cfg: TrainConfig) -> list[float]:
    """The training step with no precision machinery at all: what the loop was before it had any."""
    torch.manual_seed(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    model.train()
    optimizer = make_optimizer(model, cfg, torch.device("cpu"))
    losses = []
    for step in range(cfg.max_iters):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        x, y = data.batch("train", cfg.batch_size, generator)
        loss = token_nll(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


CFG = TrainConfig(max_iters=6, batch_size=4, eval_interval=6, eval_batches=1, log_interval=1, warmup_iters=2, device="cpu")


def test_fp32_training_is_the_plain_step_bit_for_bit(tmp_path):
    reference = fresh_model()
    losses = plain_steps(reference, make_data(), CFG)
    model = fresh_model()
    train(model, make_data(), CFG, run_dir=tmp_path, progress=False)
    assert [r["loss"] for r in read_metrics(tmp_path / "metrics.jsonl") if "loss" in r] == losses
    for (name, p), q in zip(reference.named_parameters(), model.parameters()):
        assert torch.equal(p, q), name


def test_bf16_autocast_on_cpu_trains_close_to_fp32():
    fp32, bf16 = fresh_model(), fresh_model()
    a = train(fp32, make_data(), CFG, progress=False)
    b = train(bf16, make_data(), TrainConfig(**{**CFG.to_dict(), "precision": "bf16"}), progress=False)
    assert math.isfinite(b.train_loss) and abs(a.train_loss - b.train_loss) < 0.05
    assert all(p.dtype == torch.float32 for p in bf16.parameters())  # mixed precision: the weights stay float32


class ScaledFp32(Precision):
    """fp32 compute with an enabled loss scaler, the fp16 step's bookkeeping on a CPU: a growth
    interval of 2 makes the scale move within a few steps."""

    def make_scaler(self):
        return torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)


def test_loss_scaling_is_exact_in_fp32_and_resumes_with_its_scale(tmp_path, monkeypatch):
    plain = fresh_model()
    train(plain, make_data(), CFG, progress=False)
    monkeypatch.setattr(loop, "choose_precision", lambda requested, device: ScaledFp32("fp32", "cpu"))
    cfg = TrainConfig(**{**CFG.to_dict(), "eval_interval": 2})
    scaled = fresh_model()
    train(scaled, make_data(), cfg, run_dir=tmp_path / "a", progress=False)
    for (name, p), q in zip(plain.named_parameters(), scaled.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7, msg=name)  # a power-of-two scale is exact
    assert read_checkpoint(tmp_path / "a").extra["grad_scaler"]["scale"] == 2.0**13  # doubled every 2 steps

    with pytest.raises(KeyboardInterrupt):  # in the evaluation of step 4 (each evaluation draws a batch too)
        train(fresh_model(), Interrupting(make_data(), after=5), cfg, run_dir=tmp_path / "b", progress=False)
    assert read_checkpoint(tmp_path / "b").extra["grad_scaler"]["scale"] == 2.0**12
    resumed = fresh_model()
    train(resumed, make_data(), cfg, run_dir=tmp_path / "b", resume=True, progress=False)
    assert read_checkpoint(tmp_path / "b").extra["grad_scaler"]["scale"] == 2.0**13
    for (name, p), q in zip(scaled.named_parameters(), resumed.parameters()):
        assert torch.equal(p, q), name


def test_cpu_has_bf16_matmul_reads_the_processor_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw\n")
    assert not cpu_has_bf16_matmul(info)  # AVX-512 alone converts bf16 in software
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n")
    assert cpu_has_bf16_matmul(info)
    info.write_text("flags\t\t: fpu amx_tile amx_bf16\n")
    assert cpu_has_bf16_matmul(info)
    assert not cpu_has_bf16_matmul(tmp_path / "absent")  # not Linux: no
