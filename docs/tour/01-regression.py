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
# # 1 · Regression is E[y | x]

# %% [markdown] lang="zh"
# # 第 1 章 · 回归就是 E[y | x]

# %% [markdown] lang="en"
# Linear regression is usually taught as "draw the best straight line through the points". This chapter
# reads it another way, the way the whole tour reads every model: a regression model **estimates a
# conditional distribution** $p(y \mid x)$ from finite data, and its prediction for a new $x$ is an
# estimate of the conditional expectation
#
# $$\hat y(x_\text{new}) \approx \mathbb{E}[\,y \mid x = x_\text{new}\,].$$
#
# The model is not "remembering points": it summarises how $y$ is distributed once $x$ is known. Every
# later rung of the ladder — classifiers, n-grams, the MLP language model, RNNs, the Transformer — does
# the same thing for a different kind of $y$ and a richer kind of $x$. This is claim
# [C1](../claims.md) of the essay; [the regression experiment](../experiments/regression/report.md)
# tests it over many sample sizes and seeds.

# %% [markdown] lang="zh"
# 线性回归通常被讲成"画一条最贴合数据点的直线"。这一章换一个角度来看它——也是整个导览看待每个模型的角度：
# 回归模型是在用有限的样本**估计一个条件分布** $p(y \mid x)$，它对新输入 $x$ 的预测，是对条件期望的估计：
#
# $$\hat y(x_\text{new}) \approx \mathbb{E}[\,y \mid x = x_\text{new}\,].$$
#
# 模型并不是在"背下数据点"，而是在概括：已知 $x$ 之后，$y$ 是怎样分布的。阶梯上后面的每一级——分类器、n 元语法、
# MLP 语言模型、RNN、Transformer——做的都是同一件事，只是 $y$ 换了种类，$x$ 变得更丰富。这就是文章的论点
# [C1](../claims.md)；[回归实验的报告](../experiments/regression/report.md)在多种样本量和多个随机种子下检验了它。

# %% [markdown] lang="en"
# ## The model and its likelihood
#
# Assume the data come from a line plus Gaussian noise:
#
# $$y = w x + b + \varepsilon, \qquad \varepsilon \sim \mathcal N(0, \sigma^2),
# \qquad\text{i.e.}\qquad p(y \mid x) = \mathcal N\big(y;\, \mu(x), \sigma^2\big),\quad \mu(x) = w x + b .$$
#
# Then $\mathbb E[y \mid x] = \mu(x)$, and fitting the model means choosing $w, b, \sigma^2$ that make the
# observed data most probable. The negative log-likelihood (NLL) of $n$ independent examples is
#
# $$-\log L(w, b, \sigma^2) = \sum_{i=1}^{n} \Big[\tfrac12 \log(2\pi\sigma^2) + \frac{(y_i - w x_i - b)^2}{2\sigma^2}\Big]
# = \frac n2 \log(2\pi\sigma^2) + \frac{1}{2\sigma^2}\,\underbrace{\sum_i (y_i - w x_i - b)^2}_{\text{RSS}} .$$
#
# Two things follow by reading this formula. For **any** fixed $\sigma^2$, the $w, b$ that minimise it are the
# ones that minimise the residual sum of squares RSS: **least squares is maximum likelihood under Gaussian
# noise**. And setting the derivative in $\sigma^2$ to zero gives the maximum-likelihood noise variance
# $\hat\sigma^2 = \text{RSS}/n$.

