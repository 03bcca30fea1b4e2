import numpy as np
import pytest
import torch

from redthread.data.targets import IGNORE_INDEX
from redthread.experiments import one_thread
from redthread.experiments.sequential import (
    CRITERIA,
    D_EMBED,
    D_HIDDEN,
    FAR,
    N_ITEMS,
    NEAR,
    VOCAB,
    FirstItemData,
    FusedRNN,
    graph_depth,
    near_minus_far,
    recall_by_distance,
    share_above_one,
    slope,
    time_ratios,
)
from redthread.models.recurrent import RecurrentConfig, RecurrentLM


def test_graph_depth_counts_the_longest_chain():
    x = torch.ones(3, requires_grad=True)
    y = x
    for _ in range(5):  # a chain of 5 multiplications ...
        y = y * 2
    z = y + x.exp()  # ... beside a short branch, joined by one addition
    assert graph_depth(z.sum()) == 1 + 1 + 5 + 1  # sum, add, 5 muls, the leaf's AccumulateGrad


def test_slope_is_the_log_log_least_squares_fit():
    xs, ys = [16, 32, 64, 128], [60.0, 100.0, 210.0, 390.0]
    expected = np.polyfit(np.log(xs), np.log(ys), 1)[0]
    assert abs(slope(xs, ys) - expected) < 1e-12
    assert abs(slope(xs, [7.0] * 4)) < 1e-12  # constant: slope 0


