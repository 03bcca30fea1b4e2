"""Claim C12: generation is iterative sampling from the learned P(next | context): greedy,
temperature, top-k, top-p (nucleus).

Set-up: an order-2 Markov chain over 16 symbols (a hierarchical Dirichlet table,
`redthread.data.synthetic.MarkovSource`) stands in for text, because its true conditional
distribution is known: a sample can be scored under the truth as well as under the model. A small
Transformer learns it by maximum likelihood through the shared loop. Then, from the first PROMPT
tokens of held-out sequences, `redthread.generate` continues each one with every strategy, and
the continuations are measured:

- NLL under the model: the mean -log P_model(token | context) of the sampled tokens;
- NLL under the truth: the same under the true chain, beside the held-out continuations' own;
- distinct-n (Li et al. 2016): distinct n-grams / all n-grams over every continuation;
- repetition (seq-rep-n, Welleck et al. 2019): 1 - distinct / all n-grams within a continuation,
  averaged over continuations;
- kept mass: the model's probability on the tokens a truncation keeps, at every step.

Why the criterion: sampling is what the processors say it is only if every drawn token comes from
the distribution q they leave, so the mean NLL of the draws under q must equal the mean of its
entropies, E_q[-log q] = H(q), to within sampling error (a martingale difference, so its standard
error is the plain one). Maximum likelihood ties temperature 1 to the data: scaling the logits z by
beta is one direction the model can move, and at the optimum of the likelihood its derivative,
E_q[z] - E_data[z], vanishes, which is E_data[-log q] = H(q) on the data it was fitted to: for a
fit that generalises, the model is as surprised by real text as by its own unchanged samples
(which visit the contexts the model predicts, close to the data's for a good fit). A lower temperature or a truncation makes the samples too
likely, a higher temperature too unlikely. Every truncation keeps only the most probable tokens,
so it trades diversity for likelihood, greedy at one end; and top-p keeps at least p of the mass
at every step (Holtzman et al. 2019, §3.1), however many tokens that takes. Scores under the true
chain are reported beside, not decided on: they measure how well the model learned the chain
(the reverse KL of its tail), not how it is sampled.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from redthread.data.synthetic import MarkovSource
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds
from redthread.generate.processors import build_processors, process
from redthread.generate.sampler import generate
from redthread.lang import say
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train

plt = pyplot()

NAME, CLAIMS = "sampling", "C12"
HYPOTHESIS = ("Generation samples the learned P(next | context): every strategy's draws have the NLL its "
              "processed distribution's entropy predicts; maximum likelihood ties temperature 1 to real text.")
BUDGET = {"steps": 600, "quick_steps": 200, "prompts": 500}
GRID: dict = {}  # one fixed recipe (lr 5e-3): the checks are about the sampler, not a comparison of models

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
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
                                         0.02, ABOVE, "maximum likelihood ties temperature 1 to the data: it must be the "
                                         "closest to real text of all strategies, by at least 0.02 nats (a 2% change "
                                         "in perplexity, the least difference in text this check treats as real)"),
}
ORDER, VOCAB, CONCENTRATION, HIERARCHY = 2, 16, 1.0, 5.0  # entropy rate 1.2 nats, top symbol p 0.5 on average
LENGTH, PROMPT = 48, 8  # each sequence: PROMPT real tokens, then LENGTH - PROMPT generated
STRATEGIES = {  # label -> settings of generate()
    "greedy": {"temperature": 0.0},
    "temperature 0.7": {"temperature": 0.7},
    "top-k 4": {"top_k": 4},
    "top-p 0.9": {"top_p": 0.9},
    "temperature 1": {"temperature": 1.0},
    "temperature 1.5": {"temperature": 1.5},
}
UNCHANGED, FLAT = "temperature 1", "temperature 1.5"
TRUNCATIONS = ("temperature 0.7", "top-k 4", "top-p 0.9")  # each keeps or favours the most probable tokens
TOP_P = 0.9
N_GRAM = 4  # n of distinct-n and seq-rep-n
LETTERS = "abcdefghijklmnop"


class ChainLM(TransformerLM):
    """The Transformer LM over the chain's symbols and a start marker (id VOCAB). The marker is never a
    target (the chain has no end), so its logit is masked out: the model is a P(next | context) over
    the VOCAB symbols alone, and no strategy can draw a token the chain cannot emit."""

    def forward(self, idx: torch.Tensor, cache=None) -> torch.Tensor:
        logits = super().forward(idx, cache=cache)  # (B, T, VOCAB + 1)
        return logits.index_fill(-1, torch.tensor([VOCAB], device=logits.device), float("-inf"))


def one_seed(seed: int, n_train: int, n_prompts: int, steps: int, n_layer: int) -> dict:
    """Train on a fresh chain; continue held-out prompts with every strategy and measure them."""
    source = MarkovSource(order=ORDER, vocab_size=VOCAB, concentration=CONCENTRATION, hierarchy=HIERARCHY, seed=seed)
    data = source.data(n_train, n_prompts, LENGTH, seed=seed)
    torch.manual_seed(seed)
    model = ChainLM(TransformerConfig(vocab_size=data.vocab_size, block_size=data.block_size, n_layer=n_layer,
                                      n_head=4, d_model=64, pos="learned"))
    train(model, data, TrainConfig(max_iters=steps, batch_size=32, lr=5e-3, min_lr=5e-4, warmup_iters=30,
                                   eval_interval=steps, eval_batches=5, seed=seed, device="cpu"), progress=False)
    real = np.stack(data.sequences("val"))  # (N, L)
    prompts = torch.cat([torch.full((n_prompts, 1), data.boundary), torch.from_numpy(real[:, :PROMPT])], dim=1)
    rows = {"real data": measure(model, source, torch.cat([prompts[:, :1], torch.from_numpy(real)], 1), None)}
    for i, (label, settings) in enumerate(STRATEGIES.items()):
        seq = generate(model, prompts, LENGTH - PROMPT, seed=seed + i, **settings)  # (N, 1 + L)
        rows[label] = measure(model, source, seq, settings)
    return {"rows": rows, "val_nll": evaluate(model, data, "val", batch_size=256)["nll"], "bayes_nll": source.bayes_nll(real),
            "entropy_rate": source.entropy_rate()}


def sampler_chi2(rows: dict) -> float:
    """Mean over the drawn strategies of z^2, z = (NLL of the draws - entropy) / standard error."""
    drawn = [s for s in STRATEGIES if s != "greedy"]
    return float(np.mean([(rows[s]["sampler_gap"] / rows[s]["sampler_se"]) ** 2 for s in drawn]))


def closest_margin(rows: dict) -> float:
    """How much closer temperature 1 is to the real continuations' NLL (under the model) than the closest other strategy."""
    real = rows["real data"]["nll_model"]
    gap = {s: abs(rows[s]["nll_model"] - real) for s in STRATEGIES}
    return min(v for s, v in gap.items() if s != UNCHANGED) - gap[UNCHANGED]


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    n_train, n_prompts = (1500, 128) if quick else (4000, 500)
    steps, n_layer = (200, 1) if quick else (600, 2)
    seeds = run_seeds(seed, quick)
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Source: an order-{ORDER} Markov chain over {VOCAB} symbols (MarkovSource, concentration {CONCENTRATION}, "
            f"hierarchy {HIERARCHY}), sequences of {LENGTH} tokens; {n_train} for training, {n_prompts} held out. Model: "
            f"a {n_layer}-layer Transformer (4 heads, d_model 64, learned positions) trained by maximum likelihood for "
            f"{steps} steps of batch 32 (AdamW, lr 5e-3 with warm-up and cosine decay). Each held-out sequence's first "
            f"{PROMPT} tokens are a prompt, continued by {LENGTH - PROMPT} tokens with each strategy "
            f"({', '.join(STRATEGIES)}; redthread.generate, KV cache). The model's distributions at every generated step "
            "are recomputed in one forward pass and passed through the same processors (build_processors) to get what "
            f"each strategy drew from. n-grams: n = {N_GRAM}. Seeds {seeds}: each its own chain, data, model and draws."
        ),
        criterion=(
            "Generation samples P(next | context): for the five drawn strategies, z = (mean NLL of the draws under the "
            "distribution q the processors leave − mean entropy of q) / standard error; the mean of z² (χ²₅/5 for a correct "
            "sampler) is below its 99% quantile, 3.02. Training = maximum likelihood: under the model, temperature 1's "
            "continuations are closer to the real ones' NLL than any other strategy's (margin > 0). Each decided by the 95% "
            f"interval over seeds. Top-p: top-p {TOP_P} keeps at least {TOP_P} of the model's mass at every step (exact)."
        ),
    )
    runs = []
    for i, s in enumerate(seeds):
        runs.append(one_seed(s, n_train, n_prompts, steps, n_layer))
        if progress is not None:
            progress.update((i + 1) / len(seeds), f"seed {s}")
    all_rows = [r["rows"] for r in runs]
    labels = list(all_rows[0])
    stats = [k for k in all_rows[0][UNCHANGED] if k != "sample"]
    rows = {label: {k: float(np.mean([r[label][k] for r in all_rows])) for k in stats if k in all_rows[0][label]}
            for label in labels}  # means over seeds
    for label in labels:
        rows[label] |= {"kept_mass_min": min(r[label]["kept_mass_min"] for r in all_rows),
                        "kept_min": min(r[label]["kept_min"] for r in all_rows),
                        "kept_max": max(r[label]["kept_max"] for r in all_rows), "sample": all_rows[0][label]["sample"]}

    chi2 = [sampler_chi2(r) for r in all_rows]
    margins = [closest_margin(r) for r in all_rows]
    report.check("sampler_chi2", chi2, seeds)
    report.check("temperature_one_closest", margins, seeds)
    top_p = rows[f"top-p {TOP_P}"]
    report.check("top_p_mass", top_p["kept_mass_min"],
                 seen=f"least kept mass {top_p['kept_mass_min']:.4f}; kept tokens {top_p['kept_min']}..{top_p['kept_max']}")

    report.number("seeds", seeds)
    report.number("sampler_chi2", chi2)
    report.number("temperature_one_margin", margins)
    for label, m in rows.items():
        for key, value in m.items():
            if key != "sample":
                report.number(f"{label}.{key}", value)
    for label in labels:
        report.number(f"{label}.nll_model_by_seed", [r[label]["nll_model"] for r in all_rows])
    for key in ("val_nll", "bayes_nll", "entropy_rate"):
        report.number(key, [r[key] for r in runs])

    nll = {s: rows[s]["nll_model"] for s in STRATEGIES}
    ordered = all(nll["greedy"] < nll[s] < nll[UNCHANGED] for s in TRUNCATIONS) and nll[UNCHANGED] < nll[FLAT]
    report.number("nll_order_holds", float(ordered))
    report.note("A property, not a criterion: under the model, greedy < " + ", ".join(TRUNCATIONS) + " < temperature 1 < "
                f"temperature 1.5 in NLL ({'seen' if ordered else 'NOT seen'}: "
                + ", ".join(f"{s} {nll[s]:.3f}" for s in STRATEGIES) + "). For a temperature it is an identity, "
                "d/dβ E_β[log q_β] = β Var_β[log q] ≥ 0, and a truncation keeps the most probable tokens, so it holds for "
                "any model and is no evidence for the claim.")

    keys = ["nll_model", "nll_true", "distinct", "repetition", "kept_mass", "kept_mass_min", "kept"]
    report.table(["strategy", "NLL model", "NLL truth", f"distinct-{N_GRAM}", f"rep-{N_GRAM}", "kept mass (mean)",
                  "kept mass (min)", "kept tokens (mean)"],
                 [[label] + [rows[label][k] for k in keys] for label in rows],
                 title=f"Continuations of {n_prompts} held-out prompts (nats/token, mean over {len(seeds)} seeds; min over seeds for the min)")
    drawn = [s for s in STRATEGIES if s != "greedy"]
    report.table(["seed", *(f"z, {s}" for s in drawn), "mean z²", "temperature 1's margin (nats)"],
                 [[s, *(r[d]["sampler_gap"] / r[d]["sampler_se"] for d in drawn), c, m]
                  for s, r, c, m in zip(seeds, all_rows, chi2, margins)],
                 title="Each strategy draws from the distribution q its processors leave: z = (NLL of draws − entropy) / s.e.")
    for s, r in zip(seeds, all_rows):
        for d in drawn:
            report.number(f"z.{s}.{d}", r[d]["sampler_gap"] / r[d]["sampler_se"])
    report.note(f"The model's held-out NLL is {np.mean([r['val_nll'] for r in runs]):.4f} nats/token against the chains' "
                f"Bayes limit {np.mean([r['bayes_nll'] for r in runs]):.4f} (mean over seeds). Under the true chain, the "
                f"temperature-1 continuations score {rows[UNCHANGED]['nll_true']:.4f} nats/token against the real "
                f"continuations' {rows['real data']['nll_true']:.4f}: the model's own error seen from the other side, since "
                "samples from the model q score E_q[-log p] = H(q) + KL(q || p) under the chain p, where the held-out NLL "
                "measures KL(p || q).")
    report.note(f"A continuation of the first prompt per strategy (seed {seeds[0]}; symbols as letters; the prompt is "
                f"'{rows['real data']['sample'][:PROMPT]}'):\n\n```\n"
                + "\n".join(f"{label:<16} {m['sample'][PROMPT:]}" for label, m in rows.items()) + "\n```")
    report.figure("sampling", lambda: plot(rows), "Left: likelihood against diversity, every strategy and the real "
                  "continuations (means over seeds). Right: NLL under the true chain, with the real continuations' level.",
                  "左：似然与多样性的关系，每种策略和真实的续写各一个点（各种子的平均）。"
                  "右：真实马尔可夫链给出的 NLL，虚线是真实续写的水平。")
    return report


