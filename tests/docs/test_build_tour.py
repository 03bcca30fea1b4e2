"""docs/build_tour.py: a chapter runs in a kernel that imports this checkout, draws its figures inline,
and a chapter that fails or runs too long is refused in one line naming it."""

import nbformat
import pytest

from tests.docs.conftest import EXAMPLE, REPO, build_tour

pytestmark = pytest.mark.slow  # executes chapters in Jupyter kernels: child processes

HEADER = EXAMPLE.read_text(encoding="utf-8").split("# %%", 1)[0]


def chapter(tmp_path, code: str):
    path = tmp_path / "07-probe.py"
    path.write_text(HEADER + '# %% [markdown] lang="en"\n# # 7 · Probe\n\n# %% [markdown] lang="zh"\n# # 第 7 章 · 探针\n\n'
                    f"# %%\n{code}\n", encoding="utf-8")
    return path


def test_the_kernel_imports_this_checkout_and_draws_inline(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("MPLBACKEND", "Agg")  # as when the chapters run as scripts; the kernel must not inherit it
    nb = build_tour.execute(chapter(tmp_path, "import matplotlib.pyplot as plt\nimport redthread\n"
                                               "print(redthread.__file__)\nplt.plot([0, 1])\nplt.show()"))
    outputs = nb.cells[-1].outputs
    assert outputs[0].text.strip() == str(REPO / "src" / "redthread" / "__init__.py")
    assert any("image/png" in o.get("data", {}) for o in outputs)
    # the kernel writes to this process's stderr: no warning per chapter (ipykernel's on unencrypted TCP sockets)
    assert "WARNING" not in capfd.readouterr().err


def test_each_language_keeps_its_own_markdown_and_every_code_cell(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 1 · A", metadata={"lang": "en"}),
        nbformat.v4.new_markdown_cell("# 第 1 章 · 甲", metadata={"lang": "zh"}),
        nbformat.v4.new_code_cell("print(1)  # one ‖ 一\n# plain"),
        nbformat.v4.new_code_cell('def f():\n    """Fit the line. ‖ 拟合直线。"""\n    """Only English."""'),
    ])
    en, zh = ([c.source for c in build_tour.language_version(nb, lang).cells] for lang in ("en", "zh"))
    assert en == ["# 1 · A", "print(1)  # one\n# plain", 'def f():\n    """Fit the line."""\n    """Only English."""']
    assert zh == ["# 第 1 章 · 甲", "print(1)  # 一\n# plain", 'def f():\n    """拟合直线。"""\n    """Only English."""']
    paths = build_tour.write(nb, tmp_path / "01-a.py", tmp_path / "out")
    assert {lang: p.name for lang, p in paths.items()} == {"en": "01-a.ipynb", "zh": "01-a.zh.ipynb"}


def test_a_failing_chapter_is_named_with_its_error(tmp_path):
    with pytest.raises(build_tour.ChapterFailed, match=r"^07-probe\.py: cell 2 failed: .*ZeroDivisionError"):
        build_tour.execute(chapter(tmp_path, "1 / 0"))


def test_a_chapter_past_its_time_is_stopped(tmp_path):
    with pytest.raises(build_tour.ChapterFailed, match=r"^07-probe\.py: ran past 10 s"):
        build_tour.execute(chapter(tmp_path, "import time\ntime.sleep(120)"), timeout=10)


def test_the_command_refuses_a_missing_chapter(tmp_path, capsys):
    assert build_tour.main([str(tmp_path / "nope.py"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: no such chapter: {tmp_path / 'nope.py'}"


def test_one_run_writes_each_notebook_in_its_own_language(tmp_path):
    """say() keeps both texts in the kernel; each notebook shows its own side, in prints and in figures."""
    path = chapter(tmp_path, "import matplotlib.pyplot as plt\nfrom redthread.lang import say, term\n"
                             "print(f\"{say('model', '模型'):8}|{term('attention'):>8}|\")\n"
                             "fig, ax = plt.subplots()\nax.bar([say('count', '计数'), 'n'], [1, 2])\n"
                             "ax.set_xticks([0, 1], [say('a', '甲'), say('b', '乙')])\nax.set_title(say('loss', '损失'))\n"
                             "ax.plot([0, 1], label=say('train', '训练'))\nax.legend()\nplt.show()")
    nb = build_tour.execute(path)
    en, zh = (build_tour.language_version(nb, lang).cells[-1].outputs for lang in ("en", "zh"))
    assert en[0].text == "model   |attention|\n"
    assert zh[0].text == "模型    |  注意力|\n"  # a CJK character counts two columns
    png = {lang: [o.data["image/png"] for o in outs if "image/png" in o.get("data", {})] for lang, outs in (("en", en), ("zh", zh))}
    assert len(png["en"]) == len(png["zh"]) == 1 and png["en"] != png["zh"]
    assert all(build_tour.ZH_PNG not in o.get("data", {}) and build_tour.ZH_TEXTS not in o.get("data", {}) for o in [*en, *zh])
    [drawn] = [o.metadata["redthread"]["figure_texts"] for o in zh if "image/png" in o.get("data", {})]
    assert {"损失", "训练", "甲", "乙"} <= set(drawn) and not {"loss", "train", "a", "b"} & set(drawn)


def test_a_pair_that_cannot_be_split_is_refused(tmp_path):
    with pytest.raises(build_tour.ChapterFailed, match=r"^07-probe\.py: cell 2 prints text that keeps both languages"):
        build_tour.execute(chapter(tmp_path, "from redthread import say\nsay('a', '甲')"))  # its repr escapes the markers
