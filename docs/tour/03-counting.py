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
# # 3 · Counting: n-grams

# %% [markdown] lang="zh"
# # 第 3 章 · 数数：n 元语法

# %% [markdown] lang="en"
# Text is no longer a set of independent $(x, y)$ pairs: each character depends on the ones before it. By the
# chain rule of probability, a word $c_1 \dots c_T$ has
#
# $$P(c_1, \dots, c_T) = \prod_{t=1}^{T} P(c_t \mid c_1, \dots, c_{t-1}),$$
#
# so a language model is a classifier of the **next** character given the context — chapter 2 again, with
# the context as $x$. Every rung from here to the Transformer estimates this same $P(\text{next} \mid \text{context})$
# by maximum likelihood ([C2, C12](../claims.md)); they differ only in how much context they use and how.
# The simplest answer keeps only the last $n - 1$ characters (an order-$(n-1)$ Markov assumption) and
# **counts**. With $n = 2$, the bigram, the context is one character.
#
# The data are 32,033 common US first names (`names.txt`, as in makemore, shipped with redthread), one per line, lower-case
# a–z. A boundary token `.` marks both the start and the end of a name, so the model also learns how names
# begin ($P(c_1 \mid .)$) and when they stop ($P(. \mid c_T)$): 27 symbols in all.

# %% [markdown] lang="zh"
# 文本不再是一组相互独立的 $(x, y)$ 对：每个字符都依赖它前面的字符。由概率的链式法则，一个单词 $c_1 \dots c_T$ 的概率是
#
# $$P(c_1, \dots, c_T) = \prod_{t=1}^{T} P(c_t \mid c_1, \dots, c_{t-1}),$$
#
# 所以语言模型就是一个给定上下文、预测**下一个**字符的分类器——也就是第 2 章的分类，只不过 $x$ 换成了上下文。
# 从这里到 Transformer，阶梯上的每一级都在用最大似然估计同一个 $P(\text{下一个} \mid \text{上下文})$
# （[C2、C12](../claims.md)），区别只在于用了多少上下文、怎样用。最简单的做法只保留最近的 $n - 1$ 个字符
# （$n-1$ 阶马尔可夫假设），然后**数数**。$n = 2$ 时就是二元语法（bigram），上下文只有一个字符。
#
# 数据是 32033 个常见的美国人名（`names.txt`，与 makemore 相同，随 redthread 一起安装），每行一个，全是小写字母 a–z。
# 一个边界符 `.` 同时标记名字的开头和结尾，所以模型也会学到名字怎样开头（$P(c_1 \mid .)$）、何时结束（$P(. \mid c_T)$）：
# 一共 27 个符号。

# %% [markdown] lang="en"
# ## The maximum-likelihood estimate is a table of counts
#
# Let $N_{ab}$ be how often character $b$ follows $a$ in the training names, and $N_a = \sum_b N_{ab}$. The
# log-likelihood of the training data under a bigram model $p(b \mid a)$ is $\sum_{a,b} N_{ab} \log p(b \mid a)$.
# Maximising it subject to $\sum_b p(b \mid a) = 1$ for every $a$ (one Lagrange multiplier per row) gives
#
# $$\hat p(b \mid a) = \frac{N_{ab}}{N_a}:$$
#
# the relative frequencies. No gradient descent is needed; the fit is counting. A pair never seen in
# training gets probability 0, and a single such pair in new text makes its NLL infinite. **Add-$k$
# smoothing** adds $k$ to every count,
#
# $$\hat p_k(b \mid a) = \frac{N_{ab} + k}{N_a + kV},$$
#
# trading a little likelihood on the training data for finite likelihood everywhere. The score of a model is
# its mean NLL per character on held-out names, in nats; $e^{\text{NLL}}$ is the *perplexity*, the number of
# equally likely choices the model is effectively torn between at each step.

