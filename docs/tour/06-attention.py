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

torch.manual_seed(0)
torch.set_num_threads(1)  # small tensors: one thread beats two that wait on each other


def true_mean(x):
    return torch.sin(2 * x) + x / 2


X = torch.rand(200, 1) * 5  # (N, 1) training inputs: the keys
y = true_mean(X[:, 0]) + 0.3 * torch.randn(200)  # (N,) training targets: the values

nw = rt.NadarayaWatson(bandwidth=1.0).fit_memory(X, y)  # start too wide
opt = torch.optim.Adam(nw.parameters(), lr=0.05)
for _ in range(200):  # maximum likelihood, leave-one-out (the model is in training mode)
    loss = nw.nll(X, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
nw.eval()
line = rt.LinearRegression().fit(X, y)

grid = torch.linspace(0, 5, 200)[:, None]  # (B, 1) queries
with torch.no_grad():
    mean_nw = nw.distribution(grid).mean  # (B,)
err = {"linear": ((line.predict(grid).float() - true_mean(grid[:, 0])) ** 2).mean().item(),
       "Nadaraya–Watson": ((mean_nw - true_mean(grid[:, 0])) ** 2).mean().item()}
print("learned width h", round(nw.bandwidth, 3))
print("mean squared error against the true E[y|x]:", {k: round(v, 4) for k, v in err.items()})

queries = torch.tensor([[1.0], [2.5], [4.0]])  # (3, 1)
with torch.no_grad():
    att = nw.attention_weights(queries)  # (3, N): one distribution over the training points per query
print("each row sums to", att.sum(-1).tolist())

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
ax1.scatter(X[:, 0], y, s=8, color="lightgray", label="training points")
ax1.plot(grid[:, 0], true_mean(grid[:, 0]), "k--", label="true E[y|x]")
ax1.plot(grid[:, 0], line.predict(grid), label="linear regression")
ax1.plot(grid[:, 0], mean_nw, label=f"Nadaraya–Watson, h = {nw.bandwidth:.2f}")
ax1.set_xlabel("x")
ax1.legend(fontsize=8)
order = X[:, 0].argsort()
for q, a in zip(queries[:, 0], att):
    ax2.plot(X[order, 0], a[order], ".-", ms=3, label=f"query x = {q:g}")
ax2.set_xlabel("training input x_i (the keys)")
ax2.set_ylabel("weight α_i(x)")
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
# 直线跟不上这条波浪线，加权平均却可以，因为它的权重随查询而变。每个查询的权重都是鼓在附近训练点上的一个"包"，
# 并且总和为 1。[注意力即回归实验](../experiments/attention-as-regression/report.md)在多个随机种子上把这个估计量与
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
print("max |difference| from the kernel's weights", (att_dot - att).abs().max().item())

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

# %% [markdown] lang="zh"
# ## 学出来的相似度：查询、键和值
#
# 在核回归里，相似度是固定的（$x$ 上的远近），只有宽度是学出来的。自注意力让序列中的每个位置同时充当查询、键和值，
# 并且**学习**"相似"意味着什么：由序列各位置向量组成的矩阵 $X \in \mathbb{R}^{T \times d}$，得到
#
# $$Q = X W_Q, \quad K = X W_K, \quad V = X W_V, \qquad
#   \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$
#
# （Vaswani 等，2017，式 1），其中 $W_Q, W_K, W_V$ 和模型的其余部分一起训练。$T \times T$ 矩阵
# $\mathrm{softmax}(QK^\top/\sqrt{d_k})$ 的第 $i$ 行，就是位置 $i$ 在所有位置上的分布。下面用我们自己的三行代码写出这个公式，
# 再与库里的函数和 PyTorch 的融合算子对比：

# %%
T, d, d_k = 6, 16, 8
x = torch.randn(T, d)  # (T, d): one sequence of T vectors
W_Q, W_K, W_V = (torch.randn(d, d_k) / math.sqrt(d) for _ in range(3))
Q, K, V = x @ W_Q, x @ W_K, x @ W_V  # (T, d_k) each

weights = torch.softmax(Q @ K.T / math.sqrt(d_k), dim=-1)  # (T, T): row i is a distribution over positions
out = weights @ V  # (T, d_k): each row a weighted average of the values

out_rt, weights_rt = rt.scaled_dot_product_attention(Q, K, V)
out_torch = F.scaled_dot_product_attention(Q[None], K[None], V[None])[0]
print("ours vs rt:   ", (out - out_rt).abs().max().item(), (weights - weights_rt).abs().max().item())
print("ours vs torch:", (out - out_torch).abs().max().item())
print("row sums:", weights.sum(-1).tolist())

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
    q = torch.randn(2000, 1, dk)  # (B, 1, d_k): one query each
    k = torch.randn(2000, 32, dk)  # (B, S, d_k): 32 keys each
    scores = (q @ k.transpose(-2, -1))[:, 0]  # (B, S): unscaled q.k
    row = {"d_k": dk, "Var(q.k)": scores.var().item()}
    for name, s in (("unscaled", scores), ("scaled", scores / math.sqrt(dk))):
        a = s.softmax(-1)  # (B, S)
        jac = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]  # (B, S, S): d softmax / d scores
        row[f"max weight, {name}"] = a.max(-1).values.mean().item()
        row[f"|Jacobian|, {name}"] = torch.linalg.matrix_norm(jac, ord=2).mean().item()
    rows.append(row)

