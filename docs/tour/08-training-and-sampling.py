# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown] lang="en"
# # 8 · Training by maximum likelihood, and sampling

# %% [markdown] lang="zh"
# # 第 8 章 · 用最大似然训练，再从分布中采样

# %% [markdown] lang="en"
# Every rung so far was fitted the same way, and this chapter looks at that way on its own: the Transformer
# of chapter 7 is trained by **maximum likelihood**, and text is **generated** by drawing, again and again,
# from the distribution it learned ([C12](../claims.md)).
#
# By the chain rule a language model gives a whole text the probability
# $P_\theta(x_1, \dots, x_N) = \prod_t P_\theta(x_t \mid x_{<t})$. Maximum likelihood chooses the parameters
# that make the training text most probable, which is the same as minimising the mean negative
# log-likelihood per token,
#
# $$\mathcal{L}(\theta) = -\frac{1}{N} \sum_{t=1}^{N} \log P_\theta(x_t \mid x_{<t}),$$
#
# the **cross-entropy** between the one-hot next token and the model's softmax. It is measured in nats per
# token; divided by $\ln 2$ it is in bits (here one token is one character, so bits per character), and
# $e^{\mathcal{L}}$ is the perplexity. On text the model has not seen, the expected loss splits into two parts:
#
# $$\mathbb{E}_{p}\big[-\log P_\theta(x_t \mid x_{<t})\big] = H(p) + \mathrm{KL}\big(p \,\|\, P_\theta\big),$$
#
# the entropy $H(p)$ of the language itself, which no model can go below, plus how far the model is from it.
# Training can only shrink the KL term. That is why we watch the **validation** NLL, on held-out text, and
# not only the training NLL.

# %% [markdown] lang="zh"
# 前面每一级模型都是用同一种方法拟合的，这一章单独来看这种方法：第 7 章的 Transformer 用**最大似然**训练，
# 生成文本就是从学到的分布里一次又一次地**采样**（[C12](../claims.md)）。
#
# 由链式法则，语言模型给整段文本的概率是 $P_\theta(x_1, \dots, x_N) = \prod_t P_\theta(x_t \mid x_{<t})$。
# 最大似然就是挑选让训练文本概率最大的参数，等价于最小化每个词元的平均负对数似然：
#
# $$\mathcal{L}(\theta) = -\frac{1}{N} \sum_{t=1}^{N} \log P_\theta(x_t \mid x_{<t}),$$
#
# 也就是真实下一个词元的独热分布与模型 softmax 输出之间的**交叉熵**。它的单位是“奈特/词元”；除以 $\ln 2$
# 就换成比特（这里一个词元就是一个字符，所以是“比特/字符”），$e^{\mathcal{L}}$ 则是困惑度。
# 在模型没见过的文本上，期望损失可以拆成两部分：
#
# $$\mathbb{E}_{p}\big[-\log P_\theta(x_t \mid x_{<t})\big] = H(p) + \mathrm{KL}\big(p \,\|\, P_\theta\big),$$
#
# 其中 $H(p)$ 是语言本身的熵，任何模型都降不到它以下；另一项是模型与真实分布的距离。训练能缩小的只有 KL 这一项。
# 所以我们要盯着留出文本上的**验证集** NLL，而不能只看训练集上的 NLL。

# %% [markdown] lang="en"
# ## The data and two baselines
#
# The text is tiny Shakespeare (`tinyshakespeare.txt`, shipped with redthread, about 1.1 million characters), cut as nanoGPT
# cuts it: the first 90% for training, the last 10% for validation. Each character is a token. Two baselines
# set the scale: the uniform distribution over the vocabulary, $\ln V$ nats, and the unigram, which counts how
# often each character occurs and ignores the context altogether.

