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
# # 6 · Attention: weights computed from the data

# %% [markdown] lang="zh"
# # 第 6 章 · 注意力：由数据算出来的权重

# %% [markdown] lang="en"
# Linear regression (chapter 1) predicts with weights $w$ that are learned once and then fixed: every new $x$
# is multiplied by the same $w$. The essay's central step is a model whose weights are **recomputed for every
# query, from the data itself** ([C6](../claims.md)):
#
# $$\mathrm{Output}_i = \sum_j \alpha_{ij}\, \mathrm{Value}_j, \qquad
#   \alpha_{ij} = \mathrm{softmax}_j\!\left(\mathrm{Query}_i \cdot \mathrm{Key}_j\right), \qquad \sum_j \alpha_{ij} = 1.$$
#
# For each $i$ the weights $\alpha_{i\cdot}$ are a probability distribution over positions $j$: how much of
# position $j$'s information to use when predicting at position $i$. Where does this formula come from? An old
# answer from statistics, kernel regression, already has every piece of it.

# %% [markdown] lang="zh"
# 线性回归（第 1 章）用一组学好之后就固定不变的权重 $w$ 做预测：每个新的 $x$ 都乘以同一个 $w$。原文的核心一步，
# 是让权重**针对每一个查询、根据数据本身重新计算**（[C6](../claims.md)）：
#
# $$\mathrm{Output}_i = \sum_j \alpha_{ij}\, \mathrm{Value}_j, \qquad
#   \alpha_{ij} = \mathrm{softmax}_j\!\left(\mathrm{Query}_i \cdot \mathrm{Key}_j\right), \qquad \sum_j \alpha_{ij} = 1.$$
#
# 对每个 $i$，权重 $\alpha_{i\cdot}$ 都是位置 $j$ 上的一个概率分布：在位置 $i$ 做预测时，位置 $j$ 的信息该用多少。
# 这个公式从哪里来？统计学里一个古老的方法——核回归——已经包含了它的每一个部件。

# %% [markdown] lang="en"
# ## Nadaraya–Watson: a weighted average of the training targets
#
# To estimate $E[y \mid x]$ at a new point $x$, average the training targets $y_i$, giving more weight to
# training points $x_i$ that are close to $x$ (Nadaraya 1964; Watson 1964). With a Gaussian kernel of width $h$,
#
# $$\hat{E}[y \mid x] = \sum_{i=1}^{N} \alpha_i(x)\, y_i, \qquad
#   \alpha_i(x) = \frac{\exp\!\left(-\|x - x_i\|^2 / 2h^2\right)}{\sum_{l} \exp\!\left(-\|x - x_l\|^2 / 2h^2\right)}
#   = \mathrm{softmax}_i\!\left(-\frac{\|x - x_i\|^2}{2h^2}\right).$$
#
# Read it as attention: the **query** is the new $x$, the **keys** are the training inputs $x_i$, the
# **values** are the training targets $y_i$, and the weights are a softmax of a similarity. `rt.NadarayaWatson`
# is exactly this, and it returns a predictive Gaussian whose variance is the weighted spread of the attended
# targets plus a noise floor. The width $h$ and that floor are its only parameters, learned by maximum likelihood
# (each training point is predicted from the others, leave-one-out, else $h \to 0$ would copy every target). Below: 200 noisy points
# from $E[y \mid x] = \sin 2x + x/2$, the kernel estimate against a straight line, and the weights
# $\alpha_i(x)$ for three queries.

# %% [markdown] lang="zh"
# ## Nadaraya–Watson：训练目标的加权平均
#
# 要在一个新的点 $x$ 上估计 $E[y \mid x]$，可以对训练目标 $y_i$ 求平均，离 $x$ 越近的训练点 $x_i$ 权重越大
# （Nadaraya，1964；Watson，1964）。用宽度为 $h$ 的高斯核，
#
# $$\hat{E}[y \mid x] = \sum_{i=1}^{N} \alpha_i(x)\, y_i, \qquad
#   \alpha_i(x) = \frac{\exp\!\left(-\|x - x_i\|^2 / 2h^2\right)}{\sum_{l} \exp\!\left(-\|x - x_l\|^2 / 2h^2\right)}
#   = \mathrm{softmax}_i\!\left(-\frac{\|x - x_i\|^2}{2h^2}\right).$$
#
# 把它当作注意力来读：**查询**（query）是新的 $x$，**键**（key）是训练输入 $x_i$，**值**（value）是训练目标 $y_i$，
# 权重是相似度的 softmax。`rt.NadarayaWatson` 就是这个模型；它给出的预测分布是高斯分布，方差等于被关注的训练目标的加权离散度
# 再加上一个最小方差。宽度 $h$ 和这个最小方差是它仅有的参数，用最大似然学出来
# （每个训练点都由其余的点来预测，即留一法；否则 $h \to 0$ 会把每个目标原样抄下来）。下面取 200 个带噪声的点，
# 真实的 $E[y \mid x] = \sin 2x + x/2$，比较核估计与直线拟合，并画出三个查询的权重 $\alpha_i(x)$。

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import redthread as rt
from redthread.lang import say

