from redthread.experiments.heads import FAR, NEAR, TwoLagSource
from redthread.experiments.report import HOLDS


def test_two_lag_source_bayes_nll_matches_sampling_rule():
    source = TwoLagSource(seed=0)
    seqs = source.sample(200, 20, seed=1)
    logp = source.log_probs(seqs)
    assert logp.shape == seqs.shape and (logp <= 0).all()
    # each conditional is a distribution: summing P(v | s_<t) over v gives 1 at every position
    t = FAR + 3
    total = sum(((source.p_near * (v == seqs[:, t - NEAR]) + source.p_far * (v == source.perm[seqs[:, t - FAR]]))
                 + (1 - source.p_near - source.p_far) / source.vocab_size) for v in range(source.vocab_size))
    assert abs(total - 1).max() < 1e-12


def test_heads_quick_verdict(quick_report):
    report, md, data, _ = quick_report("heads")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    assert n["near_heads"] and n["far_heads"] and not set(n["near_heads"]) & set(n["far_heads"])
    near = n["ablation_groups"][f"lag-{NEAR} heads {n['near_heads']}"]
    far = n["ablation_groups"][f"lag-{FAR} heads {n['far_heads']}"]
    assert near["near"] >= 0.5 and far["far"] >= 0.5
    assert near["far"] < near["near"] / 3 and far["near"] < far["far"] / 3
    assert n["val_nll"]["1_head"] - n["val_nll"]["4_heads"] >= 0.1
    assert 0 < n["excess_nll"]["4_heads"] < 0.5
