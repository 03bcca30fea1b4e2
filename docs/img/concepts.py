"""The tour's concept figures, drawn with matplotlib: one SVG per language for each.

    python docs/img/concepts.py            # writes docs/img/NAME.svg (English) and docs/img/NAME.zh.svg (Chinese)
    python docs/img/concepts.py --png DIR  # also a PNG of each, to look at

A chapter shows a figure with ![...](../img/NAME.svg) in both of its languages: the site's i18n plugin takes
NAME.zh.svg as the Chinese version of NAME.svg, so the Chinese page shows the Chinese labels. Texts stay
text in the SVG (svg.fonttype 'none'), with a font list that finds a CJK font on Linux, macOS and Windows.
Each figure is a function of the language; `FIGURES` lists them by name, in the tour's order.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
FONTS = ("'DejaVu Sans', 'Noto Sans CJK SC', 'Noto Sans SC', 'Source Han Sans SC', 'PingFang SC', "
         "'Microsoft YaHei', 'WenQuanYi Micro Hei', sans-serif")
# fills by role: data, a learned map, an operation without parameters, a distribution
DATA, LEARNED, OP, DIST, NOTE = "#eeeeee", "#d6e6f5", "#fde8cc", "#dcefd8", "#555555"
RED = "#c0392b"
SUB = "₀₁₂₃₄₅₆₇₈₉"


class Lang:
    """Picks the English or the Chinese text of a label: t("hidden state", "隐状态")."""

    def __init__(self, lang: str):
        self.lang = lang

    def __call__(self, en: str, zh: str) -> str:
        return zh if self.lang == "zh" else en


def canvas(width: float, height: float):
    """A figure whose axes run 0..width, 0..height in inches, so sizes are read off the drawing."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def lines(ax, x, y, text, size=9, ha="center", **kw):
    """A text centred at (x, y); a list is drawn one line per item, so that a formula ($...$, drawn by mathtext,
    which has no CJK glyphs) and a Chinese line never share one text."""
    items = text if isinstance(text, list) else [text]
    step = size / 72 * 1.45  # a line's height in inches, the axes' unit
    for i, item in enumerate(items):
        ax.text(x, y + ((len(items) - 1) / 2 - i) * step, item, ha=ha, va="center", fontsize=size, **kw)