torch.manual_seed(0)
torch.set_num_threads(1)  # small tensors: one thread beats two that wait on each other ‖ 张量小：一个线程比两个互相等待的线程快


def true_mean(x):
    return torch.sin(2 * x) + x / 2


X = torch.rand(200, 1) * 5  # (N, 1) training inputs: the keys ‖ (N, 1) 训练输入：键
y = true_mean(X[:, 0]) + 0.3 * torch.randn(200)  # (N,) training targets: the values ‖ (N,) 训练目标：值

nw = rt.NadarayaWatson(bandwidth=1.0).fit_memory(X, y)  # start too wide ‖ 起始宽度过大
opt = torch.optim.Adam(nw.parameters(), lr=0.05)
for _ in range(200):  # maximum likelihood, leave-one-out (the model is in training mode) ‖ 最大似然，留一法（模型处于训练模式）
    loss = nw.nll(X, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
nw.eval()
line = rt.LinearRegression().fit(X, y)

grid = torch.linspace(0, 5, 200)[:, None]  # (B, 1) queries ‖ (B, 1) 查询
with torch.no_grad():
    mean_nw = nw.distribution(grid).mean  # (B,)
err = {"linear": ((line.predict(grid).float() - true_mean(grid[:, 0])) ** 2).mean().item(),
       "Nadaraya–Watson": ((mean_nw - true_mean(grid[:, 0])) ** 2).mean().item()}
print(say("learned width h", "学到的宽度 h"), round(nw.bandwidth, 3))
mse = {k: round(v, 4) for k, v in err.items()}
print(say(f"mean squared error against the true E[y|x]: {mse}",
          f"与真实 E[y|x] 的均方误差：线性回归 {mse['linear']}，Nadaraya–Watson {mse['Nadaraya–Watson']}"))

queries = torch.tensor([[1.0], [2.5], [4.0]])  # (3, 1)
with torch.no_grad():
    att = nw.attention_weights(queries)  # (3, N): one distribution over the training points per query ‖ (3, N)：每个查询在训练点上的一个分布
print(say("each row sums to", "每行之和"), att.sum(-1).tolist())

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
ax1.scatter(X[:, 0], y, s=8, color="lightgray", label=say("training points", "训练点"))
ax1.plot(grid[:, 0], true_mean(grid[:, 0]), "k--", label=say("true E[y|x]", "真实的 E[y|x]"))
ax1.plot(grid[:, 0], line.predict(grid), label=say("linear regression", "线性回归"))
ax1.plot(grid[:, 0], mean_nw,
         label=say(f"Nadaraya–Watson, h = {nw.bandwidth:.2f}", f"Nadaraya–Watson，h = {nw.bandwidth:.2f}"))
ax1.set_xlabel("x")
ax1.legend(fontsize=8)
order = X[:, 0].argsort()
for q, a in zip(queries[:, 0], att):
    ax2.plot(X[order, 0], a[order], ".-", ms=3, label=say(f"query x = {q:g}", f"查询 x = {q:g}"))
ax2.set_xlabel(say("training input x_i (the keys)", "训练输入 x_i（键）"))
ax2.set_ylabel(say("weight α_i(x)", "权重 α_i(x)"))
ax2.legend(fontsize=8)
plt.show()

# %% [markdown] lang="en"
# The straight line cannot follow the wave; the weighted average can, because its weights move with the query.
# Each query's weights form a bump over the nearby training points, and they sum to 1. The
# [attention-as-regression experiment](../experiments/attention-as-regression/report.md) compares this estimator
# with $k$-nearest neighbours over many seeds.
#
# ## From a distance to a dot product
#
# Expand the square in the exponent:
#
# $$-\frac{\|q - k\|^2}{2h^2} = \frac{q \cdot k - \tfrac12\|k\|^2}{h^2} - \frac{\|q\|^2}{2h^2}.$$
#
# The last term is the same for every key, and softmax does not change when the same number is added to every
# score. So the Gaussian kernel **is** dot-product attention, with query $q' = [q, 1]$, key
# $k' = [k, -\tfrac12\|k\|^2]$ and the scale $1/h^2$. The library's `rt.scaled_dot_product_attention` gives the
# same weights:

# %% [markdown] lang="zh"
# 直线跟不上这条波浪线，加权平均却可以，因为它的权重随查询而变。每个查询的权重都在它附近的训练点上隆起成一个小峰，
# 总和为 1。[注意力即回归实验](../experiments/attention-as-regression/report.md)在多个随机种子上把这个估计量与
# $k$ 近邻做了比较。
#
# ## 从距离到点积
#
# 把指数里的平方展开：
#
# $$-\frac{\|q - k\|^2}{2h^2} = \frac{q \cdot k - \tfrac12\|k\|^2}{h^2} - \frac{\|q\|^2}{2h^2}.$$
#
# 最后一项对所有键都相同，而给每个分数加上同一个数，softmax 的结果不变。所以高斯核**就是**点积注意力：
# 查询取 $q' = [q, 1]$，键取 $k' = [k, -\tfrac12\|k\|^2]$，缩放因子取 $1/h^2$。库里的 `rt.scaled_dot_product_attention`
# 算出的权重完全一样：

# %%
q_aug = torch.cat([queries, torch.ones(3, 1)], -1)  # (3, 2): [q, 1]
k_aug = torch.cat([X, -0.5 * (X**2).sum(-1, keepdim=True)], -1)  # (N, 2): [k, -|k|^2 / 2]
with torch.no_grad():
    _, att_dot = rt.scaled_dot_product_attention(q_aug, k_aug, y[:, None], scale=1 / nw.bandwidth**2)
print(say("max |difference| from the kernel's weights", "与核权重的最大 |差值|"), (att_dot - att).abs().max().item())

# %% [markdown] lang="en"
# ## Learned similarity: queries, keys and values
#
# In kernel regression the similarity is fixed (closeness in $x$) and only its width is learned. Self-attention
# lets every position of a sequence be a query, a key and a value at once, and **learns** what similarity means:
# from the matrix $X \in \mathbb{R}^{T \times d}$ of a sequence's vectors it makes
#
# $$Q = X W_Q, \quad K = X W_K, \quad V = X W_V, \qquad
#   \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$
#
# (Vaswani et al. 2017, eq. 1), where $W_Q, W_K, W_V$ are trained with the rest of the model. Row $i$ of the
# $T \times T$ matrix $\mathrm{softmax}(QK^\top/\sqrt{d_k})$ is position $i$'s distribution over positions. Below,
# the formula in three lines of our own, against the library's function and against PyTorch's fused kernel:
#
# ![One query against five keys: scaled scores, a softmax that sums to 1, and the output as the weighted average of the values](../img/attention-weights.svg)

# %% [markdown] lang="zh"
# ## 学出来的相似度：查询、键和值
#
# 在核回归里，相似度是固定的（$x$ 上的远近），只有宽度是学出来的。自注意力让序列中的每个位置同时充当查询、键和值，
# 并且**学习**“相似”意味着什么：由序列各位置向量组成的矩阵 $X \in \mathbb{R}^{T \times d}$，得到
#
# $$Q = X W_Q, \quad K = X W_K, \quad V = X W_V, \qquad
#   \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$
#
# （Vaswani 等，2017，式 1），其中 $W_Q, W_K, W_V$ 和模型的其余部分一起训练。$T \times T$ 矩阵
# $\mathrm{softmax}(QK^\top/\sqrt{d_k})$ 的第 $i$ 行，就是位置 $i$ 在所有位置上的分布。下面用我们自己的三行代码写出这个公式，
# 再与库里的函数和 PyTorch 的融合算子对比：
#
# ![一个查询对五个键：缩放后的分数，和为 1 的 softmax，输出是各个值的加权平均](../img/attention-weights.svg)

# %%
T, d, d_k = 6, 16, 8
x = torch.randn(T, d)  # (T, d): one sequence of T vectors ‖ (T, d)：由 T 个向量组成的一个序列
W_Q, W_K, W_V = (torch.randn(d, d_k) / math.sqrt(d) for _ in range(3))
Q, K, V = x @ W_Q, x @ W_K, x @ W_V  # (T, d_k) each ‖ 各为 (T, d_k)

weights = torch.softmax(Q @ K.T / math.sqrt(d_k), dim=-1)  # (T, T): row i is a distribution over positions ‖ (T, T)：第 i 行是位置上的一个分布
out = weights @ V  # (T, d_k): each row a weighted average of the values ‖ (T, d_k)：每行是各个值的加权平均

out_rt, weights_rt = rt.scaled_dot_product_attention(Q, K, V)
out_torch = F.scaled_dot_product_attention(Q[None], K[None], V[None])[0]
print(say("ours vs rt:   ", "自己写的 vs rt：   "), (out - out_rt).abs().max().item(), (weights - weights_rt).abs().max().item())
print(say("ours vs torch:", "自己写的 vs torch："), (out - out_torch).abs().max().item())
print(say("row sums:", "各行之和"), weights.sum(-1).tolist())

# %% [markdown] lang="en"
# ## Why divide by √d_k
#
# If the entries of $q$ and $k$ are independent with mean 0 and variance 1, then $q \cdot k = \sum_{m=1}^{d_k} q_m k_m$
# is a sum of $d_k$ terms of variance 1: its variance is $d_k$ ([C7](../claims.md)). With large $d_k$ the scores
# spread over a wide range, and the softmax of widely spread scores is nearly one-hot: one key takes almost all
# the weight. Its gradient then nearly vanishes, because the softmax's Jacobian
# $\partial \alpha / \partial s = \mathrm{diag}(\alpha) - \alpha\alpha^\top$ is zero at a one-hot $\alpha$.
# Dividing by $\sqrt{d_k}$ brings the variance back to 1 whatever $d_k$ is. Measured, over 2,000 random
# queries, each against 32 random keys:

# %% [markdown] lang="zh"
# ## 为什么要除以 √d_k
#
# 如果 $q$ 和 $k$ 的各个分量相互独立、均值为 0、方差为 1，那么 $q \cdot k = \sum_{m=1}^{d_k} q_m k_m$ 是 $d_k$ 个方差为 1 的项之和，
# 方差就是 $d_k$（[C7](../claims.md)）。$d_k$ 很大时，分数分布得很开，而分数差距很大时的 softmax 几乎是独热的：
# 一个键拿走几乎全部权重。这时梯度也几乎消失，因为 softmax 的雅可比矩阵
# $\partial \alpha / \partial s = \mathrm{diag}(\alpha) - \alpha\alpha^\top$ 在独热的 $\alpha$ 处等于零。
# 除以 $\sqrt{d_k}$ 之后，不管 $d_k$ 多大，方差都回到 1。下面实际测量：2,000 个随机查询，每个对 32 个随机键：

# %%
dims = [4, 16, 64, 256, 1024]
rows = []
for dk in dims:
    q = torch.randn(2000, 1, dk)  # (B, 1, d_k): one query each ‖ (B, 1, d_k)：每组一个查询
    k = torch.randn(2000, 32, dk)  # (B, S, d_k): 32 keys each ‖ (B, S, d_k)：每组 32 个键
    scores = (q @ k.transpose(-2, -1))[:, 0]  # (B, S): unscaled q.k ‖ (B, S)：未缩放的 q.k
    row = {"d_k": dk, "Var(q.k)": scores.var().item()}
    for name, s in (("unscaled", scores), ("scaled", scores / math.sqrt(dk))):
        a = s.softmax(-1)  # (B, S)
        jac = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]  # (B, S, S): d softmax / d scores ‖ (B, S, S)：softmax 对分数的导数
        row[f"max weight, {name}"] = a.max(-1).values.mean().item()
        row[f"|Jacobian|, {name}"] = torch.linalg.matrix_norm(jac, ord=2).mean().item()
    rows.append(row)

