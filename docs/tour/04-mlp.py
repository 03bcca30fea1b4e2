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
# # 4 · The MLP language model

# %% [markdown] lang="zh"
# # 第 4 章 · MLP 语言模型

# %% [markdown] lang="en"
# Chapter 3 ended at a wall: a count table treats every context as a separate row, so a longer context means
# exponentially many rows, most never seen in training. Bengio, Ducharme, Vincent and Jauvin (2003, "A Neural
# Probabilistic Language Model") proposed the way through: give every symbol a learned vector, an
# **embedding**, and compute $P(\text{next} \mid \text{context})$ with a neural network from the embeddings of a
# fixed window of previous symbols. Symbols used in similar ways get similar vectors, so what the model learns
# about one context carries over to similar ones it has never seen.
#
# It is still the same estimate as every rung — a conditional distribution learned by maximum likelihood
# ([C2, C12](../claims.md)) — with the feed-forward network of chapter 1, now reading a window of text.

# %% [markdown] lang="zh"
# 第 3 章最后撞上了一堵墙：计数表把每个上下文当作单独的一行，上下文一长，行数就指数级增长，而大多数行在训练中从未出现过。
# Bengio、Ducharme、Vincent 和 Jauvin（2003，《A Neural Probabilistic Language Model》）给出了突破的办法：
# 给每个符号一个可学习的向量，即**嵌入**（embedding），再用一个神经网络，根据固定窗口内前面若干个符号的嵌入来计算
# $P(\text{下一个} \mid \text{上下文})$。用法相近的符号会得到相近的向量，于是模型从一个上下文里学到的东西，
# 可以迁移到从未见过的相似上下文上。
#
# 它估计的仍然是阶梯上每一级都在估计的东西——用最大似然学到的条件分布（[C2、C12](../claims.md)）——
# 只不过换成了第 1 章的前馈网络，现在读的是一段文本窗口。

# %% [markdown] lang="en"
# ## The model
#
# With an embedding table $E \in \mathbb R^{V \times d}$ and a context of the last $c$ symbols:
#
# $$e = \big[E_{x_{t-c+1}};\, \dots;\, E_{x_t}\big] \in \mathbb R^{c\,d}, \qquad
# h = \tanh(W_1 e + b_1) \in \mathbb R^{H}, \qquad
# P(x_{t+1} \mid x_{t-c+1..t}) = \operatorname{softmax}(W_2 h + b_2).$$
#
# Positions before the start of a name read a learned padding vector, one more row of $E$. The parameters
# number $(V + 1)\,d + c\,d\,H + H + H V + V$ — they grow **linearly** with the context length $c$, where the $n$-gram table
# grows as $V^{c}$. Training minimises the cross-entropy of the next character, by the same loop as every
# other rung; the embeddings are learned together with the rest.
#
# ![The MLP language model: the last c characters read their rows of one embedding table, concatenated, a tanh layer, a softmax over the next character](../img/mlp-lm.svg)

# %% [markdown] lang="zh"
# ## 模型
#
# 设嵌入表为 $E \in \mathbb R^{V \times d}$，上下文为最近的 $c$ 个符号：
#
# $$e = \big[E_{x_{t-c+1}};\, \dots;\, E_{x_t}\big] \in \mathbb R^{c\,d}, \qquad
# h = \tanh(W_1 e + b_1) \in \mathbb R^{H}, \qquad
# P(x_{t+1} \mid x_{t-c+1..t}) = \operatorname{softmax}(W_2 h + b_2).$$
#
# 名字开头之前的位置读取一个可学习的填充向量（$E$ 多出的一行）。参数个数为 $(V + 1)\,d + c\,d\,H + H + H V + V$——随上下文长度 $c$
# **线性**增长，而 $n$ 元语法的表是按 $V^{c}$ 增长的。训练时最小化下一个字符的交叉熵，用的还是阶梯上所有模型共用的训练循环；
# 嵌入和其余参数一起学习。
#
# ![MLP 语言模型：最近 c 个字符各取嵌入表中的一行，拼接，经过 tanh 层，再对下一个字符做 softmax](../img/mlp-lm.svg)

