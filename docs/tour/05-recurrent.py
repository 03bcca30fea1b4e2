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
# # 5 · Recurrent networks: the whole past in a fixed-size state

# %% [markdown] lang="zh"
# # 第 5 章 · 循环神经网络：把全部过去装进一个固定大小的状态

# %% [markdown] lang="en"
# The MLP language model of chapter 4 reads a fixed window of the last few characters; whatever lies
# further back does not exist for it. A **recurrent network** removes the window. It reads the text one
# character at a time and folds each into a hidden state $h_t \in \mathbb{R}^H$,
#
# $$h_t = \tanh\left(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh}\right), \qquad
#   P(w_{t+1} \mid w_1, \dots, w_t) = \mathrm{softmax}(W_o h_t + b_o),$$
#
# where $w_t$ is the $t$-th character, $x_t$ its embedding and $h_0 = 0$. In principle the next-character
# distribution now depends on the **whole** past, and the model is trained exactly like every rung before it: by
# maximum likelihood, minimising the mean cross-entropy $-\frac1T\sum_t \log P(w_{t+1} \mid w_{\le t})$.
#
# The essay names three things that go wrong, and this chapter shows each in code or in numbers:
#
# - the past reaches the present through a product of Jacobians, so over long distances the gradient
#   **vanishes or explodes** ([C3](../claims.md));
# - $h_t$ needs $h_{t-1}$: the steps run **one after another**, never in parallel ([C4](../claims.md));
# - whatever the length of the past, it is squeezed into **$H$ numbers** ([C5](../claims.md)).
#
# The data are tiny Shakespeare (40,000 lines of the plays, 65 distinct characters), split as nanoGPT
# splits it: the first 90% to train on, the last 10% to validate on.

# %% [markdown] lang="zh"
# 第 4 章的 MLP 语言模型只读最近几个字符组成的固定窗口，窗口以外的内容对它来说根本不存在。**循环神经网络**（RNN）
# 去掉了这个窗口：它一次读一个字符，把每个字符"折叠"进隐状态 $h_t \in \mathbb{R}^H$：
#
# $$h_t = \tanh\left(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh}\right), \qquad
#   P(w_{t+1} \mid w_1, \dots, w_t) = \mathrm{softmax}(W_o h_t + b_o),$$
#
# 其中 $w_t$ 是第 $t$ 个字符，$x_t$ 是它的词嵌入，$h_0 = 0$。这样一来，下一个字符的条件分布在原则上取决于**全部**过去；
# 训练方法也和前面每一级完全相同：最大似然，即最小化平均交叉熵 $-\frac1T\sum_t \log P(w_{t+1} \mid w_{\le t})$。
#
# 原文指出了 RNN 的三个问题，本章用代码或数字把它们逐一展示出来：
#
# - 过去对现在的影响要经过一串雅可比矩阵的连乘，距离一长，梯度就会**消失或爆炸**（[C3](../claims.md)）；
# - $h_t$ 必须等 $h_{t-1}$ 算完：各个时间步只能**串行**计算，无法并行（[C4](../claims.md)）；
# - 不管过去有多长，都要被压缩进 **$H$ 个数** 里（[C5](../claims.md)）。
#
# 数据用 tiny Shakespeare（莎士比亚剧本中的 40,000 行，共 65 个不同字符），按 nanoGPT 的方式划分：
# 前 90% 用于训练，后 10% 用于验证。

# %%

import matplotlib.pyplot as plt
import torch

import redthread as rt
from redthread.data import CharTokenizer, TokenSplit, get_batch, load_corpus, split_corpus, text_path
from redthread.experiments import rnn_gradients

# %matplotlib inline
# (after the imports: importing redthread.experiments selects matplotlib's file-only backend)

torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread beats two that wait on each other

TEXT = text_path("tinyshakespeare")  # shipped with redthread
corpus = load_corpus(TEXT)
train_text, val_text = split_corpus(corpus)  # one document: cut at 90%
tok = CharTokenizer.from_text(corpus.text)
train = TokenSplit(tok.encode_array(train_text), len(train_text), "train")
val = TokenSplit(tok.encode_array(val_text), len(val_text), "validation")
V = tok.vocab_size
print("vocabulary", V, "| train", len(train.tokens), "| validation", len(val.tokens))