# %% [markdown] lang="zh"
# ## 最大似然估计就是一张计数表
#
# 设 $N_{ab}$ 为训练名字中字符 $b$ 紧跟在 $a$ 后面出现的次数，$N_a = \sum_b N_{ab}$。在二元模型 $p(b \mid a)$ 下，
# 训练数据的对数似然是 $\sum_{a,b} N_{ab} \log p(b \mid a)$。在每一行都满足 $\sum_b p(b \mid a) = 1$ 的约束下
# （每行一个拉格朗日乘子）最大化它，得到
#
# $$\hat p(b \mid a) = \frac{N_{ab}}{N_a}:$$
#
# 也就是相对频率。这里用不着梯度下降，拟合就是数数。训练中从未出现过的字符对概率为 0，新文本里只要出现一次这样的字符对，
# NLL 就变成无穷大。**加 $k$ 平滑**给每个计数都加上 $k$：
#
# $$\hat p_k(b \mid a) = \frac{N_{ab} + k}{N_a + kV},$$
#
# 用训练数据上一点点似然的损失，换来处处有限的似然。衡量模型的标准是它在留出名字上每个字符的平均 NLL（单位：奈特）；
# $e^{\text{NLL}}$ 叫作*困惑度*（perplexity），相当于模型每一步在多少个等可能的选项之间犹豫不决。

# %% [markdown] lang="en"
# ## The names
#
# `redthread.data.sequences.load_lines` reads one example per line and holds out makemore's test split (the
# last 1,000 names of a permutation seeded 3407). Each name becomes a row: inputs start with the boundary,
# targets end with it, and padding after the end is not scored.

# %% [markdown] lang="zh"
# ## 名字数据
#
# `redthread.data.sequences.load_lines` 每行读入一个样本，并留出与 makemore 相同的测试集（以 3407 为种子的随机排列中的最后
# 1000 个名字）。每个名字变成一行：输入以边界符开头，目标以边界符结尾，结尾之后的填充不计分。

# %%
# %matplotlib inline

import matplotlib.pyplot as plt
import torch

import redthread as rt
from redthread.data import text_path
from redthread.data.sequences import load_lines
from redthread.train.loop import train

torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread beats two that wait on each other

NAMES = text_path("names")  # shipped with redthread
if not NAMES.is_file():
    raise FileNotFoundError(f"{NAMES} is missing: run this chapter from a clone of redthread")
data, tok = load_lines(NAMES)
V = tok.vocab_size
chars = tok.decode(list(range(V)))  # '.' then a-z
print("symbols:", V, chars)
print("names: train", data.n_sequences("train"), " val", data.n_sequences("val"))
names = {split: [tok.decode(s) for s in data.sequences(split)] for split in ("train", "val")}
print("first training names:", names["train"][:6])

x, y = next(data.eval_batches("train", 10**6))  # every training name at once: (N, T) inputs and targets
print("a name as inputs and targets:", tok.decode(x[0]), "->", tok.decode(y[0][y[0] >= 0]))

# %% [markdown] lang="en"
# ## Counting by hand, and by `NGramLM`
#
# First the table itself, with nothing but `index_put_`: one count per (previous, next) pair of every
# training name.

# %% [markdown] lang="zh"
# ## 亲手数，再让 `NGramLM` 数
#
# 先用最朴素的 `index_put_` 把表本身数出来：每个训练名字里的每个（前一个，下一个）字符对计一次数。

# %%
scored = y >= 0  # padding targets are -1
N = torch.zeros(V, V, dtype=torch.float64)
N.index_put_((x[scored], y[scored]), torch.ones(int(scored.sum()), dtype=torch.float64), accumulate=True)
print("pairs counted:", int(N.sum()))
print("most common first letters:", [(chars[i], int(N[0, i])) for i in N[0].argsort(descending=True)[:5]])
print("most common last letters: ", [(chars[i], int(N[i, 0])) for i in N[:, 0].argsort(descending=True)[:5]])

P = N / N.sum(1, keepdim=True)  # the maximum-likelihood estimate, no smoothing
print("P(u | q) =", round(P[chars.index("q"), chars.index("u")].item(), 3))
fig, ax = plt.subplots(figsize=(7.5, 7))
im = ax.imshow(P, cmap="Blues")
ax.set(xticks=range(V), yticks=range(V), xticklabels=list(chars), yticklabels=list(chars),
       xlabel="next character b", ylabel="previous character a", title="P(next = b | previous = a), counted")