# %% [markdown] lang="en"
# ## Data and the baselines to beat
#
# The same names and the same held-out split as chapter 3. The baselines are count tables fitted in closed
# form: the bigram and the best order found there, the 4-gram with add-0.1 smoothing.

# %% [markdown] lang="zh"
# ## 数据与要超越的基线
#
# 名字数据和留出集都与第 3 章相同。基线是用闭式解拟合的计数表：二元语法，以及第 3 章里最好的阶数——加 0.1 平滑的 4 元语法。

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
torch.set_num_threads(1)  # small models: one thread beats two that wait on each other ‖ 模型小：一个线程比两个互相等待的线程快

NAMES = text_path("names")  # shipped with redthread ‖ 随 redthread 附带
if not NAMES.is_file():
    raise FileNotFoundError(f"{NAMES} is missing: run this chapter from a clone of redthread")
data, tok = load_lines(NAMES)
V = tok.vocab_size
chars = tok.decode(list(range(V)))
names = {split: [tok.decode(s) for s in data.sequences(split)] for split in ("train", "val")}


def count_model(order, k=0.1):
    model = rt.NGramLM(rt.NGramConfig(vocab_size=V, block_size=data.block_size, order=order, k=k))
    train(model, data, rt.TrainConfig(max_iters=1, batch_size=1024, eval_batches=1, device="cpu"), progress=False)
    return model


bigram, fourgram = count_model(2), count_model(4)
for name, m in ((say("bigram counts", "二元语法计数表"), bigram), (say("4-gram counts", "4 元语法计数表"), fourgram)):
    nll = rt.evaluate(m, data, "val", batch_size=1000)["nll"]
    print(f"{name:16}{m.num_params():>10,}{say(' parameters   val NLL ', ' 个参数   验证集 NLL ')}{nll:.4f}")

# %% [markdown] lang="en"
# ## Training the MLP
#
# A context of $c = 8$ characters (enough for most of a name), 24-dimensional embeddings and 256 tanh units:
# 57,019 parameters, a ninth of the 4-gram table's. 1,500 AdamW steps of 64 names each take well under a
# minute on one CPU thread.

# %% [markdown] lang="zh"
# ## 训练 MLP
#
# 上下文取 $c = 8$ 个字符（足以覆盖名字的大部分），嵌入维度 24，隐藏层 256 个 tanh 单元：共 57019 个参数，
# 只有 4 元语法表的九分之一。1500 步 AdamW，每步 64 个名字，在单个 CPU 线程上用不了一分钟。

# %%
cfg = rt.MLPConfig(vocab_size=V, block_size=data.block_size, context=8, d_embed=24, d_hidden=256)
torch.manual_seed(0)
mlp = rt.MLPLM(cfg)
steps = 1500
train(mlp, data, rt.TrainConfig(max_iters=steps, batch_size=64, lr=1e-2, min_lr=1e-3, warmup_iters=100,
                                  eval_interval=500, eval_batches=4, log_interval=steps, seed=0, device="cpu"),
      progress=False)
ev = rt.evaluate(mlp, data, "val", batch_size=1000)  # every held-out character once ‖ 每个留出字符各算一次
print(f"{'MLP':16}{mlp.num_params():>10,}" + say(f" parameters   val NLL {ev['nll']:.4f}   bits/char {ev['bpc']:.3f}",
                                              f" 个参数   验证集 NLL {ev['nll']:.4f}   每字符比特数 {ev['bpc']:.3f}"))
print(say("train NLL: ", "训练 NLL：") + str(round(rt.evaluate(mlp, data, "train", batch_size=4096)["nll"], 4)))