columns = {"max weight, unscaled": "最大权重，不缩放", "|Jacobian|, unscaled": "|雅可比矩阵|，不缩放",
           "max weight, scaled": "最大权重，缩放", "|Jacobian|, scaled": "|雅可比矩阵|，缩放"}  # each column in Chinese ‖ 各列的中文名
print("".join(f"{say(k, columns.get(k, k)):>22}" for k in rows[0]))
for row in rows:
    print("".join(f"{v:>22.3f}" if isinstance(v, float) else f"{v:>22}" for v in row.values()))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
for name, zh in (("unscaled", "不缩放"), ("scaled", "缩放")):
    ax1.semilogx(dims, [r[f"max weight, {name}"] for r in rows], "o-", label=say(name, zh))
    ax2.semilogx(dims, [r[f"|Jacobian|, {name}"] for r in rows], "o-", label=say(name, zh))
ax1.axhline(1 / 32, color="gray", ls=":", label=say("uniform (1/32)", "均匀分布（1/32）"))
ax1.set(xlabel="d_k", ylabel=say("mean largest weight", "最大权重的均值"),
        title=say("how peaked the softmax is", "softmax 有多尖"))
ax2.set(xlabel="d_k", ylabel=say("mean ‖∂α/∂s‖₂", "‖∂α/∂s‖₂ 的均值"),
        title=say("how much gradient passes", "能通过多少梯度"))
