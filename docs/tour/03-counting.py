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
#
# ![A name read by a trigram: the last two characters are the context, the next one is counted in that context's row](../img/ngram-window.svg)

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
#
# ![3 元语法读一个名字：最近两个字符是上下文，下一个字符记在这个上下文那一行的计数里](../img/ngram-window.svg)

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
from redthread.lang import say
from redthread.train.loop import train

torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread beats two that wait on each other ‖ 小模型：一个线程比两个互相等待的线程快

NAMES = text_path("names")  # shipped with redthread ‖ 随 redthread 一起安装
if not NAMES.is_file():
    raise FileNotFoundError(say(f"{NAMES} is missing: run this chapter from a clone of redthread",
                                f"找不到 {NAMES}：请在 redthread 的克隆里运行本章"))
data, tok = load_lines(NAMES)
V = tok.vocab_size
chars = tok.decode(list(range(V)))  # '.' then a-z ‖ 先是 '.'，再是 a-z
print(say("symbols:", "符号："), V, chars)
print(say("names: train", "名字：训练"), data.n_sequences("train"), say(" val", " 留出"), data.n_sequences("val"))
names = {split: [tok.decode(s) for s in data.sequences(split)] for split in ("train", "val")}
print(say("first training names:", "前几个训练名字："), names["train"][:6])

x, y = next(data.eval_batches("train", 10**6))  # every training name at once: (N, T) inputs and targets ‖ 一次取出所有训练名字：(N, T) 的输入和目标
print(say("a name as inputs and targets:", "一个名字的输入和目标："), tok.decode(x[0]), "->", tok.decode(y[0][y[0] >= 0]))

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
scored = y >= 0  # padding targets are -1 ‖ 填充位置的目标是 -1
N = torch.zeros(V, V, dtype=torch.float64)
N.index_put_((x[scored], y[scored]), torch.ones(int(scored.sum()), dtype=torch.float64), accumulate=True)
print(say("pairs counted:", "数过的字符对："), int(N.sum()))
print(say("most common first letters:", "最常见的开头字母："),
      [(chars[i], int(N[0, i])) for i in N[0].argsort(descending=True)[:5]])
print(say("most common last letters: ", "最常见的结尾字母："),
      [(chars[i], int(N[i, 0])) for i in N[:, 0].argsort(descending=True)[:5]])

P = N / N.sum(1, keepdim=True)  # the maximum-likelihood estimate, no smoothing ‖ 最大似然估计，不加平滑
print("P(u | q) =", round(P[chars.index("q"), chars.index("u")].item(), 3))
fig, ax = plt.subplots(figsize=(7.5, 7))
im = ax.imshow(P, cmap="Blues")
ax.set(xticks=range(V), yticks=range(V), xticklabels=list(chars), yticklabels=list(chars),
       xlabel=say("next character b", "下一个字符 b"), ylabel=say("previous character a", "前一个字符 a"),
       title=say("P(next = b | previous = a), counted", "P(下一个 = b | 前一个 = a)，数出来的"))
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
    """An n-gram table fitted by the training loop, which counts every training name once. ‖ 由训练循环拟合的 n 元语法表：每个训练名字数一遍。"""
    model = rt.NGramLM(rt.NGramConfig(vocab_size=V, block_size=data.block_size, order=order, k=k))
    train(model, data, rt.TrainConfig(max_iters=1, batch_size=1024, eval_batches=1, device="cpu"), progress=False)
    return model


bigram = count_model(2, k=1.0)
with torch.no_grad():
    table = bigram(torch.arange(V)[None, :])[0].exp()  # row a: P(. | a), from the model's logits ‖ a 那一行：P(. | a)，由模型的 logits 算出
P1 = (N + 1) / (N + 1).sum(1, keepdim=True)
print(say("max |NGramLM - hand count|:", "max |NGramLM - 亲手数的表|:"), f"{(table.double() - P1).abs().max().item():.1e}")