# %% [markdown] lang="zh"
# ## 模型与它的似然
#
# 假设数据来自一条直线加上高斯噪声：
#
# $$y = w x + b + \varepsilon, \qquad \varepsilon \sim \mathcal N(0, \sigma^2),
# \qquad\text{即}\qquad p(y \mid x) = \mathcal N\big(y;\, \mu(x), \sigma^2\big),\quad \mu(x) = w x + b .$$
#
# 于是 $\mathbb E[y \mid x] = \mu(x)$。所谓"拟合"，就是选出让观测数据出现概率最大的 $w, b, \sigma^2$。
# $n$ 个独立样本的负对数似然（NLL）是
#
# $$-\log L(w, b, \sigma^2) = \sum_{i=1}^{n} \Big[\tfrac12 \log(2\pi\sigma^2) + \frac{(y_i - w x_i - b)^2}{2\sigma^2}\Big]
# = \frac n2 \log(2\pi\sigma^2) + \frac{1}{2\sigma^2}\,\underbrace{\sum_i (y_i - w x_i - b)^2}_{\text{RSS}} .$$
#
# 仔细看这个式子能读出两件事。第一，无论 $\sigma^2$ 取什么值，使它最小的 $w, b$ 都正是使残差平方和 RSS 最小的那组：
# **在高斯噪声假设下，最小二乘就是最大似然**。第二，对 $\sigma^2$ 求导并令其为零，得到噪声方差的最大似然估计
# $\hat\sigma^2 = \text{RSS}/n$。

# %% [markdown] lang="en"
# ## Data we wrote down ourselves
#
# To check an estimate of $\mathbb E[y \mid x]$ we need to know the true one, so we draw the data from a
# distribution we chose: $x \sim U(-2, 2)$, $y = 1.5\,x + 0.5 + \varepsilon$ with $\sigma = 0.5$
# (so $\sigma^2 = 0.25$). Small models train fastest on one thread, so the chapter asks for one.

# %% [markdown] lang="zh"
# ## 自己写下的数据
#
# 要检验对 $\mathbb E[y \mid x]$ 的估计好不好，得知道真实的条件期望是什么，所以我们从一个自己选定的分布里抽样：
# $x \sim U(-2, 2)$，$y = 1.5\,x + 0.5 + \varepsilon$，噪声 $\sigma = 0.5$（即 $\sigma^2 = 0.25$）。
# 小模型在单线程下训练最快，所以本章只用一个线程。

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import torch
from sklearn.linear_model import LinearRegression as SklearnLinearRegression

import redthread as rt
from redthread.data.regression import RegressionData
from redthread.train.loop import train

torch.manual_seed(0)
torch.set_num_threads(1)  # tiny models: one thread beats two that wait on each other
gen = torch.Generator().manual_seed(0)


def draw_line(n):
    """n samples of y = 1.5 x + 0.5 + N(0, 0.5^2), x ~ U(-2, 2)."""
    x = torch.empty(n).uniform_(-2, 2, generator=gen)
    y = 1.5 * x + 0.5 + 0.5 * torch.randn(n, generator=gen)
    return x[:, None], y  # X (n, 1), y (n,)


X, y = draw_line(200)
X_test, y_test = draw_line(2000)  # held out: never used for fitting
print(X.shape, y.shape)

# %% [markdown] lang="en"
# ## Least squares in closed form, three ways
#
# `rt.LinearRegression` solves least squares in closed form, scikit-learn style. The same numbers must come
# out of scikit-learn's `LinearRegression` and out of the normal equations
# $\big(A^\top A\big)\,\theta = A^\top y$ with $A = [x, 1]$ and $\theta = (w, b)$.

# %% [markdown] lang="zh"
# ## 最小二乘的闭式解：三种算法
#
# `rt.LinearRegression` 像 scikit-learn 一样用闭式解求最小二乘。scikit-learn 的 `LinearRegression`，
# 以及正规方程 $\big(A^\top A\big)\,\theta = A^\top y$（其中 $A = [x, 1]$，$\theta = (w, b)$）都应该给出同样的数。

# %%
ols = rt.LinearRegression().fit(X, y)
sk = SklearnLinearRegression().fit(X.numpy(), y.numpy())
A = torch.cat([X.double(), torch.ones(len(X), 1, dtype=torch.float64)], 1)  # (n, 2): [x, 1]
theta = torch.linalg.solve(A.T @ A, A.T @ y.double())  # normal equations