ax1.legend(fontsize=8)
ax2.legend(fontsize=8)
plt.show()

# %% [markdown] lang="en"
# The variance of $q \cdot k$ tracks $d_k$. Unscaled, the largest weight climbs towards 1 as $d_k$ grows (about
# 0.95 at $d_k = 1024$) and, past a small rise, the Jacobian's norm falls towards 0 (from about 0.26 at $d_k = 16$
# to 0.06 at $d_k = 1024$); scaled, both stay where they were at $d_k = 4$.
# The [scaling experiment](../experiments/scaling/report.md) goes one step further and trains models with and
# without the scale. The unscaled one ends measurably worse at half of the experiment's training budget; with the full
# budget the difference is too close to call, and with twice the budget it is smaller than the floor set in advance: on
# that task the unscaled model catches up. The box at the end of the chapter gives the numbers.

# %% [markdown] lang="zh"
# $q \cdot k$ 的方差与 $d_k$ 一致。不缩放时，随着 $d_k$ 增大，最大的权重逼近 1（$d_k = 1024$ 时约为 0.95），
# 雅可比矩阵的范数则在短暂上升之后趋向 0（从 $d_k = 16$ 时的约 0.26 降到 $d_k = 1024$ 时的 0.06）；
# 缩放之后，两者都保持在 $d_k = 4$ 时的水平。[缩放实验](../experiments/scaling/report.md)更进一步，
# 分别训练了带缩放和不带缩放的模型。在实验训练预算的一半时，不缩放的模型明显更差；用完整的预算，差别小到无法判定；
# 用两倍的预算，差别小于事先定下的下限：在那个任务上，不缩放的模型追上来了。具体数字见本章末尾的方框。

# %% [markdown] lang="en"
# ## Masks: what a position may see
#
# A language model predicts character $i + 1$ from characters $1, \dots, i$; if position $i$ could attend to
# later positions, training would let it read the answer. A **causal mask** forbids it: the scores of positions
# $j > i$ are set to $-\infty$ before the softmax, so their weights are exactly 0 and each row is a
# distribution over $j \le i$ only. In redthread a mask is boolean with `True` = may attend (as in PyTorch's
# `F.scaled_dot_product_attention`). The test of a causal mask: change the key and value at one position, and no
# earlier output may move.