# %% [markdown] lang="zh"
# ## 数据和两条基线
#
# 文本是 tiny Shakespeare（`tinyshakespeare.txt`，随 redthread 一起安装，约 110 万个字符），按 nanoGPT 的方式切分：前 90% 训练，
# 后 10% 验证。每个字符是一个词元。两条基线给出量级：词表上的均匀分布，$\ln V$ 奈特；以及一元模型（unigram），
# 它只数每个字符出现的频率，完全不看上下文。

# %%
# %matplotlib inline
import math
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

import redthread as rt
from redthread.data import CharTokenizer, load_corpus, prepare_splits, split_corpus, text_path
from redthread.data.lm import LMData
from redthread.train.loop import read_metrics, train

torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread beats two that wait on each other
work = tempfile.TemporaryDirectory()  # run folders and the token cache; removed at the end
TEXT = text_path("tinyshakespeare")  # shipped with redthread

corpus = load_corpus(TEXT)
train_text, val_text = split_corpus(corpus)  # one document: cut at 90%
tok = CharTokenizer.from_text(corpus.text)
train_ids, val_ids = prepare_splits(train_text, val_text, tok, cache_dir=work.name)
print("characters (train, val):", len(train_text), len(val_text), "| vocabulary V:", tok.vocab_size)

counts = np.bincount(train_ids.tokens, minlength=tok.vocab_size) + 1.0  # add-one: every character possible
unigram = counts / counts.sum()
print(f"uniform  ln V = {math.log(tok.vocab_size):.3f} nats/token")
print(f"unigram  val NLL = {-np.log(unigram[val_ids.tokens]).mean():.3f} nats/token")

# %% [markdown] lang="en"
# ## The one training loop
#
# Every trainable rung of the ladder is fitted by the same function, `redthread.train.loop.train(model,
# data, rt.TrainConfig(...))`. Its core is four lines:
#
# ```text
# x, y = data.batch("train")          # B windows of T tokens, and the same windows shifted by one
# loss = objective(model(x), y)       # mean -log P(y_t | x_<=t), nats: the model's own likelihood
# loss.backward(); clip_grad_norm     # the gradient of the NLL
# AdamW step                          # one stochastic step towards the maximum-likelihood estimate
# ```
#
# Around it: a learning rate that warms up linearly and then decays along a cosine, gradient clipping,
# weight decay on the weight matrices only, and, every `eval_interval` steps, the validation NLL on a fixed
# sample of windows, written with the training loss to `metrics.jsonl` in the run folder. The data source is
# any object with `batch`, `eval_batches` and `tokens_per_char`; `LMData` serves windows of `block_size`
# tokens. The target of each position is simply the next character:

# %% [markdown] lang="zh"
# ## 唯一的训练循环
#
# 阶梯上每个需要训练的模型都用同一个函数拟合：`redthread.train.loop.train(model, data, rt.TrainConfig(...))`。
# 它的核心只有四行：
#
# ```text
# x, y = data.batch("train")          # B 个长度为 T 的窗口，以及右移一位的同样窗口
# loss = objective(model(x), y)       # 平均 -log P(y_t | x_<=t)，单位奈特：模型自己的似然
# loss.backward(); clip_grad_norm     # NLL 的梯度
# AdamW step                          # 朝最大似然估计迈出的一步随机梯度
# ```
#
# 外面包着的是：先线性预热、再按余弦衰减的学习率，梯度裁剪，只作用于权重矩阵的权重衰减，以及每隔 `eval_interval`
# 步在一组固定窗口上计算的验证集 NLL——它和训练损失一起写进运行文件夹里的 `metrics.jsonl`。数据源可以是任何带有
# `batch`、`eval_batches` 和 `tokens_per_char` 方法的对象；`LMData` 提供长度为 `block_size` 的窗口。
# 每个位置的目标就是下一个字符：

# %%
cfg = rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_head=4, d_model=64, dropout=0.0)
data = LMData(train_ids, val_ids, cfg.block_size)
x, y = data.batch("train", 2, torch.Generator().manual_seed(0))  # (B, T), (B, T)
print(tuple(x.shape), tuple(y.shape))
print("x:", repr(tok.decode(x[0, :24].tolist())))
print("y:", repr(tok.decode(y[0, :24].tolist())))

