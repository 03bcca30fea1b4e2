import inspect

import numpy as np

from redthread.experiments import ffn
from redthread.experiments.ffn import BUDGET, BUDGETS, GRID, RuleSource, best_rise


def test_rule_source_follows_its_table():
    source = RuleSource(p=1.0, seed=0)
    seqs = source.sample(50, 20, seed=1)
    assert (seqs[:, 5:] == source.table[seqs[:, 3:-2], seqs[:, :-5]]).all()
    assert np.allclose(source.log_probs(seqs)[:, 5:], 0.0)  # a rule that always applies is certain


def test_best_rise_picks_the_kind():
    rises = {"attention 0": 0.5, "FFN 0": 0.1, "attention 1": -0.2, "FFN 1": 0.3}
    assert best_rise(rises, "attention") == 0.5 and best_rise(rises, "FFN") == 0.3


def test_ffn_quick_report(quick_report):
    report, md, data, out = quick_report("ffn")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"attention_lost", "ffn_lost", "context_by_attention", "rule_by_ffn"}
    assert {c["part"] for c in data["checks"]} == {"attention aggregates", "FFN processes"}
    assert all(len(c["seeds"]) >= 2 for c in data["checks"])
    n = data["numbers"]
    assert len(n["seeds"]) >= 2 and len(n["nll_lost"]["every FFN"]) == len(n["seeds"])
    for acc in n["probe_accuracy"].values():
        assert len(acc) == len(n["probe_points"]) and all(0 <= a <= 1 for a in acc)
    assert all(b > 0 for b in n["bayes_rule_nll"])
    assert n["steps"] == BUDGET["quick_steps"] and data["tuning"] == []  # budget 1; nothing is tuned
    assert (out / "probes.png").exists() and (out / "ablation.png").exists()


def test_steps_scale_with_the_budget():
    assert GRID == {} and BUDGETS == (0.5, 1.0, 2.0) and "budget" in inspect.signature(ffn.run).parameters
    assert [ffn.training_steps(False, b) for b in BUDGETS] == [BUDGET["steps"] // 2, BUDGET["steps"], 2 * BUDGET["steps"]]
    assert ffn.training_steps(True, 1.0) == BUDGET["quick_steps"] and ffn.training_steps(False, 1e-6) == 1