# %% [markdown] lang="zh"
# ## 掩码：一个位置能看到什么
#
# 语言模型要根据第 $1, \dots, i$ 个字符预测第 $i + 1$ 个字符；如果位置 $i$ 能关注到后面的位置，训练时它就能直接“偷看”答案。
# **因果掩码**（causal mask）禁止这样做：在 softmax 之前，把位置 $j > i$ 的分数设为 $-\infty$，它们的权重就恰好为 0，
# 每一行只是 $j \le i$ 上的分布。在 redthread 里，掩码是布尔张量，`True` 表示可以关注（与 PyTorch 的
# `F.scaled_dot_product_attention` 相同）。检验因果掩码的办法：改动某一个位置的键和值，它前面的输出一个都不能变。

# %%
causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T): True on and below the diagonal ‖ (T, T)：对角线及其下方为 True
out_c, weights_c = rt.scaled_dot_product_attention(Q, K, V, mask=causal)
print(weights_c.numpy().round(2))

K2, V2 = K.clone(), V.clone()
K2[3], V2[3] = torch.randn(d_k), torch.randn(d_k)  # a different character at position 3 ‖ 位置 3 换成另一个字符
out_c2, _ = rt.scaled_dot_product_attention(Q, K2, V2, mask=causal)
print(say("how far each position's output moved:", "各位置的输出移动了多少"), (out_c2 - out_c).abs().amax(-1).numpy().round(3))

fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
for ax, w, title in zip(axes, (weights, weights_c), (say("no mask", "不加掩码"), say("causal mask", "因果掩码"))):
    ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set(title=title, xlabel=say("key position j", "键的位置 j"), ylabel=say("query position i", "查询的位置 i"))
plt.show()

# %% [markdown] lang="en"
# Every piece of the Transformer's attention is now on the table: a softmax of scaled dot products, computed for
# every query, with a mask where the task needs one. Chapter 7 adds what turns it into a model: positions, several
# heads, a feed-forward network, residual connections and LayerNorm.

# %% [markdown] lang="zh"
# 到这里，Transformer 注意力的部件已经全部出场：对每个查询计算缩放点积的 softmax，任务需要时再加上掩码。
# 第 7 章再加上把它变成一个模型所需的部件：位置编码、多个头、前馈网络、残差连接和层归一化。

# %% [markdown] lang="en"
# ## Live: a trained Transformer's attention
#
# On the docs site the page below runs one of redthread's shipped models in your browser, with ONNX Runtime Web:
# `shakespeare-transformer`, 4 layers of 4 heads trained on tiny Shakespeare by the speedrun's recipe (1.49 nats per
# character on the validation text; [the reference models](../benchmarks.md#reference-models-shipped)), its attention
# explorer open. Type a text: each head's grid is $\alpha_{ij}$, row $i$ a distribution over the positions $j \le i$
# (the causal mask leaves everything above the diagonal at 0), and the neuron view shows, for one query, the scores
# $q_i \cdot k_j / \sqrt{d_k}$ that the softmax turns into them. Nothing you type leaves the page. From a checkout the
# same page is `redthread page shakespeare-transformer --out page`.
#
# <!-- live-page runs="shakespeare-transformer" view="explorer" text="But soft, what light through yonder window breaks" -->

# %% [markdown] lang="zh"
# ## 在线试一试：训练好的 Transformer 的注意力
#
# 在文档网站上，下面的页面用 ONNX Runtime Web 在你的浏览器里运行 redthread 随包附带的一个模型：
# `shakespeare-transformer`，4 层、每层 4 个头，按 speedrun 的配方在 tiny Shakespeare 上训练（验证文本上每字符 1.49 奈特；
# 见[参考模型](../benchmarks.md#reference-models-shipped)），页面打开的是注意力探索器。输入一段文本：每个头的方格就是
# $\alpha_{ij}$，第 $i$ 行是位置 $j \le i$ 上的一个分布（因果掩码让对角线以上全为 0）；神经元视图给出一个查询对各个键的分数
# $q_i \cdot k_j / \sqrt{d_k}$，softmax 把它们变成这些权重。你输入的内容不会离开这个页面。在仓库里，同一个页面是
# `redthread page shakespeare-transformer --out page`。
#
# <!-- live-page runs="shakespeare-transformer" view="explorer" text="But soft, what light through yonder window breaks" -->

