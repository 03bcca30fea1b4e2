"""A run's device and precision are resolved once, where its command starts, and passed down as values
(issue 26, item 6). Before, one `redthread demo` resolved its device four times (run_demo, the
language-model trainer, its memory check and the loop, each from the same name) and chose its
precision twice (the memory check and the loop); `redthread train` three times and twice.

Counted by wrapping `resolve_device` and `choose_precision` in every redthread module that holds them.
"""

import sys
from collections import Counter

import pytest

from redthread.commands.demo import run_demo
from redthread.commands.ladder import Budget, make_synthetic, run_ladder
from redthread.models import base
from redthread.train import precision
from tests.cli_helpers import TINY_MODEL, TINY_TRAIN, cli


@pytest.fixture
def resolutions(monkeypatch) -> Counter:
    """How many times each resolution ran, from every module that imported it by name."""
    calls = Counter()
    for name, real in (("resolve_device", base.resolve_device), ("choose_precision", precision.choose_precision)):
        def counted(*args, _name=name, _real=real, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("redthread") and getattr(module, name, None) is real:
                monkeypatch.setattr(module, name, counted)
    return calls


def test_the_demo_resolves_its_device_once(tmp_path, resolutions):
    run_demo(tmp_path / "demo", minutes=0.02, device="cpu", progress=False, say=lambda line: None)
    assert resolutions == {"resolve_device": 1, "choose_precision": 1}


def test_redthread_train_resolves_its_device_and_precision_once(tmp_path, corpus, resolutions):
    code, _, err = cli("train", "--data", corpus, "--out", tmp_path / "run", *TINY_MODEL, *TINY_TRAIN, "--device", "auto")
    assert code == 0, err
    assert resolutions == {"resolve_device": 1, "choose_precision": 1}


def test_the_ladder_resolves_its_device_once_for_every_rung(resolutions):
    data = make_synthetic("markov", n_train=200, n_val=20, length=16)
    run_ladder(data, ["unigram", "bigram", "mlp"], Budget(steps=2, batch_size=4), device="auto", progress=False,
               say=lambda line: None)
    assert resolutions["resolve_device"] == 1
    assert resolutions["choose_precision"] == 3  # each rung's own settings: once per training run
