"""The training loop: resume reproduces an uninterrupted run; the schedule; the optimizer groups; learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.checkpoint import read_checkpoint
from redthread.train.loop import TrainConfig, evaluate, lr_at, make_optimizer, read_metrics, train

CFG = TransformerConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16, dropout=0.1)


def make_data(n: int = 400, seed: int = 0) -> LMData:
    rng = np.random.default_rng(seed)
    pattern = np.tile(np.arange(11), n // 11 + 1)[:n]  # a learnable cycle, with noise
    tokens = np.where(rng.random(n) < 0.1, rng.integers(0, 11, n), pattern).astype(np.uint16)
    return LMData(TokenSplit(tokens, n, "train"), TokenSplit(tokens[: n // 4].copy(), n // 4, "validation"), CFG.block_size)


def fresh_model() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(CFG)


class Interrupting(LMData):
    """Raises KeyboardInterrupt (as Ctrl-C would) at the n-th batch asked for, training or evaluation."""

    def __init__(self, base: LMData, after: int):
        super().__init__(base.splits["train"], base.splits["val"], base.block_size)
        self.calls, self.after = 0, after

    def batch(self, split, batch_size, generator):
        self.calls += 1
        if self.calls > self.after:
            raise KeyboardInterrupt
        return super().batch(split, batch_size, generator)


@pytest.mark.parametrize("grad_accum, read_first", [(1, False), (2, False), (1, True)])
def test_resume_reproduces_an_uninterrupted_run(tmp_path, grad_accum, read_first):
    """resume=True reads the checkpoint; resume=<the Checkpoint, read by the caller> continues from it."""
    cfg = TrainConfig(max_iters=20, batch_size=4, eval_interval=5, eval_batches=2, log_interval=5, warmup_iters=3, grad_accum=grad_accum)
    straight = fresh_model()
    train(straight, make_data(), cfg, run_dir=tmp_path / "a", progress=False)

    interrupted = fresh_model()
    with pytest.raises(KeyboardInterrupt):  # inside the step-10 evaluation, or mid-accumulation of step 11
        train(interrupted, Interrupting(make_data(), after=12 * grad_accum + 1), cfg, run_dir=tmp_path / "b", progress=False)
    resumed = fresh_model()
    resume = read_checkpoint(tmp_path / "b") if read_first else True
    train(resumed, make_data(), cfg, run_dir=tmp_path / "b", resume=resume, progress=False)

    for (name, p), q in zip(straight.named_parameters(), resumed.parameters()):
        assert torch.equal(p, q), name
    steps = [r["step"] for r in read_metrics(tmp_path / "b" / "metrics.jsonl") if "loss" in r]
    assert steps == [5, 10, 15, 20]  # nothing logged twice


def test_lr_schedule_warms_up_then_decays_to_min_lr():
    cfg = TrainConfig(max_iters=1000, lr=1e-3, min_lr=1e-4, warmup_iters=100)
    assert lr_at(0, cfg) == pytest.approx(1e-5)
    assert lr_at(99, cfg) == pytest.approx(1e-3)
    assert lr_at(550, cfg) == pytest.approx(0.5 * (1e-3 + 1e-4))
    assert lr_at(1000, cfg) == pytest.approx(1e-4)
    lrs = [lr_at(s, cfg) for s in range(100, 1001)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))


def test_lr_schedule_on_the_clock_warms_up_then_decays_to_min_lr_at_the_end_of_the_budget():
    """With max_time the schedule follows the seconds spent, not the steps: a slow machine that
    gets fewer steps than hoped still warms up and decays fully."""
    cfg = TrainConfig(max_iters=10**9, lr=1e-3, min_lr=1e-4, max_time=100.0, warmup_frac=0.1)
    assert lr_at(0, cfg, elapsed=0.0) == pytest.approx(1e-5)  # as the first of 100 warm-up steps
    assert lr_at(0, cfg, elapsed=5.0) == pytest.approx(0.5e-3)
    assert lr_at(7, cfg, elapsed=10.0) == pytest.approx(1e-3)
    assert lr_at(7, cfg, elapsed=55.0) == pytest.approx(0.5 * (1e-3 + 1e-4))
    assert lr_at(7, cfg, elapsed=100.0) == lr_at(7, cfg, elapsed=150.0) == pytest.approx(1e-4)
    assert lr_at(500, cfg) == lr_at(500, TrainConfig(max_iters=10**9, lr=1e-3, min_lr=1e-4))  # no clock given: steps
    with pytest.raises(ValueError, match="warmup_frac"):
        TrainConfig(warmup_frac=1.0)


def test_the_rsqrt_schedule_decays_as_one_over_the_square_root_of_time_then_cools_down_to_min_lr():
    """schedule rsqrt: after the warm-up, lr x sqrt(warm-up / time) (the original Transformer's
    decay), then a linear cool-down to min_lr over the last cooldown_frac, on steps and on the clock."""
    on_steps = TrainConfig(max_iters=1000, lr=1e-2, min_lr=1e-4, warmup_iters=10, schedule="rsqrt", cooldown_frac=0.2)
    assert lr_at(0, on_steps) == pytest.approx(1e-3)  # the warm-up is the cosine schedule's
    assert lr_at(10, on_steps) == pytest.approx(1e-2)
    assert lr_at(40, on_steps) == pytest.approx(1e-2 / 2)  # four times the warm-up: half the peak
    assert lr_at(640, on_steps) == pytest.approx(1e-2 / 8)
    cool_start = 1e-2 * (10 / 800) ** 0.5
    assert lr_at(900, on_steps) == pytest.approx(1e-4 + (1e-2 * (10 / 900) ** 0.5 - 1e-4) * 0.5)  # half-way down
    assert lr_at(1000, on_steps) == pytest.approx(1e-4)
    lrs = [lr_at(s, on_steps) for s in range(10, 1001)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:])) and lr_at(800, on_steps) == pytest.approx(cool_start)

    on_clock = TrainConfig(max_iters=10**9, lr=1e-2, min_lr=1e-4, max_time=100.0, warmup_frac=0.01, schedule="rsqrt")
    assert lr_at(5, on_clock, elapsed=1.0) == pytest.approx(1e-2)
    assert lr_at(5, on_clock, elapsed=4.0) == pytest.approx(1e-2 / 2)
    assert lr_at(5, on_clock, elapsed=100.0) == lr_at(5, on_clock, elapsed=120.0) == pytest.approx(1e-4)
    # the peak never falls below min_lr, and without a cool-down it ends on the decay
    assert lr_at(999, TrainConfig(max_iters=1000, lr=1e-3, min_lr=5e-4, warmup_iters=10, schedule="rsqrt",
                                  cooldown_frac=0.0)) == pytest.approx(5e-4)
    with pytest.raises(ValueError, match="schedule must be one of cosine, rsqrt"):
        TrainConfig(schedule="linear")
    with pytest.raises(ValueError, match="needs warmup_iters > 0"):
        TrainConfig(schedule="rsqrt", warmup_iters=0)
    with pytest.raises(ValueError, match="cooldown_frac"):
        TrainConfig(schedule="rsqrt", cooldown_frac=1.0)


class FakeClock:
    """time.perf_counter for the loop: every call advances it by `tick` seconds (deterministic budgets)."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def perf_counter(self) -> float:
        self.now += self.tick
        return self.now


