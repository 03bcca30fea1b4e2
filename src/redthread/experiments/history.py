"""The history of the pre-registered criteria: every change of a criterion made after a result had
been seen, with its date, what changed, the result that came before, and why.

A criterion may change; what must not happen is a silent change. Each experiment's criteria have a
fingerprint (`criteria.fingerprint`: its checks' names, quantities, floors and directions). The
fingerprint of an experiment's criteria today must equal the one its last history row records, or,
with no row, the one `REGISTERED` when the criteria were first declared here; a test checks both,
and that `REGISTERED` never changes in git. Changing a criterion therefore means adding a row.

Every report prints its experiment's rows and `criteria_commit`: the commit that recorded the
criteria's current fingerprint (from git where the install has its history).
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from redthread.experiments.criteria import CRITERIA, fingerprint


@dataclass(frozen=True)
class Change:
    date: str
    change: str  # what changed, in words
    before: str  # the result seen before the change
    reason: str
    fingerprint: str | None = None  # the criteria's fingerprint after this change (None: not recorded then)


_ZERO_FLOORS = ("Issue 24: no floor of 0 unless the claim is an exact identity; each floor is now the smallest effect "
                "size of interest, with its reason (most: 5% of a known gap or range). Set after the results before "
                "were known, and recorded here for that reason.")

# The fingerprints of the criteria as first declared in this file, for experiments with no history row.
REGISTERED = {
    "regression": "461d24bbc8c5",
    "attention-as-regression": "8a64800fa12c",
    "rnn-gradients": "fd1e48f8ff83",
    "sequential": "581845f621cd",
    "coreference": "9b94b8fda16c",
    "calibration": "a469e2e6d9b2",
    "referent": "9aa528519e59",
    "real-models": "a8b9d6519377",
    "poetry-heads": "f216e39de87d",  # declared before any trained result: only 25-step smoke runs existed
}

HISTORY: dict[str, list[Change]] = {
    "scaling": [
        Change("2026-12-02", "gap: floor 0 -> 0.1 nats (5% of log 16 minus the Bayes limit)",
               "gap 0.155 [0.087, 0.223] nats, holds (docs/experiments, seed 0)", _ZERO_FLOORS, "1934e5fd3846"),
    ],
    "long-range": [
        Change("2026-12-02", "rnn_drop, lstm_drop, rnn_gap, lstm_gap: floor 0 -> 0.047 accuracy (5% of chance to "
               "perfect); accuracies' intervals clipped to their range",
               "rnn_drop 0.938, lstm_drop 0.739, rnn_gap 0.75 [0.229, 1.27], lstm_gap 0.716 [0.199, 1.23]: all hold",
               _ZERO_FLOORS, "ba00cf6cc073"),
    ],
    "sequential": [
        Change("2026-12-01", "the speed check moved from a batch of 4 sequences to one sequence of N tokens (commit "
               "ef0dec1)", "at batch 4 the RNN was faster than the Transformer: the speed check did not hold",
               "recorded by issue 24's audit: the commit gave the new design but not that the old check had failed"),
        Change("2026-12-02", "new checks: grid_share_rnn_slower (speed: share of the batch x length grid's cells where "
               "nn.RNN is slower, > 0.5); equal view, a new part: transformer_flat (near minus far recall within "
               "±0.05, TOST), transformer_far_recall (> 1/16, chance), rnn_decay (near minus far > 0.047, 5% of "
               "chance to perfect); serial_penalty and long_sequence_time_ratio unchanged, their reasons now state "
               "one CPU thread at batch 1",
               "previous protocol, one seed set: dependency-chain slopes 0.952, 0.932 and 0 hold; serial_penalty 1.851 "
               "[1.834, 1.868] and long_sequence_time_ratio 1.424 [1.389, 1.458] hold; a re-run measured 3.40 and "
               "1.86 [1.76, 1.96] (issue 24's audit)",
               "issue 24's audit: the speed bar had moved from batch 4 to batch 1 after the RNN was faster at batch 4, "
               "and the timings did not reproduce between runs; the speed verdict now carries its one-thread, "
               "batch-1 caveat and a grid-level check (its floor set knowing the old batch-4 result), and the claim's "
               "'equal view' half, untested before, gets its own checks", "a3c2a1832fe3"),
    ],
    "permutation": [
        Change("2026-12-01", "blind_excess: threshold 0 -> 0.01 (commit 6f73e84)",
               "the order-blind arm sits on the multiset bound, so its interval straddled 0 and the check could not "
               "hold", "a model that reaches the bound sits on it in expectation: the margin is the validation set's "
               "sampling noise (two standard errors on 10000 sequences)"),
        Change("2026-12-02", "positions_excess: floor 0 -> 0.01 (the same two standard errors)",
               "positions_excess 0.743 [0.742, 0.743], holds", _ZERO_FLOORS, "54c540d259ab"),
    ],
    "heads": [
        Change("2026-12-02", "specialisation 0 -> 0.05; dissociation_near, dissociation_far 0 -> 0.04 nats; "
               "several_heads 0 -> 0.08 nats",
               "specialisation 0.995, dissociation 3.03 and 3.32 nats, several_heads 0.351 [0.174, 0.528]: all hold",
               _ZERO_FLOORS, "9102960bf57f"),
    ],
    "ffn": [
        Change("2026-12-02", "context_by_attention, rule_by_ffn: floor 0 -> 0.047 probe accuracy",
               "context_by_attention 0.832 [0.574, 1.09], rule_by_ffn 0.358 [0.245, 0.472]: both hold",
               _ZERO_FLOORS, "41a20f7a4cb4"),
    ],
    "depth": [
        Change("2026-12-01", "the gradient-ratio check (gradient flow) dropped; the LayerNorm bar lowered from a gap of "
               "0.05 nats to > 0; a stress regime (depth 24, d_model 48, no gradient clipping, larger rates) built for "
               "the LayerNorm comparison (commit be779ad)",
               "at 2f7ac49: LayerNorm gap 0.046 nats < 0.05 (did not hold); the gradient-ratio check missed its bar",
               "recorded by issue 24's audit: the commit gave the new design's reasons, not that the old checks had "
               "failed"),
        Change("2026-12-02", "residual_gap, layernorm_gap: floor 0 -> 0.04 nats (5% of the unigram-to-Bayes gap)",
               "residual_gap 0.684 [0.574, 0.795], layernorm_gap 0.216 [0.040, 0.393]: both hold",
               _ZERO_FLOORS, "d20d502c61e5"),
        Change("2026-12-02", "gradient flow restored as a third part, eight checks at the residuals part's depth (8): "
               "log10(first block's gradient norm / last block's) per seed, within ±1 (TOST) with residual "
               "connections (residual + LayerNorm, residual only) and |log10 ratio| > 1 without (LayerNorm only, "
               "neither), at initialisation and during training (the least favourable of the checkpoints at 25%, "
               "50%, 100% of the steps); all four variants tuned on the tuning seed and trained in that regime",
               "last full run (one seed set, previous protocol): every check held; the first/last gradient ratio at "
               "initialisation, depth 8, seed 0 (reported, not checked): residual + LayerNorm 1.15, residual only "
               "1.00, LayerNorm only 2.62, neither 0.036. The dropped check (at 2f7ac49: within 10x with both, "
               "beyond 100x without residuals, depth 24, one seed) missed its bar: LayerNorm only 0.080, neither "
               "0.00083",
               "issue 24's audit: the gradient-flow half of C11 was dropped after it failed; restored with per-seed "
               "intervals and a floor from a stated reason (one order of magnitude). The line for the no-residual "
               "variants is now 10x, not the old 100x, set knowing the earlier values above; at depth 8 the last "
               "run's LayerNorm-only value (log10 +0.42) lies inside the band, so the change does not favour the "
               "claim there", "fad6a5655290"),
    ],
    "sampling": [
        Change("2026-12-02", "temperature_one_closest: floor 0 -> 0.02 nats",
               "0.131 [0.098, 0.164] nats, holds", _ZERO_FLOORS, "88271066d2dc"),
    ],
    "calibration": [
        Change("2026-12-01", "the rungs judged became well-trained bigram, MLP and Transformer on a Markov source, "
               "ECE in units of a calibrated control's noise floor, threshold 2 kept (commit 47b20f6)",
               "not recorded in the repository", "recorded by issue 24's audit"),
        Change("2026-12-02", "ece_bigram, ece_mlp, ece_transformer (top-1 ECE in units of a calibrated control's ECE, "
               "below 2) replaced by a path of training (a 1-layer Transformer at 100, 300 and 1000 steps, one learning "
               "rate tuned at 1000 steps on the tuning seed): gap_falls (ECE gap = ECE minus the control's at the same "
               "positions; at 100 steps minus at 1000 > 0.005), gap_small (gap at 1000 steps < 0.01), temperature "
               "(|log T| < 0.05, T fitted on validation at 1000 steps); the bigram and MLP rungs dropped",
               "previous protocol, seed 0: ece_bigram 1.75 [0.87, 2.63] inconclusive, ece_mlp 2.90 [1.69, 4.12] "
               "inconclusive, ece_transformer 3.04 [2.21, 3.88] does not hold; a re-run gave the Transformer 3.38 "
               "[1.57, 5.19] (inconclusive)",
               "issue 24's audit: the ratio's bar (2 x the control's ECE) tightens as 1/sqrt(N) with the test size "
               "alone, its verdict flipped on floating-point noise between runs, and it tracked under-fitting (excess "
               "NLL 0.001 / 0.012 / 0.032 against ratios 1.75 / 2.90 / 3.04); temperature scaling (T = 1.017) left it "
               "at 2.7. C12 is a statement about maximum likelihood, so it is now measured along the likelihood's "
               "path, with bars in probability that do not move with N", "9a6a56524c70"),
    ],
    "coreference": [],
    "classification": [
        Change("2026-12-02", "kl_slope_softmax, kl_slope_mlp: floor 0 -> -0.5 (half the well-specified rate, -1); "
               "ece_excess_softmax, ece_excess_mlp: floor 0 -> 0.01 (one point of probability)",
               "slopes -1.08 [-1.36, -0.80] and -0.88 [-0.99, -0.77] hold; ECE excess -0.0084 [-0.0137, -0.0032] "
               "holds, 0.0011 [-0.0072, 0.0095] inconclusive", _ZERO_FLOORS, "b816ec76d61d"),
    ],
    "memory": [
        Change("2026-12-02", "every check: floor 0 -> 0.11 nats (5% of the information a copied item carries)",
               "all twelve hold, the smallest 0.565 [0.384, 0.746] nats (gru_state_vs_transformer)",
               _ZERO_FLOORS, "7ea9adf641d1"),
    ],
    "locality": [
        Change("2026-12-02", "control: the same model with no positions replaces the same model trained on shuffled "
               "text; floor 0 -> 0.05 of attention mass",
               "every check held (sinusoidal +0.024 [0.016, 0.032] plays, +0.078 [0.046, 0.109] Markov), but a model "
               "with no positions passed the same check (0.025 [0.014, 0.037], 0.077 [0.026, 0.128]): it could not "
               "fail for the claim's reason",
               "issue 24: the shuffled-text control answers another question than the claim's (positions inject a "
               "locality prior); " + _ZERO_FLOORS, "898e8f8c0672"),
    ],
    "ensemble": [
        Change("2026-12-02", "disagreement: floor 0 -> -0.035 nats (a non-inferiority margin, 5% of log 2); "
               "removal_1, removal_2: 0 -> 0.02 nats (non-inferiority)",
               "disagreement 0.027 [-0.022, 0.077] inconclusive; removal 0.046 [0.034, 0.058] and 0.061 [0.046, 0.076] "
               "do not hold", _ZERO_FLOORS, "13c511cab539"),
    ],
    "vision": [
        Change("2026-12-02", "vit_nll_below_linear 0 -> 0.115 nats (5% of log 10); order drops 0 -> 0.045; "
               "grounding_gain 0 -> 0.05; vit_ece_excess 0 -> 0.01",
               "vit_nll_below_linear -0.030 [-0.077, 0.017] inconclusive; order drops 0.857 and 0.843 hold; grounding "
               "0.215 [0.115, 0.316] holds; vit_ece_excess -0.0047 [-0.0165, 0.0071] inconclusive",
               _ZERO_FLOORS, "0b8165a23f7a"),
    ],
    "real-models": [
        Change("2026-12-02", "tier (c) added: a larger model (4 layers, 4 heads, d_model 128, context 128, rotary "
               "positions, the speedrun recipe, 30 minutes of one CPU thread, one model per seed set), checks "
               "near_large (near mass minus the uniform causal level > 0.05), previous_large, word_start_large, "
               "dissociation_large (> 0.05), identity_large (> 0.5), calibration_large (ECE gap < 0.01), each over "
               "groups of scoring windows",
               "no full run of real-models under the replication protocol yet; quick runs only (smoke, no verdict)",
               "issue 24, item 6 asks for a larger model trained on the plays within a stated CPU budget; added before "
               "any full run", "13a7ec12513f"),
    ],
}


def history_of(experiment: str) -> list[dict]:
    return [asdict(c) for c in HISTORY.get(experiment, [])]


def recorded_fingerprint(experiment: str) -> str | None:
    """The fingerprint the history says the experiment's criteria have now."""
    for change in reversed(HISTORY.get(experiment, [])):
        if change.fingerprint:
            return change.fingerprint
    return REGISTERED.get(experiment)


