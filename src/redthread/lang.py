"""The language redthread speaks to a person in: English or Chinese.

Everything a person reads — figures (titles, axes, legends), the demo's and the ladder's summary lines,
the explorer page `redthread attention` writes, an experiment report's conclusion — is written in the
language chosen here. Code identifiers, model names, units such as NLL and the model's own text stay as
they are.

    import redthread as rt
    rt.set_language("zh")          # from here on: figures and summaries in Chinese
    rt.language()                  # "zh"
    redthread --lang zh demo       # the same from the command line

The default is the environment's: REDTHREAD_LANG (en or zh), else the locale (LC_ALL, LC_MESSAGES, LANG:
zh_CN.UTF-8 and the like mean Chinese), else English.

The Chinese terms are those of docs/glossary.md, one term per concept (`TERMS`; tests/test_lang.py
holds each pair to the glossary's row). Layers and heads are numbered from 0, as in the code: the
Chinese puts the number after the noun, 层 1·头 3, never an ordinal (`layer_head`). A figure drawn inside
`figure_fonts()` takes a CJK font for its Chinese words.
"""

from __future__ import annotations

import os
import re
import unicodedata
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial

from redthread.errors import InvalidValue
from redthread.fonts import cjk_fallback

LANGUAGES = ("en", "zh")
HTML_LANG = {"en": "en", "zh": "zh-CN"}  # the `lang` attribute of a page: zh-CN picks Simplified Chinese glyphs

# English term -> Chinese term, each pair a row of docs/glossary.md (its English and 中文 columns)
TERMS = {
    "attention": "注意力",
    "attention weights": "注意力权重",
    "attention map": "注意力图",
    "query": "查询",
    "key": "键",
    "value": "值",
    "head": "头",
    "block": "块",
    "token": "词元",
    "vocabulary": "词表",
    "nat": "奈特",
    "bit": "比特",
    "bits per character": "每字符比特数",
    "perplexity": "困惑度",
    "negative log-likelihood (NLL)": "负对数似然（NLL）",
    "cross-entropy": "交叉熵",
    "entropy": "熵",
    "KL divergence": "KL 散度",
    "accuracy": "准确率",
    "calibration": "校准",
    "expected calibration error (ECE)": "期望校准误差（ECE）",
    "confidence": "置信度",
    "reliability diagram": "可靠性图",
    "noise floor": "噪声底",
    "baseline": "基线",
    "claim": "论点",
    "verdict": "结论",
    "holds": "成立",
    "does not hold": "不成立",
    "holds in part": "部分成立",
    "inconclusive": "无定论",
    "does not replicate": "不能复现",
    "check": "检查",
    "criterion": "判据",
    "pre-registered": "预先登记",
    "floor": "下限",
    "seed set": "种子组",
    "interval": "区间",
    "ablation": "消融",
    "control": "对照",
    "ensemble": "集成",
    "probe": "探针",
    "smoke test": "冒烟测试",
    "training budget": "训练预算",
    "ladder": "阶梯",
    "rung": "级",
    "linear regression": "线性回归",
    "softmax regression": "softmax 回归",
    "unigram": "一元语法",
    "bigram": "二元语法",
    "n-gram": "n 元语法",
    "MLP language model": "MLP 语言模型",
    "recurrent neural network (RNN)": "循环神经网络（RNN）",
    "hidden state": "隐状态",
    "training set": "训练集",
    "validation set": "验证集",
    "test set": "测试集",
    "held-out data": "留出数据",
    "learning rate": "学习率",
    "batch size": "批大小",
    "checkpoint": "检查点",
    "run folder": "运行文件夹",
    "sampling": "采样",
    "temperature": "温度",
    "greedy decoding": "贪心解码",
    "top-k sampling": "top-k 采样",
    "top-p sampling": "top-p 采样",
    "Bayes limit": "贝叶斯极限",
    "heat map": "热力图",
    "explorer": "探索器",
    "head view": "头视图",
    "model view": "模型视图",
    "neuron view": "神经元视图",
    "patch": "图块",
    "class token": "类别词元",
    "Vision Transformer (ViT)": "视觉 Transformer（ViT）",
    "cosine similarity": "余弦相似度",
    "residual connection": "残差连接",
    "residual stream": "残差流",
    "layer normalisation (LayerNorm)": "层归一化",
    "position-wise feed-forward network (FFN)": "逐位置的前馈网络",
    "positional encoding": "位置编码",
    "sinusoidal positional encoding": "正弦位置编码",
    "learned positional encoding": "可学习位置编码",
    "rotary positional embedding (RoPE)": "旋转位置编码（RoPE）",
    "cross-attention": "交叉注意力",
    "self-attention": "自注意力",
    "encoder": "编码器",
    "decoder": "解码器",
    "grounding score": "定位得分",
    "conditional expectation": "条件期望",
    "Gaussian noise": "高斯噪声",
    "gradient clipping": "梯度裁剪",
    "vanishing gradient": "梯度消失",
    "exploding gradient": "梯度爆炸",
    "Jacobian": "雅可比矩阵",
}

