"""--compile: the compiled training step follows the eager one, checkpoints keep the plain keys,
and a machine that cannot compile trains uncompiled after saying why."""

from __future__ import annotations

import pytest
import torch

from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.checkpoint import read_checkpoint
from redthread.train.compiler import compile_unsupported
from redthread.train.loop import TrainConfig, train

from .test_loop import make_data

CFG = TransformerConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=16, dropout=0.0)  # compiled dropout draws other masks
STEPS = TrainConfig(max_iters=3, batch_size=4, eval_interval=3, eval_batches=1, log_interval=1, warmup_iters=1, device="cpu")


def model() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(CFG)


@pytest.mark.slow  # 20-40 s on two cores: inductor compiles C++ for forward and backward
@pytest.mark.skipif(compile_unsupported(torch.device("cpu")) is not None, reason="torch.compile cannot run here")
def test_compiled_training_follows_eager_and_checkpoints_plain_keys(tmp_path):
    eager, compiled, said = model(), model(), []
    a = train(eager, make_data(), STEPS, progress=False)
    b = train(compiled, make_data(), TrainConfig(**{**STEPS.to_dict(), "compile": True}), run_dir=tmp_path, progress=False, log=said.append)
    assert "training on cpu: fp32, compiled" in said
    assert b.train_loss == pytest.approx(a.train_loss, abs=1e-4)
    for (name, p), q in zip(eager.named_parameters(), compiled.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-5, msg=name)
    ckpt = read_checkpoint(tmp_path)
    assert list(ckpt.model.state_dict()) == list(eager.state_dict())  # no "_orig_mod." prefix


def test_without_a_compiler_training_goes_on_uncompiled_and_says_why(monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    reason = compile_unsupported(torch.device("cpu"))
    assert reason is not None and "C++ compiler" in reason
    said = []
    result = train(model(), make_data(), TrainConfig(**{**STEPS.to_dict(), "compile": True}), progress=False, log=said.append)
    assert result.step == 3
    assert [line for line in said if "--compile" in line] == [f"--compile: {reason}; training uncompiled"]