# %% [markdown] lang="en"
# ## Measured against the essay
#
# The essay (§3, §3.1) makes attention a learned weighting by conditional probability, recomputed for every query (C6),
# and says the scale $1/\sqrt{d_k}$ keeps the softmax from saturating so that the model is easier to train (C7). The
# measurements ([run 1](../../results/README.md) of the replication protocol, two seed sets of five) agree on the first, and
# on the second only in part:
#
# - **Weights computed from the data do estimate $\mathbb E[y \mid x]$.** Kernel regression with a learned width, this
#   chapter's first model, has a root-mean-square error against the truth
#   [0.8277](../../results/run-1/attention-as-regression/report.md "report.json: checks/name=rmse_vs_knn/sets/0/value")
#   times that of $k$ nearest neighbours with $k$ tuned (the other set:
#   [0.8647](../../results/run-1/attention-as-regression/report.md "report.json: checks/name=rmse_vs_knn/sets/1/value")), and
#   with the width learned by maximum likelihood the error is
#   [1.005](../../results/run-1/attention-as-regression/report.md "report.json: checks/name=width_vs_best/sets/0/value")
#   times that of the best width of a sweep scored against the truth.
# - **The variance and the saturation are as the essay says.** $\operatorname{Var}(q \cdot k) / d_k$ stays within
#   [0.013](../../results/run-1/scaling/report.md "report.json: checks/name=variance/sets/0/value") of 1 for every $d_k$; at
#   $d_k = 1024$ the unscaled softmax puts
#   [0.9546](../../results/run-1/scaling/report.md "report.json: checks/name=one_hot/sets/0/value") of its weight on one key
#   on average, and its Jacobian's norm falls to
#   [0.06102](../../results/run-1/scaling/report.md "report.json: checks/name=jacobian_unscaled/sets/0/value"), against
#   [0.2409](../../results/run-1/scaling/report.md "report.json: checks/name=jacobian_scaled/sets/0/value") with the scale.
# - **"Easier to train" depends on the budget.** A one-layer Transformer on a recall task, each arm at its own tuned learning
#   rate: without the scale the test NLL is higher by
#   [0.3594](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/0.5/sets/0/value") nats at half the
#   training budget (holds against the floor of
#   [0.1](../../results/run-1/scaling/report.md "report.json: checks/name=gap/floor") set in advance), by
#   [0.1547](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/1/sets/0/value") at the full budget
#   with an interval from [0.0869](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/1/sets/0/interval/0")
#   to [0.2226](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/1/sets/0/interval/1")
#   (inconclusive), and by only
#   [0.05481](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/2/sets/0/value") at twice the
#   budget (does not hold); the other seed set agrees at every budget. The scale makes training faster; given the steps, the
#   unscaled model catches up on this task, so C7's trainability part is inconclusive
#   ([the report](../../results/run-1/scaling/report.md)).
# - **A dot product does not measure direction alone.** The essay (§3.1) reads a large $q \cdot k$ as "pointing the same way".
#   The expansion above shows that similarity by distance is the dot product plus a key term $-\tfrac12\|k\|^2$: without
#   it, a long key can win a large score without pointing the same way ([the claims](../claims.md), S4).

# %% [markdown] lang="zh"
# ## 实测与原文
#
# 原文（§3、§3.1）说，注意力是一种可学习的、按条件概率加权的机制，权重对每个查询重新计算（C6）；除以 $\sqrt{d_k}$ 的缩放
# 让 softmax 不至于饱和，模型因此“更容易训练”（C7）。测量结果（复现规程的[第一次完整运行](../../results/README.md)，
# 两组种子，每组五个）与前一点一致，与后一点只是部分一致：
#
# - **由数据算出的权重确实在估计 $\mathbb E[y \mid x]$。** 本章的第一个模型——学习宽度的核回归——与真值的均方根误差，
#   是调好 $k$ 的 $k$ 近邻的
#   [0.8277](../../results/run-1/attention-as-regression/report.md "report.json: checks/name=rmse_vs_knn/sets/0/value") 倍
#   （另一组种子是 [0.8647](../../results/run-1/attention-as-regression/report.md "report.json: checks/name=rmse_vs_knn/sets/1/value") 倍）；
#   用最大似然学到的宽度，其误差是对照真值扫描出的最佳宽度的
#   [1.005](../../results/run-1/attention-as-regression/report.md "report.json: checks/name=width_vs_best/sets/0/value") 倍。
# - **方差和饱和都与原文所说一致。** 对每个 $d_k$，$\operatorname{Var}(q \cdot k) / d_k$ 与 1 的差都不超过
#   [0.013](../../results/run-1/scaling/report.md "report.json: checks/name=variance/sets/0/value")；$d_k = 1024$ 时，
#   不缩放的 softmax 平均把 [0.9546](../../results/run-1/scaling/report.md "report.json: checks/name=one_hot/sets/0/value")
#   的权重放在一个键上，雅可比矩阵的范数降到
#   [0.06102](../../results/run-1/scaling/report.md "report.json: checks/name=jacobian_unscaled/sets/0/value")，
#   缩放之后是 [0.2409](../../results/run-1/scaling/report.md "report.json: checks/name=jacobian_scaled/sets/0/value")。
# - **“更容易训练”要看训练预算。** 在一个回忆任务上训练单层 Transformer，两种做法各用自己调好的学习率：
#   训练预算减半时，不缩放的测试 NLL 高出
#   [0.3594](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/0.5/sets/0/value") 奈特
#   （超过事先定下的下限 [0.1](../../results/run-1/scaling/report.md "report.json: checks/name=gap/floor")，成立）；
#   用完整预算时高出 [0.1547](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/1/sets/0/value")，
#   区间从 [0.0869](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/1/sets/0/interval/0") 到
#   [0.2226](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/1/sets/0/interval/1")（无定论）；
#   预算加倍时只高出 [0.05481](../../results/run-1/scaling/report.md "report.json: checks/name=gap/budgets/2/sets/0/value")
#   （不成立）；另一组种子在每种预算下结论都相同。缩放让训练更快；只要步数够，不缩放的模型在这个任务上会追上来，
#   所以 C7 的可训练性部分是无定论（[报告](../../results/run-1/scaling/report.md)）。
# - **点积衡量的不只是方向。** 原文（§3.1）把 $q \cdot k$ 大理解为两者“方向接近”。上面的展开说明，按距离算的相似度是
#   点积再加上键的一项 $-\tfrac12\|k\|^2$：点积注意力没有这一项，一个很长的键即使方向不近，也能拿到很大的分数
#   （见[论点](../claims.md)页的原文辨析 S4）。

