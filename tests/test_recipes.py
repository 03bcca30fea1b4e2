"""The three recipes of docs/architecture.md, followed step by step: add a rung, a view, an experiment."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass

import pytest
import torch
from torch import nn

import redthread as rt
from redthread.experiments import EXPERIMENTS
from redthread.models import registry
from redthread.models.base import LanguageModel
from redthread.models.config import ConfigMixin
from redthread.viz.explorer import payload_tab, write_explorer
from redthread.viz.inspector import Inspector, load_inspector
from tests.cli_helpers import cli
from tests.tiny import save_tiny_run

# -- add a rung ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowConfig(ConfigMixin):
    vocab_size: int = 65
    block_size: int = 64
    d_embed: int = 16


class WindowLM(LanguageModel):
    """P(next | the last two tokens): the recipe's rung."""

    def __init__(self, cfg: WindowConfig):
        super().__init__()
        self.cfg = cfg
        self.emb = nn.Embedding(cfg.vocab_size, cfg.d_embed)
        self.head = nn.Linear(2 * cfg.d_embed, cfg.vocab_size)

    def forward(self, idx):  # the last two tokens: (B, T) -> (B, T, V)
        prev = torch.cat([idx[:, :1], idx[:, :-1]], 1)
        return self.head(torch.cat([self.emb(prev), self.emb(idx)], -1))


@pytest.fixture
def window_rung():
    models, rungs = dict(registry.MODELS), dict(registry.RUNGS)
    registry.register("window", WindowLM, WindowConfig)
    yield
    registry.MODELS.clear(), registry.MODELS.update(models)
    registry.RUNGS.clear(), registry.RUNGS.update(rungs)


def test_a_registered_rung_is_built_checkpointed_and_climbs_the_ladder(window_rung, tmp_path):
    model = rt.build_model("window", vocab_size=11)
    assert isinstance(model, WindowLM) and model.cfg.vocab_size == 11
    idx = torch.randint(11, (2, 5))
    torch.testing.assert_close(model.nll(idx, idx), -model.distribution(idx).log_prob(idx).mean())  # the contract, inherited

    rt.save_checkpoint(tmp_path / "run", model)
    assert isinstance(rt.load_checkpoint(tmp_path / "run"), WindowLM)  # its checkpoints load

    out = tmp_path / "ladder"
    code, stdout, err = cli("ladder", "--data", "markov", "--rungs", "bigram,window", "--steps", "30",
                            "--batch-size", "8", "--no-progress", "--out", out)
    assert code == 0, err
    rows = {r["rung"]: r for r in csv.DictReader((out / "ladder.csv").open(encoding="utf-8"))}
    assert set(rows) == {"bigram", "window"}
    trained = rt.load_checkpoint(out / "rungs" / "window")  # the rung's own run folder
    assert isinstance(trained, WindowLM) and int(rows["window"]["parameters"]) == trained.num_params()
    assert math.isfinite(float(rows["window"]["val_nll"]))


def test_an_unknown_rung_is_still_one_line():
    code, _, err = cli("ladder", "--data", "markov", "--rungs", "window", "--steps", "2")
    assert code != 0 and err.startswith("error: unknown rung 'window'") and len(err.strip().splitlines()) == 1


# -- add a view ------------------------------------------------------------------------------------------------------


def head_entropy(inspector: Inspector, text: str) -> dict:
    """Each head's mean attention entropy over the text's queries, in nats: (L, H)."""
    toks, maps, _ = inspector.attention(text)
    att = maps.stacked(maps.kinds[0])[:, 0]  # (L, H, T, S)
    entropy = -(att * att.clamp_min(1e-12).log()).sum(-1).mean(-1)  # (L, H)
    return {"tokens": toks.labels, "entropy": entropy.tolist()}


def test_a_view_reads_what_the_inspector_records_and_shows_in_the_explorer(tmp_path):
    save_tiny_run(tmp_path / "run", "to be or not to be, that is the question")
    inspector = load_inspector(tmp_path / "run", device="cpu")
    view = head_entropy(inspector, "to be or not")
    T = len(view["tokens"])
    entropy = torch.tensor(view["entropy"])
    assert entropy.shape == (2, 2)  # the tiny run's 2 layers x 2 heads
    # causal attention: query t spreads over t + 1 keys, so its entropy lies in [0, log(t + 1)]
    assert (entropy >= 0).all() and (entropy <= sum(math.log(t + 1) for t in range(T)) / T + 1e-6).all()

    _, maps, toks = inspector.attention("to be or not")
    payload = {"title": "entropy", "model": inspector.description, "notice": None,
               "tabs": [payload_tab("decoder", toks.labels, toks.labels, maps.stacked("decoder")[:, 0])]}
    page = write_explorer(payload, tmp_path / "view.html")
    assert page.is_file() and "entropy" in page.read_text(encoding="utf-8")


# -- add an experiment -----------------------------------------------------------------------------------------------


@pytest.mark.slow  # the command asks git which commit the experiment's code ran at (numbers.code_commit)
def test_a_registered_experiment_runs_through_the_command(tmp_path, monkeypatch):
    monkeypatch.setitem(EXPERIMENTS, "toy-claim", "tests.recipe_experiment")
    out = tmp_path / "toy"
    code, stdout, err = cli("experiment", "toy-claim", "--out", out, "--seed", "3")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["claims"] == "C1" and report["verdict"] in ("holds", "does not hold")
    assert "toy-claim" in stdout and (out / "report.md").is_file()
    code, _, err = cli("experiment", "toy-claim-typo", "--out", tmp_path / "x")
    assert code != 0 and "unknown experiment 'toy-claim-typo'" in err
