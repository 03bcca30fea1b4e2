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

S_KEYS_SCALING, N_DRAWS_SCALING = 32, 20000  # keys per softmax, draws of q and k per d_k (experiments/scaling.py)
UNIFORM_JACOBIAN = (S_KEYS_SCALING - 1) ** 0.5 / S_KEYS_SCALING  # ‖diag(p) − p pᵀ‖_F at p uniform over S keys
CRITERIA["scaling"] = {
    "variance": Criterion(
        "C7", "variance", "largest |Var(q·k) / d_k − 1| over d_k ∈ {4, …, 1024}, q, k ~ N(0, I), 20000 draws per seed",
        4 * (3.5 / N_DRAWS_SCALING) ** 0.5, BELOW,
        "four standard errors of a sample variance: for Gaussian q, k, Var((q·k)²) = 2d_k² + 6d_k, so Var(q·k) / d_k "
        "from N = 20000 draws has standard error √((2 + 6/d_k) / N) ≤ 0.0132 (at d_k = 4); a larger deviation means "
        "Var(q·k) ≠ d_k"),
    "one_hot": Criterion(
        "C7", "saturation", "mean largest softmax weight over 32 keys without the scale, d_k = 1024",
        (1 + 1 / S_KEYS_SCALING) / 2, ABOVE,
        "half-way between the uniform softmax's largest weight (1/32) and one-hot (1): closer to one-hot"),
    "jacobian_unscaled": Criterion(
        "C7", "saturation", "mean ‖∂softmax/∂scores‖_F without the scale, d_k = 1024",
        UNIFORM_JACOBIAN / 2, BELOW,
        "half the uniform softmax's Jacobian norm √(S − 1)/S = 0.174 (S = 32); a one-hot softmax's is 0: closer to "
        "a vanished gradient than to the uniform's"),
    "jacobian_scaled": Criterion(
        "C7", "saturation", "mean ‖∂softmax/∂scores‖_F with the scale 1/√d_k, d_k = 1024",
        UNIFORM_JACOBIAN / 2, ABOVE,
        "the same half-way point between one-hot (0) and uniform (0.174): with the scale the gradient through the "
        "softmax stays nearer the uniform's"),
    "scaled_trains": Criterion(
        "C7", "trainability", "fraction of the gap from log 16 (no attention) to the Bayes limit the scaled model "
        "closes on the test split", 0.5, ABOVE,
        "half-way between the best model without attention (0) and the Bayes limit (1): the scaled model is trainable"),
    "gap": Criterion(
        "C7", "trainability", "test NLL without the scale minus with, each arm at its own learning rate picked on "
        "validation, nats/token", 0.0, ABOVE,
        "any positive gap: the claim is that the scale helps (the 95% interval over seeds carries the seed-to-seed "
        "noise of training)"),
}

# -- rnn-gradients (C3) ----------------------------------------------------------------------------------------------

CRITERIA["rnn-gradients"] = {
    # log10 of retention ||J(K)|| / ||J(1)|| over K = 100 steps, per seed (a model's initialisation and its sequences)
    "rnn_vanishes": Criterion(
        "C3", "", "log10 retention over 100 steps, tanh RNN with spectral radius 0.5", -3.0,
        BELOW, "vanished: three orders of magnitude, the gradient from 100 steps back under 0.1% of the one from 1 step "
               "back (the bound rho^k allows 0.5^99 ~ 1e-30; the threshold is the definition, not the bound)"),
    "rnn_explodes": Criterion(
        "C3", "", "log10 retention over 100 steps, tanh RNN with spectral radius 2", 3.0,
        ABOVE, "exploded: three orders of magnitude up, the mirror of the vanishing threshold"),
    "lstm_keeps_above": Criterion(
        "C3", "", "log10 retention over 100 steps, LSTM with chrono forget-gate biases", -2.0,
        ABOVE, "kept: within two orders of magnitude, short of the three that define vanishing, so the two "
               "definitions cannot both hold"),
    "lstm_keeps_below": Criterion(
        "C3", "", "log10 retention over 100 steps, LSTM with chrono forget-gate biases", 2.0,
        BELOW, "kept: within two orders of magnitude, short of the three that define exploding"),
    "transformer_flat": Criterion(
        "C3", "", "log10 of the Transformer's max / min ||J(k)|| over k = 1..100", 1.0,
        BELOW, "one order of magnitude over 100 steps, a third of the three that define vanishing or exploding; "
               "the claim is a path of constant length, no geometric change"),
}