# %% [markdown] lang="en"
# A two-layer Transformer with four heads and $d_{\text{model}} = 64$, trained for 1,000 steps of 32 windows
# of 64 characters, about two million tokens: a couple of passes over the training text.

# %% [markdown] lang="zh"
# 一个两层、四个头、$d_{\text{model}} = 64$ 的 Transformer，训练 1000 步，每步 32 个长 64 字符的窗口，
# 一共约两百万个词元，相当于把训练文本过了两遍左右。

# %%
def run(model, data, steps, name, **overrides):
    """Train with the one loop into a run folder; return its metrics rows (train loss, val NLL)."""
    settings = rt.TrainConfig(**{"max_iters": steps, "batch_size": 32, "lr": 1e-2, "min_lr": 1e-3, "warmup_iters": 50,
                                 "eval_interval": 50, "eval_batches": 10, "log_interval": 25, "seed": 0,
                                 "device": "cpu", **overrides})
    train(model, data, settings, run_dir=f"{work.name}/{name}", progress=False)
    return read_metrics(f"{work.name}/{name}/metrics.jsonl")


model = rt.TransformerLM(cfg)
print(f"parameters: {model.num_params():,}")
t0 = time.perf_counter()
rows = run(model, data, 1000, "full")
print(f"trained in {time.perf_counter() - t0:.0f} s")
final = rt.evaluate(model, data, "val", batch_size=64)  # every validation character once
print(f"val NLL {final['nll']:.3f} nats/token | {final['bpc']:.3f} bits/char | perplexity {final['ppl']:.2f}")

# %% [markdown] lang="en"
# The validation NLL, scored on every validation character once, has fallen well below the unigram's: the
# context is doing the work. It is still far from what a larger model trained for longer reaches, and the
# samples below will show it.
#
# ## Overfitting
#
# Maximum likelihood fits the sample it is given. With too little data for the model's size, the
# likelihood keeps rising by memorising that sample, and the held-out NLL turns back up. Here is the same
# model trained on the first 10,000 characters only, beside the run above:

# %% [markdown] lang="zh"
# 在全部验证字符上各算一次得到的验证集 NLL，已经远低于一元模型：上下文在起作用。
# 不过它离更大的模型、更长的训练所能达到的水平还差得远，下面的采样会让你看到这一点。
#
# ## 过拟合
#
# 最大似然拟合的是手上这份样本。数据量相对模型规模太小时，模型会靠“背下”这份样本继续提高似然，
# 而留出数据上的 NLL 反而回升。下面是同一个模型只用前 10000 个字符训练的结果，与上面的完整训练并排对比：

# %%
small_ids, _ = prepare_splits(train_text[:10_000], val_text, tok, cache_dir=work.name)
torch.manual_seed(0)
small_rows = run(rt.TransformerLM(cfg), LMData(small_ids, val_ids, cfg.block_size), 400, "small")

# each run also saved loss.png through matplotlib's file-only backend: show figures inline again
# %matplotlib inline


def curves(rows):
    train_rows = [r for r in rows if "loss" in r]
    val_rows = [r for r in rows if "val_nll" in r]
    return ([r["step"] for r in train_rows], [r["loss"] for r in train_rows],
            [r["step"] for r in val_rows], [r["val_nll"] for r in val_rows])


fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
for ax, r, n in zip(axes, (rows, small_rows), (len(train_text), 10_000)):
    ts, tl, vs, vl = curves(r)
    ax.plot(ts, tl, label="train NLL")
    ax.plot(vs, vl, "o-", ms=3, label="validation NLL")
    ax.axhline(-np.log(unigram[val_ids.tokens]).mean(), color="grey", ls=":", label="unigram (val)")
    ax.set_title(f"{n:,} training characters")
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
axes[0].set_ylabel("nats / token")
axes[1].legend()
plt.tight_layout()
plt.show()