# %% [markdown] lang="en"
# ## One step, written out
#
# `rt.RecurrentLM` with `cell="rnn"` is the network above; its cells are written out in
# `models/recurrent.py` and equal torch's `nn.RNN`, `nn.LSTM` and `nn.GRU`. Below, the library computes
# $h_1, \dots, h_T$ for a line of text, and one line of our own computes the same recurrence from its
# weights. The state it carries from one character to the next is a tensor of shape $(B, H)$, whether the
# text so far has 10 characters or 10,000: that fixed size is claim C5, and the loop over $t$ is C4.

# %% [markdown] lang="zh"
# ## 把一步写出来
#
# `rt.RecurrentLM` 取 `cell="rnn"` 就是上面的网络；它的单元在 `models/recurrent.py` 里逐行写出，与 torch 的
# `nn.RNN`、`nn.LSTM`、`nn.GRU` 结果一致。下面先让库算出一行文本的 $h_1, \dots, h_T$，再用我们自己的一行代码，
# 直接按公式从权重出发重算同一个递推。它从一个字符带到下一个字符的状态是一个形状为 $(B, H)$ 的张量——
# 无论前文有 10 个字符还是 10,000 个字符，大小都不变：这个固定大小就是论点 C5，而对 $t$ 的循环就是 C4。

# %%
rnn = rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=64, cell="rnn", d_embed=32, d_hidden=128))
line = "To be, or not to be, that is the question"
idx = torch.tensor([tok.encode(line)])  # (1, T)

with torch.no_grad():
    h_lib = rnn.hidden(idx)  # (1, T, H): the library's h_1 .. h_T
    cell = rnn.cells[0]
    h, h_ours = torch.zeros(1, cell.hidden_size), []
    for x_t in rnn.tok_emb(idx).unbind(1):  # one character at a time: h_t needs h_{t-1}
        h = torch.tanh(x_t @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh)
        h_ours.append(h)
    h_ours = torch.stack(h_ours, 1)  # (1, T, H)
print("max |difference|", (h_lib - h_ours).abs().max().item())

for n in (10, 10_000):
    state = rnn.make_cache(batch_size=1)  # the state carried between calls
    with torch.no_grad():
        rnn(torch.from_numpy(val.tokens[:n].astype("int64"))[None], cache=state)
    print(n, "characters read -> state shapes", [tuple(s.shape) for s in state.states[0]])

# %% [markdown] lang="en"
# ## Back-propagation through time
#
# The loss at step $T$ reaches the state at an earlier step $t$ through every step in between. By the chain rule
#
# $$\frac{\partial h_T}{\partial h_t} = \prod_{s=t+1}^{T} \frac{\partial h_s}{\partial h_{s-1}}
#   = \prod_{s=t+1}^{T} \mathrm{diag}\!\left(1 - h_s^2\right) W_{hh},$$
#
# a product of $T - t$ matrices (Bengio et al. 1994; Pascanu et al. 2013). Since $|\tanh'| \le 1$, its norm
# is at most $\|W_{hh}\|_2^{\,T-t}$: when the recurrent weights shrink vectors, the gradient from far away
# decays **geometrically**; when they stretch them, it can grow geometrically. Either way, a dependency
# 100 characters long is hard to learn from a gradient that is $10^{-30}$ or $10^{+6}$ times the one from the
# last step. First, one factor of the product, checked against autograd:

# %% [markdown] lang="zh"
# ## 随时间反向传播
#
# 第 $T$ 步的损失要影响更早的第 $t$ 步的状态，必须穿过中间的每一步。由链式法则，
#
# $$\frac{\partial h_T}{\partial h_t} = \prod_{s=t+1}^{T} \frac{\partial h_s}{\partial h_{s-1}}
#   = \prod_{s=t+1}^{T} \mathrm{diag}\!\left(1 - h_s^2\right) W_{hh},$$
#
# 这是 $T - t$ 个矩阵的连乘（Bengio 等，1994；Pascanu 等，2013）。因为 $|\tanh'| \le 1$，它的范数不超过
# $\|W_{hh}\|_2^{\,T-t}$：循环权重若把向量缩短，远处传来的梯度就按**几何级数**衰减；若把向量拉长，梯度又可能按几何级数增长。
# 无论哪种情况，如果 100 个字符之外传来的梯度只有最近一步的 $10^{-30}$ 倍，或者是它的 $10^{+6}$ 倍，
# 模型都很难学到这么长的依赖。先用自动求导验证连乘中的一个因子：

