"""Errors in the Python idiom: a library user catches them as ValueError, TypeError or
FileNotFoundError, and the CLI still prints every one as one line (they are all RedthreadError)."""

from __future__ import annotations

import pytest
import torch

import redthread as rt
from redthread.train.loop import TrainConfig


@pytest.fixture(scope="module")
def model():
    return rt.TransformerLM(rt.TransformerConfig(vocab_size=8, block_size=8, n_layer=1, n_head=2, d_model=16))


@pytest.mark.parametrize("kwargs", [{"top_p": 0}, {"top_k": 0}, {"temperature": -1}, {"min_p": 2}, {"num_samples": 0},
                                    {"repetition_penalty": float("nan")}])
def test_bad_sampling_values_are_value_errors(model, kwargs):
    with pytest.raises(ValueError) as e:
        rt.generate(model, torch.zeros(1, 1, dtype=torch.long), 2, **kwargs)
    assert isinstance(e.value, rt.RedthreadError)


def test_bad_config_values_and_types():
    with pytest.raises(ValueError, match="divisible"):
        rt.TransformerConfig(d_model=30, n_head=4)
    with pytest.raises(TypeError, match="n_layer"):
        rt.TransformerConfig(n_layer="2")
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match="unknown TrainConfig field"):  # never silently dropped
        TrainConfig.from_dict({"lr": 1e-3, "learning_rate": 1e-3})
    with pytest.raises(ValueError, match="unknown TransformerConfig field"):
        rt.TransformerConfig.from_dict({"n_layers": 2})


def test_missing_files_are_file_not_found(tmp_path):
    from redthread.data.corpus import load_corpus

    with pytest.raises(FileNotFoundError) as e:
        rt.load_checkpoint(tmp_path / "nowhere")
    assert isinstance(e.value, rt.RedthreadError) and "nowhere" in str(e.value)
    with pytest.raises(FileNotFoundError):
        load_corpus(tmp_path / "missing.txt")


def test_the_cli_prints_the_subclasses_as_one_line(tmp_path, capsys):
    from redthread.cli import main

    assert main(["sample", "--checkpoint", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "nowhere" in err and len(err.splitlines()) == 1