# %% [markdown] lang="en"
# ## Summary
#
# - Attention is a weighted average of values whose weights, a softmax over the positions, are recomputed for every
#   query from the data; linear regression's weights are learned once and fixed.
# - Nadaraya–Watson kernel regression is attention with a fixed similarity: query the new $x$, keys the training inputs,
#   values the training targets. A Gaussian kernel is dot-product attention with one more key term.
# - Self-attention learns the similarity through $W_Q, W_K, W_V$:
#   $\operatorname{softmax}(QK^\top/\sqrt{d_k})\,V$, each row a distribution over positions.
# - With unit-variance components $\operatorname{Var}(q \cdot k) = d_k$; dividing by $\sqrt{d_k}$ keeps the softmax away from
#   one-hot, where its Jacobian, and every gradient through it, vanishes.
# - A causal mask sets the scores of later positions to $-\infty$, so each row is a distribution over the past only.

# %% [markdown] lang="zh"
# ## 小结
#
# - 注意力是值的加权平均，权重是位置上的一个 softmax，由数据对每个查询重新计算；线性回归的权重则是学好一次就固定的。
# - Nadaraya–Watson 核回归就是相似度固定的注意力：查询是新的 $x$，键是训练输入，值是训练目标。高斯核就是多了一个键项的点积注意力。
# - 自注意力通过 $W_Q, W_K, W_V$ 学习相似度：$\operatorname{softmax}(QK^\top/\sqrt{d_k})\,V$，每一行是位置上的一个分布。
# - 各分量方差为 1 时，$\operatorname{Var}(q \cdot k) = d_k$；除以 $\sqrt{d_k}$ 让 softmax 远离独热分布——在独热处，
#   它的雅可比矩阵以及经过它的所有梯度都会消失。
# - 因果掩码把后面位置的分数设为 $-\infty$，于是每一行只是过去位置上的分布。

