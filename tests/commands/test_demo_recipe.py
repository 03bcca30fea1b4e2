"""The demo trains the speedrun's recipe, and AdamW where torch has no Muon."""

import torch

from redthread.commands import demo
from redthread.train.loop import TrainConfig


def test_the_demo_trains_the_speedruns_model_and_schedule():
    recipe = demo.training_recipe()
    assert recipe["optimizer"] == "muon" and recipe["schedule"] == "rsqrt" and recipe["lr"] == 0.05
    assert (demo.MODEL["n_layer"], demo.MODEL["d_model"], demo.MODEL["pos"]) == (2, 64, "rope")
    TrainConfig(**recipe)  # a valid config


def test_without_torch_optim_muon_the_demo_falls_back_to_adamw_at_its_own_rate(monkeypatch):
    monkeypatch.delattr(torch.optim, "Muon")
    recipe = demo.training_recipe()
    assert recipe["optimizer"] == "adamw" and recipe["lr"] == 1e-2 and recipe["schedule"] == "rsqrt"
    TrainConfig(**recipe)