# %% [markdown] lang="en"
# The MLP beats the 4-gram on held-out names (2.010 against 2.058 nats per character) with a ninth of its
# parameters, and its training NLL (1.98) is close to its held-out one: unlike the 5-gram of chapter 3, it
# is not memorising.
#
# ## Where the MLP wins: what the counts never saw
#
# Split every held-out character by whether its 4-gram — the previous three characters (fewer at the start of
# a name) followed by this one — occurred in training. Where it did, the 4-gram model has counts to go on;
# where it did not, all it can give is the little probability that smoothing spread over unseen events. The
# MLP reads eight characters through the same embeddings and network in both cases.

# %% [markdown] lang="zh"
# 在留出名字上，MLP 以 4 元语法九分之一的参数量胜过了它（每个字符 2.010 对 2.058 奈特）；它的训练 NLL（1.98）
# 也与留出 NLL 相近：不同于第 3 章的 5 元语法，它并没有在死记硬背。
#
# ## MLP 赢在哪里：计数从没见过的东西
#
# 把每个留出字符按它所在的 4 元组——前三个字符（名字开头处更少）加上这个字符本身——是否在训练中出现过分成两组。
# 出现过的，4 元语法有计数可依；没出现过的，它能给的只有平滑分给未见事件的那一点点概率。
# 而 MLP 在两种情况下都用同一套嵌入和同一个网络读取前面八个字符。

# %%
def ngrams(words, n=4):
    """The n-gram ending at every scored character (context cut to n - 1, shorter at the start), in target order. ‖ 以每个被打分的字符结尾的 n 元组（上下文截到 n - 1 个字符，开头处更短），按目标的顺序。"""
    out = []
    for w in words:
        s = "." + w + "."
        out += [s[max(0, i - n + 1) : i + 1] for i in range(1, len(s))]
    return out


seen_in_training = set(ngrams(names["train"]))
unseen = torch.tensor([g not in seen_in_training for g in ngrams(names["val"])])
x, y = next(data.eval_batches("val", 1000))  # all held-out names: (N, T) ‖ 全部留出名字：(N, T)
scored = (y >= 0).flatten()
with torch.no_grad():
    per_char = {name: m.nll(x, y, reduction="none")[scored]
                for name, m in ((say("4-gram", "4 元语法"), fourgram), ("MLP", mlp))}
n, n_unseen, share = len(unseen), int(unseen.sum()), unseen.float().mean().item()
print(say(f"held-out characters: {n}  whose 4-gram never occurred in training: {n_unseen} ({share:.1%})",
          f"留出字符共 {n} 个，其中 {n_unseen} 个（{share:.1%}）所在的 4 元组在训练中从未出现过"))
print(f"{'':8}{say('seen 4-gram', '已见 4 元组'):>13}{say('unseen 4-gram', '未见 4 元组'):>15}")
for name, nll in per_char.items():
    print(f"{name:8}{nll[~unseen].mean().item():13.3f}{nll[unseen].mean().item():15.3f}")

fig, ax = plt.subplots(figsize=(5.5, 3.4))
for i, (name, nll) in enumerate(per_char.items()):
    ax.bar([i * 0.35, 1 + i * 0.35], [nll[~unseen].mean(), nll[unseen].mean()], width=0.35, label=name)
ax.set(xticks=[0.175, 1.175],
       xticklabels=[say("4-gram seen in training", "4 元组在训练中见过"), say("4-gram never seen", "4 元组从未见过")],
       ylabel=say("mean NLL (nats / character)", "平均 NLL（奈特/字符）"),
       title=say("held-out characters, by their 4-gram", "留出字符，按所在的 4 元组分组"))
ax.legend()
plt.show()

# %% [markdown] lang="en"
# On the 4.1% of held-out characters whose 4-gram training never saw, the count model pays 4.91 nats each
# and the MLP 3.34: a gap of more than 1.5 nats. On the well-counted rest the 4-gram is slightly *better*
# (1.935 against 1.953) — a table that has seen a 4-gram often knows its frequency exactly. The MLP's whole
# advantage comes from the rare and the new: its prediction depends on what the context *is like*, through
# its embeddings and one shared network, not on whether these exact characters were counted.
#
# ## What the embeddings learned
#
# Each character's 24-dimensional embedding is a learned description of how it behaves in a context. Compare
# them by cosine similarity (after removing their mean): for each vowel, its four nearest characters; then the
# whole similarity matrix, vowels first.