print(f"{'':18}{'w':>10}{'b':>10}")
print(f"{'redthread':18}{ols.coef_[0].item():10.4f}{ols.intercept_:10.4f}")
print(f"{'scikit-learn':18}{sk.coef_[0]:10.4f}{sk.intercept_:10.4f}")
print(f"{'normal equations':18}{theta[0].item():10.4f}{theta[1].item():10.4f}")
print("noise_var_ (RSS/n)       ", round(ols.noise_var_, 4))
print("noise_var_unbiased_ (n-2)", round(ols.noise_var_unbiased_, 4))

# %% [markdown] lang="en"
# All three agree (scikit-learn computes in float32 here, so it matches to the digits printed). The estimates
# $\hat w = 1.5237$ and $\hat b = 0.4603$ are close to the truth, 1.5 and 0.5, but not equal: 200 noisy
# examples do not pin the line down exactly. The maximum-likelihood noise variance is RSS$/n = 0.2787$
# (the truth is 0.25); dividing by $n - 2$ instead, for the two fitted parameters of the mean, gives the
# unbiased 0.2816.

# %% [markdown] lang="zh"
# 三种算法的结果一致（scikit-learn 这里用 float32 计算，在打印的位数上相同）。估计值 $\hat w = 1.5237$、
# $\hat b = 0.4603$ 接近真实的 1.5 和 0.5，但并不相等：200 个带噪声的样本不足以把直线完全确定下来。
# 噪声方差的最大似然估计是 RSS$/n = 0.2787$（真实值为 0.25）；若改除以 $n - 2$（扣掉均值里的两个参数），
# 得到无偏估计 0.2816。

# %% [markdown] lang="en"
# ## Least squares = maximum likelihood, seen and computed
#
# The left panel below draws the mean Gaussian NLL as a function of the slope $w$ (the intercept held at
# its fitted value) for three noise variances. The curves differ in height and curvature, since
# $\sigma^2$ scales the squared error and shifts the log term, but they bottom out at the **same** $w$: the
# least-squares slope. The right panel fixes $w, b$ at the fit and varies $\sigma^2$: the minimum sits at
# RSS$/n$.
#
# Then we let the optimiser find the same answer. `rt.fit_gd` fits the model the way every other rung of
# the ladder is trained: the one training loop minimises the Gaussian NLL with AdamW, starting from
# random weights, with no formula for the answer.

# %% [markdown] lang="zh"
# ## 最小二乘 = 最大似然：画出来，再算出来
#
# 下图左侧画的是平均高斯 NLL 随斜率 $w$ 的变化（截距固定在拟合值），取了三个不同的噪声方差。
# 由于 $\sigma^2$ 会缩放平方误差项、并平移对数项，三条曲线的高低和弯曲程度各不相同，但它们的最低点落在**同一个** $w$ 上：
# 正是最小二乘的斜率。右图把 $w, b$ 固定在拟合值、只改变 $\sigma^2$：最低点恰在 RSS$/n$。
#
# 接着让优化器自己找到同一个答案。`rt.fit_gd` 用阶梯上其他模型的训练方式来拟合：同一个训练循环从随机权重出发，
# 用 AdamW 最小化高斯 NLL，不借助任何解析公式。

# %%
ws = torch.linspace(1.0, 2.0, 2001, dtype=torch.float64)
x64, y64 = X[:, 0].double(), y.double()
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
print("variance  argmin of the NLL over w")
for var in (0.1, ols.noise_var_, 1.0):
    nll = torch.stack([rt.gaussian_nll(w * x64 + ols.intercept_, y64, var) for w in ws])  # mean NLL per w
    w_best = ws[nll.argmin()].item()
    print(f"{var:8.4f}  {w_best:.4f}")
    ax1.plot(ws, nll, label=f"$\\sigma^2$ = {var:.3g}")
    ax1.plot(w_best, nll.min(), "ko", ms=4)