ts, tl, vs, vl = curves(small_rows)
best = int(np.argmin(vl))
print(f"small run: val NLL lowest at step {vs[best]} ({vl[best]:.3f}), at the end {vl[-1]:.3f}; "
      f"train NLL at the end {tl[-1]:.3f}")

# %% [markdown] lang="en"
# On the full text the two curves stay together: each batch is mostly text the model has not fitted yet, so
# the training loss is itself an honest estimate. On 10,000 characters the training NLL keeps falling while
# the validation NLL bottoms out early and climbs again: the model is learning that sample, not the language.
# The cures are the usual ones: more data, a smaller model, dropout or weight decay, or stopping where the
# validation NLL is lowest. The loop saves a checkpoint at every evaluation, so a run can be stopped and
# continued (`resume=True`) from any of them.

# %% [markdown] lang="zh"
# 在完整文本上，两条曲线始终贴在一起：每个批次大多是模型还没拟合过的文本，所以训练损失本身就是一个诚实的估计。
# 只有 10000 个字符时，训练 NLL 一路下降，验证 NLL 却很早就触底回升：模型学到的是这份样本，而不是语言本身。
# 对策也是老办法：更多数据、更小的模型、dropout 或权重衰减，或者在验证 NLL 最低的地方停下来。
# 训练循环在每次评估时都会保存检查点，所以训练可以随时停下，再从任何一个检查点继续（`resume=True`）。

# %% [markdown] lang="en"
# ## Sampling: from P(next | context) to a choice
#
# Generation repeats one step: compute the logits $z$ of the next token, turn them into a distribution, draw
# a token, append it, go on. Before the draw, a few **processors** may reshape the distribution, always in
# the same order (repetition penalty → temperature → top-k → top-p → min-p), each as in Hugging Face
# `transformers`:
#
# - **temperature** $T$: $p_i \propto \exp(z_i / T)$. $T < 1$ sharpens, $T > 1$ flattens, and $T \to 0$ is
#   greedy decoding (always the argmax);
# - **top-k**: keep the $k$ most probable tokens;
# - **top-p** (nucleus, Holtzman et al. 2019): keep the smallest set $S$ of most probable tokens with
#   $\sum_{i \in S} p_i \ge p$;
# - **min-p**: keep the tokens with $p_i \ge p_{\min} \cdot \max_j p_j$.
#
# The filters set the removed logits to $-\infty$, and the softmax renormalises what is left. Here is one
# context and what each setting does to its next-character distribution (`rt.build_processors` returns the
# processors in their fixed order; each takes the logits and the context):

# %% [markdown] lang="zh"
# ## 采样：从 P(下一个 | 上下文) 到一次选择
#
# 生成就是重复同一步：算出下一个词元的 logits $z$，变成概率分布，抽一个词元，接到末尾，继续。
# 在抽样之前，可以用几个**处理器**改造这个分布，顺序永远固定（重复惩罚 → 温度 → top-k → top-p → min-p），
# 语义都与 Hugging Face `transformers` 相同：
#
# - **温度** $T$：$p_i \propto \exp(z_i / T)$。$T < 1$ 让分布更尖，$T > 1$ 让它更平，$T \to 0$ 就是贪心解码（永远取概率最大的）；
# - **top-k**：只保留概率最大的 $k$ 个词元；
# - **top-p**（核采样，Holtzman 等，2019）：保留累计概率 $\sum_{i \in S} p_i \ge p$ 的最小高概率集合 $S$；
# - **min-p**：保留满足 $p_i \ge p_{\min} \cdot \max_j p_j$ 的词元。
#
# 过滤器把被删掉的 logits 设为 $-\infty$，再由 softmax 对剩下的重新归一化。下面取一个上下文，看每种设置如何改变
# 它的下一个字符分布（`rt.build_processors` 按固定顺序返回处理器，每个处理器接收 logits 和上下文）：