# %% [markdown] lang="zh"
# 在 4.1% 的留出字符上，它们所在的 4 元组训练中从未见过：计数模型每个字符要付出 4.91 奈特，MLP 只要 3.34，
# 差距超过 1.5 奈特。在其余计数充分的字符上，4 元语法反而略*好*一些（1.935 对 1.953）——一张把某个 4 元组见过很多次的表，
# 对它的频率了如指掌。MLP 的优势全部来自罕见和新鲜的情形：它的预测取决于上下文*像什么*——通过嵌入和同一个共享的网络——
# 而不是这几个字符是否恰好被数到过。
#
# ## 嵌入学到了什么
#
# 每个字符的 24 维嵌入，是模型学到的“它在上下文里起什么作用”的描述。用余弦相似度（先减去均值）来比较它们：
# 对每个元音列出与它最接近的四个字符，再画出完整的相似度矩阵，元音排在最前面。

# %%
emb = mlp.tok_emb.weight[:V].detach()  # (V, d): one row per symbol; row V is the padding ‖ (V, d)：每个符号一行；第 V 行是填充
unit = torch.nn.functional.normalize(emb - emb.mean(0), dim=1)
sim = unit @ unit.T  # (V, V) cosine similarities ‖ (V, V) 余弦相似度
for ch in "aeiou":
    i = chars.index(ch)
    nearest = sim[i].argsort(descending=True)[1:5].tolist()
    print(ch, "->", "  ".join(f"{chars[j]} {sim[i, j].item():.2f}" for j in nearest))

order = [chars.index(c) for c in "aeiouy"] + [i for i, c in enumerate(chars) if c not in "aeiouy"]
labels = [chars[i] for i in order]
fig, ax = plt.subplots(figsize=(6, 5.4))
im = ax.imshow(sim[order][:, order], cmap="RdBu_r", vmin=-0.6, vmax=0.6)
ax.set(xticks=range(V), yticks=range(V), xticklabels=labels, yticklabels=labels,
       title=say("cosine similarity of the learned embeddings", "学到的嵌入之间的余弦相似度"))
ax.axhline(5.5, color="k", lw=0.8)
ax.axvline(5.5, color="k", lw=0.8)
fig.colorbar(im, ax=ax, shrink=0.8)
plt.show()

# %% [markdown] lang="en"
# Nothing told the model which letters are vowels, yet the four nearest neighbours of `a`, `e`, `i` and `o` are
# all other vowels or `y`, `u`'s are vowels but for one consonant, and the top-left block of the matrix (the
# vowels and `y`) is warm: vowels play similar roles in names, so similar vectors serve them. This is the sharing that count tables lack: for the MLP, a context with `o` where
# training mostly had `a` is not a blank row.
#
# ## New names
#
# Sampling works exactly as for the counts: start at the boundary and draw from $P(\text{next} \mid \text{context})$
# until the boundary comes again. We draw 200 names and count how many are **new** — not among the training
# names.

# %% [markdown] lang="zh"
# 没有人告诉模型哪些字母是元音，但 `a`、`e`、`i`、`o` 各自最接近的四个字符全是别的元音或 `y`，`u` 的近邻里也只有一个辅音，
# 矩阵左上角（元音和 `y`）一片暖色：元音在名字里扮演相似的角色，于是相似的向量最合用。这正是计数表所缺少的共享：训练时多见的是 `a`、现在换成了 `o`，
# 对 MLP 来说这个上下文并不是空白的一行。
#
# ## 新名字
#
# 采样的做法和计数模型完全一样：从边界符出发，按 $P(\text{下一个} \mid \text{上下文})$ 抽取，直到再次抽到边界符。
# 我们抽取 200 个名字，数一数其中有多少是**新**的——不在训练名字之中。

