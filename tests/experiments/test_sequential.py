import torch

from redthread.experiments import one_thread
from redthread.experiments.report import HOLDS
from redthread.experiments.sequential import graph_depth


def test_graph_depth_counts_the_longest_chain():
    x = torch.ones(3, requires_grad=True)
    y = x
    for _ in range(5):  # a chain of 5 multiplications ...
        y = y * 2
    z = y + x.exp()  # ... beside a short branch, joined by one addition
    assert graph_depth(z.sum()) == 1 + 1 + 5 + 1  # sum, add, 5 muls, the leaf's AccumulateGrad


def test_one_thread_restores_the_setting():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_sequential_quick_verdict(quick_report):
    report, md, data, _ = quick_report("sequential")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    depth = n["graph_depth"]
    assert len(set(depth["Transformer"])) == 1  # the same chain at every length
    assert depth["RNN"][-1] > 50 * depth["Transformer"][-1]  # T = 1024 steps, each after the last
    # the wall-clock checks (time slope >= 0.8, speed-up >= 1.5) decide the verdict above with wide
    # margins (about 1.3 and 2.3 measured); they are not asserted again here