def test_fused_rnn_is_the_projects_rnn():
    """The nn.RNN arm computes the same function as RecurrentLM(cell="rnn") with the same weights."""
    torch.manual_seed(0)
    ours = RecurrentLM(RecurrentConfig(vocab_size=VOCAB, block_size=32, cell="rnn", d_embed=D_EMBED, d_hidden=D_HIDDEN))
    fused = FusedRNN(VOCAB, D_EMBED, D_HIDDEN)
    assert sum(p.numel() for p in fused.parameters()) == sum(p.numel() for p in ours.parameters())
    with torch.no_grad():
        fused.tok_emb.weight.copy_(ours.tok_emb.weight)
        fused.lm_head.load_state_dict(ours.lm_head.state_dict())
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(fused.rnn, name + "_l0").copy_(getattr(ours.cells[0], name))
    idx = torch.randint(VOCAB, (3, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(fused(idx), ours(idx), atol=1e-5, rtol=1e-5)


def test_one_thread_restores_the_setting():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_first_item_data_asks_for_the_first_item_from_every_distance():
    data = FirstItemData(n_train=20, n_val=5, n_test=7, length=12, seed=3)
    x, y = data.splits["test"]
    assert x.shape == y.shape == (7, 12)
    assert bool((x[:, 0] < N_ITEMS).all()) and bool((x[:, 1:] >= N_ITEMS).all())  # one item, then fillers only
    assert bool((x < FirstItemData.vocab_size).all())
    assert bool((y[:, 0] == IGNORE_INDEX).all())  # the item's own position is not scored
    assert torch.equal(y[:, 1:], x[:, :1].expand(7, 11))  # every later position's target is the item
    again = FirstItemData(n_train=20, n_val=5, n_test=7, length=12, seed=3)
    assert torch.equal(again.splits["train"][0], data.splits["train"][0])  # a function of the seed
    bx, by = data.batch("train", 4, torch.Generator().manual_seed(0))
    assert bx.shape == by.shape == (4, 12)
    assert sum(len(b[0]) for b in data.eval_batches("val", 2)) == 5


class _Oracle(torch.nn.Module):
    """Names the first token at every position up to `reach`, a filler after: recall 1 to `reach`, 0 beyond."""

    def __init__(self, reach: int):
        super().__init__()
        self.reach = reach

    def forward(self, idx):
        B, T = idx.shape
        logits = torch.zeros(B, T, FirstItemData.vocab_size)
        logits[torch.arange(B)[:, None], torch.arange(T), idx[:, :1].expand(B, T)] = 1.0
        logits[:, self.reach + 1 :, -1] = 2.0  # beyond the reach: a filler wins
        return logits


def test_recall_by_distance_and_near_minus_far():
    data = FirstItemData(n_train=4, n_val=4, n_test=50, length=32, seed=0)
    flat = recall_by_distance(_Oracle(reach=31), data)
    assert len(flat) == 31 and flat == [1.0] * 31  # index d - 1 for d = 1 .. 31
    assert near_minus_far(flat) == (1.0, 1.0, 0.0)
    fading = recall_by_distance(_Oracle(reach=NEAR[-1]), data)  # sees the near distances only
    assert near_minus_far(fading) == (1.0, 0.0, 1.0)
    acc = [d / 100 for d in range(1, 32)]
    near, far, diff = near_minus_far(acc)
    assert near == pytest.approx(np.mean([d / 100 for d in NEAR])) and far == pytest.approx(np.mean([d / 100 for d in FAR]))
    assert diff == pytest.approx(near - far)


def test_grid_ratios_and_their_share():
    seconds = {"Transformer": [1.0, 2.0, 4.0, 1.0], "RNN (nn.RNN)": [2.0, 1.0, 4.0, 3.0]}
    assert time_ratios(seconds) == [2.0, 0.5, 1.0, 3.0]
    assert share_above_one(time_ratios(seconds)) == 0.5  # a tie is not slower


def test_new_criteria_have_bounds_and_floors_fixed_in_advance():
    assert CRITERIA["transformer_flat"].direction == "within" and CRITERIA["transformer_flat"].floor == 0.05
    assert abs(CRITERIA["rnn_decay"].floor - 0.05 * (1 - 1 / 16)) < 1e-12
    assert CRITERIA["transformer_far_recall"].floor == 1 / 16
    assert CRITERIA["grid_share_rnn_slower"].floor == 0.5
    for name in ("transformer_flat", "rnn_decay"):
        assert CRITERIA[name].bounds == (-1.0, 1.0)
    for name in ("transformer_far_recall", "grid_share_rnn_slower"):
        assert CRITERIA[name].bounds == (0.0, 1.0)
    for name in ("serial_penalty", "long_sequence_time_ratio"):  # the caveat is part of the verdict's table
        assert "ONE CPU thread at batch 1" in CRITERIA[name].why


def test_sequential_quick_structure(quick_report):
    report, md, data, _ = quick_report("sequential")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"rnn_depth_slope", "fused_rnn_depth_slope", "transformer_depth_slope", "serial_penalty",
                           "long_sequence_time_ratio", "grid_share_rnn_slower", "transformer_flat",
                           "transformer_far_recall", "rnn_decay"}
    assert set(data["parts"]) == {"sequential steps", "speed", "equal view"}
    for name in ("rnn_depth_slope", "fused_rnn_depth_slope", "transformer_depth_slope"):  # exact counts
        assert checks[name]["part"] == "sequential steps" and checks[name]["interval"] is None
    for name in ("serial_penalty", "long_sequence_time_ratio", "grid_share_rnn_slower"):  # timed over repeats
        assert checks[name]["part"] == "speed" and len(checks[name]["seeds"]) >= 2
    for name in ("transformer_flat", "transformer_far_recall", "rnn_decay"):  # trained over seeds
        assert checks[name]["part"] == "equal view" and len(checks[name]["seeds"]) >= 2
    n = data["numbers"]
    assert all(B * T == n["n_tokens"] for B, T in n["shapes"])  # the same work at every length
    assert set(n["graph_depth"]) == {"Transformer", "RNN (nn.RNN)", "RNN (project)"}
    assert all(d > 0 for v in n["graph_depth"].values() for d in v)
    assert all(len(v) == len(n["lengths"]) and all(len(r) >= 2 for r in v) and min(map(min, v)) > 0
               for v in n["ms_per_repeat"].values())
    cells = n["grid_cells"]  # the grid: every batch with every length
    assert len(cells) == len({B for B, _ in cells}) * len({T for _, T in cells}) >= 4
    assert all(len(r) == len(cells) and min(r) > 0 for r in n["grid_time_ratio_per_repeat"])
    assert n["grid_share_rnn_slower"] == [sum(x > 1 for x in r) / len(r) for r in n["grid_time_ratio_per_repeat"]]
    for kind in ("RNN", "Transformer"):  # per seed, one accuracy per distance 1 .. T-1
        assert len(n["recall_by_distance"][kind]) == len(n["equal_view_seeds"]) >= 2
        assert all(0 <= a <= 1 for accs in n["recall_by_distance"][kind] for a in accs)
        assert [v[2] for v in n["near_far_difference"][kind]] == pytest.approx(
            [near_minus_far(a)[2] for a in n["recall_by_distance"][kind]])
    results = md.split("## Results", 1)[1]
    assert results.lstrip().startswith("**How to read the speed verdict.**")  # the caveat leads the results
    assert "ONE CPU thread" in data["criterion"] and "batch 1" in data["criterion"]
    for fig in ("time_vs_length.png", "time_ratio_grid.png", "recall_vs_distance.png"):
        assert fig in md


def test_the_equal_view_is_measured_at_three_budgets():
    import inspect

    from redthread.experiments import sequential

    assert sequential.BUDGETS == (0.5, 1.0, 2.0) and inspect.signature(sequential.run).parameters["budget"].default == 1.0