print(f"{say('model', '模型'):28}{say('val NLL', '留出 NLL'):>9}{say('perplexity', '困惑度'):>12}")
print(f"{say('uniform over 27 symbols', '27 个符号上的均匀分布'):28}{torch.log(torch.tensor(27.0)).item():9.4f}{27:12.2f}")
for name, order in ((say("unigram counts (n = 1)", "一元语法计数（n = 1）"), 1),
                    (say("bigram counts (n = 2)", "二元语法计数（n = 2）"), 2)):
    ev = rt.evaluate(count_model(order), data, "val", batch_size=1000)  # every held-out character once ‖ 每个留出字符各算一次
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
print(f"{'k':>7}{say('bigram val NLL', '二元语法 NLL'):>16}{say('4-gram val NLL', '4 元语法 NLL'):>16}")
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
kl_rows = (P_counted * (P_counted.log() - P_learned.log())).sum(1)  # KL(counted || learned) per context ‖ 每个上下文的 KL(计数 || 学习)
weights = N.sum(1) / N.sum()
print(say("val NLL, counted :", "留出 NLL，计数："), round(rt.evaluate(counted, data, "val", batch_size=1000)["nll"], 4))
print(say("val NLL, learned :", "留出 NLL，学习："), round(rt.evaluate(learned, data, "val", batch_size=1000)["nll"], 4))
print(say("mean KL(counted || learned), weighted by context frequency:", "按上下文频率加权的平均 KL(计数 || 学习)："),
      round((weights * kl_rows).sum().item(), 4))

fig, axes = plt.subplots(1, 2, figsize=(11, 5))
for ax, (title, table) in zip(axes, ((say("counted (add-0.1)", "数出来的（加 0.1 平滑）"), P_counted),
                                     (say("learned by gradient descent", "梯度下降学出来的"), P_learned))):
    ax.imshow(table, cmap="Blues", vmin=0, vmax=1)
    ax.set(xticks=range(V), yticks=range(V), xticklabels=list(chars), yticklabels=list(chars), title=title,
           xlabel=say("next", "下一个"), ylabel=say("previous", "前一个"))
    ax.tick_params(labelsize=7)
fig.set_layout_engine("tight")  # laid out when drawn, in each language ‖ 绘制时排版，每种语言各排一次
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
    start = torch.zeros(1, 1, dtype=torch.long)  # the boundary '.' ‖ 边界符 '.'
    out = rt.generate(model, start, max_new_tokens=data.block_size, num_samples=n, seed=seed)[:, 1:]
    return [tok.decode(row).split(".")[0] for row in out]  # cut each sample at its first boundary ‖ 每个样本在第一个边界符处截断


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
    """Every (context, next) string of each name, the context cut to n - 1 characters (shorter at the start). ‖ 每个名字里的每个（上下文，下一个字符）串，上下文截到 n - 1 个字符（开头处更短）。"""
    grams = []
    for w in words:
        s = "." + w + "."
        grams += [s[max(0, i - n + 1) : i + 1] for i in range(1, len(s))]
    return grams


print(say("training characters (with each name's end):", "训练字符数（含每个名字的结尾）："), int(N.sum()))
orders = [1, 2, 3, 4, 5]
rows = []
print(f"{'n':>2}{say('train NLL', '训练 NLL'):>11}{say('val NLL', '留出 NLL'):>9}{say('parameters', '参数量'):>13}"
      f"{say('contexts seen', '见过的上下文'):>20}{say('unseen val n-grams', '留出中未见的 n 元组'):>20}")