fig.colorbar(im, ax=ax, shrink=0.8)
plt.show()

# %% [markdown] lang="en"
# Each row is one conditional distribution and sums to 1. The first row is how names start, the first column
# how they end: most names start with `a`, `k` or `m` and end in `n`, `a` or `e`, and after `q` comes `u`
# three times in four.
#
# `rt.NGramLM` holds the same table for any order $n$ (one per order $1 \dots n$, so contexts never seen in
# training back off to shorter ones). The training loop recognises a counting model and fits it in closed
# form: one pass over the training names. With $k = 1$ its probabilities must equal the hand-counted table
# with 1 added to every cell.

# %% [markdown] lang="zh"
# 每一行都是一个条件分布，加起来等于 1。第一行是名字怎样开头，第一列是名字怎样结尾：最常见的开头字母是 `a`、`k`、`m`，
# 最常见的结尾字母是 `n`、`a`、`e`；`q` 后面四次里有三次是 `u`。
#
# `rt.NGramLM` 对任意阶数 $n$ 都保存同样的表（从 1 阶到 $n$ 阶各一张，训练中没见过的上下文会退回到更短的上下文）。
# 训练循环能认出这是一个计数模型，直接用闭式解拟合：把训练名字过一遍即可。取 $k = 1$ 时，它给出的概率必须等于
# 亲手数出的表在每格加 1 之后的结果。

# %%
def count_model(order, k=0.1):
    """An n-gram table fitted by the training loop, which counts every training name once."""
    model = rt.NGramLM(rt.NGramConfig(vocab_size=V, block_size=data.block_size, order=order, k=k))
    train(model, data, rt.TrainConfig(max_iters=1, batch_size=1024, eval_batches=1, device="cpu"), progress=False)
    return model


bigram = count_model(2, k=1.0)
with torch.no_grad():
    table = bigram(torch.arange(V)[None, :])[0].exp()  # row a: P(. | a), from the model's logits
P1 = (N + 1) / (N + 1).sum(1, keepdim=True)
print("max |NGramLM - hand count|:", f"{(table.double() - P1).abs().max().item():.1e}")

print(f"{'model':28}{'val NLL':>9}{'perplexity':>12}")
print(f"{'uniform over 27 symbols':28}{torch.log(torch.tensor(27.0)).item():9.4f}{27:12.2f}")
for name, order in (("unigram counts (n = 1)", 1), ("bigram counts (n = 2)", 2)):
    ev = rt.evaluate(count_model(order), data, "val", batch_size=1000)  # every held-out character once
    print(f"{name:28}{ev['nll']:9.4f}{ev['ppl']:12.2f}")

# %% [markdown] lang="en"
# The model's table equals the hand count to float32 rounding. On the 1,000 held-out names, knowing nothing
# costs $\log 27 = 3.30$ nats per character; knowing only how often each letter occurs (the unigram) 2.81;
# knowing the previous letter 2.45 — a perplexity of 11.6 instead of 27.
#
# ## How much smoothing?
#
# For the bigram, the choice of $k$ hardly matters: with 27 × 27 cells and over 200,000 pairs, almost every
# cell is well counted. It matters once the table grows. With $n = 4$ there are $27^3 = 19{,}683$ contexts,
# most seen rarely or never, and $k$ decides how much probability a rare context gives to what it never saw.

# %% [markdown] lang="zh"
# 模型的表与亲手数出的表在 float32 舍入误差内相等。在 1000 个留出名字上，一无所知的代价是每个字符 $\log 27 = 3.30$ 奈特；
# 只知道每个字母出现的频率（一元语法）是 2.81；知道前一个字母则是 2.45——困惑度从 27 降到了 11.6。
#
# ## 平滑多少合适？
#
# 对二元语法来说，$k$ 取什么几乎无关紧要：27 × 27 个格子配上二十多万个字符对，几乎每个格子都数得很充分。
# 表一变大，情况就不同了。$n = 4$ 时有 $27^3 = 19683$ 个上下文，大多数很少出现甚至从未出现，$k$ 决定了一个罕见的上下文
# 要分出多少概率给它从没见过的字符。