# -- long-range (C3, C5, C6) -----------------------------------------------------------------------------------------

_RECALL_CHANCE = 1 / 16  # RecallSource(vocab_size=16): s_(t-L) is uniform and independent of the tokens between
_ATTENTION, _RECURRENT = "attention reaches any distance (C6)", "recurrent models lose long-range recall (C3, C5)"
CRITERIA["long-range"] = {
    "transformer_longest": Criterion(
        "C6", _ATTENTION, "Transformer's test recall accuracy at the longest distance", _RECALL_CHANCE, ABOVE,
        "chance, 1/V for V = 16: a model that has not reached back L positions names s_(t-L) with probability 1/V"),
    **{f"{m.lower()}_drop": Criterion(
        "C3", _RECURRENT, f"{m}'s test recall accuracy at the shortest distance minus at the longest", 0.0, ABOVE,
        "zero: the claim is that recall gets harder with distance, so any fall beyond seed noise")
       for m in ("RNN", "LSTM")},
    **{f"{m.lower()}_gap": Criterion(
        "C3", _RECURRENT, f"Transformer's minus {m}'s test recall accuracy at the longest distance (same seed)", 0.0,
        ABOVE, "zero: the claim is that the distance the Transformer bridges defeats the recurrent model, each tuned "
        "on validation")
       for m in ("RNN", "LSTM")},
}

# -- sequential (C4) -------------------------------------------------------------------------------------------------

CRITERIA["sequential"] = {
    # the dependent steps: the longest chain of autograd operations against T, with B*T tokens fixed (exact counts)
    "rnn_depth_slope": Criterion(
        "C4", "sequential steps", "log-log slope of the RNN's longest chain of dependent operations against T", 0.5,
        ABOVE, "a chain that grows as T has slope 1, a constant one slope 0; 0.5 is halfway between the two"),
    "fused_rnn_depth_slope": Criterion(
        "C4", "sequential steps", "the same slope for torch's nn.RNN (its CPU kernel)", 0.5,
        ABOVE, "a chain that grows as T has slope 1, a constant one slope 0; 0.5 is halfway between the two"),
    "transformer_depth_slope": Criterion(
        "C4", "sequential steps", "the same slope for the Transformer", 0.5,
        BELOW, "a chain that grows as T has slope 1, a constant one slope 0; 0.5 is halfway between the two"),
    # the speed: wall-clock over repeats (one thread)
    "serial_penalty": Criterion(
        "C4", "speed", "nn.RNN's time for one sequence of N tokens over its time for N/16 sequences of 16, divided by "
        "the same ratio for the Transformer", 1.0,
        ABOVE, "1: the long chain costs the RNN no more than the long sequence costs the Transformer (whose attention "
        "does more work on it, which leans against the claim)"),
    "long_sequence_time_ratio": Criterion(
        "C4", "speed", "nn.RNN's forward + backward time over the Transformer's, one sequence of N tokens", 1.0,
        ABOVE, "1: parity; a bottleneck means the RNN of the same size is slower than the Transformer"),
}

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

CRITERIA["heads"] = {
    "specialisation": Criterion(
        "C9", "specialisation",
        "for the lag each head serves least well, the best head's weight on that lag's key minus on the other lag's, "
        "trained minus untrained (the same seed's initial model)",
        0.0, ABOVE,
        "the untrained model of the same seed gives what the best of the heads shows by chance; the claim needs, for "
        "both lags, a head that favours that lag's key over the other's beyond it"),
    "dissociation_near": Criterion(
        "C9", "ablation",
        "mean-ablating the most lag-2-specialised head: NLL lost on positions only lag 2 explains minus on those only "
        "lag 6 explains, nats",
        0.0, ABOVE,
        "a head that served both dependencies alike would cost the same on both kinds of position: the claim needs "
        "more on its own (a difference, which can be negative, never a ratio)"),
    "dissociation_far": Criterion(
        "C9", "ablation",
        "mean-ablating the most lag-6-specialised head: NLL lost on positions only lag 6 explains minus on those only "
        "lag 2 explains, nats",
        0.0, ABOVE,
        "a head that served both dependencies alike would cost the same on both kinds of position: the claim needs "
        "more on its own (a difference, which can be negative, never a ratio)"),
    "several_heads": Criterion(
        "C9", "several heads",
        "val NLL of one head of the full width minus that of four heads, each at its own learning rate, nats",
        0.0, ABOVE,
        "any positive gap: the claim is that several heads do better than one of the same width"),
}

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