for n in orders:
    model = count_model(n, k=0.1)
    train_nll = rt.evaluate(model, data, "train", batch_size=4096)["nll"]
    val_nll = rt.evaluate(model, data, "val", batch_size=1000)["nll"]
    seen = int((model.counts(n).sum(1) > 0).sum())
    train_grams = set(ngrams(names["train"], n))
    val_grams = ngrams(names["val"], n)
    unseen = sum(g not in train_grams for g in val_grams) / len(val_grams)
    rows.append((n, train_nll, val_nll, model.num_params(), unseen))
    seen_of = say(f"{seen:,} of {V ** (n - 1):,}", f"{seen:,} / {V ** (n - 1):,}")
    print(f"{n:2}{train_nll:11.4f}{val_nll:9.4f}{model.num_params():13,}{seen_of:>20}{unseen:20.3f}")
    del model  # the order-5 table holds 14 million float64 counts ‖ 5 阶的表存着 1400 万个 float64 计数

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
ax1.plot(orders, [r[1] for r in rows], "o-", label=say("train", "训练"))
ax1.plot(orders, [r[2] for r in rows], "o-", label=say("held out", "留出"))
ax1.set(xlabel=say("n (context = n - 1 characters)", "n（上下文 = n - 1 个字符）"),
        ylabel=say("NLL (nats / character)", "NLL（奈特/字符）"), xticks=orders,
        title=say("more context: train keeps falling, held-out stalls",
                  "上下文更长：训练 NLL 一直下降，留出 NLL 停滞"))
ax1.legend()
ax2.semilogy(orders, [r[3] for r in rows], "o-", color="C2", label=say("parameters of the table", "表的参数量"))
ax2.axhline(int(N.sum()), color="k", ls="--", lw=1, label=say("training characters", "训练字符数"))
ax2.set(xlabel="n", ylabel=say("count", "个数"), xticks=orders,
        title=say("the table outgrows the data", "表比数据还大"))
ax2.legend(fontsize=8)
fig.set_layout_engine("tight")  # laid out when drawn, in each language ‖ 绘制时排版，每种语言各排一次
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
# ## The essay's own example: P(爱 | 我)
#
# The essay's one Chinese example is the next character after 我 ("I"): a language model should give 爱 ("love") and
# 恨 ("hate") each some probability. Counting makes that concrete. In the Complete Tang Poems (`text_path("tang")`,
# 4.1 million characters, which `bash setup.sh` builds from the chinese-poetry package) the maximum-likelihood bigram
# estimate is the relative frequency, count(我爱) / count(我·). The same question goes to each rung shipped for the
# 300 Tang poems (`tang300-*`, trained on 24,865 characters: docs/benchmarks.md), whose training text never has 我爱
# or 我恨 at all.

# %% [markdown] lang="zh"
# ## 原文自己的例子：P(爱 | 我)
#
# 原文唯一的中文例子是“我”后面的下一个字：语言模型应当给“爱”和“恨”各一份概率。数数能把它变得具体。在《全唐诗》
# （`text_path("tang")`，410 万字，由 `bash setup.sh` 从 chinese-poetry 包构建）里，二元语法的最大似然估计就是相对频率
# count(我爱) / count(我·)。再拿同一个问题去问随包附带、在《唐诗三百首》上训练的每一级模型（`tang300-*`，在 24,865 个字上训练，
# 见 docs/benchmarks.md）；它们的训练文本里根本没有“我爱”或“我恨”。

# %%
from collections import Counter

tang = text_path("tang").read_text(encoding="utf-8")  # a one-line error if setup has not built it ‖ 若 setup 还没构建它，报一行错误
after = Counter(b for a, b in zip(tang, tang[1:]) if a == "我")  # what follows 我, counted ‖ 数一数“我”后面跟的字
n = sum(after.values())
print(say(f"Complete Tang Poems: 我 followed by a character {n:,} times",
          f"《全唐诗》：“我”后面跟着一个字，共 {n:,} 次"))
for c in "爱恨":
    print(f"  count(我{c}) = {after[c]:>3}   P({c} | 我) = {after[c] / n:.5f}")
print(say("  most frequent after 我:", "  “我”后面最常见的字："),
      "  ".join(f"{c} {k / n:.3f}" for c, k in after.most_common(8)))