# %%
print(f"{'k':>7}{'bigram val NLL':>16}{'4-gram val NLL':>16}")
for k in (0.001, 0.01, 0.1, 1.0):
    nll2 = rt.evaluate(count_model(2, k), data, "val", batch_size=1000)["nll"]
    nll4 = rt.evaluate(count_model(4, k), data, "val", batch_size=1000)["nll"]
    print(f"{k:7}{nll2:16.4f}{nll4:16.4f}")

# %% [markdown] lang="en"
# The bigram moves in the fourth decimal; the 4-gram moves by more than 0.1 nats, best near $k = 0.1$. Too
# little smoothing trusts a handful of counts; too much flattens every rare context towards uniform. (Here
# $k$ was chosen by looking at held-out names; a careful comparison would choose it on a separate
# development split.)
#
# ## Counting and learning meet
#
# The bigram can also be *learned*: `rt.BigramLM` is softmax regression on the one-hot previous character —
# a $V \times V$ matrix of logits, one row per context — trained by gradient descent on the same NLL with the
# same loop as every other rung. Its optimum is the count table. We train it for 1,000 steps and compare its
# distributions with the counted ones, row by row, by the KL divergence weighted by how often each context
# occurs.

# %% [markdown] lang="zh"
# 二元语法只在小数点后第四位变化；4 元语法的变化超过 0.1 奈特，$k = 0.1$ 附近最好。平滑太少，就会轻信少数几个计数；
# 平滑太多，又会把每个罕见的上下文都压平成均匀分布。（这里的 $k$ 是看着留出名字选的；严谨的比较应当在单独的开发集上选。）
#
# ## 数数与学习殊途同归
#
# 二元语法也可以*学*出来：`rt.BigramLM` 就是以前一个字符的独热向量为输入的 softmax 回归——一个 $V \times V$ 的 logits
# 矩阵，每个上下文一行——和阶梯上其他所有模型一样，用同一个训练循环、对同一个 NLL 做梯度下降。它的最优解就是计数表。
# 我们训练 1000 步，再逐行把它的分布和计数得到的分布比较：用 KL 散度，并按每个上下文出现的频率加权。

# %%
torch.manual_seed(0)
learned = rt.BigramLM(rt.BigramConfig(vocab_size=V, block_size=data.block_size))
cfg = rt.TrainConfig(max_iters=1000, batch_size=64, lr=0.1, min_lr=0.01, warmup_iters=20, weight_decay=0.0,
                     eval_interval=1000, eval_batches=1, log_interval=1000, seed=0, device="cpu")
train(learned, data, cfg, progress=False)
counted = count_model(2, k=0.1)
with torch.no_grad():
    P_learned = learned(torch.arange(V)[None, :])[0].softmax(-1).double()  # (V, V)
    P_counted = counted(torch.arange(V)[None, :])[0].exp().double()
kl_rows = (P_counted * (P_counted.log() - P_learned.log())).sum(1)  # KL(counted || learned) per context
weights = N.sum(1) / N.sum()
print("val NLL, counted :", round(rt.evaluate(counted, data, "val", batch_size=1000)["nll"], 4))
print("val NLL, learned :", round(rt.evaluate(learned, data, "val", batch_size=1000)["nll"], 4))
print("mean KL(counted || learned), weighted by context frequency:", round((weights * kl_rows).sum().item(), 4))

fig, axes = plt.subplots(1, 2, figsize=(11, 5))
for ax, (title, table) in zip(axes, (("counted (add-0.1)", P_counted), ("learned by gradient descent", P_learned))):
    ax.imshow(table, cmap="Blues", vmin=0, vmax=1)
    ax.set(xticks=range(V), yticks=range(V), xticklabels=list(chars), yticklabels=list(chars), title=title,
           xlabel="next", ylabel="previous")
    ax.tick_params(labelsize=7)
fig.tight_layout()
plt.show()