# %%
x_t, h_prev = torch.randn(cell.input_size), torch.randn(cell.hidden_size)


def step(h):
    return torch.tanh(x_t @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh)


with torch.no_grad():
    h_t = step(h_prev)
jac_autograd = torch.autograd.functional.jacobian(step, h_prev)  # (H, H)
jac_formula = torch.diag(1 - h_t**2) @ cell.weight_hh  # diag(1 - h_t^2) W_hh
print("max |difference|", (jac_autograd - jac_formula).abs().max().item())

# %% [markdown] lang="en"
# Now the whole product, over 100 steps. The functions of the [rnn-gradients experiment](../experiments/rnn-gradients/report.md)
# (`redthread.experiments.rnn_gradients`) compute $\|\partial h_T / \partial h_t\|_2$ exactly by autograd, in
# float64, for every distance $k = T - t$ from 1 to 100, at initialisation, on random 16-symbol sequences:
#
# - a tanh RNN whose $W_{hh} = \rho Q$ with $Q$ orthogonal, so every singular value is $\rho$: $\rho = 0.5$, $1$, $2$;
# - an LSTM (below) with torch's initialisation, and with the "chrono" initialisation of its forget gates
#   (Tallec & Ollivier 2018);
# - for contrast, a two-block Transformer (chapter 7), where position $T$ reaches position $t$ through attention
#   in a fixed number of steps, whatever the distance.
#
# The figure divides each curve by its value at $k = 1$: what is left of the gradient after $k$ steps.

# %% [markdown] lang="zh"
# 再看 100 步的完整连乘。[rnn-gradients 实验](../experiments/rnn-gradients/report.md)里的函数
# （`redthread.experiments.rnn_gradients`）用自动求导、以 float64 精确计算每个距离 $k = T - t$（从 1 到 100）上的
# $\|\partial h_T / \partial h_t\|_2$；模型都处在初始化状态，输入是 16 个符号组成的随机序列：
#
# - tanh RNN，令 $W_{hh} = \rho Q$（$Q$ 为正交矩阵，所以每个奇异值都是 $\rho$），取 $\rho = 0.5$、$1$、$2$；
# - LSTM（见下文），分别用 torch 的默认初始化和遗忘门的 "chrono" 初始化（Tallec & Ollivier，2018）；
# - 作为对照，一个两层的 Transformer（第 7 章）：位置 $T$ 通过注意力到达位置 $t$，所需步数固定，与距离无关。
#
# 图中每条曲线都除以它在 $k = 1$ 处的值，表示梯度走了 $k$ 步之后还剩多少。

# %%
K = rnn_gradients.DISTANCE  # 100 steps
seqs = torch.randint(rnn_gradients.VOCAB, (4, K + 1))  # (B, K + 1) random tokens
curves = {}  # label -> (K,) mean log ||dh_T/dh_t|| for k = 1 .. K
for rho in (0.5, 1.0, 2.0):
    model = rnn_gradients.rnn_with_radius(rho, seed=0)
    curves[f"tanh RNN, ρ = {rho:g}"] = rnn_gradients.log_norms(rnn_gradients.recurrent_jacobian_norms(model, seqs))
for chrono in (False, True):
    model = rnn_gradients.lstm(seed=0, chrono=chrono)
    label = "LSTM, chrono init" if chrono else "LSTM, torch init"
    curves[label] = rnn_gradients.log_norms(rnn_gradients.recurrent_jacobian_norms(model, seqs))
tf = rt.TransformerLM(rt.TransformerConfig(vocab_size=rnn_gradients.VOCAB, block_size=K + 1, n_layer=2, n_head=4,
                                           d_model=64)).double()
curves["Transformer"] = rnn_gradients.log_norms(rnn_gradients.transformer_jacobian_norms(tf, seqs))[1:]