def criteria_commit(experiment: str) -> str:
    """The commit that recorded the criteria's current fingerprint in this file, from git; else the fingerprint."""
    try:
        fp = fingerprint(CRITERIA[experiment])
    except (KeyError, ValueError):  # an experiment of one's own without CRITERIA
        return "no pre-registered criteria"
    here = Path(__file__)
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h %ad", "--date=short", f"-S{fp}", "--", here.name],
                             cwd=here.parent, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        out = None
    if out is not None and out.returncode == 0 and out.stdout.strip():
        return f"{out.stdout.strip()} (criteria fingerprint {fp})"
    return f"criteria fingerprint {fp} (no git history here to name its commit)"


def code_commit() -> str:
    """The commit the experiments' code was run at ("-dirty": with changes not committed), from git; else "unknown"."""
    here = Path(__file__)
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=here.parent,
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def commit_of(report: dict) -> str:
    """The short form of the commit a report's code ran at (its numbers.code_commit, written from code_commit()):
    seven hex digits, "-dirty" kept; "—" for a report from before commits were recorded."""
    commit = report.get("numbers", {}).get("code_commit") or "—"
    if commit in ("—", "unknown"):
        return commit
    return commit.split("-")[0][:7] + ("-dirty" if commit.endswith("-dirty") else "")