@torch.no_grad()
def measure(model: ChainLM, source: MarkovSource, seq: torch.Tensor, settings: dict | None) -> dict:
    """Every statistic of one set of continuations seq (N, 1 + L) (boundary, prompt, continuation).
    settings None: real data, scored but not drawn."""
    model.eval()
    logits = model(seq[:, :-1]).float()  # (N, L, V): position t predicts seq[:, t + 1]
    new = seq[:, 1 + PROMPT:]  # (N, G) the continuation
    logp = logits[:, PROMPT:].log_softmax(-1)  # (N, G, V)
    nll_model = -logp.gather(-1, new[..., None])[..., 0]  # (N, G)
    truth = -torch.from_numpy(source.log_probs(seq[:, 1:].numpy()))[:, PROMPT:]  # (N, G)
    toks = new.tolist()
    grams = [[tuple(row[i:i + N_GRAM]) for i in range(len(row) - N_GRAM + 1)] for row in toks]
    out = {
        "nll_model": nll_model.mean().item(),
        "nll_true": truth.mean().item(),
        "distinct": len({g for row in grams for g in row}) / sum(len(row) for row in grams),
        "repetition": float(np.mean([1 - len(set(row)) / len(row) for row in grams])),
        "sample": "".join(LETTERS[t] for t in seq[0, 1:].tolist()),
    }
    if settings is None:
        return out | {"kept_mass": 1.0, "kept_mass_min": 1.0, "kept": float(VOCAB), "kept_min": VOCAB, "kept_max": VOCAB}
    processors, greedy = build_processors(**settings)
    kept_mass, kept, drawn_nll, entropy = [], [], [], []
    for t in range(new.size(1)):
        step = logits[:, PROMPT + t]  # (N, V)
        if greedy:
            keep = torch.zeros_like(step, dtype=torch.bool).scatter_(1, step.argmax(-1, keepdim=True), True)
        else:
            q = process(step, seq[:, :1 + PROMPT + t], processors).log_softmax(-1)  # (N, V): what was drawn from
            keep = q > -math.inf
            drawn_nll.append(-q.gather(-1, new[:, t:t + 1])[:, 0])
            entropy.append(-(q.exp() * q.masked_fill(~keep, 0.0)).sum(-1))
        kept_mass.append((step.softmax(-1) * keep).sum(-1))
        kept.append(keep.sum(-1))
    kept_mass, kept = torch.stack(kept_mass), torch.stack(kept).float()  # (G, N)
    out |= {"kept_mass": kept_mass.mean().item(), "kept_mass_min": kept_mass.min().item(), "kept": kept.mean().item(),
            "kept_min": int(kept.min()), "kept_max": int(kept.max())}
    if drawn_nll:
        diff = (torch.stack(drawn_nll) - torch.stack(entropy)).flatten().double()  # (G * N,): mean 0 when drawn from q
        out |= {"nll_sampled": torch.stack(drawn_nll).mean().item(), "entropy_sampled": torch.stack(entropy).mean().item(),
                "sampler_gap": diff.mean().item(), "sampler_se": (diff.std() / math.sqrt(diff.numel())).item()}
    return out


