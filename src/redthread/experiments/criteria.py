"""Every threshold an experiment decides a claim by, in one place, each with why that value.

A threshold is fixed before the measurement it judges and never taken from the result: its reason
is a theoretical bound, a chance level, or the noise floor measured on a control. Changing one is a
visible change to this file, with its reason in the commit.

    CRITERIA["scaling"]["gap"] = Criterion("C7", "the scale", "val NLL without 1/sqrt(d_k) minus with, nats",
                                           0.0, ABOVE, "any positive gap: the claim is that the scale helps")

`Report.check(name, values, seeds)` looks its criterion up here, computes the mean and 95% interval
over the seeds (`experiments/stats.py`) and the verdict: holds when the whole interval lies on the
`direction` side of `threshold`, does not hold when it lies on the other, inconclusive otherwise.
Each experiment's section below is its own; keep them in the order of `EXPERIMENTS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from redthread.errors import InvalidValue
from redthread.experiments.stats import ABOVE, BELOW  # noqa: F401 (the sections below use them)


@dataclass(frozen=True)
class Criterion:
    claim: str  # the claim this check tests: "C7"
    part: str  # which part of the claim, for a claim with several ("residuals", "LayerNorm"); "" for one part
    what: str  # the quantity measured, with its unit
    threshold: float
    direction: str  # ABOVE or BELOW: the side of the threshold the claim needs
    why: str  # why this value: a bound, a chance level, a control's noise floor; never the result


CRITERIA: dict[str, dict[str, Criterion]] = {}

# -- regression (C1) -------------------------------------------------------------------------------------------------

CRITERIA["regression"] = {
    # OLS is unbiased with covariance s^2 (X^T X)^-1, so E||y_hat - E[y|x]||^2 = s^2 (F + 1) / n: slope -1 in log-log.
    # A plateau (an estimator that does not converge to E[y|x]) gives a slope near 0; -0.5 is the root-n rate of a
    # slower estimator, and -1.5 would be faster than any unbiased estimator can be. Two one-sided checks.
    "slope_above": Criterion("C1", "E[y|x]", "log-log slope of error vs true E[y|x] against n", -1.5, ABOVE,
                             "theory gives -1 (error = s^2 (F+1)/n); below -1.5 would beat the Cramer-Rao rate"),
    "slope_below": Criterion("C1", "E[y|x]", "log-log slope of error vs true E[y|x] against n", -0.5, BELOW,
                             "theory gives -1; a fit that does not converge to E[y|x] plateaus (slope -> 0), -0.5 is "
                             "half-way in the exponent"),
    "coef_gap": Criterion("C1", "MSE = Gaussian likelihood", "max |coefficient, least squares - Gaussian likelihood "
                          "(fit_gd)| at n = 1000", 1e-3, BELOW,
                          "a tenth of the coefficients' own standard error at n = 1000 (s / (sqrt(n) sd(x)) = 0.014): "
                          "the two fits cannot be told apart at the data's precision"),
}

# -- attention-as-regression (C6) ------------------------------------------------------------------------------------

CRITERIA["attention-as-regression"] = {
    # Attention as Nadaraya-Watson regression against a fair baseline: k-nearest-neighbours, k chosen on validation
    # (a local average with a uniform kernel). Tuned, both reach the n^(-4/5) rate of a local average with constants
    # within 3% (kernel efficiencies 0.951 and 0.930, Silverman 1986 table 3.1), so theory puts the ratio near 1.
    "rmse_vs_knn": Criterion("C6", "recovers E[y|x]", "RMSE against E[y|x], attention (learned width) / k-NN (k tuned "
                             "on validation)", 1.25, BELOW,
                             "tuned, both are local averages at the same rate (ratio ~1 in theory); 1.25 is the RMSE "
                             "cost of a width off by a factor 1.5 (AMISE ~ h^4 + 1/(nh))"),
    "width_vs_best": Criterion("C6", "learned weighting", "RMSE against E[y|x] at the learned width / best width of a "
                               "sweep scored against the truth", 1.25, BELOW,
                               "AMISE ~ a h^4 + b/(nh): RMSE within 1.25 of the best means a width within about a "
                               "factor 1.5 of the optimum"),
}

# -- scaling (C7) ----------------------------------------------------------------------------------------------------

CRITERIA["scaling"] = {}

# -- rnn-gradients (C3) ----------------------------------------------------------------------------------------------

CRITERIA["rnn-gradients"] = {}

# -- long-range (C3, C5, C6) -----------------------------------------------------------------------------------------

CRITERIA["long-range"] = {}

# -- sequential (C4) -------------------------------------------------------------------------------------------------

CRITERIA["sequential"] = {}

# -- permutation (C8) ------------------------------------------------------------------------------------------------

CRITERIA["permutation"] = {
    # Exact properties (no randomness in them; decided on the largest error over the permutations tried).
    "equivariance_error": Criterion("C8", "order-blind", "max |f(x[perm]) - f(x)[perm]|, MultiHeadAttention and "
                                    "Encoder pos='none', float32", 1e-5, BELOW,
                                    "exactly 0 in real arithmetic; float32 reorders sums, errors ~1e-7..1e-6 on outputs "
                                    "of order 1"),
    "positions_break_symmetry": Criterion("C8", "positions inject order", "min |f(x[perm]) - f(x)[perm]|, Encoder "
                                          "pos='sinusoidal', float32", 1e-2, ABOVE,
                                          "a thousand times the float32 tolerance of the order-blind models"),
    # Name the first token: the multiset bound E[max_v count(v)] / T is the exact best expected accuracy of any
    # function of the multiset of tokens, so an order-blind model's accuracy minus it has mean <= 0.
    # A model that reaches the bound sits on it in expectation, so the margin is the validation set's own sampling
    # noise: two standard errors of an accuracy on 10000 sequences, 2 * 0.5 / sqrt(10000) = 0.01 at most.
    "blind_excess": Criterion("C8", "order-blind", "val accuracy without positions minus the multiset bound", 0.01,
                              BELOW, "the multiset bound is the best any order-blind model can reach in expectation; "
                              "0.01 = two standard errors of an accuracy on 10000 validation sequences"),
    "positions_excess": Criterion("C8", "positions inject order", "val accuracy with sinusoidal positions minus the "
                                  "multiset bound", 0.0, ABOVE,
                                  "beating the best order-blind accuracy takes information about order"),
}

# -- heads (C9) ------------------------------------------------------------------------------------------------------

CRITERIA["heads"] = {}

# -- ffn (C10) -------------------------------------------------------------------------------------------------------

CRITERIA["ffn"] = {
    # At the positions where the rule may apply, the context carries log V - H_rule nats per token, H_rule the entropy
    # of P(s_t | s_<t) = 0.8 [v = f] + 0.2 / 16: log 16 - 0.990 = 1.782 nats. A kind of sublayer the model needs for
    # the rule loses at least half of that when mean-ablated (0.89 nats); one it does not need loses little.
    "attention_lost": Criterion("C10", "attention aggregates", "val NLL lost at the rule's positions when every "
                                "attention sublayer is mean-ablated, nats", 0.89, ABOVE,
                                "half the information the context carries, (log 16 - H_rule) / 2 = 1.782 / 2"),
    "ffn_lost": Criterion("C10", "FFN processes", "val NLL lost at the rule's positions when every FFN is "
                          "mean-ablated, nats", 0.89, ABOVE,
                          "half the information the context carries, (log 16 - H_rule) / 2 = 1.782 / 2"),
    # Linear probes along the residual stream: which kind of sublayer makes a quantity linearly readable.
    "context_by_attention": Criterion("C10", "attention aggregates", "largest rise in the context tokens' probe "
                                      "accuracy across an attention sublayer minus across an FFN", 0.0, ABOVE,
                                      "the claim: gathering s_(t-2), s_(t-5) to position t is attention's work"),
    "rule_by_ffn": Criterion("C10", "FFN processes", "largest rise in the rule output's probe accuracy across an FFN "
                             "minus across an attention sublayer", 0.0, ABOVE,
                             "the claim: computing f(s_(t-2), s_(t-5)) from them is the FFN's work"),
}

# -- depth (C11) -----------------------------------------------------------------------------------------------------

CRITERIA["depth"] = {}

# -- sampling (C12) --------------------------------------------------------------------------------------------------

CRITERIA["sampling"] = {
    # The sampler draws from the distribution q its processors leave: then every drawn token's -log q minus H(q) is a
    # martingale difference of mean 0, and its standardised mean z per strategy is ~N(0, 1). Over the five drawn
    # strategies, mean z^2 is ~chi^2_5 / 5 (mean 1).
    "sampler_chi2": Criterion("C12", "generation samples P(next | context)", "mean over the 5 drawn strategies of z^2, "
                              "z = (mean NLL of the draws under q - mean entropy of q) / standard error", 3.02, BELOW,
                              "the 99% quantile of chi^2_5 / 5, what a correct sampler stays under"),
    # Exact: a property of the processed distribution at every step, nothing random in it.
    "top_p_mass": Criterion("C12", "top-p", "least model probability kept by top-p 0.9 at any step of any seed", 0.9 - 1e-6,
                            ABOVE, "top-p keeps the smallest set of tokens with mass >= p (Holtzman et al. 2019); "
                            "1e-6 of float32 rounding"),
    # Maximum likelihood over the logit scale beta sets d/dbeta = E_q[z] - E_data[z] = 0: at the optimum, the model is
    # as surprised by real text as by its own unaltered samples, and by no other strategy's.
    "temperature_one_closest": Criterion("C12", "training = maximum likelihood", "under the model, the smallest |NLL of "
                                         "another strategy's continuations - real ones'| minus temperature 1's, nats",
                                         0.0, ABOVE, "maximum likelihood ties temperature 1 to the data: it must be the "
                                         "closest to real text of all strategies"),
}

# -- calibration (C12) -----------------------------------------------------------------------------------------------

CRITERIA["calibration"] = {}

# -- coreference (C13) -----------------------------------------------------------------------------------------------

CRITERIA["coreference"] = {}

# -- classification (C2) ---------------------------------------------------------------------------------------------

CRITERIA["classification"] = {}

# -- memory (C5) -----------------------------------------------------------------------------------------------------

CRITERIA["memory"] = {}

# -- locality (C8) ---------------------------------------------------------------------------------------------------

CRITERIA["locality"] = {}

# -- ensemble (C9) ---------------------------------------------------------------------------------------------------

CRITERIA["ensemble"] = {}

# -- vision (C14) ----------------------------------------------------------------------------------------------------

CRITERIA["vision"] = {}


def criterion(experiment: str, name: str) -> Criterion:
    try:
        return CRITERIA[experiment][name]
    except KeyError:
        raise InvalidValue(f"no criterion {name!r} for experiment {experiment!r} in experiments/criteria.py") from None