print(f"{'model':20} log10 ||J({K})|| / ||J(1)||")
for label, logn in curves.items():
    print(f"{label:20} {rnn_gradients.log10_retention(logn):+.1f}")

fig, ax = plt.subplots(figsize=(6.5, 4))
for label, logn in curves.items():
    ax.semilogy(range(1, K + 1), (logn - logn[0]).exp(), label=label, ls="--" if "LSTM" in label else "-")
ax.set_xlabel("distance k = T − t (steps)")
ax.set_ylabel("‖∂h_T/∂h_t‖ relative to k = 1")
ax.grid(alpha=0.3, which="both")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] lang="en"
# On a log scale the tanh RNN's curves are straight lines: a constant factor per step. With $\rho = 0.5$ the
# gradient from 100 characters back is about $10^{-36}$ of the last step's, zero for any practical purpose; with
# $\rho = 2$ it is about $10^{6}$ times larger; even $\rho = 1$ loses about ten orders of magnitude, because
# $\tanh' < 1$ damps every step. The Transformer's curve is nearly flat (it stays within half an order of
# magnitude): attention reaches every position in the same number of steps. The experiment's report measures this over five seeds and finds the claim
# [holds](../experiments/rnn-gradients/report.md). Exploding gradients have a blunt cure, clipping the
# gradient's norm before each update (the training loop below does it); vanishing ones need a change of cell.

# %% [markdown] lang="zh"
# 在对数坐标下，tanh RNN 的曲线都是直线：每走一步乘上一个固定的因子。$\rho = 0.5$ 时，100 个字符之外传来的梯度
# 大约只有最近一步的 $10^{-36}$，实际上等于零；$\rho = 2$ 时则大约放大了 $10^{6}$ 倍；即使 $\rho = 1$，也丢掉了大约
# 十个数量级，因为每一步都有 $\tanh' < 1$ 在衰减。Transformer 的曲线几乎是平的（变化不到半个数量级）：注意力到达任何位置的步数都一样。
# 实验报告用五个随机种子测量了这一点，结论是论点[成立](../experiments/rnn-gradients/report.md)。梯度爆炸有一个简单粗暴的办法：
# 每次更新前裁剪梯度的范数（下面的训练循环就这样做）；梯度消失则需要换一种循环单元。

# %% [markdown] lang="en"
# ## Gates: the LSTM and the GRU
#
# The **LSTM** (Hochreiter & Schmidhuber 1997) keeps a second state, the cell $c_t$, and updates it by
# *addition*, with gates $\sigma(\cdot) \in (0, 1)$ computed from $x_t$ and $h_{t-1}$:
#
# $$c_t = \sigma(f_t) \odot c_{t-1} + \sigma(i_t) \odot \tanh(g_t), \qquad h_t = \sigma(o_t) \odot \tanh(c_t).$$
#
# Along the cell, $\partial c_t / \partial c_{t-1} = \mathrm{diag}(\sigma(f_t))$: no $\tanh'$ and no $W_{hh}$, only
# the forget gate. Where the gate stays near 1 the gradient passes almost intact; where it sits at 0.5, as at
# torch's initialisation (all biases near 0), it halves at every step, and $0.5^{100} \approx 10^{-30}$. That is
# why the LSTM with torch's initialisation lost its gradient in the figure too (about $10^{-19}$ rather than
# $10^{-30}$: the gates are not exactly 0.5, and the gradient has other paths, through $h$ and the gates
# themselves), while the chrono initialisation, whose forget biases start at $\log U(1, K-1)$, kept it.
# The **GRU** (Cho et al. 2014) gets the same effect with one state and an update gate $z_t$ that interpolates:
#
# $$h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}.$$

