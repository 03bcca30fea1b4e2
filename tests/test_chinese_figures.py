"""Every figure redthread draws, drawn in Chinese (rt.set_language("zh")): no text artist of it holds English prose
(`tests/chinese_text.py`: identifiers, units, model and proper names aside, and the model's own text), and with a
CJK font installed no glyph is missing. The library's figures are drawn here one by one; every experiment's
figures come from its --quick run (slow), drawn with both languages on and then in each.

Figure-drawing functions reached: viz/figures.py plot_head and plot_grid; viz/patches.py plot_patch_overlays;
viz/image_attention.py vit_overlays; train/metrics.py plot_loss_curve; train/calibration.py plot_reliability;
commands/ladder.py ladder_figure and plot_ladder; commands/regression.py _plot; every experiment's report figures.
"""

from __future__ import annotations

import warnings

import matplotlib
import matplotlib.figure
import matplotlib.text
import pytest
import torch

from redthread.experiments import EXPERIMENTS
from redthread.fonts import cjk_font
from redthread.lang import set_language
from tests.chinese_text import prose

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def chinese():
    set_language("zh")
    yield
    set_language(None)


@pytest.fixture
def saved(monkeypatch):
    """The figures the code under test saves (it writes them and closes them: they are caught at savefig)."""
    figures = []
    save = matplotlib.figure.Figure.savefig

    def catch(fig, *args, **kwargs):
        figures.append(fig)
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", catch)
    return figures


def english(fig, allowed=()) -> list[str]:
    """The texts of the figure that hold English prose, each with its words."""
    out = []
    for text in fig.findobj(matplotlib.text.Text):
        words = prose(text.get_text(), set(allowed))
        if words:
            out.append(f"{text.get_text()!r}: {words}")
    return out


def check(fig, allowed=()) -> None:
    assert not english(fig, allowed)
    assert any(t.get_text().strip() for t in fig.findobj(matplotlib.text.Text))  # it has words at all
    if cjk_font() is not None:  # drawn: each Chinese character from a font that has it
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=r"Glyph \d+ .* missing from")
            fig.canvas.draw()


def test_the_check_finds_english_prose():
    fig = matplotlib.figure.Figure()
    fig.add_subplot().set_xlabel("key (attended to)")
    assert english(fig) == ["'key (attended to)': ['key', 'attended', 'to']"]
    assert prose("验证集 NLL（奈特/词元）·层 1·头 3 d_model 'it' MiniLM --lang x") == []
    assert prose(r"$\mathdefault{10^{-3}}$") == [] and prose(r"$x$ steps") == ["steps"]  # a log axis' tick label


def test_attention_figures(tmp_path, saved):
    from redthread.viz.figures import plot_grid, plot_head

    tokens = list("月落乌啼")
    att = torch.softmax(torch.randn(2, 3, 4, 4), -1)
    plot_head(att[1, 2], tokens, tokens, tmp_path / "head.png", title="层 1·头 2")
    plot_grid(att, tokens, tokens, tmp_path / "grid.png", title="redthread Transformer 语言模型，2 层 × 3 个头")
    plot_grid(att, ["the", "cat", "sat", "."], ["the", "cat", "sat", "."], tmp_path / "english-tokens.png")
    assert len(saved) == 3
    for fig in saved[:2]:
        check(fig)
    check(saved[2], allowed={"the", "cat", "sat"})  # the model's text stays as it is
    assert saved[0].axes[0].get_xlabel() == "键（被关注的位置）" and saved[1].axes[0].get_ylabel() == "层 0"


def test_overlays_of_image_patches(tmp_path, saved):
    from redthread.models.vit import ViT, ViTConfig
    from redthread.viz.image_attention import vit_overlays
    from redthread.viz.patches import plot_patch_overlays

    torch.manual_seed(0)
    model = ViT(ViTConfig(n_layer=2, n_head=2, d_model=16))
    vit_overlays(model, torch.rand(1, 1, 8, 8), tmp_path / "vit.png", title="手写数字的测试图像 0（标签 3）")
    plot_patch_overlays(torch.rand(3, 8, 8), torch.rand(2, 16).softmax(-1), ["red", "square"], tmp_path / "caption.png",
                        suptitle="\"red square\"：每个词的交叉注意力（各层和各头的平均）")
    check(saved[0])
    check(saved[1], allowed={"red", "square"})