# %% [markdown] lang="en"
# ## Try this
#
# 1. **Run and observe.** Fit `rt.NadarayaWatson(bandwidth=0.02)` and `rt.NadarayaWatson(bandwidth=3.0)` with `fit_memory`
#    alone, without training $h$, and draw both means on the grid. Which one copies the noise, and which one flattens the
#    wave?
#
#    <details><summary>Answer</summary>
#
#    With $h = 0.02$, a fraction of the spacing between the 200 points, each query reads almost only its nearest training
#    point: the mean jumps from noisy target to noisy target (a mean squared error of 0.042 against the truth, against 0.012
#    at the learned $h = 0.088$). With $h = 3.0$, wider than the whole interval $[0, 5]$, every query averages nearly all
#    the points: the mean is almost flat, between 1.1 and 1.6, and the error is 0.73, worse than the straight line's 0.44.
#
#    </details>
#
# 2. **Change and predict.** In the $\sqrt{d_k}$ table, replace the scale $1/\sqrt{d_k}$ by $1/d_k$. Predict what the largest
#    weight and the Jacobian's norm do as $d_k$ grows, and why this is no better.
#
#    <details><summary>Answer</summary>
#
#    The scores' variance becomes $d_k / d_k^2 = 1/d_k$, so they shrink towards 0 and the softmax towards uniform: the
#    largest weight falls from 0.078 at $d_k = 4$ to 0.033 at $d_k = 1024$, almost $1/32$. The Jacobian does not vanish
#    (its norm tends to $1/32$), but a uniform softmax attends to nothing in particular: the model has to grow $q$ and $k$
#    by a factor $\sqrt{d_k}$ before attention can select, which is the same problem from the other side. $1/\sqrt{d_k}$ is
#    the one scale that keeps the variance at 1 for every $d_k$.
#
#    </details>
#
# 3. **Change and predict.** Make a mask that lets each position see only itself and the two positions before it (a window
#    of 3) and print its weights. Predict first which entries are 0 and what each row sums to.
#
#    <details><summary>Answer</summary>
#
#    `i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]; window = (i - j >= 0) & (i - j <= 2)`. Row $i$ is non-zero
#    only at $j = i - 2, i - 1, i$ (fewer in the first two rows), and every row still sums to 1: the softmax renormalises
#    over the positions it may attend to. The rows of the causal mask that already had most of their weight in the window
#    change little; a row such as position 3's, which gave 0.25 to position 0, now shares that weight out among 1, 2 and 3.
#
#    </details>
#
# 4. **Derive.** Let the components $q_1, \dots, q_{d_k}$ and $k_1, \dots, k_{d_k}$ be independent, with mean 0 and variance 1.
#    Show that $\mathbb E[q \cdot k] = 0$ and $\operatorname{Var}(q \cdot k) = d_k$, and that $q \cdot k / \sqrt{d_k}$ has
#    variance 1.
#
#    <details><summary>Answer</summary>
#
#    $q \cdot k = \sum_m q_m k_m$. Each term has $\mathbb E[q_m k_m] = \mathbb E[q_m]\,\mathbb E[k_m] = 0$ by independence, so
#    the sum has mean 0. Its variance is $\mathbb E[(q_m k_m)^2] - 0 = \mathbb E[q_m^2]\,\mathbb E[k_m^2] = 1 \cdot 1 = 1$.
#    Terms with different $m$ involve disjoint independent variables, so they are uncorrelated and the variances add:
#    $\operatorname{Var}(q \cdot k) = d_k$. Dividing by $\sqrt{d_k}$ divides the variance by $d_k$: variance 1, whatever
#    $d_k$ is. (The measured 4.005, 15.83, …, 1024.9 in the table above are this, up to sampling noise.)
#
#    </details>

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. **运行并观察。** 只调用 `fit_memory`、不训练 $h$，分别拟合 `rt.NadarayaWatson(bandwidth=0.02)` 和
#    `rt.NadarayaWatson(bandwidth=3.0)`，在网格上画出两条均值曲线。哪一条把噪声也照抄了下来？哪一条把波浪抹平了？
#
#    <details><summary>答案</summary>
#
#    $h = 0.02$ 只有 200 个点间距的几分之一，每个查询几乎只读离它最近的那个训练点：均值从一个带噪声的目标跳到另一个
#    （与真值的均方误差为 0.042，学到的 $h = 0.088$ 时是 0.012）。$h = 3.0$ 比整个区间 $[0, 5]$ 还宽，每个查询都对几乎所有点
#    取平均：均值几乎是平的，在 1.1 到 1.6 之间，误差 0.73，比直线的 0.44 还差。
#
#    </details>
#
# 2. **修改并预测。** 在 $\sqrt{d_k}$ 那张表里，把缩放因子 $1/\sqrt{d_k}$ 换成 $1/d_k$。先预测：随着 $d_k$ 增大，
#    最大的权重和雅可比矩阵的范数会怎样变化？为什么这样也不好？
#
#    <details><summary>答案</summary>
#
#    分数的方差变成 $d_k / d_k^2 = 1/d_k$，分数缩向 0，softmax 趋向均匀：最大的权重从 $d_k = 4$ 时的 0.078 降到
#    $d_k = 1024$ 时的 0.033，差不多就是 $1/32$。雅可比矩阵并没有消失（范数趋向 $1/32$），但均匀的 softmax 什么都不挑：
#    模型得先把 $q$ 和 $k$ 放大 $\sqrt{d_k}$ 倍，注意力才能有所选择——同一个问题，只是换到了另一头。只有 $1/\sqrt{d_k}$
#    这个缩放，能让方差对每个 $d_k$ 都保持为 1。
#
#    </details>
#
# 3. **修改并预测。** 构造一个掩码，让每个位置只能看到自己和它前面的两个位置（宽度为 3 的窗口），打印它的权重。
#    先预测哪些元素为 0，每一行的和是多少。
#
#    <details><summary>答案</summary>
#
#    `i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]; window = (i - j >= 0) & (i - j <= 2)`。第 $i$ 行只在
#    $j = i - 2, i - 1, i$ 处非零（前两行更少），每一行的和仍然是 1：softmax 只在允许关注的位置上重新归一化。
#    因果掩码下本来就把大部分权重放在窗口里的那些行变化不大；像位置 3 那一行，原来给位置 0 的 0.25，
#    现在分给了位置 1、2、3。
#
#    </details>
#
# 4. **推导。** 设 $q_1, \dots, q_{d_k}$ 和 $k_1, \dots, k_{d_k}$ 相互独立，均值为 0，方差为 1。证明 $\mathbb E[q \cdot k] = 0$、
#    $\operatorname{Var}(q \cdot k) = d_k$，并且 $q \cdot k / \sqrt{d_k}$ 的方差为 1。
#
#    <details><summary>答案</summary>
#
#    $q \cdot k = \sum_m q_m k_m$。由独立性，每一项 $\mathbb E[q_m k_m] = \mathbb E[q_m]\,\mathbb E[k_m] = 0$，所以和的均值为 0。
#    每一项的方差是 $\mathbb E[(q_m k_m)^2] - 0 = \mathbb E[q_m^2]\,\mathbb E[k_m^2] = 1 \cdot 1 = 1$。不同 $m$ 的项涉及互不相交的
#    独立变量，彼此不相关，方差可以相加：$\operatorname{Var}(q \cdot k) = d_k$。除以 $\sqrt{d_k}$，方差就除以 $d_k$：
#    不论 $d_k$ 多大，方差都是 1。（上表中测得的 4.005、15.83、……、1024.9 正是这个结果，只差抽样噪声。）
#
#    </details>