# %%
context = "KING RICHARD III:\nWhat is the "
idx = torch.tensor([tok.encode(context)])  # (1, T)
model.eval()
with torch.no_grad():
    logits = model(idx)[:, -1]  # (1, V): scores of the next character
p_model = logits.softmax(-1)[0]
order = p_model.argsort(descending=True)[:20]  # the 20 most probable characters
labels = [repr(tok.decode([int(i)]))[1:-1] for i in order]

settings = {"model (T = 1)": {}, "T = 0.5": {"temperature": 0.5}, "T = 1.5": {"temperature": 1.5},
            "top-k 5": {"top_k": 5}, "top-p 0.9": {"top_p": 0.9}, "min-p 0.1": {"min_p": 0.1}}
fig, axes = plt.subplots(2, 3, figsize=(12, 5.5), sharey=True)
print(f"{'setting':14} {'processors':28} {'kept':>5} {'top p':>6}")
for ax, (name, kw) in zip(axes.flat, settings.items()):
    processors, greedy = rt.build_processors(**kw)
    z = logits
    for processor in processors:
        z = processor(z, idx)
    p = z.softmax(-1)[0]
    ax.bar(range(20), p_model[order], color="lightgrey", label="model")
    ax.bar(range(20), p[order], width=0.5, color="C0", label="after")
    ax.set_xticks(range(20), labels, fontsize=8)
    ax.set_title(name)
    print(f"{name:14} {str(processors):28} {int((p > 0).sum()):>5} {float(p.max()):>6.3f}")
axes[0, 0].legend()
plt.tight_layout()
plt.show()

# %% [markdown] lang="en"
# The grey bars are the model's distribution, the blue ones what would be sampled from. Temperature keeps
# every character but moves mass towards (T < 1) or away from (T > 1) the favourites. The filters cut the
# tail and renormalise: top-k always keeps $k$ characters, whatever their mass; top-p keeps as many as it
# takes to cover 90% of the mass, so it adapts to how sure the model is; min-p keeps those at least a tenth as
# probable as the favourite. The column "kept" counts the characters left with non-zero probability.
#
# Now whole samples at four temperatures from the same prompt. `rt.generate` runs the loop above, and
# `seed` makes the draws reproducible; temperature 0 is greedy.

# %% [markdown] lang="zh"
# 灰色柱是模型自己的分布，蓝色柱是实际采样所用的分布。温度保留所有字符，只是把概率质量推向（T < 1）
# 或推离（T > 1）最可能的那几个。过滤器则砍掉尾部再重新归一化：top-k 无论概率多少都保留 $k$ 个字符；
# top-p 保留恰好覆盖 90% 概率质量所需的字符数，所以会随模型的把握程度自动伸缩；min-p 保留概率至少是最大者十分之一的字符。
# “kept” 一列是概率不为零的字符个数。
#
# 再看从同一个开头、在四种温度下生成的整段样本。`rt.generate` 执行的就是上面那个循环，`seed` 让抽样可以复现；温度 0 即贪心解码。

# %%
prompt = torch.tensor([tok.encode("KING RICHARD III:\n")])
for t in (0.0, 0.5, 1.0, 1.5):
    out = rt.generate(model, prompt, max_new_tokens=160, temperature=t, seed=0)
    print(f"--- temperature {t}\n{tok.decode(out[0, prompt.size(1):].tolist())}\n")

# %% [markdown] lang="en"
# Greedy decoding quickly falls into a loop: the single most probable continuation of a text is rarely a
# typical one. Temperature 1 draws from the distribution maximum likelihood actually fitted; the lower
# temperature gives safer, more repetitive text, and the higher one more invented words. The
# [sampling experiment](../experiments/sampling/report.md) tests this part of C12 on a source whose true
# distribution is known: the sampler draws exactly from the processed distribution, and temperature 1 is
# the strategy whose continuations are closest to real text. How well the learned probabilities are
# calibrated is a separate question: the [calibration experiment](../experiments/calibration/report.md) finds
# its best-trained Transformer measurably over-confident.
#
# ## The KV cache changes the cost, not the tokens
#
# A causal Transformer's keys and values at positions $\le t$ do not depend on anything after $t$. So
# instead of recomputing the whole context for every new token, generation keeps each layer's keys and
# values in a cache and feeds in only the newest token: one query row per step instead of $T$. The
# arithmetic is the same, so the tokens are the same. `use_cache=False` recomputes, for comparison:

# %% [markdown] lang="zh"
# 贪心解码很快就陷入循环：一段文本“最可能”的唯一续写，很少是“典型”的续写。温度 1 正是从最大似然实际拟合出来的分布中采样；
# 温度低一些，文本更稳妥也更重复；温度高一些，生造的词更多。[采样实验](../experiments/sampling/report.md)
# 在一个真实分布已知的数据源上检验了 C12 的这一部分：采样器确实是从处理后的分布里抽样，而温度 1 的续写最接近真实文本。
# 学到的概率是否校准是另一个问题：[校准实验](../experiments/calibration/report.md)发现训练得最好的 Transformer
# 明显过度自信。
#
# ## KV 缓存改变的是成本，不是结果
#
# 因果 Transformer 在位置 $\le t$ 上的键和值不依赖 $t$ 之后的任何东西。因此生成时不必为每个新词元重算整个上下文：
# 把每层的键和值存进缓存，每一步只送入最新的那个词元——每步只算一行查询，而不是 $T$ 行。
# 算术完全相同，所以生成的词元也完全相同。`use_cache=False` 会每步重算，用来对照：

# %%
timings, outputs = {}, {}
for use_cache in (True, False):
    t0 = time.perf_counter()
    outputs[use_cache] = rt.generate(model, prompt, max_new_tokens=500, temperature=1.0, seed=0, use_cache=use_cache)
    timings[use_cache] = time.perf_counter() - t0
print("identical tokens:", torch.equal(outputs[True], outputs[False]))
print(f"with cache {timings[True]:.2f} s | recomputing {timings[False]:.2f} s | "
      f"ratio {timings[False] / timings[True]:.1f}")

# %% [markdown] lang="en"
# The same 500 tokens either way; the printed times are this machine's. The saving grows with the context:
# recomputing costs a forward pass over up to `block_size` tokens per step, the cache one token. (When the
# window of `block_size` tokens is full, both restart from its last half, so they always condition on
# exactly the same context.)

# %% [markdown] lang="zh"
# 两种方式生成的 500 个词元完全一样；打印出的时间是这台机器上的实测值。上下文越长，节省越多：
# 重算每一步要对最多 `block_size` 个词元做一次前向计算，缓存只需要算一个词元。（当 `block_size` 长的窗口填满时，
# 两种方式都从窗口的后一半重新开始，所以它们所依据的上下文始终完全一致。）

# %% [markdown] lang="en"
# ## Try this
#
# 1. Train the full run with `dropout=0.2` in the config, or for 3,000 steps instead of 1,000, and compare the
#    final validation NLL and the samples at temperature 1.
# 2. Give the 10,000-character run `weight_decay=1.0` (an argument of `run`) or `dropout=0.3` (of the config): does the validation NLL still turn
#    back up, and when?
# 3. Pick a context where the model is very sure (for example after `"KING RICHARD II"`) and one where it is
#    not (after a space), and count how many characters top-p 0.9 keeps in each.

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. 在配置里设置 `dropout=0.2`，或者把完整训练从 1000 步改为 3000 步，比较最终的验证 NLL 和温度 1 下的样本。
# 2. 给只有 10000 个字符的那次训练加上 `weight_decay=1.0`（`run` 的参数）或 `dropout=0.3`（模型配置里）：验证 NLL 还会回升吗？什么时候回升？
# 3. 找一个模型很有把握的上下文（例如 `"KING RICHARD II"` 之后）和一个没有把握的上下文（空格之后），
#    数一数 top-p 0.9 在两种情况下各保留了多少个字符。