ax1.axvline(ols.coef_[0], color="grey", ls="--", lw=1, label="least squares $\\hat w$")
ax1.set(xlabel="slope w", ylabel="mean NLL (nats)", ylim=(0.5, 4), title="NLL against w: one minimiser")
ax1.legend(fontsize=8)

variances = torch.linspace(0.05, 1.0, 2000, dtype=torch.float64)
mean_fit = ols.predict(X)
nll_var = torch.stack([rt.gaussian_nll(mean_fit, y64, v) for v in variances])
print("argmin over sigma^2:", round(variances[nll_var.argmin()].item(), 4), " RSS/n:", round(ols.noise_var_, 4))
ax2.plot(variances, nll_var)
ax2.axvline(ols.noise_var_, color="grey", ls="--", lw=1, label="RSS / n")
ax2.set(xlabel="noise variance $\\sigma^2$", ylabel="mean NLL (nats)", title="NLL against $\\sigma^2$ at $\\hat w, \\hat b$")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
gd = rt.fit_gd(rt.LinearRegression(), X, y, max_iters=500, lr=0.05)  # the training loop, Gaussian NLL
print(f"{'':22}{'w':>10}{'b':>10}{'sigma^2':>10}")
print(f"{'closed form':22}{ols.coef_[0].item():10.4f}{ols.intercept_:10.4f}{ols.noise_var_:10.4f}")
print(f"{'gradient descent (NLL)':22}{gd.coef_[0].item():10.4f}{gd.intercept_:10.4f}{gd.noise_var_:10.4f}")
print("largest gap:", f"{max(abs(gd.coef_[0] - ols.coef_[0]).item(), abs(gd.intercept_ - ols.intercept_)):.1e}")

# %% [markdown] lang="en"
# Each curve's minimum lands on the least-squares slope (to the grid's step of 0.0005), the $\sigma^2$ curve on
# RSS$/n$ (to its grid's step), and 500 steps of gradient descent on the likelihood reproduce the
# closed-form fit, the noise variance included: the largest gap is about $2 \times 10^{-12}$.

# %% [markdown] lang="zh"
# 每条曲线的最低点都落在最小二乘的斜率上（网格步长为 0.0005），$\sigma^2$ 曲线的最低点落在 RSS$/n$
# （同样在网格精度内）；对似然做 500 步梯度下降，重现了闭式解，连噪声方差也一样：最大差距约为 $2 \times 10^{-12}$。

# %% [markdown] lang="en"
# ## The prediction is a distribution
#
# Because the model is $p(y \mid x)$, not just a line, it says how far from the line new points will fall:
# `ols.distribution(X)` is a `torch.distributions.Normal` with mean $\hat w x + \hat b$ and variance
# $\hat\sigma^2$. Its central 95% interval is $\hat\mu(x) \pm 1.96\,\hat\sigma$. If the model is right, about
# 95% of **new** points fall inside. We check on the 2,000 held-out points, and also report the mean NLL
# per held-out point and $R^2$ (the share of the variance of $y$ that the mean explains).

# %% [markdown] lang="zh"
# ## 预测是一个分布
#
# 模型是 $p(y \mid x)$，而不只是一条直线，所以它还能告诉我们新数据点会偏离直线多远：`ols.distribution(X)`
# 返回一个 `torch.distributions.Normal`，均值为 $\hat w x + \hat b$，方差为 $\hat\sigma^2$。它的中间 95% 区间是
# $\hat\mu(x) \pm 1.96\,\hat\sigma$。如果模型是对的，大约 95% 的**新**数据点会落在区间里。我们在 2000 个留出的点上检验，
# 同时给出每个留出点的平均 NLL 和 $R^2$（均值能解释的 $y$ 的方差比例）。

# %%
pred = ols.distribution(X_test)  # Normal, batch shape (2000,)
lo, hi = pred.icdf(torch.tensor(0.025)), pred.icdf(torch.tensor(0.975))
inside = ((y_test >= lo) & (y_test <= hi)).double().mean().item()
print("share of held-out points inside the 95% interval:", round(inside, 4))
print("held-out mean NLL (nats):", round(ols.nll(X_test, y_test), 4))
print("held-out R^2:", round(ols.score(X_test, y_test), 4))