print("".join(f"{k:>22}" for k in rows[0]))
for row in rows:
    print("".join(f"{v:>22.3f}" if isinstance(v, float) else f"{v:>22}" for v in row.values()))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
for name in ("unscaled", "scaled"):
    ax1.semilogx(dims, [r[f"max weight, {name}"] for r in rows], "o-", label=name)
    ax2.semilogx(dims, [r[f"|Jacobian|, {name}"] for r in rows], "o-", label=name)
ax1.axhline(1 / 32, color="gray", ls=":", label="uniform (1/32)")
ax1.set(xlabel="d_k", ylabel="mean largest weight", title="how peaked the softmax is")
ax2.set(xlabel="d_k", ylabel="mean ‖∂α/∂s‖₂", title="how much gradient passes")
ax1.legend(fontsize=8)
ax2.legend(fontsize=8)
plt.show()

# %% [markdown] lang="en"
# The variance of $q \cdot k$ tracks $d_k$. Unscaled, the largest weight climbs towards 1 as $d_k$ grows (about
# 0.95 at $d_k = 1024$) and, past a small rise, the Jacobian's norm falls towards 0 (from about 0.26 at $d_k = 16$
# to 0.06 at $d_k = 1024$); scaled, both stay where they were at $d_k = 4$.
# The [scaling experiment](../experiments/scaling/report.md) goes one step further and trains models with and
# without the scale: the unscaled one ends measurably worse.

# %% [markdown] lang="zh"
# $q \cdot k$ 的方差与 $d_k$ 一致。不缩放时，随着 $d_k$ 增大，最大的权重逼近 1（$d_k = 1024$ 时约为 0.95），
# 雅可比矩阵的范数则在短暂上升之后趋向 0（从 $d_k = 16$ 时的约 0.26 降到 $d_k = 1024$ 时的 0.06）；
# 缩放之后，两者都保持在 $d_k = 4$ 时的水平。[缩放实验](../experiments/scaling/report.md)更进一步，
# 分别训练了带缩放和不带缩放的模型：不缩放的模型最终明显更差。

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
# 语言模型要根据第 $1, \dots, i$ 个字符预测第 $i + 1$ 个字符；如果位置 $i$ 能关注到后面的位置，训练时它就能直接"偷看"答案。
# **因果掩码**（causal mask）禁止这样做：在 softmax 之前，把位置 $j > i$ 的分数设为 $-\infty$，它们的权重就恰好为 0，
# 每一行只是 $j \le i$ 上的分布。在 redthread 里，掩码是布尔张量，`True` 表示可以关注（与 PyTorch 的
# `F.scaled_dot_product_attention` 相同）。检验因果掩码的办法：改动某一个位置的键和值，它前面的输出一个都不能变。

# %%
causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T): True on and below the diagonal
out_c, weights_c = rt.scaled_dot_product_attention(Q, K, V, mask=causal)
print(weights_c.numpy().round(2))

K2, V2 = K.clone(), V.clone()
K2[3], V2[3] = torch.randn(d_k), torch.randn(d_k)  # a different character at position 3
out_c2, _ = rt.scaled_dot_product_attention(Q, K2, V2, mask=causal)
print("how far each position's output moved:", (out_c2 - out_c).abs().amax(-1).numpy().round(3))

fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
for ax, w, title in zip(axes, (weights, weights_c), ("no mask", "causal mask")):
    ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set(title=title, xlabel="key position j", ylabel="query position i")
plt.show()

# %% [markdown] lang="en"
# Every piece of the Transformer's attention is now on the table: a softmax of scaled dot products, computed for
# every query, with a mask where the task needs one. Chapter 7 adds what turns it into a model: positions, several
# heads, a feed-forward network, residual connections and LayerNorm.

# %% [markdown] lang="zh"
# Transformer 注意力的每个部件现在都摆在桌面上了：对每个查询计算缩放点积的 softmax，任务需要时再加上掩码。
# 第 7 章再加上把它变成一个模型所需的部件：位置编码、多个头、前馈网络、残差连接和层归一化。

# %% [markdown] lang="en"
# ## Try this
#
# 1. Fit `rt.NadarayaWatson(bandwidth=0.02)` and `bandwidth=3.0` without training $h$. Plot both fits: which one
#    copies the noise, and which one flattens the wave?
# 2. In the $\sqrt{d_k}$ table, replace the scale $1/\sqrt{d_k}$ by $1/d_k$. What happens to the largest weight
#    now as $d_k$ grows, and why is that no better?
# 3. Make a mask that lets each position see only itself and the two positions before it (a window of 3).
#    Print its weights and check that every row still sums to 1.

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. 分别用 `rt.NadarayaWatson(bandwidth=0.02)` 和 `bandwidth=3.0` 拟合，不训练 $h$。把两条曲线画出来：哪一条把噪声也抄了下来，
#    哪一条把波浪抹平了？
# 2. 在 $\sqrt{d_k}$ 那张表里，把缩放因子 $1/\sqrt{d_k}$ 换成 $1/d_k$。随着 $d_k$ 增大，最大的权重现在怎样变化？为什么这样也不好？
# 3. 构造一个掩码，让每个位置只能看到自己和它前面的两个位置（宽度为 3 的窗口）。打印它的权重，并检查每一行的和仍然是 1。