# %%
def sample_names(model, n, seed=0):
    start = torch.zeros(1, 1, dtype=torch.long)  # the boundary '.' ‖ 边界符 '.'
    out = rt.generate(model, start, max_new_tokens=data.block_size, num_samples=n, seed=seed)[:, 1:]
    return [tok.decode(row).split(".")[0] for row in out]  # cut each sample at its first boundary ‖ 每个样本截到第一个边界符为止


train_names = set(names["train"])
for name, m in ((say("bigram", "二元语法"), bigram), ("MLP", mlp)):
    samples = sample_names(m, 200)
    known = sum(s in train_names for s in samples)
    new = sum(bool(s) and s not in train_names for s in samples)
    length = sum(map(len, samples)) / 200
    print(f"{name:7}" + say(f" of 200: new {new}, training names {known};  mean length {length:.1f}",
                            f" 200 个名字：新名字 {new} 个，训练名字 {known} 个；平均长度 {length:.1f}"))
    print("        ", ", ".join(samples[:12]))
print(say("training names: mean length", "训练名字：平均长度"), round(sum(map(len, names["train"])) / len(names["train"]), 1))

# %% [markdown] lang="en"
# Most of the MLP's names (157 of 200) are new, and they read like names; 42 are real names from the training
# list. The bigram produces even more unseen strings (179), but few that read as names. Both get about the
# mean length of real names (6.2 and 6.1, against 6.1), the bigram only on average: it mixes one-letter stops
# with long runs.
#
# The window still has a hard edge: whatever lies more than 8 characters back cannot inform the prediction at
# all, and the window must be chosen before training. The next rung removes the window, folding the whole past
# into a state carried from step to step: the recurrent network, and what goes wrong with it. (This rung,
# larger and trained longer, beside every other rung on the same names: [the measured ladder](../ladder.md).)

# %% [markdown] lang="zh"
# MLP 生成的名字大多数（200 个里有 157 个）是新的，读起来也像名字；另有 42 个是训练名单里的真实名字。
# 二元语法生成的新字符串更多（179 个），但读起来像名字的很少。两者的平均长度都和真实名字差不多（6.2 和 6.1，真实名字为 6.1），
# 不过二元语法只是平均意义上对：它把只有一个字母就结束的和一长串的混在了一起。
#
# 窗口仍有一条硬边界：8 个字符之前的内容对预测毫无影响，而且窗口大小必须在训练前定好。
# 下一级阶梯去掉了窗口，把全部过去折叠进一个逐步传递的状态里：这就是循环神经网络，以及它会遇到的问题。
# （规模更大、训练更久的这一级模型，与其他各级在同一份名字数据上的对比，见[实测的阶梯](../ladder.md)。）

# %% [markdown] lang="en"
# ## Measured against the essay
#
# The essay (§5) places the feed-forward network between linear regression and the RNN: a global, fixed, non-linear
# function that estimates $\mathbb E[y \mid x]$ or $P(y \mid x)$, more expressive than a line "but still on independent
# samples"; the RNN then comes to handle dependence along a sequence. [The measured ladder](../ladder.md) (one run per rung,
# seed 1337) qualifies the size of that step:
#
# - **A window is already a sequence model.** Read over a fixed window, the same feed-forward network estimates
#   $P(\text{next} \mid \text{window})$: each (window, next) pair is one example, but the window carries the dependence. On
#   Shakespeare's plays the MLP reaches [1.8161](../ladder.md) nats per character, against [2.0751](../ladder.md) for the
#   3-gram table.
# - **At the ladder's budget, the recurrent step is a small one.** The tanh RNN, with the whole past in its state, reaches
#   [1.7605](../ladder.md) on the plays; on the names of this chapter the MLP's [1.9777](../ladder.md) is close to the RNN's
#   [1.9636](../ladder.md). The gap grows with context the window cannot hold: the gated cells, the LSTM and the GRU, reach
#   [1.6785](../ladder.md) and [1.6318](../ladder.md) on the plays.