def _shown(strategy: str, short: bool = False) -> str:
    """A strategy's label in the language chosen: 'temperature 0.7' is '温度 0.7', 'greedy' '贪心解码';
    short: a temperature as 'T = 0.7' in both."""
    zh = {"greedy": "贪心解码", "real data": "真实数据"}.get(strategy, strategy.replace("temperature", "温度"))
    if short:
        return say(strategy.replace("temperature ", "T = "), zh.replace("温度 ", "T = "))
    return say(strategy, zh)


def plot(rows: dict) -> plt.Figure:

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for label, m in rows.items():
        marker = "*" if label == "real data" else "o"
        left.scatter(m["distinct"], m["nll_model"], marker=marker, s=90 if marker == "*" else 40, label=_shown(label))
    left.set_xscale("log")
    left.set_xlabel(say(f"distinct-{N_GRAM} (diversity, log scale)", f"distinct-{N_GRAM}（多样性，对数坐标）"))
    left.set_ylabel(say("NLL under the model (nats/token)", "模型给出的 NLL（奈特/词元）"))
    left.set_title(say("Truncation trades diversity for likelihood", "截断用多样性换似然"))
    left.legend(fontsize=8)
    labels = list(STRATEGIES)
    right.bar(range(len(labels)), [rows[s]["nll_true"] for s in labels], color="#4C72B0")
    right.axhline(rows["real data"]["nll_true"], color="r", ls="--", lw=1, label=say("real continuations", "真实的续写"))
    right.set_xticks(range(len(labels)), [_shown(s, short=True) for s in labels], fontsize=8)
    right.set_ylabel(say("NLL under the true chain (nats/token)", "真实马尔可夫链给出的 NLL（奈特/词元）"))
    right.set_title(say("Scored by the true chain", "由真实的链打分"))
    right.legend(fontsize=8)
    return fig