# %% [markdown] lang="en"
# Two roads, one table: the learned model's held-out NLL is within a few thousandths of a nat of the counted
# one, and the two heat maps are hard to tell apart. Counting is the closed-form solution; gradient descent
# reaches it slowly. The advantage of the learned form comes later, when the input is no longer a one-hot
# row index.
#
# ## Sampling names
#
# A language model generates by sampling: start from the boundary, draw the next character from
# $P(\cdot \mid \text{context})$, append it, repeat until the boundary is drawn again. `rt.generate` does this for
# every rung of the ladder.

# %% [markdown] lang="zh"
# 两条路，同一张表：学出来的模型在留出数据上的 NLL 与计数模型相差不过千分之几奈特，两张热力图也几乎看不出差别。
# 数数是闭式解，梯度下降则慢慢走到同一个地方。学习这种形式的好处要到后面才显现：那时输入不再只是一个独热的行号。
#
# ## 采样生成名字
#
# 语言模型靠采样来生成：从边界符出发，按 $P(\cdot \mid \text{上下文})$ 抽出下一个字符，接到后面，不断重复，直到再次抽到边界符。
# `rt.generate` 对阶梯上的每个模型都这样做。

# %%
def sample_names(model, n=12, seed=0):
    start = torch.zeros(1, 1, dtype=torch.long)  # the boundary '.'
    out = rt.generate(model, start, max_new_tokens=data.block_size, num_samples=n, seed=seed)[:, 1:]
    return [tok.decode(row).split(".")[0] for row in out]  # cut each sample at its first boundary


print(sample_names(counted))

# %% [markdown] lang="en"
# Some look like names, most do not: one character of context cannot know that a name needs a vowel
# somewhere or should not stop after one letter.
#
# ## The data-sparsity wall
#
# More context should help, and at first it does. But the table for order $n$ has $V^{n-1}$ contexts with
# $V - 1$ free probabilities each, while the training names hold about 221,000 characters. Below we fit
# $n = 1, \dots, 5$ and report the training and held-out NLL, the size of the table, how many of its contexts
# training ever saw, and the share of held-out $n$-grams (context and next character) that never occurred in
# training — the cases where counting has nothing to say.

# %% [markdown] lang="zh"
# 有些像名字，大多数不像：只看一个字符的上下文，模型不可能知道名字里总得有个元音，也不知道名字不该只有一个字母就结束。
#
# ## 数据稀疏之墙
#
# 上下文越多应该越好，一开始也确实如此。但 $n$ 阶的表有 $V^{n-1}$ 个上下文，每个上下文有 $V - 1$ 个自由的概率，
# 而训练名字总共只有约 22.1 万个字符。下面对 $n = 1, \dots, 5$ 分别拟合，给出训练 NLL 和留出 NLL、表的大小、
# 训练中实际见过的上下文个数，以及留出数据里从未在训练中出现过的 $n$ 元组（上下文加下一个字符）所占的比例——
# 这些正是数数无话可说的情形。

# %%
def ngrams(words, n):
    """Every (context, next) string of each name, the context cut to n - 1 characters (shorter at the start)."""
    grams = []
    for w in words:
        s = "." + w + "."
        grams += [s[max(0, i - n + 1) : i + 1] for i in range(1, len(s))]
    return grams


print("training characters (with each name's end):", int(N.sum()))
orders = [1, 2, 3, 4, 5]
rows = []
print(f"{'n':>2}{'train NLL':>11}{'val NLL':>9}{'parameters':>13}{'contexts seen':>20}{'unseen val n-grams':>20}")
for n in orders:
    model = count_model(n, k=0.1)
    train_nll = rt.evaluate(model, data, "train", batch_size=4096)["nll"]
    val_nll = rt.evaluate(model, data, "val", batch_size=1000)["nll"]
    seen = int((model.counts(n).sum(1) > 0).sum())
    train_grams = set(ngrams(names["train"], n))
    val_grams = ngrams(names["val"], n)
    unseen = sum(g not in train_grams for g in val_grams) / len(val_grams)
    rows.append((n, train_nll, val_nll, model.num_params(), unseen))
    print(f"{n:2}{train_nll:11.4f}{val_nll:9.4f}{model.num_params():13,}{f'{seen:,} of {V ** (n - 1):,}':>20}{unseen:20.3f}")
    del model  # the order-5 table holds 14 million float64 counts

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
ax1.plot(orders, [r[1] for r in rows], "o-", label="train")
ax1.plot(orders, [r[2] for r in rows], "o-", label="held out")
ax1.set(xlabel="n (context = n - 1 characters)", ylabel="NLL (nats / character)", xticks=orders,
        title="more context: train keeps falling, held-out stalls")
