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
# # 0 · An example chapter

# %% [markdown] lang="zh"
# # 第 0 章 · 示例章节

# %% [markdown] lang="en"
# A chapter of the tour in miniature: the mean of a sample is the maximum-likelihood estimate of
# $\mu$ under a Gaussian, $\hat\mu = \frac{1}{n}\sum_i y_i$. See [the claims](../claims.md).

# %% [markdown] lang="zh"
# 导览章节的缩影：在高斯分布下，样本均值就是 $\mu$ 的最大似然估计，$\hat\mu = \frac{1}{n}\sum_i y_i$。
# 参见[论点](../claims.md)。

# %%
import matplotlib.pyplot as plt
import torch

import redthread as rt

torch.manual_seed(0)
y = 2.0 + torch.randn(200)
print(rt.say("mean:", "均值："), round(y.mean().item(), 3))  # the maximum-likelihood estimate ‖ 最大似然估计
print(rt.__version__)

# %%
plt.figure(figsize=(3, 2))
plt.hist(y.numpy(), bins=20)
plt.title(rt.say("a sample of 200", "200 个样本"))
plt.show()

# %% [markdown] lang="en"
# ## Try this
#
# 1. Draw 2,000 points instead of 200: how close does the mean come to 2?

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. 把 200 个点换成 2000 个：均值离 2 有多近？