def test_a_time_budget_completes_the_schedule_and_a_resume_goes_on_from_the_time_spent(tmp_path, monkeypatch):
    import redthread.train.loop as loop

    clock = FakeClock(0.01)
    monkeypatch.setattr(loop, "time", clock)
    cfg = TrainConfig(max_iters=10**6, batch_size=4, eval_interval=10**6, eval_batches=1, log_interval=1,
                      lr=1e-3, min_lr=1e-5, max_time=1.0, warmup_frac=0.2)
    result = train(fresh_model(), make_data(), cfg, run_dir=tmp_path / "run", progress=False)
    lrs = [r["lr"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if "lr" in r]
    assert 10 < result.step < 10**6  # stopped by the clock
    assert lrs[0] < 0.1 * cfg.lr and max(lrs) > 0.9 * cfg.lr  # warmed up
    assert lrs[-1] < 0.05 * cfg.lr  # and decayed to (nearly) min_lr by the end of the budget
    spent = read_checkpoint(tmp_path / "run").extra["elapsed"]
    assert spent > cfg.max_time  # the save after the budget ran out

    partial = TrainConfig(**{**cfg.to_dict(), "max_iters": 5, "max_time": 100.0})  # stopped by max_iters, early
    train(fresh_model(), make_data(), partial, run_dir=tmp_path / "b", progress=False)
    first = read_checkpoint(tmp_path / "b").extra["elapsed"]
    more = TrainConfig(**{**partial.to_dict(), "max_iters": 10})
    train(fresh_model(), make_data(), more, run_dir=tmp_path / "b", resume=True, progress=False)
    rows = [r for r in read_metrics(tmp_path / "b" / "metrics.jsonl") if "lr" in r]
    assert [r["step"] for r in rows] == list(range(1, 11))
    assert rows[5]["elapsed"] > first  # the resumed run's clock starts where the saved one stopped
    assert rows[5]["lr"] == pytest.approx(lr_at(5, more, elapsed=rows[5]["elapsed"]), rel=0.05)


def test_a_monitor_sees_the_training_seconds_its_own_time_left_out_and_can_stop_the_run(monkeypatch):
    import redthread.train.loop as loop

    clock = FakeClock(0.01)
    monkeypatch.setattr(loop, "time", clock)
    seen = []

    def monitor(step, seconds, model):
        seen.append((step, seconds, model.training))
        clock.now += 5.0  # a slow full-split score: not training time
        return step == 30

    cfg = TrainConfig(max_iters=100, batch_size=4, eval_interval=10**6, eval_batches=1, log_interval=10, max_time=50.0)
    result = train(fresh_model(), make_data(), cfg, progress=False, monitor=monitor)
    assert result.step == 30 and [s for s, _, _ in seen] == list(range(1, 31))  # stopped where it said
    seconds = [t for _, t, _ in seen]
    assert seconds[-1] < 5.0  # 30 steps of 0.01-s ticks, not the 150 s spent in the monitor
    assert all(a < b for a, b in zip(seconds, seconds[1:]))


def test_a_run_that_reaches_max_iters_before_its_time_budget_still_decays_on_its_steps(tmp_path, monkeypatch):
    import redthread.train.loop as loop

    monkeypatch.setattr(loop, "time", FakeClock(0.001))  # 40 steps take well under the 1000-s budget
    cfg = TrainConfig(max_iters=40, batch_size=4, eval_interval=10**6, eval_batches=1, log_interval=1,
                      lr=1e-3, min_lr=1e-5, warmup_iters=5, max_time=1000.0)
    train(fresh_model(), make_data(), cfg, run_dir=tmp_path / "run", progress=False)
    lrs = [r["lr"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if "lr" in r]
    on_steps = TrainConfig(**{**cfg.to_dict(), "max_time": None})
    assert lrs == pytest.approx([lr_at(s, on_steps) for s in range(40)])  # warm-up and decay on the steps
    assert lrs[-1] < 0.02 * cfg.lr  # near min_lr (1e-5) at the last step
    # the other way round, the clock further along than the steps: the schedule follows the clock
    assert lr_at(10, cfg, elapsed=900.0) == lr_at(0, cfg, elapsed=900.0) != lr_at(10, on_steps)


def test_progress_lines_on_the_clock_say_how_much_of_the_budget_is_spent(tmp_path, monkeypatch):
    import redthread.train.loop as loop

    monkeypatch.setattr(loop, "time", FakeClock(0.001))  # a few hundred steps
    lines = []
    cfg = TrainConfig(max_iters=10**6, batch_size=4, eval_interval=10**6, eval_batches=1, log_interval=1, max_time=1.0)
    train(fresh_model(), make_data(), cfg, progress="plain", log=lines.append)
    progress = [line for line in lines if line.startswith("step ") and "of 1s" in line]
    assert 35 <= len(progress) <= 41  # one line per 2.5% of the budget
    assert progress[-1].split(" (")[1].startswith(("97%", "98%", "99%", "100%"))


def test_weight_decay_applies_to_matrices_only():
    model = fresh_model()
    opt = make_optimizer(model, TrainConfig(weight_decay=0.1), torch.device("cpu"))
    decayed, plain = opt.param_groups
    assert decayed["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decayed["params"]) and all(p.dim() < 2 for p in plain["params"])
    n_unique = len({id(p) for p in model.parameters()})
    assert len(decayed["params"]) + len(plain["params"]) == n_unique  # the tied matrix once


def test_training_lowers_validation_nll_below_uniform(tmp_path):
    model = fresh_model()
    data = make_data()
    before = evaluate(model, data)["nll"]
    train(model, data, TrainConfig(max_iters=150, batch_size=8, lr=3e-3, eval_interval=150, warmup_iters=10), progress=False)
    after = evaluate(model, data)["nll"]
    assert after < math.log(11) - 0.5 and after < before - 0.5


def test_evaluate_full_split_scores_every_token_once():
    data = make_data()
    result = evaluate(fresh_model(), data, "val", batch_size=3)
    assert result["tokens"] == len(data.split("val").tokens) - 1
    assert result["bpc"] == pytest.approx(result["nll"] / math.log(2))  # one token per character
    assert result["ppl"] == pytest.approx(math.exp(result["nll"]))


def test_time_budget_stops_early_and_leaves_a_checkpoint(tmp_path):
    from redthread.train.checkpoint import read_checkpoint

    cfg = TrainConfig(max_iters=1000, batch_size=4, eval_interval=500, log_interval=500, max_time=1e-3)
    result = train(fresh_model(), make_data(), cfg, run_dir=tmp_path, progress=False)
    assert 1 <= result.step < 1000
    assert read_checkpoint(tmp_path).step == result.step


def test_plain_progress_prints_about_forty_lines_for_logs():
    """Output that is not a terminal (nohup, CI) gets plain lines: ~40 a run, the last at the last step."""
    from redthread.train.loop import Progress

    lines = []
    bar = Progress(2000, 0, "plain", log=lines.append)
    for step in range(10, 2001, 10):  # the loop updates at every log_interval
        bar.update(step, "loss 1.234  5,678 tok/s")
    assert 35 <= len(lines) <= 45 and lines[-1].startswith("step 2000/2000 (100%): loss 1.234")
    assert "elapsed" in lines[0] and "left" in lines[0]
    quiet = []
    Progress(2000, 0, False, log=quiet.append).update(2000, "x")
    assert quiet == []


def test_tensorboard_events_are_the_metrics_read_back_by_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = TrainConfig(max_iters=20, batch_size=4, eval_interval=10, eval_batches=2, log_interval=5, warmup_iters=3,
                      tensorboard=True)
    train(fresh_model(), make_data(), cfg, run_dir=tmp_path, progress=False)
    rows = read_metrics(tmp_path / "metrics.jsonl")
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    losses = [(e.step, e.value) for e in events.Scalars("train/loss")]
    assert losses == [(r["step"], pytest.approx(r["loss"], rel=1e-6)) for r in rows if "loss" in r]
    assert [e.step for e in events.Scalars("val/nll")] == [10, 20]
    assert len(list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))) == 1  # rewritten whole, never doubled


def test_tensorboard_without_the_package_is_refused_before_training(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if tensorboard were not installed
    with pytest.raises(ValueError, match="--tensorboard needs the tensorboard package"):
        train(fresh_model(), make_data(), TrainConfig(max_iters=2, tensorboard=True), run_dir=tmp_path, progress=False)
    assert not (tmp_path / "metrics.jsonl").exists()


def test_the_loss_curve_has_no_validation_legend_without_validation_points(tmp_path, monkeypatch):
    """The demo stops on its time budget before any evaluation: its loss.png once listed a validation
    line that had no points."""
    import matplotlib.pyplot as plt

    from redthread.train.loop import plot_loss_curve

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    rows = [{"step": s, "loss": 3.0 - s / 10} for s in range(1, 6)]
    plot_loss_curve(rows, tmp_path / "loss.png")
    plot_loss_curve(rows + [{"step": 5, "val_nll": 2.6}], tmp_path / "loss2.png")
    labels = [[t.get_text() for t in fig.axes[0].get_legend().get_texts()] for fig in figures]
    assert labels == [["train NLL"], ["train NLL", "validation NLL"]]
    assert (tmp_path / "loss.png").stat().st_size > 1000


@pytest.mark.parametrize("at", [3, 6])  # a step in the middle, and the last one
def test_ctrl_c_during_any_step_saves_it_and_stops_the_run_even_the_last(tmp_path, at):
    """In one process Ctrl-C raises at once (train/distributed.StopSignals): the step under way is saved and the
    run stops, whichever step it is, the last one included."""
    import os
    import signal

    def press_ctrl_c(step, seconds, model):
        if step == at:
            os.kill(os.getpid(), signal.SIGINT)  # the loop's handler notes it; the loop acts after the step
        return False

    cfg = TrainConfig(max_iters=6, batch_size=4, eval_interval=4, log_interval=1)
    with pytest.raises(KeyboardInterrupt):
        train(fresh_model(), make_data(), cfg, run_dir=tmp_path, progress=False, monitor=press_ctrl_c)
    assert read_checkpoint(tmp_path).step == at