def test_the_loss_curve_and_reliability_diagrams(tmp_path, saved):
    from redthread.train.calibration import Calibration, plot_reliability
    from redthread.train.metrics import plot_loss_curve

    rows = [{"step": s, "loss": 3 - s / 100} for s in range(1, 100, 10)] + [{"step": 50, "val_nll": 2.5}]
    plot_loss_curve(rows, tmp_path / "loss.png")
    cal = Calibration(ece=0.02, counts=[1, 2, 3], confidence=[0.2, 0.5, 0.8], accuracy=[0.25, 0.5, 0.75], n=6)
    plot_reliability({"二元语法 softmax 回归": cal, "Transformer": cal}, tmp_path / "reliability.png")
    for fig in saved:
        check(fig)
    assert saved[0].axes[0].get_ylabel() == "奈特/词元"


def test_the_ladder_and_regression_figures(tmp_path, saved):
    from types import SimpleNamespace

    from redthread.commands.ladder import LABELS, RungResult, plot_ladder
    from redthread.commands.regression import _plot
    from redthread.data.regression import RegressionData, make_regression

    def rung(name: str, label: str, nll: float) -> RungResult:
        return RungResult(name, label, 10, 1.0, 10, nll, 2.0, None, 0.1, 0.01, [], None)

    results = [rung(r, LABELS[r], 2.0) for r in ("unigram", "bigram", "mlp", "rnn", "transformer")]
    results.append(rung("ngram", "3-gram counts", 1.5))
    data = SimpleNamespace(name="order-3 Markov chain, 16 symbols", shown_name="3 阶马尔可夫链，16 个符号", bayes_nll=1.2)
    plot_ladder(results, data, tmp_path / "ladder.png")
    problem = make_regression("heteroscedastic", 40, seed=0)
    data = RegressionData(problem.X[:30], problem.y[:30], problem.X[30:], problem.y[30:])
    grid = problem.grid(20)
    mean, std = problem.true_mean(grid), problem.true_std(grid)
    curves = [("线性回归，闭式解", mean, std), ("线性回归，梯度下降", mean, std), ("MLP 2x64 tanh", mean, std)]
    _plot(tmp_path / "regression.png", problem, data, grid, mean, std, curves)
    for fig in saved:
        check(fig)
    assert "越低越好" in saved[0].axes[0].get_title()


@pytest.mark.slow  # each experiment's --quick run (about 1.5 minutes on one core for all of them)
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_draws_its_figures_in_both_languages(name):
    """Each figure is drawn with both languages on (Report.figure calls its drawing function so), and so can be
    saved in each: in Chinese no English prose and no missing glyph; in English no Chinese character."""
    from redthread.experiments import load
    from redthread.fonts import CJK
    from redthread.lang import figure_has_pairs, figure_in

    report = load(name).run(quick=True, seed=0, progress=None)
    found = {}
    for stem, fig in report.figures.items():
        assert figure_has_pairs(fig), f"{name}/{stem} was drawn in one language only"
        caption = report.captions[stem]["zh"]
        assert caption and not prose(caption, {"it", "animal", "street", "tired", "too", "wide"}), (stem, caption)
        with figure_in(fig, "zh"):
            bad = english(fig, allowed={"it", "animal", "street", "tired", "too", "wide"})  # C13's sentence
            if cjk_font() is not None:
                with warnings.catch_warnings():
                    warnings.filterwarnings("error", message=r"Glyph \d+ .* missing from")
                    fig.canvas.draw()
        with figure_in(fig, "en"):
            fig.canvas.draw()
            bad += [t.get_text() for t in fig.findobj(matplotlib.text.Text) if CJK.search(t.get_text())
                    and name != "poetry-heads"]  # the poems are Chinese in both
        if bad:
            found[stem] = bad
    matplotlib.pyplot.close("all")
    assert report.figures and not found, found