CRITERIA["depth"] = {
    "residual_trains": Criterion(
        "C11", "residuals", "fraction of the unigram-to-Bayes gap the deep residual + LayerNorm stack closes on the "
        "test split", 0.5, ABOVE,
        "half-way between the unigram NLL (no context used: 0) and the Bayes limit (1): the deep stack is trainable"),
    "residual_gap": Criterion(
        "C11", "residuals", "test NLL without residual connections (LayerNorm only) minus with (residual + LayerNorm), "
        "same depth, each arm at its own learning rate picked on validation, nats/token", 0.0, ABOVE,
        "any positive gap: the claim is that residual connections help (the 95% interval over seeds carries the "
        "seed-to-seed noise of training)"),
    "identity_residual": Criterion(
        "C11", "residuals", "share of the variance of the last block's output vectors explained by the current token, "
        "residual + LayerNorm, at initialisation", 0.5, ABOVE,
        "half-way between total collapse (0: nothing of the token is left) and vectors that are a function of the "
        "token alone (1): the token's identity reaches the head"),
    "identity_no_residual": Criterion(
        "C11", "residuals", "the same share without residual connections (LayerNorm only), at initialisation",
        0.5, BELOW,
        "the same half-way point: without residual connections the token's identity is mostly lost on the way up "
        "(rank collapse, Dong et al. 2021)"),
    "layernorm_gap": Criterion(
        "C11", "LayerNorm", "test NLL without LayerNorm (residual only) minus with (residual + LayerNorm) in the "
        "stress regime (deeper, wider, no gradient clipping, larger learning rates in the sweep), each arm at its own "
        "learning rate picked on validation, nats/token", 0.0, ABOVE,
        "any positive gap: the claim is that LayerNorm helps (the 95% interval over seeds carries the seed-to-seed "
        "noise of training)"),
}

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

_NOISE_FLOOR = (
    "the noise floor, measured on a control: the same model scored on labels drawn from its own predicted distribution "
    "at the same positions is perfectly calibrated by construction, yet its ECE is not zero (finite bins of finite "
    "counts); its mean over draws is the floor (1 in this unit). A calibrated model's ECE scatters around the floor, so "
    "twice the floor is where the miscalibration itself becomes as large as the noise it is measured with"
)
CRITERIA["calibration"] = {
    f"ece_{key}": Criterion("C12", part, f"the {part}'s top-1 ECE on held-out positions, in units of the noise floor "
                            "(its ECE on labels drawn from its own prediction)", 2.0, BELOW, _NOISE_FLOOR)
    for key, part in (("bigram", "bigram"), ("mlp", "MLP"), ("transformer", "Transformer"))
}

# -- coreference (C13) -----------------------------------------------------------------------------------------------

CRITERIA["coreference"] = {
    "pick_mean": Criterion(
        "C13", "mean over heads", "share of a pair's two texts where the pronoun's mean weight over all heads is larger "
        "on its referent than on the other candidate (mean over pairs)", 0.5, ABOVE,
        "chance: a weight blind to the word that switches the referent picks the same candidate in both texts of a "
        "pair and is right in exactly one; a coin per text is right in half on average"),
    "flip_mean": Criterion(
        "C13", "mean over heads", "share of pairs where the pronoun's mean weight over all heads favours the referent "
        "in both texts (the favourite flips with the referent)", 0.25, ABOVE,
        "chance: if each text's favourite is drawn independently of the referent, first candidate with any probability "
        "p, both texts come out right with probability p(1 - p) <= 1/4; a weight blind to the switching word flips "
        "in none"),
    "pick_head": Criterion(
        "C13", "best head (held out)", "share of a pair's two texts where one head's weight is larger on the referent "
        "than on the other candidate, the head chosen on the other half of the pairs (largest mean margin there)",
        0.5, ABOVE, "chance, as for the mean over heads: the head is chosen without the pairs it is scored on"),
    "flip_head": Criterion(
        "C13", "best head (held out)", "share of pairs where the head chosen on the other half of the pairs favours "
        "the referent in both texts", 0.25, ABOVE,
        "chance, as for the mean over heads: p(1 - p) <= 1/4 for a head whose favourite ignores the referent"),
}