# %% [markdown] lang="zh"
# ## 实测与原文
#
# 原文（§5）把前馈网络放在线性回归和 RNN 之间：一个全局的、固定的非线性函数，用来估计 $\mathbb E[y \mid x]$ 或
# $P(y \mid x)$，表达能力比直线强，“但依然处理独立样本”；处理序列依赖要等到 RNN。[实测的阶梯](../ladder.md)
# （每级一次运行，种子 1337）对这一步有多大作了限定：
#
# - **窗口本身就是一种序列模型。** 同一个前馈网络读一个固定窗口，估计的就是 $P(\text{下一个} \mid \text{窗口})$：
#   每个（窗口，下一个字符）对是一个样本，但窗口里装着依赖关系。在莎士比亚剧本上，MLP 达到每字符
#   [1.8161](../ladder.md) 奈特，3 元语法的表是 [2.0751](../ladder.md)。
# - **在阶梯的训练预算下，从 MLP 到 RNN 只是一小步。** 状态里装着全部过去的 tanh RNN 在剧本上达到
#   [1.7605](../ladder.md)；在本章的名字数据上，MLP 的 [1.9777](../ladder.md) 与 RNN 的 [1.9636](../ladder.md) 很接近。
#   窗口装不下的上下文越多，差距越大：带门控的 LSTM 和 GRU 在剧本上达到 [1.6785](../ladder.md) 和 [1.6318](../ladder.md)。

# %% [markdown] lang="en"
# ## Summary
#
# - The MLP language model gives every symbol a learned embedding and computes $P(\text{next} \mid \text{window})$ with a
#   feed-forward network from the embeddings of the last $c$ symbols (Bengio et al. 2003).
# - Its parameters grow linearly with the window, where a count table grows as $V^{c}$; it is trained by the same loop on
#   the same cross-entropy.
# - It wins where counting has nothing to say: on contexts never seen in training, because similar contexts get similar
#   embeddings and one shared network reads them all. On well-counted contexts a count table is as good or better.
# - Embeddings learn structure nobody labelled (the vowels group together). The window still has a hard edge, chosen
#   before training: the next rung removes it.

# %% [markdown] lang="zh"
# ## 小结
#
# - MLP 语言模型给每个符号一个可学习的嵌入，用前馈网络根据最近 $c$ 个符号的嵌入计算 $P(\text{下一个} \mid \text{窗口})$
#   （Bengio 等，2003）。
# - 它的参数量随窗口线性增长，而计数表按 $V^{c}$ 增长；训练用的是同一个循环、同一个交叉熵。
# - 它赢在数数无话可说的地方：训练中从没见过的上下文。相似的上下文有相似的嵌入，一个共享的网络读所有的上下文。
#   在计数充分的上下文上，计数表同样好，甚至更好。
# - 嵌入学到了没有人标注过的结构（元音聚在一起）。但窗口仍有一条训练前就定死的硬边界：下一级去掉了它。