poems = text_path("tang300").read_text(encoding="utf-8")
times = {s: poems.count(s) for s in ("我", "我爱", "我恨", "爱", "恨")}
print("\n" + say(f"300 Tang poems: 我 {times['我']} times, 我爱 {times['我爱']}, 我恨 {times['我恨']}; "
                 f"爱 {times['爱']}, 恨 {times['恨']}",
                 f"300 首唐诗里：“我” {times['我']} 次，“我爱” {times['我爱']} 次，“我恨” {times['我恨']} 次；"
                 f"“爱” {times['爱']} 次，“恨” {times['恨']} 次"))
print(f"{say('rung', '级'):<22}{'P(爱 | 我)':>12}{'P(恨 | 我)':>12}"
      + say("   five most likely after 我", "   “我”后面最可能的五个字"))
for name in ["tang300-ngram", "tang300-mlp", "tang300-lstm", "tang300-gru", "tang300-transformer"]:
    model, tok300 = rt.pretrained(name)
    with torch.no_grad():
        p = model(torch.tensor([tok300.encode("我")]))[0, -1].softmax(-1)  # (V,): P(next | 我) ‖ (V,)：P(下一个 | 我)
    top = p.topk(5)
    shown = "  ".join(f"{tok300.decode([int(i)])!r} {float(q):.3f}" for q, i in zip(top.values, top.indices))
    love, hate = (float(p[tok300.encode(c)[0]]) for c in "爱恨")
    print(f"{name:<22}{love:>12.5f}{hate:>12.5f}   {shown}")

# %% [markdown] lang="en"
# (`tang300-ngram` is the unigram, the highest order whose table ships in a few MB for 2,562 characters, so it
# answers P(爱) whatever came before.) The numbers are in [docs/ladder.md](../ladder.md), measured once. Read them as
# the chapter's lesson in Chinese: the counts of a large corpus give 爱 after 我 a small, definite probability, some
# 13 times that of 恨, while the models of a tiny corpus that never saw either pair must get their answer from
# elsewhere, and every one of them ranks 恨 above 爱, as the unigram does: in the 300 poems 恨 is the more common
# character. A conditional probability needs enough data to be conditional.
# Below, in the browser, three learned rungs side by side on 我 (the counts have no ONNX graph to run there, and the
# LSTM stays out to keep the site's live page under 30 MB): type another character to ask them about it.
#
# <!-- live-page runs="tang300-mlp,tang300-gru,tang300-transformer" view="compare" text="我" -->

# %% [markdown] lang="zh"
# （`tang300-ngram` 是一元语法：2,562 个字的表，能以几 MB 随包附带的最高阶就是 1 阶，所以不管前面是什么，它回答的都是 P(爱)。）这些数字
# 记在 [docs/ladder.md](../ladder.md) 里，测了一次。把它们当作本章道理的中文版来读：大语料的计数给
# “我”后面的“爱”一个小而确定的概率，约为“恨”的 13 倍；而在小语料上训练、从没见过这两个字对的模型只能从别处得到答案，
# 它们无一例外都把“恨”排在“爱”前面，和一元语法一样：在这三百首诗里，“恨”是更常见的字。条件概率要有足够的数据才真正“有条件”。下面在浏览器里，三级学出来的模型并排回答“我”之后是什么（计数模型没有可以在浏览器里运行的 ONNX 图；LSTM 没有放进来，好让本站的在线页面不超过 30 MB）；
# 换一个字，就是问它们另一个问题。
#
# <!-- live-page runs="tang300-mlp,tang300-gru,tang300-transformer" view="compare" text="我" -->