# the ladder's rungs (models/registry.py's RUNGS) by their glossary names
RUNGS_ZH = {"unigram": "一元语法", "ngram": "n 元语法", "bigram": "二元语法", "mlp": "MLP 语言模型",
            "rnn": "循环神经网络（RNN）", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}

_chosen: str | None = None  # set_language's choice; None: the environment's



def _normal(name: str, where: str) -> str:
    """'zh', 'zh-CN', 'zh_CN.UTF-8', 'ZH' -> 'zh'; an unknown language is a one-line error naming `where`."""
    lang = str(name).strip().replace("_", "-").split("-")[0].split(".")[0].lower()
    if lang not in LANGUAGES:
        raise InvalidValue(f"{where}: unknown language {name!r}; use en (English) or zh (中文)")
    return lang


def default_language(environ=None) -> str:
    """REDTHREAD_LANG (en or zh), else the locale (LC_ALL, LC_MESSAGES, LANG: zh... is Chinese), else English."""
    env = os.environ if environ is None else environ
    if env.get("REDTHREAD_LANG", "").strip():
        return _normal(env["REDTHREAD_LANG"], "REDTHREAD_LANG")
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):  # the order in which POSIX lets them override each other
        value = env.get(name, "").strip()
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def language() -> str:
    """The language chosen: "en" or "zh"."""
    return _chosen if _chosen is not None else default_language()


def set_language(lang: str | None) -> str:
    """Choose the language ("en", "zh"; "zh-CN" and the like are read as "zh"); None goes back to the
    environment's default. Returns the language now chosen."""
    global _chosen
    _chosen = None if lang is None else _normal(lang, "language")
    return language()


@contextmanager
def speaking(lang: str) -> Iterator[str]:
    """Inside the block, `lang`; the choice before it afterwards."""
    global _chosen
    before = _chosen
    set_language(lang)
    try:
        yield language()
    finally:
        _chosen = before


def chinese() -> bool:
    return language() == "zh"


def say(en: str, zh: str) -> str:
    """The text in the language chosen: say("validation NLL", "验证集 NLL")."""
    if _both:
        return Both(en, zh)
    return zh if chinese() else en


# Both languages at once, for the tour's build (docs/build_tour.py): it runs each chapter once and writes
# an English and a Chinese notebook from the same outputs, so both show the same numbers. While
# `both_languages()` is on, `say` returns the two texts between markers (private-use characters), and
# `resolve` keeps one side of every pair in a printed line, a page or a figure's text.
OPEN, MID, CLOSE = "\ue000", "\ue001", "\ue002"
_both = False
_PAIR = re.compile(f"{OPEN}([^{OPEN}{MID}{CLOSE}]*){MID}([^{OPEN}{MID}{CLOSE}]*){CLOSE}")
_SPEC = re.compile(r"^(?P<align>[<>^]?)(?P<width>\d+)$")


def display_width(text: str) -> int:
    """Columns a monospace terminal gives the text: a CJK character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _format(text: str, spec: str) -> str:
    """format(text, spec), where a bare width such as "18" or ">9" counts a CJK character as two columns."""
    m = _SPEC.match(spec)
    if not m:
        return format(text, spec)
    room = max(0, int(m["width"]) - display_width(text))
    left = {"<": 0, "": 0, ">": room, "^": room // 2}[m["align"]]
    return " " * left + text + " " * (room - left)


class Both(str):
    """An English and a Chinese text as one string between markers; formatting pads each side on its own."""

    def __new__(cls, en: str, zh: str) -> Both:
        self = super().__new__(cls, f"{OPEN}{en}{MID}{zh}{CLOSE}")
        self.en, self.zh = en, zh
        return self

    def __format__(self, spec: str) -> str:
        return Both(_format(self.en, spec), _format(self.zh, spec))


@contextmanager
def both_languages() -> Iterator[None]:
    """Inside the block, `say` (and `term`, `layer_head`) return both languages, for `resolve` to split."""
    global _both
    before, _both = _both, True
    try:
        yield
    finally:
        _both = before


def speak_both(on: bool = True) -> None:
    """Turn both languages on (or off) for the rest of the process: the tour's kernel, which has no block."""
    global _both
    _both = bool(on)


def resolve(text: str, lang: str) -> str:
    """The text as `lang` reads it: each pair `say` made with both languages on keeps its `lang` side."""
    side = 1 if _normal(lang, "language") == "en" else 2
    while OPEN in text:
        text, n = _PAIR.subn(lambda m: m.group(side), text)
        if not n:  # an unmatched marker: leave it for `has_pairs` to report
            break
    return text