# %% [markdown] lang="en"
# ## Try this
#
# 1. **Run and observe.** Train with `context=2` and with `context=16` (same steps and sizes). How does the held-out NLL
#    move, and where does it stop improving? Compare the MLP with `context=2` with the count table of the same context,
#    the 3-gram (`count_model(3)`).
#
#    <details><summary>Answer</summary>
#
#    With two characters of context the MLP scores 2.240 on held-out names, and the 3-gram table, which sees the same two
#    characters, does better: 2.201. With a short context almost every context is well counted, and counting is the exact
#    maximum-likelihood answer. The MLP improves steeply up to `context=8` (2.010) and then hardly at all: 2.002 with 16.
#    Names are short, and most of what predicts the next letter is in the last few.
#
#    </details>
#
# 2. **Change and predict.** Sample 200 names with `temperature=0.5` and with `temperature=1.5` in `rt.generate`. Predict
#    first how the share of new names and the mean length change.
#
#    <details><summary>Answer</summary>
#
#    At $T = 0.5$ the sampler keeps to the most probable paths, which are mostly the training names: only 61 of 200 are
#    new, and 139 are training names. At $T = 1.5$ the flattened distribution wanders off: 191 are new, 8 are training
#    names, and names grow longer (7.0 letters on average against 6.1), because the end-of-name symbol, usually a likely
#    choice after a few letters, loses probability to the flattened tail.
#
#    </details>
#
# 3. **Derive.** Count the parameters of the MLP language model with vocabulary $V$, a padding row, embeddings of size $d$, a
#    window of $c$ symbols and $H$ hidden units, and check the formula against `mlp.num_params()` for $V = 27$, $d = 24$,
#    $c = 8$, $H = 256$. How many free probabilities does a count table with the same context have?
#
#    <details><summary>Answer</summary>
#
#    The embedding table has $(V + 1)\,d$ entries (the padding row included); the hidden layer reads $c\,d$ numbers,
#    $c\,d\,H$ weights and $H$ biases; the output layer has $H V$ weights and $V$ biases:
#    $(V + 1)d + c\,d\,H + H + HV + V = 672 + 49{,}152 + 256 + 6{,}912 + 27 = 57{,}019$, the number printed above. A count
#    table with 8 characters of context has $V^8$ rows of $V - 1$ free probabilities: about $7.3 \times 10^{12}$, for 221,000
#    training characters.
#
#    </details>

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. **运行并观察。** 分别用 `context=2` 和 `context=16` 训练（步数和大小不变）。留出 NLL 怎样变化？到哪里就不再改善了？
#    把 `context=2` 的 MLP 和上下文长度相同的计数表——3 元语法（`count_model(3)`）——比一比。
#
#    <details><summary>答案</summary>
#
#    只有两个字符的上下文时，MLP 在留出名字上是 2.240，而看同样两个字符的 3 元语法的表反而更好：2.201。
#    上下文短，几乎每个上下文都数得很充分，而数数给出的正是精确的最大似然解。MLP 在 `context=8` 之前进步很快（2.010），
#    之后几乎不动：`context=16` 是 2.002。名字很短，预测下一个字母所需的信息大都在最后几个字母里。
#
#    </details>
#
# 2. **修改并预测。** 在 `rt.generate` 里分别用 `temperature=0.5` 和 `temperature=1.5` 采样 200 个名字。先预测新名字的比例和
#    平均长度会怎样变化。
#
#    <details><summary>答案</summary>
#
#    $T = 0.5$ 时，采样只走概率最高的那几条路，而这些路大多就是训练名字：200 个里只有 61 个是新的，139 个是训练名字。
#    $T = 1.5$ 时，压平的分布让采样四处游走：191 个是新的，只有 8 个是训练名字，名字也变长了（平均 7.0 个字母，
#    $T = 1$ 时是 6.1）：结束符本来在几个字母之后就很可能被抽到，现在它的概率被压平的尾部分走了。
#
#    </details>
#
# 3. **推导。** 设词表大小为 $V$（另有一个填充行），嵌入维度为 $d$，窗口为 $c$ 个符号，隐藏层有 $H$ 个单元，数一数 MLP
#    语言模型的参数，并在 $V = 27$、$d = 24$、$c = 8$、$H = 256$ 时与 `mlp.num_params()` 核对。上下文相同的计数表有多少个自由的概率？
#
#    <details><summary>答案</summary>
#
#    嵌入表有 $(V + 1)\,d$ 个数（含填充行）；隐藏层读入 $c\,d$ 个数，有 $c\,d\,H$ 个权重和 $H$ 个偏置；输出层有 $H V$ 个权重和
#    $V$ 个偏置：$(V + 1)d + c\,d\,H + H + HV + V = 672 + 49{,}152 + 256 + 6{,}912 + 27 = 57{,}019$，正是上面打印的数。
#    上下文为 8 个字符的计数表有 $V^8$ 行，每行 $V - 1$ 个自由的概率：约 $7.3 \times 10^{12}$ 个，而训练字符只有约 22.1 万个。
#
#    </details>