ax1.legend()
ax2.semilogy(orders, [r[3] for r in rows], "o-", color="C2", label="parameters of the table")
ax2.axhline(int(N.sum()), color="k", ls="--", lw=1, label="training characters")
ax2.set(xlabel="n", ylabel="count", xticks=orders, title="the table outgrows the data")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown] lang="en"
# Going from $n = 1$ to $n = 4$ lowers the held-out NLL from 2.81 to 2.06 nats. Then the wall: $n = 5$ gains
# less than 0.005 on held-out names while its training NLL keeps falling (1.93 → 1.76). Its table has 13.8
# million free parameters — more than 60 times the number of training characters — and training saw only
# 21,496 of its 531,441 contexts; 12% of the held-out 5-grams never occurred in training at all. A count
# table cannot share what it learned about `anna` with `hanna`: every context is a separate row, learned
# from its own counts alone.
#
# The fix is not more counting but **generalisation**: represent characters so that similar contexts get
# similar predictions. That is the next rung, the MLP language model.

# %% [markdown] lang="zh"
# 从 $n = 1$ 到 $n = 4$，留出 NLL 从 2.81 降到 2.06 奈特。接着就撞上了墙：$n = 5$ 在留出名字上只再降了不到 0.005，
# 而训练 NLL 还在继续下降（1.93 → 1.76）。它的表有 1380 万个自由参数——是训练字符数的 60 多倍——在 531441 个上下文中，
# 训练只见过 21496 个；留出数据里有 12% 的 5 元组在训练中从未出现。计数表没法把从 `anna` 学到的东西分享给 `hanna`：
# 每个上下文都是单独的一行，只能靠它自己的计数来学。
#
# 出路不是数得更多，而是**泛化**：用一种表示字符的方式，让相似的上下文得到相似的预测。这就是阶梯的下一级——MLP 语言模型。

# %% [markdown] lang="en"
# ## Try this
#
# 1. Sample names from the 4-gram (`sample_names(count_model(4))`) and from the 5-gram. Are they better than
#    the bigram's? How many of the 5-gram's samples are names that already occur in the training set
#    (`names["train"]`)?
# 2. Which held-out name does the 4-gram find least likely, per character? Score the validation names with
#    `model.nll(x, y, reduction="none")` on `next(data.eval_batches("val", 1000))`, reshape to one row per
#    name, and divide each row's sum by the name's length + 1. Which of its 4-grams never occurred in training?
# 3. Compute the perplexity $e^{\text{NLL}}$ of each order in the table above. For the 4-gram, how many
#    "equally likely next characters" is the model choosing between, and how does that compare with the 27
#    symbols?

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. 从 4 元语法（`sample_names(count_model(4))`）和 5 元语法中采样名字。它们比二元语法生成的好吗？
#    5 元语法的样本里，有多少是训练集（`names["train"]`）里本来就有的名字？
# 2. 按每个字符平均来算，4 元语法认为哪个留出名字最不可能出现？在 `next(data.eval_batches("val", 1000))` 上用
#    `model.nll(x, y, reduction="none")` 给验证集的名字打分，整理成每个名字一行，再用每行之和除以名字长度加 1。
#    这个名字里有哪些 4 元组在训练中从未出现过？
# 3. 计算上表中每个阶数的困惑度 $e^{\text{NLL}}$。对 4 元语法来说，模型相当于在几个"等可能的下一个字符"之间选择？
#    和 27 个符号相比如何？