def sides(text: str | None) -> tuple[str | None, str | None]:
    """(English, Chinese) of a text that may hold pairs: a page that switches language carries both."""
    return (None, None) if text is None else (resolve(text, "en"), resolve(text, "zh"))


def has_pairs(text: str) -> bool:
    """Whether the text still holds a marker of a pair (as written, or escaped by json.dumps)."""
    return any(mark in text for mark in (OPEN, MID, CLOSE, "\\ue000", "\\ue001", "\\ue002"))


def term(english: str) -> str:
    """A glossary term in the language chosen: term("attention weights") -> "注意力权重" in Chinese."""
    if english not in TERMS:
        raise KeyError(f"{english!r} is not in redthread.lang.TERMS")
    return say(english, TERMS[english])


def layer_head(layer: int, head: int | None = None) -> str:
    """'layer 1, head 3' / '层 1·头 3' (from 0, as the code counts); 'layer 1' / '层 1' without a head."""
    if head is None:
        return say(f"layer {layer}", f"层 {layer}")
    return say(f"layer {layer}, head {head}", f"层 {layer}·头 {head}")


@contextmanager
def figure_fonts(texts: Iterable[str] = ()) -> Iterator[None]:
    """Draw a figure inside: its Chinese words (in Chinese) and CJK `texts` (tokens, say) take a CJK font, while
    Latin text keeps matplotlib's (redthread.fonts). A text keeps the font it was created with, so the figure
    may be saved after the block."""
    with cjk_fallback([*texts, *(["中文"] if chinese() else [])]):
        yield


def cjk_figure(fig):
    """A figure already drawn: each of its texts that holds CJK characters takes the CJK font after matplotlib's
    families (the texts of a figure made outside `figure_fonts`, such as an experiment's). Returns the figure."""
    import matplotlib
    from matplotlib.text import Text

    from redthread.fonts import CJK, cjk_font

    texts = [t for t in fig.findobj(Text) if CJK.search(t.get_text())]
    font = cjk_font() if texts else None
    if font is None:
        if texts:
            with cjk_fallback([t.get_text() for t in texts]):  # no CJK font: its one line says how to install one
                pass
        return fig
    families = [f for f in matplotlib.rcParams["font.family"] if f != font]
    for text in texts:
        text.set_fontfamily([*families, font])
    return fig


def figure_has_pairs(fig) -> bool:
    """Whether any text of the figure was made with both languages on (and so can be drawn in either)."""
    from matplotlib.text import Text

    return any(has_pairs(t.get_text()) for t in fig.findobj(Text))


def _resolved_ticks(format_ticks, lang: str, values) -> list[str]:
    return [resolve(label, lang) for label in format_ticks(values)]


@contextmanager
def figure_in(fig, lang: str) -> Iterator[None]:
    """Inside the block, a figure made with both languages on shows its `lang` side: every title, label, legend
    and tick label that holds a pair is resolved (and, in Chinese, takes a CJK font). Draw or save it inside;
    afterwards its texts are as they were, so it can be drawn again in the other language. A text that still
    holds a pair once drawn (one made by hand from a pair's string, say) is an error that names it."""
    from matplotlib.text import Text

    lang = _normal(lang, "language")
    undo = []
    for text in fig.findobj(Text):
        s = text.get_text()
        if has_pairs(s):
            text.set_text(resolve(s, lang))
            undo.append(partial(text.set_text, s))
    for ax in fig.axes:  # tick labels are made at each drawing, by the axis' formatters: theirs, resolved
        for axis in (ax.xaxis, ax.yaxis):
            for formatter in {id(f): f for f in (axis.get_major_formatter(), axis.get_minor_formatter())}.values():
                if "format_ticks" not in vars(formatter):
                    formatter.format_ticks = partial(_resolved_ticks, formatter.format_ticks, lang)
                    undo.append(partial(delattr, formatter, "format_ticks"))
    try:
        if lang == "zh":
            with warnings.catch_warnings():  # drawn once before its CJK font is chosen: the missing glyphs are expected
                warnings.simplefilter("ignore", UserWarning)
                fig.canvas.draw()  # tick labels get their text when drawn
            cjk_figure(fig)  # its Chinese words take a CJK font
        yield
        left = [t.get_text() for t in fig.findobj(Text) if has_pairs(t.get_text())]
        if left:
            raise ValueError(f"a figure text kept both languages after drawing: {left[0]!r}")
    finally:
        for step in reversed(undo):
            step()


def html_lang() -> str:

    """The `lang` attribute for a page in the language chosen: "en" or "zh-CN"."""
    return HTML_LANG[language()]