def box(ax, x, y, w, h, text, fill=LEARNED, size=9, weight="normal", edge="#333333", style="round,pad=0.02,rounding_size=0.06"):
    """A box centred at (x, y)."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=style, fc=fill, ec=edge, lw=1, zorder=3))
    if text:
        lines(ax, x, y, text, size=size, weight=weight, zorder=4)


def arrow(ax, start, end, color="#333333", style="-|>", lw=1.1, ls="-", rad=0.0, shrink=2):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=10, color=color, lw=lw, ls=ls,
                                 connectionstyle=f"arc3,rad={rad}", shrinkA=shrink, shrinkB=shrink))


def label(ax, x, y, text, size=8, color=NOTE, ha="center", **kw):
    lines(ax, x, y, text, size=size, color=color, ha=ha, **kw)


def bars(ax, x0, y0, values, width=0.12, height=0.7, color="#4a7fb5", gap=0.03):
    """Small bar chart with its baseline at (x0, y0); values in [0, 1]."""
    for i, v in enumerate(values):
        ax.add_patch(Rectangle((x0 + i * (width + gap), y0), width, max(v, 0.01) * height, fc=color, ec="none"))
    ax.plot([x0 - 0.03, x0 + len(values) * (width + gap)], [y0, y0], color="#333333", lw=0.8)


# --- chapter 1: the ladder ------------------------------------------------------------------------------------


def ladder(t: Lang):
    rungs = [
        (t("linear regression", "线性回归"), "E[y | x]", t("a fixed line", "固定的直线"), "1"),
        (t("softmax regression, MLP", "softmax 回归、MLP"), t("P(class | x)", "P(类别 | x)"), t("a fixed function", "固定的函数"), "2"),
        (t("n-gram counts", "n 元语法计数"), t("P(next | last n−1)", "P(下一个 | 前 n−1 个)"), t("a table of counts", "一张计数表"), "3"),
        (t("MLP language model", "MLP 语言模型"), t("P(next | window)", "P(下一个 | 窗口)"), t("embeddings, a fixed window", "嵌入，固定窗口"), "4"),
        (t("RNN, LSTM, GRU", "RNN、LSTM、GRU"), t("P(next | all the past)", "P(下一个 | 全部过去)"), t("a state h_t, step by step", "逐步传递的状态 h_t"), "5"),
        (t("attention", "注意力"), t("weights over positions", "位置上的权重"), t("recomputed for every query", "每个查询重新计算"), "6"),
        (t("Transformer", "Transformer"), t("P(next | whole context)", "P(下一个 | 整个上下文)"), t("attention, stacked", "注意力，层层堆叠"), "7–10"),
    ]
    fig, ax = canvas(9.0, 5.0)
    left, right, step = 0.55, 8.75, 0.52
    top = 0.45 + len(rungs) * step
    for x in (left, right):  # the two rails
        ax.plot([x, x], [0.15, top - 0.2], color="#8a6d3b", lw=3, solid_capstyle="round")
    for i, (name, estimates, how, chapter) in enumerate(rungs):
        y = 0.45 + i * step
        box(ax, 4.65, y, 7.9, 0.38, "", fill=DIST if i == len(rungs) - 1 else LEARNED)
        label(ax, 0.95, y, chapter, size=8, color=RED)
        ax.text(1.35, y, name, ha="left", va="center", fontsize=9, weight="bold")
        ax.text(4.05, y, estimates, ha="left", va="center", fontsize=9)
        ax.text(6.4, y, how, ha="left", va="center", fontsize=8, color=NOTE)
    for x, text in ((0.95, t("chapter", "章")), (1.35, t("rung", "级")), (4.05, t("what it estimates", "估计什么")),
                    (6.4, t("how it reads the context", "怎样读上下文"))):
        ax.text(x, top - 0.1, text, ha="center" if x < 1 else "left", va="center", fontsize=8, color=NOTE)
    label(ax, 0.2, top + 0.55, t("Every rung estimates a conditional distribution from finite samples, by maximum likelihood,",
                                 "每一级都用有限的样本、以最大似然估计一个条件分布，"), size=9.5, color="#222222", ha="left")
    label(ax, 0.2, top + 0.25, t("and predicts or generates with it; the rungs differ in what they condition on, and how.",
                                 "再用它预测或生成；各级的差别只在于以什么为条件、怎样用这个条件。"), size=9.5, color="#222222",
          ha="left")
    return fig


# --- chapter 2: softmax and cross-entropy -----------------------------------------------------------------------


def softmax(t: Lang):
    fig, ax = canvas(9.4, 3.0)
    box(ax, 0.7, 1.5, 1.0, 0.9, t("input x", "输入 x"), fill=DATA)
    box(ax, 2.3, 1.5, 1.3, 0.9, "z = Wx + b", fill=LEARNED)
    arrow(ax, (1.2, 1.5), (1.65, 1.5))
    logits = [0.55, 0.15, 0.9, 0.35, 0.05]
    bars(ax, 3.25, 1.1, logits, color="#8c8c8c")
    label(ax, 3.6, 2.0, t("logits z (any real numbers)", "logits z（任意实数）"), size=8)
    arrow(ax, (2.95, 1.5), (3.2, 1.5))
    box(ax, 4.85, 1.5, 1.1, 0.7, "softmax", fill=OP)
    arrow(ax, (4.05, 1.5), (4.3, 1.5))
    probs = [0.17, 0.09, 0.44, 0.12, 0.18]
    bars(ax, 5.7, 1.1, probs, color="#4a7fb5", height=1.2)
    label(ax, 6.05, 2.0, t("p = P(class | x)", "p = P(类别 | x)"), size=8)
    label(ax, 6.05, 0.85, t("≥ 0, sum to 1", "非负，和为 1"), size=7.5)
    arrow(ax, (5.4, 1.5), (5.65, 1.5))
    onehot = [0, 0, 1, 0, 0]
    bars(ax, 7.6, 1.1, onehot, color="#2e8b57", height=0.7)
    label(ax, 7.95, 2.0, t("target y, one-hot q", "目标 y，独热 q"), size=8)
    label(ax, 4.75, 0.45, t("cross-entropy = NLL:  −Σ q_k log p_k = −log p_y        gradient in z:  p − q",
                            "交叉熵 = NLL：−Σ q_k log p_k = −log p_y        对 z 的梯度：p − q"), size=9, color="#222222")
    label(ax, 4.75, 2.7, t("softmax(z)_k = exp(z_k) / Σ_j exp(z_j)    ∂p/∂z = diag(p) − p pᵀ",
                           "softmax(z)_k = exp(z_k) / Σ_j exp(z_j)    ∂p/∂z = diag(p) − p pᵀ"), size=9, color="#222222")
    return fig


# --- chapter 3: the n-gram window -------------------------------------------------------------------------------


def ngram_window(t: Lang):
    fig, ax = canvas(9.0, 3.2)
    name = ".emma."
    x0, y0, s = 0.6, 2.0, 0.55
    for i, c in enumerate(name):
        box(ax, x0 + i * s, y0, 0.46, 0.46, c, fill=DATA if c != "." else "#f4f4f4", size=11,
            style="square,pad=0.0")
    # context of a trigram (n = 3): 'em' predicts the next character
    left, right = x0 + 1 * s - 0.25, x0 + 2 * s + 0.25
    ax.add_patch(Rectangle((left, y0 - 0.32), right - left, 0.64, fill=False, ec=RED, lw=1.6))
    label(ax, (left + right) / 2, y0 + 0.5, t("context: the last n − 1 = 2", "上下文：最近 n − 1 = 2 个"), size=8, color=RED)
    ax.add_patch(Rectangle((x0 + 3 * s - 0.27, y0 - 0.29), 0.54, 0.58, fill=False, ec=RED, lw=1.4, ls="--"))
    label(ax, x0 + 3 * s, y0 - 0.5, t("next", "下一个"), size=8, color=RED)
    label(ax, x0 + 2.75 * s, 0.95, t("'.' marks the start and the end of a name", "“.”标记名字的开头和结尾"), size=8)
    # the count table
    tx, ty = 5.0, 0.5
    cols = ["a", "b", "…", "m", "…", "."]
    rows = ["…", "el", "em", "en", "…"]
    cw, rh = 0.5, 0.34
    for j, c in enumerate(cols):
        label(ax, tx + (j + 0.5) * cw, ty + len(rows) * rh + 0.18, c, size=9, color="#222222")
    for i, r in enumerate(rows):
        y = ty + (len(rows) - 1 - i) * rh
        label(ax, tx - 0.25, y + rh / 2, r, size=9, color="#222222")
        for j in range(len(cols)):
            hit = r == "em"
            ax.add_patch(Rectangle((tx + j * cw, y), cw, rh, fc="#fbe3df" if hit else "white", ec="#999999", lw=0.6))
            if hit and cols[j] == "m":
                label(ax, tx + (j + 0.5) * cw, y + rh / 2, "N", size=9, color=RED, weight="bold")
    label(ax, tx + 1.5, ty + len(rows) * rh + 0.55, t("counts N(context, next)", "计数 N(上下文, 下一个)"), size=8.5,
          color="#222222")
    label(ax, 6.5, 0.18, t("P̂(m | em) = N(em, m) / N(em, ·)   (+k smoothing)", "P̂(m | em) = N(em, m) / N(em, ·)（加 k 平滑）"),
          size=9, color="#222222")
    arrow(ax, (x0 + 2 * s, y0 - 0.32), (tx - 0.4, ty + 2.5 * rh), color=NOTE, rad=-0.2, ls="--")
    return fig


# --- chapter 4: the MLP language model ------------------------------------------------------------------------


def mlp_lm(t: Lang):
    fig, ax = canvas(9.4, 3.4)
    chars = ["e", "m", "m", "a"]
    for i, c in enumerate(chars):
        x = 0.6 + i * 0.6
        box(ax, x, 0.5, 0.45, 0.4, c, fill=DATA, size=10, style="square,pad=0.0")
        # each character reads its row of the one embedding table
        for k in range(3):
            ax.add_patch(Rectangle((x - 0.08, 1.15 + k * 0.22), 0.16, 0.2, fc="#4a7fb5", ec="white"))
        arrow(ax, (x, 0.72), (x, 1.12))
    label(ax, 1.5, 2.05, t("embedding rows E[x] (one shared table)", "嵌入 E[x]（共用一张表）"), size=8)
    label(ax, 1.5, 0.12, t("the last c characters (window)", "最近 c 个字符（窗口）"), size=8)
    box(ax, 4.0, 1.5, 1.3, 0.7, t(["concatenate", "$e \\in \\mathbb{R}^{c\\,d}$"], ["拼接", "$e \\in \\mathbb{R}^{c\\,d}$"]), fill=OP, size=8.5)
    arrow(ax, (2.65, 1.5), (3.33, 1.5))
    box(ax, 5.75, 1.5, 1.5, 0.7, "h = tanh(W₁e + b₁)", fill=LEARNED, size=8.5)
    arrow(ax, (4.67, 1.5), (4.98, 1.5))
    box(ax, 7.55, 1.5, 1.3, 0.7, "softmax(W₂h + b₂)", fill=LEARNED, size=8.5)
    arrow(ax, (6.52, 1.5), (6.88, 1.5))
    bars(ax, 8.35, 1.2, [0.1, 0.5, 0.2, 0.15, 0.05], width=0.1, height=0.9)
    label(ax, 8.7, 2.3, t("P(next | window)", "P(下一个 | 窗口)"), size=8)
    label(ax, 5.2, 3.05, t("parameters grow linearly with the window c, not as $V^c$ like a count table",
                           "参数量随窗口 c 线性增长，而不像计数表那样按 V 的 c 次方增长"), size=9, color="#222222")
    return fig


# --- chapter 5: the unrolled RNN, and the LSTM cell --------------------------------------------------------------


def rnn_unrolled(t: Lang):
    fig, ax = canvas(9.6, 3.8)
    # rolled: one cell with a loop
    box(ax, 0.9, 1.8, 0.8, 0.6, "RNN", fill=LEARNED)
    arrow(ax, (0.9, 0.75), (0.9, 1.48))
    label(ax, 0.9, 0.55, "$x_t$", size=10, color="#222222")
    arrow(ax, (0.9, 2.12), (0.9, 2.8))
    label(ax, 0.9, 3.0, "$h_t$", size=10, color="#222222")
    arrow(ax, (1.3, 1.95), (1.3, 1.65), rad=-2.2)
    label(ax, 1.95, 1.8, "=", size=18, color="#222222")
    xs = [2.8, 4.3, 5.8, 7.3]
    names = ["1", "2", "3", "T"]
    for i, (x, n) in enumerate(zip(xs, names)):
        box(ax, x, 1.8, 0.8, 0.6, "", fill=LEARNED)
        label(ax, x, 1.8, f"$h_{n}$", size=10, color="#222222")
        arrow(ax, (x, 0.75), (x, 1.48))
        label(ax, x, 0.55, f"$x_{n}$", size=10, color="#222222")
        arrow(ax, (x, 2.12), (x, 2.6))
        nxt = "T+1" if n == "T" else str(int(n) + 1)
        label(ax, x, 2.85, f"$P(x_{{{nxt}}} \\mid x_{{\\leq {n}}})$", size=8.5, color="#222222")
        if i:
            start = xs[i - 1] + 0.42
            arrow(ax, (start, 1.85), (x - 0.42, 1.85))
            arrow(ax, (x - 0.42, 1.68), (start, 1.68), color=RED, ls="--")
    label(ax, 6.55, 2.1, "…", size=12, color="#222222")
    label(ax, 1.95, 1.18, "$h_0 = 0$", size=8.5)
    arrow(ax, (2.1, 1.35), (xs[0] - 0.42, 1.75), rad=-0.2)
    label(ax, 5.05, 3.5, t("the same weights at every step; the state $h_t$ ($H$ numbers) carries all of the past",
                           "每一步用同一组权重；状态 hₜ（H 个数）带着全部过去"), size=9, color="#222222")
    label(ax, 5.05, 0.12, [t("red: the gradient flows back through every step,", "红色：梯度沿每一步往回传，每一步乘上"),
                              "$\\partial h_t / \\partial h_{t-1} = \\mathrm{diag}(1 - h_t^2)\\, W_{hh}$"], size=8.5, color=RED)
    return fig


def lstm_cell(t: Lang):
    fig, ax = canvas(9.0, 4.75)
    # the cell-state highway along the top
    ax.plot([0.5, 8.5], [3.4, 3.4], color="#333333", lw=2.2)
    arrow(ax, (8.0, 3.4), (8.55, 3.4), lw=2.2)
    label(ax, 0.35, 3.4, "$c_{t-1}$", size=11, color="#222222", ha="right")
    label(ax, 8.65, 3.4, "$c_t$", size=11, color="#222222", ha="left")
    box(ax, 2.3, 3.4, 0.45, 0.45, "×", fill=OP, size=12, style="circle,pad=0.0")
    box(ax, 4.3, 3.4, 0.45, 0.45, "+", fill=OP, size=12, style="circle,pad=0.0")
    # gates from [h_{t-1}, x_t]
    ax.plot([0.5, 7.2], [0.8, 0.8], color="#333333", lw=1.2)
    label(ax, 0.35, 0.8, "$h_{t-1}$", size=11, color="#222222", ha="right")
    arrow(ax, (1.2, 0.15), (1.2, 0.78))
    label(ax, 1.2, 0.1, "$x_t$", size=11, color="#222222")
    gates = [(2.3, "σ", t("forget σ(f)", "遗忘门 σ(f)")), (3.5, "σ", t("input σ(i)", "输入门 σ(i)")),
             (4.7, "tanh", t("candidate tanh(g)", "候选 tanh(g)")), (6.1, "σ", t("output σ(o)", "输出门 σ(o)"))]
    for x, fn, name in gates:
        box(ax, x, 1.7, 0.75, 0.45, fn, fill=LEARNED, size=10)
        arrow(ax, (x, 0.8), (x, 1.47))
        label(ax, x + 0.07, 1.2, name, size=7.5, ha="left")
    arrow(ax, (2.3, 1.93), (2.3, 3.17))
    box(ax, 4.1, 2.55, 0.45, 0.45, "×", fill=OP, size=12, style="circle,pad=0.0")
    arrow(ax, (3.5, 1.93), (3.9, 2.4), rad=-0.2)
    arrow(ax, (4.7, 1.93), (4.3, 2.4), rad=0.2)
    arrow(ax, (4.15, 2.78), (4.28, 3.17))
    box(ax, 6.9, 3.0, 0.7, 0.36, "tanh", fill=OP, size=9)
    arrow(ax, (6.9, 3.4), (6.9, 3.19))
    box(ax, 6.9, 2.2, 0.45, 0.45, "×", fill=OP, size=12, style="circle,pad=0.0")
    arrow(ax, (6.9, 2.81), (6.9, 2.43))
    arrow(ax, (6.1, 1.93), (6.68, 2.15), rad=-0.2)
    arrow(ax, (7.13, 2.2), (8.55, 2.2))
    label(ax, 8.65, 2.2, "$h_t$", size=11, color="#222222", ha="left")
    label(ax, 4.3, 4.45, [t("along the cell state only the forget gate multiplies:", "沿细胞状态只有遗忘门相乘："),
                           "$\\partial c_t / \\partial c_{t-1} = \\mathrm{diag}(\\sigma(f_t))$"], size=9, color="#222222")
    label(ax, 4.3, 3.85, "$c_t = \\sigma(f_t) \\odot c_{t-1} + \\sigma(i_t) \\odot \\tanh(g_t), \\quad h_t = \\sigma(o_t) \\odot \\tanh(c_t)$", size=9.5,
          color="#222222")
    label(ax, 5.0, 0.35, t("every gate reads $[h_{t-1}, x_t]$", "每个门都读入 hₜ₋₁ 和 xₜ"), size=8)
    return fig


# --- chapter 6: attention as a weighted average -----------------------------------------------------------------


def attention_weights(t: Lang):
    fig, ax = canvas(9.6, 3.8)
    box(ax, 0.8, 2.9, 0.9, 0.5, t("query q", "查询 q"), fill=DATA, size=9)
    keys_y = [2.9, 2.35, 1.8, 1.25, 0.7]
    weights = [0.05, 0.55, 0.25, 0.1, 0.05]
    for j, (y, a) in enumerate(zip(keys_y, weights)):
        box(ax, 2.6, y, 0.8, 0.4, f"$k_{j + 1}$", fill=DATA, size=9)
        box(ax, 6.4, y, 0.8, 0.4, f"$v_{j + 1}$", fill=DATA, size=9)
        ax.add_patch(Rectangle((3.6, y - 0.12), 1.6 * a / 0.55, 0.24, fc="#4a7fb5", ec="none"))
        label(ax, 3.55, y, f"{a:.2f}", size=7.5, ha="right")
        arrow(ax, (6.85, y), (7.7, 1.8), color="#4a7fb5", lw=0.6 + 3 * a, shrink=4)
    arrow(ax, (1.27, 2.9), (2.18, 2.9))
    label(ax, 1.75, 3.15, "q · k / √d", size=8)
    label(ax, 4.3, 3.35, t("α = softmax(q·k/√d): sums to 1", "α = softmax(q·k/√d)：和为 1"), size=8.5)
    box(ax, 8.35, 1.8, 1.2, 0.55, "$\\sum_j \\alpha_j v_j$", fill=DIST, size=10)
    label(ax, 8.35, 1.3, t("output", "输出"), size=8)
    label(ax, 4.8, 0.15, t("kernel regression reads the same: query = a new $x$, keys = the training $x_i$, values = the training $y_i$",
                           "核回归也是这样读：查询是新的 x，键是训练输入 xᵢ，值是训练目标 yᵢ"), size=8.5, color="#222222")
    label(ax, 6.4, 3.35, t("values", "值"), size=8.5)
    label(ax, 2.6, 3.35, t("keys", "键"), size=8.5)
    return fig


# --- chapter 7: the multi-head split and the Transformer block ------------------------------------------------------


def multi_head(t: Lang):
    fig, ax = canvas(9.8, 4.0)
    colours = ["#4a7fb5", "#e08e45", "#5aa469", "#b55a8a"]
    box(ax, 0.75, 2.0, 1.0, 1.3, "X\n(T × d)", fill=DATA, size=9)
    for name, y in (("Q = XW_Q", 3.1), ("K = XW_K", 2.0), ("V = XW_V", 0.9)):
        arrow(ax, (1.27, 2.0), (1.95, y))
        label(ax, 2.55, y + 0.38, name, size=8.5, color="#222222")
        for h, c in enumerate(colours):
            ax.add_patch(Rectangle((2.0 + h * 0.28, y - 0.22), 0.28, 0.44, fc=c, ec="white", alpha=0.85))
    ax.plot([3.3, 3.4, 3.4, 3.3], [3.35, 3.35, 0.65, 0.65], color="#333333", lw=1)
    ax.plot([3.4, 3.45], [2.0, 2.0], color="#333333", lw=1)
    label(ax, 2.56, 0.4, t("each split into H slices of d/H:\nhead h takes slice h of Q, K and V",
                           "各切成 H 段，每段 d/H 维：\n头 h 取 Q、K、V 的第 h 段（从 0 计数）"), size=8)
    for h, c in enumerate(colours):
        y = 3.3 - h * 0.8
        box(ax, 5.0, y, 1.7, 0.5, t(f"head {h}: softmax(Q{SUB[h]}K{SUB[h]}ᵀ/√(d/H)) V{SUB[h]}", f"头 {h}：softmax(Q{SUB[h]}K{SUB[h]}ᵀ/√(d/H)) V{SUB[h]}"),
            fill="white", edge=c, size=7.5)
        arrow(ax, (3.45, 2.0), (4.12, y), color=c, lw=0.9)
        arrow(ax, (5.88, y), (6.75, 2.0), color=c, lw=0.9)
    for h, c in enumerate(colours):
        ax.add_patch(Rectangle((6.8 + h * 0.28, 1.78), 0.28, 0.44, fc=c, ec="white", alpha=0.85))
    label(ax, 7.36, 2.5, t("concatenate", "拼接"), size=8)
    box(ax, 8.85, 2.0, 1.1, 0.6, "· W_O", fill=LEARNED, size=9)
    arrow(ax, (7.95, 2.0), (8.28, 2.0))
    label(ax, 6.9, 0.4, t("the same 4d² + 4d parameters for any number of heads H",
                          "参数量都是 4d² + 4d，与头数 H 无关"), size=8.5, color="#222222")
    label(ax, 5.0, 3.85, t("heads (from 0), each its own distribution over positions",
                           "各个头（从 0 计数），各有一个位置上的分布"), size=8.5, color="#222222")
    return fig


def transformer_block(t: Lang):
    fig, ax = canvas(6.4, 7.4)
    cx = 2.6
    box(ax, cx, 0.45, 2.6, 0.6, [t("token ids", "词元编号"), "$w_1 \\ldots w_T$"], fill=DATA, size=9)
    box(ax, cx, 1.25, 2.6, 0.5, t("token embedding E + positions", "词嵌入 E + 位置编码"), fill=LEARNED, size=9)
    arrow(ax, (cx, 0.7), (cx, 1.0))
    # the block
    ax.add_patch(FancyBboxPatch((0.75, 1.8), 3.7, 3.95, boxstyle="round,pad=0.02,rounding_size=0.1", fc="#fafafa",
                                ec="#888888", lw=1, ls="--"))
    label(ax, 4.7, 3.8, t("× N blocks\n(layers 0 … N−1)", "× N 个块\n（层 0 … N−1）"), size=9, color="#222222", ha="left")
    ax.plot([cx, cx], [1.5, 5.95], color="#333333", lw=1.2)  # the residual stream
    for y0, name, fill in ((2.05, t(["masked multi-head", "attention"], "带掩码的多头注意力"), LEARNED),
                           (3.95, t(["feed-forward network", "(per position)"], "逐位置的前馈网络"), LEARNED)):
        box(ax, 1.35, y0 + 0.25, 0.9, 0.36, t("LayerNorm", "层归一化"), fill=OP, size=7.5)
        box(ax, 1.35, y0 + 0.95, 1.25, 0.55, name, fill=fill, size=7.2)
        arrow(ax, (cx, y0 - 0.05), (1.85, y0 + 0.25), rad=0.3)
        arrow(ax, (1.35, y0 + 0.43), (1.35, y0 + 0.67))
        arrow(ax, (1.92, y0 + 0.95), (cx - 0.16, y0 + 1.45), rad=-0.2)
        box(ax, cx, y0 + 1.5, 0.32, 0.32, "+", fill=OP, size=11, style="circle,pad=0.0")
    label(ax, cx + 0.9, 2.9, t("residual:\nx + sublayer(LN(x))", "残差：\nx + 子层(LN(x))"), size=8, ha="left")
    box(ax, cx, 6.3, 2.6, 0.45, t("final LayerNorm, then · Eᵀ (tied)", "最后的层归一化，再乘 Eᵀ（共享）"), fill=LEARNED, size=8.5)
    arrow(ax, (cx, 5.95), (cx, 6.07))
    box(ax, cx, 7.0, 2.6, 0.45, "softmax → $P(w_{t+1} \\mid w_{\\leq t})$", fill=DIST, size=9)
    arrow(ax, (cx, 6.53), (cx, 6.77))
    return fig


# --- chapter 8: the generation loop ------------------------------------------------------------------------------


def generation_loop(t: Lang):
    fig, ax = canvas(9.8, 3.6)
    y = 2.3
    steps = [(0.9, [t("context", "上下文"), "$x_1 \\ldots x_t$"], DATA, 1.2),
             (2.55, t("model", "模型"), LEARNED, 1.0),
             (4.0, "logits z", DATA, 1.0),
             (6.0, t("processors, in a fixed order:\npenalty → T → top-k → top-p → min-p",
                     "处理器，顺序固定：\n重复惩罚 → 温度 → top-k → top-p → min-p"), OP, 2.5),
             (8.6, t("softmax,\nthen draw one", "softmax，\n再抽一个"), DIST, 1.3)]
    for x, text, fill, w in steps:
        box(ax, x, y, w, 0.9, text, fill=fill, size=8)
    for (x1, _, _, w1), (x2, _, _, w2) in zip(steps, steps[1:]):
        arrow(ax, (x1 + w1 / 2, y), (x2 - w2 / 2, y))
    arrow(ax, (8.6, y - 0.47), (0.9, y - 0.47), rad=-0.2)
    label(ax, 4.75, 0.75, t("append $x_{t+1}$ to the context and repeat (the KV cache keeps the past keys and values)",
                            "把抽到的词元接到上下文末尾，再来一遍（KV 缓存保存过去的键和值）"), size=8.5, color="#222222")
    label(ax, 4.9, 3.4, t("training: maximise $\\log P(x_{t+1} \\mid x_{\\leq t})$ on text; generation: draw from it, one token at a time",
                          "训练：在文本上最大化 log P(下一个词元 | 上下文)；生成：从中一次抽一个词元"), size=8.5,
          color="#222222")
    label(ax, 6.0, 1.65, t("temperature 0 = greedy (argmax)", "温度 0 = 贪心解码（取最大）"), size=7.5)
    return fig


# --- chapter 9: a row of an attention map --------------------------------------------------------------------------


def attention_row(t: Lang):
    fig, ax = canvas(9.8, 3.2)
    words = ["[CLS]", "the", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired", "[SEP]"]
    weights = {0: 0.35, 2: 0.12, 6: 0.07, 8: 0.1, 12: 0.08}
    xs = [0.45 + i * 0.74 for i in range(len(words))]
    for x, w in zip(xs, words):
        label(ax, x, 0.9, w, size=8.5, color="#222222")
    src = xs[8]
    for j, a in weights.items():
        if j == 8:
            continue
        arrow(ax, (src, 1.1), (xs[j], 1.1), color="#4a7fb5", lw=0.5 + 9 * a, rad=0.4 if j < 8 else -0.4, style="-",
              shrink=3)
        mid = (src + xs[j]) / 2
        label(ax, mid, 1.1 + 0.2 * abs(src - xs[j]) + 0.12, f"{a:.2f}", size=7.5)
    label(ax, src, 0.62, t("query: 'it'", "查询：it"), size=8, color=RED)
    label(ax, 4.9, 3.0, t("one row of one head: a distribution over positions (weights made up for the picture)",
                          "一个头的一行：位置上的一个分布（图中权重是示意）"), size=9, color="#222222")
    label(ax, 4.9, 0.2, t("after layer 0 each position is already a mixture: weight on a position is not weight on a word",
                           "过了层 0，每个位置都已是混合：放在某个位置上的权重，不等于放在那个词上的权重"), size=8.5,
          color="#222222")
    return fig


# --- chapter 10: an image as a sequence of patches ---------------------------------------------------------------


def vit(t: Lang):
    fig, ax = canvas(9.8, 3.8)
    # an 8 x 8 image cut into 4 x 4 patches of 2 x 2
    rng = np.random.default_rng(0)
    img = np.zeros((8, 8))
    img[1:7, 3:5] = 1  # a "1"
    img[1:3, 2] = 0.6
    img += 0.05 * rng.random((8, 8))
    ax.imshow(img, cmap="gray_r", extent=(0.3, 2.3, 0.9, 2.9), zorder=1)
    for k in range(1, 4):
        ax.plot([0.3 + k * 0.5, 0.3 + k * 0.5], [0.9, 2.9], color=RED, lw=1)
        ax.plot([0.3, 2.3], [0.9 + k * 0.5, 0.9 + k * 0.5], color=RED, lw=1)
    label(ax, 1.3, 0.6, t("8 × 8 image, p = 2: 16 patches", "8 × 8 图像，p = 2：16 个图块"), size=8)
    arrow(ax, (2.45, 1.9), (3.0, 1.9))
    # the sequence
    box(ax, 3.3, 1.9, 0.36, 0.6, "cls", fill=DIST, size=7, style="square,pad=0.0")
    for i in range(8):
        box(ax, 3.75 + i * 0.4, 1.9, 0.34, 0.6, "", fill=DATA, style="square,pad=0.0")
    label(ax, 3.75 + 8 * 0.4 - 0.1, 1.9, "…", size=11, color="#222222")
    label(ax, 5.0, 2.5, t("flatten each patch, · E, + positions", "每块展平，乘 E，加位置编码"), size=8)
    label(ax, 5.0, 1.35, t("a 'sentence' of 1 + 16 tokens", "1 + 16 个词元组成的“句子”"), size=8)
    arrow(ax, (7.05, 1.9), (7.45, 1.9))
    box(ax, 8.05, 1.9, 1.1, 0.9, t("encoder\nblocks", "编码器块"), fill=LEARNED, size=8.5)
    arrow(ax, (8.05, 2.37), (8.05, 2.85))
    box(ax, 8.05, 3.2, 1.5, 0.55, t("softmax on cls →\nP(class | image)", "对 cls 做 softmax →\nP(类别 | 图像)"), fill=DIST,
        size=7.5)
    label(ax, 5.0, 0.2, t("captions: a decoder reads these patch vectors by cross-attention, P(word | words before, image)",
                          "图像描述：解码器通过交叉注意力读这些图块向量，P(词 | 前面的词, 图像)"), size=8.5, color="#222222")
    return fig


FIGURES = {
    "ladder": ladder,
    "softmax": softmax,
    "ngram-window": ngram_window,
    "mlp-lm": mlp_lm,
    "rnn-unrolled": rnn_unrolled,
    "lstm-cell": lstm_cell,
    "attention-weights": attention_weights,
    "multi-head": multi_head,
    "transformer-block": transformer_block,
    "generation-loop": generation_loop,
    "attention-row": attention_row,
    "vit": vit,
}


def cjk_family() -> str | None:
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    for family in ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "PingFang SC",
                   "Microsoft YaHei", "SimHei"):
        if family in installed:
            return family
    return None


def write(name: str, lang: str, folder: Path = HERE, png: Path | None = None) -> Path:
    """Draw one figure in one language; the path of its SVG."""
    cjk = cjk_family()
    families = ["DejaVu Sans", *([cjk] if cjk else [])]
    with matplotlib.rc_context({"font.family": families, "svg.fonttype": "none", "svg.hashsalt": "redthread",
                                "mathtext.fontset": "dejavusans"}):
        fig = FIGURES[name](Lang(lang))
        path = folder / (f"{name}.zh.svg" if lang == "zh" else f"{name}.svg")
        fig.savefig(path, metadata={"Date": None}, bbox_inches="tight", pad_inches=0.05)
        if png is not None:
            fig.savefig(png / path.with_suffix(".png").name, dpi=110, bbox_inches="tight", pad_inches=0.05)
        plt.close(fig)
    text = path.read_text(encoding="utf-8")
    text = re.sub(r'font-family: [^;"]+', "font-family: " + FONTS, text)
    if lang == "zh":
        text = text.replace("<svg ", '<svg xml:lang="zh-Hans" ', 1)
    path.write_text(text, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--png", type=Path, help="also write a PNG of each figure into this folder")
    parser.add_argument("names", nargs="*", help="figures to draw (default: all)")
    args = parser.parse_args(argv)
    if args.png:
        args.png.mkdir(parents=True, exist_ok=True)
    for name in args.names or FIGURES:
        for lang in ("en", "zh"):
            write(name, lang, png=args.png)


if __name__ == "__main__":
    main()