# %% [markdown] lang="en"
# ## Measured against the essay
#
# The essay (§2) moves from linear regression's independent examples straight to recurrent networks, the "traditional
# sequence models", and stresses that words depend on each other strongly and over long distances. Counting, the older
# answer, is the project's addition; [the measured ladder](../ladder.md) (one run each, seed 1337) says where it stands:
#
# - **Counting captures short-range dependence well.** On Shakespeare's plays the 3-gram table reaches
#   [2.0751](../ladder.md) nats per character on held-out text, far below the unigram's [3.3327](../ladder.md) and even below
#   softmax regression on the previous character, [2.5197](../ladder.md), trained by gradient descent with the same budget
#   as every learned rung. On the names of this chapter the 4-gram's [2.0577](../ladder.md) is within a tenth of a nat of
#   the RNN's [1.9636](../ladder.md), and less than two tenths behind the best rung there, the LSTM's
#   [1.8965](../ladder.md).
# - **Longer dependence is where counting stops.** The learned rungs that share what they learn across contexts go further
#   on the plays: the GRU reaches [1.6318](../ladder.md), the fixed-window MLP [1.8161](../ladder.md). The wall of this
#   chapter, contexts never seen, is the statistical face of the essay's "long-distance dependence".
# - **The essay's own example, measured.** In the Complete Tang Poems the counts give P(爱 | 我) =
#   [0.0064](../ladder.md) and P(恨 | 我) = [0.00049](../ladder.md); every rung trained on the 300 poems reverses that
#   order (the Transformer: [0.00064](../ladder.md) against [0.00190](../ladder.md)), since it never saw either pair and
#   恨 is the more common character there. The essay's conditional probability needs the data to be conditional.
# - **On the whole collection the order comes out right.** Trained on the Complete Tang Poems, every rung ranks 爱 above
#   恨 after 我: the Kneser–Ney bigram [0.00634](../ladder.md) against [0.00051](../ladder.md), the Transformer after
#   eight minutes of one thread [0.00115](../ladder.md) against [0.00072](../ladder.md). There, at that budget, counting
#   still beats learning: the Kneser–Ney 4-gram reaches [6.7986](../ladder.md) bits per 字, the best learned rung
#   [7.0339](../ladder.md).

# %% [markdown] lang="zh"
# ## 实测与原文
#
# 原文（§2）从线性回归的独立样本直接讲到循环神经网络这种“传统的序列模型”，并强调词与词之间有强烈的、长距离的依赖。
# 更早的办法——数数——是本项目补充的；[实测的阶梯](../ladder.md)（每级一次运行，种子 1337）给出了它的位置：
#
# - **数数能很好地抓住短距离的依赖。** 在莎士比亚剧本上，3 元语法的表在留出文本上达到每字符
#   [2.0751](../ladder.md) 奈特，远低于一元语法的 [3.3327](../ladder.md)，甚至低于以前一个字符为输入、
#   用同样预算梯度下降训练的 softmax 回归（[2.5197](../ladder.md)）。在本章的名字数据上，4 元语法的
#   [2.0577](../ladder.md) 与 RNN 的 [1.9636](../ladder.md) 只差不到十分之一奈特，离那里最好的 LSTM（[1.8965](../ladder.md)）
#   也差不到十分之二奈特。
# - **依赖一长，数数就到头了。** 能在上下文之间共享所学的各级在剧本上走得更远：GRU 达到 [1.6318](../ladder.md)，
#   固定窗口的 MLP 达到 [1.8161](../ladder.md)。本章撞上的那堵墙——从没见过的上下文——就是原文所说“长距离依赖”在统计上的样子。
# - **原文自己的例子，实测了。** 在《全唐诗》里，计数给出 P(爱 | 我) = [0.0064](../ladder.md)，P(恨 | 我) =
#   [0.00049](../ladder.md)；在三百首上训练的每一级都把这个次序颠倒过来（Transformer：[0.00064](../ladder.md) 对
#   [0.00190](../ladder.md)），因为它从没见过这两个字对，而在那里“恨”是更常见的字。原文说的条件概率，要有足够的数据才真正“有条件”。
# - **在整部诗集上，次序就对了。** 在《全唐诗》上训练之后，每一级都把“我”后面的“爱”排在“恨”前面：Kneser–Ney
#   二元语法是 [0.00634](../ladder.md) 对 [0.00051](../ladder.md)，用一个线程训练八分钟的 Transformer 是
#   [0.00115](../ladder.md) 对 [0.00072](../ladder.md)。在那份语料、那个预算下，数数仍然胜过学习：Kneser–Ney
#   4 元语法达到每字 [6.7986](../ladder.md) 比特，学出来的最好的一级是 [7.0339](../ladder.md)。

