import numpy as np

from redthread.experiments.ffn import RuleSource
from redthread.experiments.report import HOLDS


def test_rule_source_follows_its_table():
    source = RuleSource(p=1.0, seed=0)
    seqs = source.sample(50, 20, seed=1)
    assert (seqs[:, 5:] == source.table[seqs[:, 3:-2], seqs[:, :-5]]).all()
    assert np.allclose(source.log_probs(seqs)[:, 5:], 0.0)  # a rule that always applies is certain


def test_ffn_quick_verdict(quick_report):
    report, md, data, _ = quick_report("ffn")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    assert n["nll_lost"]["every attention sublayer"] >= 0.5 and n["nll_lost"]["every FFN"] >= 0.5
    rule = n["probe_accuracy"]["f (rule output)"]
    assert rule[0] < 0.2 and rule[-1] > 0.9  # unreadable from the embedding, readable at the end
    assert n["context_accuracy"][1] > 0.9  # the context tokens are gathered by the first attention sublayer
    assert max(n["rule_rise"], key=n["rule_rise"].get).startswith("FFN")