grid = torch.linspace(-2, 2, 200)[:, None]
band = ols.distribution(grid)
fig, ax = plt.subplots(figsize=(6, 3.6))
ax.scatter(X[:, 0], y, s=8, alpha=0.6, label="training data")
ax.plot(grid[:, 0], 1.5 * grid[:, 0] + 0.5, "k--", lw=1, label="true E[y|x]")
ax.plot(grid[:, 0], band.mean, "C3", label="estimate of E[y|x]")
ax.fill_between(grid[:, 0], band.icdf(torch.tensor(0.025)), band.icdf(torch.tensor(0.975)), color="C3", alpha=0.15,
                label="95% predictive interval")
ax.set(xlabel="x", ylabel="y", title="p(y | x) = N(w x + b, $\\sigma^2$)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] lang="en"
# 96.45% of the held-out points fall inside the 95% interval: close to the promised 95%, and the small excess
# comes from $\hat\sigma^2$ (0.2787) being a little above the true 0.25, which widens the band. A held-out
# NLL of about 0.70 nats per point is what a Gaussian with this variance scores; $R^2$ is 0.93.

# %% [markdown] lang="zh"
# 留出的点中有 96.45% 落在 95% 区间之内：与承诺的 95% 很接近，多出的一点是因为 $\hat\sigma^2$（0.2787）略大于真实的
# 0.25，把区间撑宽了一些。每个留出点的 NLL 约为 0.70 奈特，正是这个方差的高斯分布应有的水平；$R^2$ 为 0.93。

# %% [markdown] lang="en"
# ## When E[y | x] is not a line, and the noise is not constant
#
# Nothing above needed $\mathbb E[y \mid x]$ to be linear: only the *model* was. Now the truth is
# $\mathbb E[y \mid x] = \sin 2x$ on $x \in [-3, 3]$, and the noise grows away from 0,
# $\operatorname{sd}(y \mid x) = 0.1 + 0.15\,|x|$. Three estimators of $p(y \mid x)$, all trained by
# maximum likelihood:
#
# - `rt.LinearRegression` — a global, fixed linear $\mu(x)$, one $\sigma^2$: it cannot bend.
# - `rt.MLPRegressor` — a global, fixed **non-linear** $\mu(x)$ (two tanh layers of 32 units), trained by the
#   training loop on the Gaussian NLL; with `heteroscedastic=True` the network also outputs
#   $\log\sigma^2(x)$, so the predicted spread may change with $x$.
# - `rt.NadarayaWatson` — kernel regression, no global function at all: the estimate at $x$ is a weighted
#   average of the training $y_i$, with weights
#   $\alpha_i(x) = \operatorname{softmax}_i\!\big(-(x - x_i)^2 / 2h^2\big)$ that are recomputed for every
#   query. Only the width $h$ is learned (by the loop, on the leave-one-out likelihood). Those weights are
#   **attention**: query $x$, keys $x_i$, values $y_i$ — chapter 6 starts from here.
#
# All three are scored on 400 held-out points (mean NLL) and against the true $\sin 2x$ on a grid
# (the root-mean-square error of the estimated mean).

# %% [markdown] lang="zh"
# ## 当 E[y | x] 不是直线、噪声也不恒定时
#
# 前面的推导从没要求 $\mathbb E[y \mid x]$ 是线性的，线性的只是*模型*。现在让真实的条件期望为
# $\mathbb E[y \mid x] = \sin 2x$（$x \in [-3, 3]$），噪声随 $|x|$ 增大：$\operatorname{sd}(y \mid x) = 0.1 + 0.15\,|x|$。
# 下面三个 $p(y \mid x)$ 的估计器都用最大似然训练：
#
# - `rt.LinearRegression`：全局固定的线性 $\mu(x)$，只有一个 $\sigma^2$，弯不过来。
# - `rt.MLPRegressor`：全局固定的**非线性** $\mu(x)$（两层、每层 32 个 tanh 单元），由训练循环最小化高斯 NLL；
#   设 `heteroscedastic=True` 时网络还输出 $\log\sigma^2(x)$，预测的离散程度可以随 $x$ 变化（异方差）。
# - `rt.NadarayaWatson`：核回归，根本没有全局函数：在 $x$ 处的估计是训练样本 $y_i$ 的加权平均，权重
#   $\alpha_i(x) = \operatorname{softmax}_i\!\big(-(x - x_i)^2 / 2h^2\big)$ 对每个查询点重新计算，只学习宽度 $h$
#   （由训练循环在留一似然上学习）。这组权重就是**注意力**：查询是 $x$，键是 $x_i$，值是 $y_i$——
#   第 6 章就从这里出发。
#
# 三者都在 400 个留出点上计算平均 NLL，并在网格上与真实的 $\sin 2x$ 比较（估计均值的均方根误差）。

# %%
def draw_sine(n):
    x = torch.empty(n).uniform_(-3, 3, generator=gen)
    y = torch.sin(2 * x) + (0.1 + 0.15 * x.abs()) * torch.randn(n, generator=gen)
    return x[:, None], y


Xs, ys = draw_sine(600)
Xs_val, ys_val = draw_sine(400)
data = RegressionData(Xs, ys, Xs_val, ys_val)  # a data source for the training loop
grid = torch.linspace(-3, 3, 300)[:, None]
true_mean, true_sd = torch.sin(2 * grid[:, 0]), 0.1 + 0.15 * grid[:, 0].abs()


def fit(model, steps, lr, batch_size=128):
    cfg = rt.TrainConfig(max_iters=steps, batch_size=batch_size, lr=lr, min_lr=lr / 10, warmup_iters=steps // 20,
                         weight_decay=0.0, eval_interval=steps, eval_batches=1, log_interval=steps, seed=0, device="cpu")
    train(model, data, cfg, progress=False)  # minimises model.objective: the Gaussian NLL
    return model.eval()


torch.manual_seed(0)
models = {
    "linear": rt.LinearRegression().fit(Xs, ys),
    "MLP, one sigma": fit(rt.MLPRegressor(1, d_hidden=32, n_layer=2), 1500, 1e-2),
    "MLP, sigma(x)": fit(rt.MLPRegressor(1, d_hidden=32, n_layer=2, heteroscedastic=True), 1500, 1e-2),
    "Nadaraya-Watson": fit(rt.NadarayaWatson().fit_memory(Xs, ys), 300, 0.05),
}
curves = {}
print(f"{'model':18}{'val NLL':>9}{'RMSE vs sin 2x':>16}")
for name, m in models.items():
    with torch.no_grad():
        d = m.distribution(grid)
        val_nll = float(m.nll(Xs_val, ys_val))
    curves[name] = (d.mean.float(), d.stddev.float())
    rmse = ((d.mean.float() - true_mean) ** 2).mean().sqrt().item()
    print(f"{name:18}{val_nll:9.3f}{rmse:16.3f}")
print("learned kernel width h:", round(models["Nadaraya-Watson"].bandwidth, 3))

# %%
fig, axes = plt.subplots(1, 4, figsize=(14, 3.4), sharey=True)
for ax, (name, (mean, sd)) in zip(axes, curves.items()):
    ax.scatter(Xs[:, 0], ys, s=4, alpha=0.35, color="grey")
    ax.plot(grid[:, 0], true_mean, "k--", lw=1, label="true E[y|x]")
    ax.fill_between(grid[:, 0], true_mean - 2 * true_sd, true_mean + 2 * true_sd, color="k", alpha=0.07,
                    label="true ±2 sd")
    ax.plot(grid[:, 0], mean, "C3", label="estimate")
    ax.fill_between(grid[:, 0], mean - 2 * sd, mean + 2 * sd, color="C3", alpha=0.2, label="predicted ±2 sd")
    ax.set(title=name, xlabel="x", ylim=(-3, 3))
axes[0].set_ylabel("y")
axes[0].legend(fontsize=7, loc="lower left")
fig.tight_layout()
plt.show()

# %% [markdown] lang="en"
# The line cannot follow $\sin 2x$: its "E[y | x]" is off by 0.66 on average and it covers its error with a
# huge $\sigma^2$ (val NLL 1.09). The MLP bends and its mean is within 0.07 of the truth, but with one
# $\sigma$ for every $x$ its band is too wide near 0 and too narrow at the edges. Letting it predict
# $\sigma(x)$ changes the mean little (RMSE 0.08) but the likelihood a lot (val NLL 0.41 → 0.24): it has learned the
# shape of the noise. Nadaraya–Watson gets the best mean here (RMSE 0.06) with a learned width $h = 0.072$,
# and its spread — the weighted spread of the neighbours it attends to — follows the noise too.
#
# The lesson of this rung: whatever the estimator, *what* it estimates is the conditional distribution
# $p(y \mid x)$, and *how* it learns is the same likelihood. The next chapter changes $y$ from a number to
# a class.

# %% [markdown] lang="zh"
# 直线跟不上 $\sin 2x$：它给出的"E[y | x]"平均偏离 0.66，只能用一个很大的 $\sigma^2$ 来掩盖误差（验证 NLL 为 1.09）。
# MLP 能弯曲，均值与真值相差 0.07 以内；但它对所有 $x$ 只有一个 $\sigma$，于是在 0 附近区间太宽、在两端又太窄。
# 让它预测 $\sigma(x)$ 之后，均值变化不大（RMSE 0.08），似然却好了很多（验证 NLL 从 0.41 降到 0.24）：它学到了噪声的形状。
# Nadaraya–Watson 在这里的均值最好（RMSE 0.06），学到的宽度 $h = 0.072$；它的离散程度——它所关注的那些近邻的加权离散程度——
# 也随噪声变化。
#
# 这一级阶梯的要点：不论用哪种估计器，它估计的*对象*都是条件分布 $p(y \mid x)$，学习的*方法*都是同一个似然。
# 下一章把 $y$ 从一个数换成一个类别。

# %% [markdown] lang="en"
# ## Try this
#
# 1. Draw 20 training points instead of 200, then 2,000 (`draw_line(20)`). How far are $\hat w$ and
#    `noise_var_` from 1.5 and 0.25 each time? Does the share of held-out points inside the 95% interval
#    stay near 0.95?
# 2. Give `rt.fit_gd` only `max_iters=20`. The coefficients are no longer the least-squares ones: compare
#    its held-out `nll` with the closed form's. Which is lower, and why must it be?
# 3. Fit `rt.NadarayaWatson(bandwidth=0.01)` and `rt.NadarayaWatson(bandwidth=1.0)` with `fit_memory` alone
#    (no training) and draw their means on the grid. Which one copies the noise, and which one is too
#    smooth to follow $\sin 2x$?

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. 把训练点从 200 个换成 20 个，再换成 2000 个（`draw_line(20)`）。每次 $\hat w$ 和 `noise_var_` 离 1.5 和 0.25 有多远？
#    落在 95% 区间里的留出点比例是否仍接近 0.95？
# 2. 只给 `rt.fit_gd` 设 `max_iters=20`。此时系数不再是最小二乘解：比较它和闭式解在留出数据上的 `nll`。
#    哪个更低？为什么一定如此？
# 3. 只调用 `fit_memory`（不训练），分别拟合 `rt.NadarayaWatson(bandwidth=0.01)` 和 `rt.NadarayaWatson(bandwidth=1.0)`，
#    并在网格上画出它们的均值。哪一个把噪声也照抄了下来？哪一个又平滑得跟不上 $\sin 2x$？