# %% [markdown] lang="zh"
# ## 门控：LSTM 和 GRU
#
# **LSTM**（Hochreiter & Schmidhuber，1997）多了一个状态——细胞状态 $c_t$，并且用*加法*更新它；
# 几个取值在 $(0, 1)$ 之间的门 $\sigma(\cdot)$ 由 $x_t$ 和 $h_{t-1}$ 算出：
#
# $$c_t = \sigma(f_t) \odot c_{t-1} + \sigma(i_t) \odot \tanh(g_t), \qquad h_t = \sigma(o_t) \odot \tanh(c_t).$$
#
# 沿着细胞状态，$\partial c_t / \partial c_{t-1} = \mathrm{diag}(\sigma(f_t))$：既没有 $\tanh'$，也没有 $W_{hh}$，只有遗忘门。
# 遗忘门接近 1 的地方，梯度几乎原样通过；遗忘门停在 0.5 的地方（torch 默认初始化下偏置都接近 0，正是如此），
# 梯度每一步减半，而 $0.5^{100} \approx 10^{-30}$。这就是为什么上图中默认初始化的 LSTM 同样丢掉了梯度
# （剩下约 $10^{-19}$ 而不是 $10^{-30}$：遗忘门并不恰好等于 0.5，梯度也还有别的路径，经过 $h$ 和门本身），
# 而遗忘门偏置从 $\log U(1, K-1)$ 开始的 chrono 初始化保住了它。
# **GRU**（Cho 等，2014）只有一个状态，用一个更新门 $z_t$ 做插值，达到同样的效果：
#
# $$h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}.$$

# %%
for chrono in (False, True):
    lstm_cell = rnn_gradients.lstm(seed=0, chrono=chrono).cells[0]
    H = lstm_cell.hidden_size
    forget = torch.sigmoid(lstm_cell.bias_ih + lstm_cell.bias_hh)[H : 2 * H]  # gates stacked i, f, g, o
    print("chrono" if chrono else "torch ", "| mean forget gate at zero input", round(forget.mean().item(), 3),
          "| gates above 0.95:", int((forget > 0.95).sum()), "of", H)

# %% [markdown] lang="en"
# ## Training the three cells
#
# All three cells are rungs of the ladder (`rt.build_model("rnn" | "lstm" | "gru")`, or `rt.RecurrentLM`
# with a config). Below, each is trained for 300 steps by maximum likelihood, on random windows of 64 characters,
# with AdamW and the gradient norm clipped to 1; `model.nll(x, y)` is the mean $-\log P(y_t \mid x_{\le t})$ in
# nats. The yardstick is the bigram of chapter 3, fitted by counting on the same training text: it sees one
# character of context. Every score is the mean NLL on the same 8 × 64 windows of the validation text.

# %% [markdown] lang="zh"
# ## 训练三种循环单元
#
# 这三种单元都是阶梯上的一级（`rt.build_model("rnn" | "lstm" | "gru")`，或者用配置构造 `rt.RecurrentLM`）。
# 下面用最大似然把每个模型各训练 300 步：每步取 64 个字符长的随机窗口，优化器是 AdamW，梯度范数裁剪到 1；
# `model.nll(x, y)` 是以奈特为单位的平均 $-\log P(y_t \mid x_{\le t})$。作为参照的是第 3 章的二元语法（bigram），
# 在同样的训练文本上靠计数拟合，它只看一个字符的上下文。所有分数都是在验证文本同样的 8 × 64 个窗口上的平均 NLL。

# %%
val_batches = [get_batch(val, 64, 64, torch.Generator().manual_seed(1)) for _ in range(8)]  # fixed windows


@torch.no_grad()
def val_nll(model):
    model.eval()
    nll = sum(model.nll(x, y).item() for x, y in val_batches) / len(val_batches)
    model.train()
    return nll


