import numpy as np
import torch

from redthread.experiments import one_thread
from redthread.experiments.sequential import D_EMBED, D_HIDDEN, VOCAB, FusedRNN, graph_depth, slope
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


def test_sequential_quick_structure(quick_report):
    report, md, data, _ = quick_report("sequential")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"rnn_depth_slope", "fused_rnn_depth_slope", "transformer_depth_slope", "serial_penalty",
                           "long_sequence_time_ratio"}
    assert set(data["parts"]) == {"sequential steps", "speed"}
    for name in ("rnn_depth_slope", "fused_rnn_depth_slope", "transformer_depth_slope"):  # exact counts
        assert checks[name]["part"] == "sequential steps" and checks[name]["interval"] is None
    for name in ("serial_penalty", "long_sequence_time_ratio"):  # timed over repeats
        assert checks[name]["part"] == "speed" and len(checks[name]["seeds"]) >= 2
    n = data["numbers"]
    assert all(B * T == n["n_tokens"] for B, T in n["shapes"])  # the same work at every length
    assert set(n["graph_depth"]) == {"Transformer", "RNN (nn.RNN)", "RNN (project)"}
    assert all(d > 0 for v in n["graph_depth"].values() for d in v)
    assert all(len(v) == len(n["lengths"]) and all(len(r) >= 2 for r in v) and min(map(min, v)) > 0
               for v in n["ms_per_repeat"].values())
    assert "time_vs_length.png" in md