# %% [markdown] lang="en"
# ## Summary
#
# - By the chain rule a language model is a classifier of the next symbol given the context; every rung from here on
#   estimates the same $P(\text{next} \mid \text{context})$ by maximum likelihood.
# - An $n$-gram keeps the last $n - 1$ symbols (a Markov assumption). Its maximum-likelihood estimate is a table of relative
#   frequencies, fitted by counting; add-$k$ smoothing keeps unseen pairs from getting probability 0.
# - Softmax regression on the one-hot previous symbol learns the same table by gradient descent.
# - More context helps until the table outgrows the data: most long contexts are never seen, and a count table cannot
#   share what it learned about one context with a similar one. That is the need the next rungs answer.

# %% [markdown] lang="zh"
# ## 小结
#
# - 由链式法则，语言模型就是给定上下文、预测下一个符号的分类器；从这里往后的每一级，都用最大似然估计同一个
#   $P(\text{下一个} \mid \text{上下文})$。
# - $n$ 元语法只保留最近 $n - 1$ 个符号（马尔可夫假设）。它的最大似然估计是一张相对频率表，靠数数拟合；
#   加 $k$ 平滑让没见过的字符对不至于得到概率 0。
# - 以前一个符号的独热向量为输入的 softmax 回归，用梯度下降学到的是同一张表。
# - 上下文越长越好，直到表比数据还大：大多数长上下文从没出现过，而计数表没法把从一个上下文学到的东西分享给相似的上下文。
#   后面几级要解决的就是这个问题。