def fit(model, steps=300, lr=1e-2, batch_size=32, block_size=64):
    """Maximum likelihood by AdamW on random windows; returns the training loss at every step."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    batches = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
        x, y = get_batch(train, batch_size, block_size, batches)  # (B, T) inputs, (B, T) next characters
        loss = model.nll(x, y)  # mean -log P(y_t | x_<=t), nats
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # the cure for an exploding gradient
        opt.step()
        losses.append(loss.item())
    return losses


bigram = rt.NGramLM(rt.NGramConfig(vocab_size=V, order=2, k=1.0)).fit_stream(train.tokens)
print(f"{'model':8} {'params':>7} {'val NLL':>8}")
print(f"{'bigram':8} {'':>7} {val_nll(bigram):8.3f}")
models, curves_train = {}, {}
for kind in ("rnn", "gru", "lstm"):
    torch.manual_seed(0)
    models[kind] = rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=64, cell=kind, d_embed=32,
                                                     d_hidden=128))
    curves_train[kind] = fit(models[kind])
    print(f"{kind:8} {models[kind].num_params():7,} {val_nll(models[kind]):8.3f}")

fig, ax = plt.subplots(figsize=(6.5, 3.5))
for kind, losses in curves_train.items():
    smooth = torch.tensor(losses).unfold(0, 20, 1).mean(1)  # a 20-step running mean
    ax.plot(range(20, len(losses) + 1), smooth, label=kind.upper())
ax.axhline(val_nll(bigram), color="gray", ls=":", label="bigram (validation)")
ax.set_xlabel("step")
ax.set_ylabel("training NLL (nats/char)")
ax.legend()
plt.show()

# %% [markdown] lang="en"
# In a few seconds of training each cell has gone well past the bigram: with a state it can use more than the
# last character. Here is what the LSTM writes, sampled from its learned $P(\text{next} \mid \text{past})$
# one character at a time (chapter 8 says more about sampling):

# %% [markdown] lang="zh"
# 只训练了几秒钟，每种单元就都远远超过了二元语法：有了状态，它能用到的就不只是上一个字符。下面是 LSTM 写出的文字，
# 从它学到的 $P(\text{下一个} \mid \text{过去})$ 中逐个字符采样得到（采样的细节见第 8 章）：

# %%
prompt = torch.tensor([tok.encode("ROMEO:\n")])
out = rt.generate(models["lstm"], prompt, max_new_tokens=200, temperature=0.8, seed=0)
print(tok.decode(out[0]))

# %% [markdown] lang="en"
# ## What goes wrong, measured
#
# The figure above is about gradients at initialisation. The project's experiments test the other two claims
# on trained models. In the [long-range experiment](../experiments/long-range/report.md) a symbol must be
# recalled from 64 positions back: the RNN and the LSTM stay near chance while a Transformer of the same size
# recalls it (C3, C5). In the [memory experiment](../experiments/memory/report.md) the excess NLL over the best
# possible grows as the state shrinks and as the number of things to remember grows (C5). The
# [sequential experiment](../experiments/sequential/report.md) times the chain of dependent steps: it grows with
# the length for an RNN and not for a Transformer (C4). The next chapter gives every position a direct view of
# every other: attention.

# %% [markdown] lang="zh"
# ## 问题出在哪里：测量结果
#
# 上面的图讲的是初始化时的梯度。另外两个论点，项目里的实验是在训练好的模型上检验的。在
# [长距离实验](../experiments/long-range/report.md)中，模型要回忆 64 个位置之前的一个符号：RNN 和 LSTM
# 都停留在随机猜测的水平附近，而同样大小的 Transformer 能记起来（C3、C5）。在[记忆实验](../experiments/memory/report.md)中，
# 状态越小、要记住的东西越多，NLL 超出理论最优值的部分就越大（C5）。[串行实验](../experiments/sequential/report.md)
# 测量了相互依赖的计算链：RNN 的链随序列长度增长，Transformer 的则不会（C4）。下一章让每个位置都能直接看到其他所有位置：这就是注意力。

# %% [markdown] lang="en"
# ## Try this
#
# 1. Train the plain RNN with `lr=0.1` and without the `clip_grad_norm_` line. Print the largest gradient norm
#    over the steps. What happens to the loss?
# 2. Add $\rho = 0.9$ and $\rho = 1.2$ to the gradient figure. Between which two values does the curve turn
#    from falling to rising, and why is the turning point above 1?
# 3. Shrink the LSTM's state to `d_hidden=8` and train again. How much validation NLL does the smaller state cost?

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. 用 `lr=0.1` 训练普通 RNN，并去掉 `clip_grad_norm_` 那一行。打印训练过程中最大的梯度范数，损失会怎样？
# 2. 在梯度图里加上 $\rho = 0.9$ 和 $\rho = 1.2$。曲线在哪两个值之间由下降变为上升？为什么这个转折点大于 1？
# 3. 把 LSTM 的状态缩小到 `d_hidden=8` 再训练一次。状态变小，验证集上的 NLL 要付出多少代价？