# -- classification (C2) ---------------------------------------------------------------------------------------------

CRITERIA["classification"] = {
    "kl_slope_softmax": Criterion(
        "C2", "known posterior, softmax regression", "slope of log KL(true posterior || learned) against log n", 0.0, BELOW,
        "any fall: a softmax layer that estimates P(class | x) converges to it as n grows (theory for this well-specified "
        "model: about -1); one that does not stalls at a KL floor (slope 0)"),
    "kl_slope_mlp": Criterion(
        "C2", "known posterior, MLP", "slope of log KL(true posterior || learned) against log n", 0.0, BELOW,
        "any fall: a softmax layer that estimates P(class | x) converges to it as n grows; slope 0 is no convergence"),
    "ece_excess_softmax": Criterion(
        "C2", "calibration, softmax regression", "test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.0, BELOW, "the noise floor measured on a control: labels drawn from the model's own probabilities, same images"),
    "ece_excess_mlp": Criterion(
        "C2", "calibration, MLP", "test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.0, BELOW, "the noise floor measured on a control: labels drawn from the model's own probabilities, same images"),
}

# -- memory (C5) -----------------------------------------------------------------------------------------------------

_STATE, _LOAD = "state size", "load"
CRITERIA["memory"] = {}
for _m in ("RNN", "LSTM", "GRU"):
    CRITERIA["memory"].update({
        f"{_m.lower()}_state": Criterion(
            "C5", _STATE, f"{_m}'s test excess NLL at the smallest state minus at the largest (highest load), nats",
            0.0, ABOVE, "zero: the claim is that a smaller state loses more of the past, so any rise beyond seed noise"),
        f"{_m.lower()}_state_vs_transformer": Criterion(
            "C5", _STATE, f"that rise for the {_m} minus the same rise for the parameter-matched Transformers, nats",
            0.0, ABOVE, "zero: a Transformer keeps its whole window, so shrinking it should cost it less than "
            "shrinking a recurrent state; without this control the rise could be a plain effect of model size"),
        f"{_m.lower()}_load": Criterion(
            "C5", _LOAD, f"{_m}'s test excess NLL at the highest load minus at the lowest (smallest state), nats",
            0.0, ABOVE, "zero: the claim is that a fixed state loses detail as more must be held, so any rise beyond "
            "seed noise"),
        f"{_m.lower()}_load_vs_transformer": Criterion(
            "C5", _LOAD, f"that rise for the {_m} minus the same rise for the matched Transformer, nats",
            0.0, ABOVE, "zero: the Transformer's window holds every item, so a harder task alone should raise its "
            "excess less; without this control the rise could be the task's difficulty, not the state"),
    })

# -- locality (C8) ---------------------------------------------------------------------------------------------------

CRITERIA["locality"] = {
    "near_plays_sinusoidal": Criterion(
        "C8", "sinusoidal (the paper)",
        "mean attention mass on the 3 nearest keys (the character itself and the two before it), Shakespeare's characters, trained on ordered text minus the same model trained on shuffled text",
        0.0, ABOVE,
        "the shuffled-text control (same seed, same training) measures the nearby mass that arises with no order "
        "statistics (causal mask, architecture, chance); the claim needs more than that"),
    "near_markov_sinusoidal": Criterion(
        "C8", "sinusoidal (the paper)",
        "mean attention mass on the 2 nearest keys (the dependency range of an order-2 Markov source), trained on ordered text minus the same model trained on shuffled text",
        0.0, ABOVE,
        "the shuffled-text control (same seed, same training) measures the nearby mass that arises with no order "
        "statistics (causal mask, architecture, chance); the claim needs more than that"),
    "near_plays_learned": Criterion(
        "C8", "learned",
        "mean attention mass on the 3 nearest keys (the character itself and the two before it), Shakespeare's characters, trained on ordered text minus the same model trained on shuffled text",
        0.0, ABOVE,
        "the shuffled-text control (same seed, same training) measures the nearby mass that arises with no order "
        "statistics (causal mask, architecture, chance); the claim needs more than that"),
    "near_markov_learned": Criterion(
        "C8", "learned",
        "mean attention mass on the 2 nearest keys (the dependency range of an order-2 Markov source), trained on ordered text minus the same model trained on shuffled text",
        0.0, ABOVE,
        "the shuffled-text control (same seed, same training) measures the nearby mass that arises with no order "
        "statistics (causal mask, architecture, chance); the claim needs more than that"),
    "near_plays_rope": Criterion(
        "C8", "rotary",
        "mean attention mass on the 3 nearest keys (the character itself and the two before it), Shakespeare's characters, trained on ordered text minus the same model trained on shuffled text",
        0.0, ABOVE,
        "the shuffled-text control (same seed, same training) measures the nearby mass that arises with no order "
        "statistics (causal mask, architecture, chance); the claim needs more than that"),
    "near_markov_rope": Criterion(
        "C8", "rotary",
        "mean attention mass on the 2 nearest keys (the dependency range of an order-2 Markov source), trained on ordered text minus the same model trained on shuffled text",
        0.0, ABOVE,
        "the shuffled-text control (same seed, same training) measures the nearby mass that arises with no order "
        "statistics (causal mask, architecture, chance); the claim needs more than that"),
}

# -- ensemble (C9) ---------------------------------------------------------------------------------------------------

CRITERIA["ensemble"] = {
    "disagreement": Criterion(
        "C9", "disagreement",
        "mean pairwise Jensen-Shannon divergence between the attention rows of two heads of one model, minus between "
        "heads of two models trained apart (the next seed's), nats",
        0.0, ABOVE,
        "heads of separately trained models are the members of a true ensemble: heads of one model are as diverse "
        "as an ensemble's members when they disagree at least as much"),
    "removal_1": Criterion(
        "C9", "graceful loss",
        "val NLL lost by mean-ablating 1 head minus by mean-ablating the same number of random dimensions of the "
        "attention output, nats",
        0.0, BELOW,
        "equal costs are what no head structure gives; an ensemble loses a whole member gracefully, so losing a head "
        "must cost no more than losing the same width spread over every head"),
    "removal_2": Criterion(
        "C9", "graceful loss",
        "val NLL lost by mean-ablating 2 heads minus by mean-ablating the same number of random dimensions of the "
        "attention output, nats",
        0.0, BELOW,
        "equal costs are what no head structure gives; an ensemble loses whole members gracefully, so losing heads "
        "must cost no more than losing the same width spread over every head"),
}

# -- vision (C14) ----------------------------------------------------------------------------------------------------

CRITERIA["vision"] = {
    "vit_nll_below_linear": Criterion(
        "C14", "patches (ViT on digits)", "softmax regression's test NLL minus the ViT's, nats per image", 0.0, ABOVE,
        "the linear rung on the same pixels, each arm with its own tuned learning rate: a patch model that carries "
        "the machinery to images must estimate P(class | image) better than a linear function of the pixels"),
    "order_drop_fixed": Criterion(
        "C14", "patch order", "ViT test accuracy, unpermuted minus one fixed patch permutation", 0.0, ABOVE,
        "the control's drop: a ViT without positions is exactly invariant to patch order (checked exactly), so any "
        "drop is the positions' use"),
    "order_drop_random": Criterion(
        "C14", "patch order", "ViT test accuracy, unpermuted minus a random patch permutation per image", 0.0, ABOVE,
        "the control's drop: a ViT without positions is exactly invariant to patch order (checked exactly), so any "
        "drop is the positions' use"),
    "grounding_gain": Criterion(
        "C14", "cross-attention grounding", "grounding score minus uniform attention's share of the object", 0.0, ABOVE,
        "the chance level: uniform attention puts exactly |object patches| / P on the named object"),
    "vit_ece_excess": Criterion(
        "C2", "calibration (C2, ViT)", "ViT test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.0, BELOW, "the noise floor measured on a control: labels drawn from the model's own probabilities, same images"),
}


def criterion(experiment: str, name: str) -> Criterion:
    try:
        return CRITERIA[experiment][name]
    except KeyError:
        raise InvalidValue(f"no criterion {name!r} for experiment {experiment!r} in experiments/criteria.py") from None