# %% [markdown] lang="en"
# ## Try this
#
# 1. **Run and observe.** Sample 200 names from the 4-gram (`sample_names(count_model(4), n=200)`) and from the 5-gram. Are
#    they better than the bigram's? How many of them are names that already occur in the training set (`names["train"]`)?
#
#    <details><summary>Answer</summary>
#
#    They read much more like names (`kharlyna`, `nevayoniya`, `hollyson` from the 4-gram, against `thesanaeisau` or `hz`
#    from the bigram), and a third of them are training names: 67 of 200 for the 4-gram and 64 for the 5-gram, against 21
#    for the bigram. A long context seen in training often has a single continuation, so sampling from the count table
#    often walks a training name letter by letter. Better likelihood here comes partly from memory.
#
#    </details>
#
# 2. **Change and predict.** Fit the bigram and the 4-gram with almost no smoothing, `count_model(order, k=1e-6)`
#    (`k` must be positive). Predict before running: does the training NLL go up or down against `k=0.1`, and the held-out
#    NLL? For which order does it matter?
#
#    <details><summary>Answer</summary>
#
#    The training NLL can only fall as $k \to 0$: the unsmoothed table is the maximum-likelihood estimate on the training
#    data. For the 4-gram it falls from 1.926 to 1.883. The held-out NLL rises from 2.058 to 2.432: every held-out character
#    whose 4-gram never occurred in training now gets a probability near $k$, and costs many nats. The bigram hardly moves
#    (2.4496 either way): with 27 × 27 cells and over 200,000 pairs there is almost nothing unseen.
#
#    </details>
#
# 3. **Derive.** Maximise the training log-likelihood $\sum_{a,b} N_{ab} \log p(b \mid a)$ under $\sum_b p(b \mid a) = 1$ for
#    every $a$, and show that $\hat p(b \mid a) = N_{ab} / N_a$. Then show that a model that is uniform over $V$ symbols has
#    perplexity exactly $V$.
#
#    <details><summary>Answer</summary>
#
#    The rows do not interact, so take one context $a$ and the Lagrangian
#    $\mathcal L = \sum_b N_{ab} \log p_b - \lambda\big(\sum_b p_b - 1\big)$. Setting $\partial \mathcal L / \partial p_b = N_{ab}/p_b - \lambda = 0$
#    gives $p_b = N_{ab}/\lambda$; summing over $b$ gives $\lambda = \sum_b N_{ab} = N_a$, so $\hat p(b \mid a) = N_{ab}/N_a$.
#    The log-likelihood is concave in $p$, so this is the maximum. A uniform model gives every symbol $1/V$, so its NLL is
#    $-\log(1/V) = \log V$ at every step and its perplexity $e^{\log V} = V$: perplexity counts equally likely choices.
#
#    </details>

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. **运行并观察。** 从 4 元语法（`sample_names(count_model(4), n=200)`）和 5 元语法中各采样 200 个名字。它们比二元语法生成的好吗？
#    其中有多少是训练集（`names["train"]`）里本来就有的名字？
#
#    <details><summary>答案</summary>
#
#    读起来像名字多了（4 元语法生成了 `kharlyna`、`nevayoniya`、`hollyson`，二元语法则是 `thesanaeisau`、`hz` 这样的），
#    而且三分之一是训练集里的名字：4 元语法 200 个里有 67 个，5 元语法有 64 个，二元语法只有 21 个。训练中见过的长上下文
#    往往只有一种接法，所以从计数表采样时，常常是一个字母一个字母地把某个训练名字走了一遍。这里似然更好，部分靠的是记忆。
#
#    </details>
#
# 2. **修改并预测。** 几乎不加平滑地拟合二元语法和 4 元语法：`count_model(order, k=1e-6)`（`k` 必须为正）。运行之前先预测：
#    与 `k=0.1` 相比，训练 NLL 是升还是降？留出 NLL 呢？哪个阶数受影响？
#
#    <details><summary>答案</summary>
#
#    $k \to 0$ 时训练 NLL 只会下降：不加平滑的表正是训练数据上的最大似然估计。4 元语法的训练 NLL 从 1.926 降到 1.883。
#    留出 NLL 则从 2.058 升到 2.432：留出数据里凡是所在 4 元组在训练中没出现过的字符，现在只能得到接近 $k$ 的概率，
#    每个都要付出很多奈特。二元语法几乎不变（两种情况都是 2.4496）：27 × 27 个格子配上二十多万个字符对，几乎没有没见过的。
#
#    </details>
#
# 3. **推导。** 在每个 $a$ 都满足 $\sum_b p(b \mid a) = 1$ 的约束下，最大化训练数据的对数似然
#    $\sum_{a,b} N_{ab} \log p(b \mid a)$，证明 $\hat p(b \mid a) = N_{ab} / N_a$。再证明：在 $V$ 个符号上均匀分布的模型，
#    困惑度恰好是 $V$。
#
#    <details><summary>答案</summary>
#
#    各行互不相干，所以只看一个上下文 $a$，写出拉格朗日函数
#    $\mathcal L = \sum_b N_{ab} \log p_b - \lambda\big(\sum_b p_b - 1\big)$。令 $\partial \mathcal L / \partial p_b = N_{ab}/p_b - \lambda = 0$，
#    得 $p_b = N_{ab}/\lambda$；对 $b$ 求和得 $\lambda = \sum_b N_{ab} = N_a$，所以 $\hat p(b \mid a) = N_{ab}/N_a$。
#    对数似然是 $p$ 的凹函数，所以这是最大值。均匀模型给每个符号的概率都是 $1/V$，每一步的 NLL 都是 $-\log(1/V) = \log V$，
#    困惑度就是 $e^{\log V} = V$：困惑度数的正是“等可能的选项有几个”。
#
#    </details>
