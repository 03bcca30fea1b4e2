"""The tour's kernel speaks both languages: each chapter runs once, and build_tour.py writes its English and
Chinese notebooks from the same outputs (the same numbers on both pages).

`install()` runs first in the kernel, before the chapter's own cells. From then on `redthread.say` (and
everything redthread prints or draws through it) returns both texts between markers (redthread.lang.Both).
A printed line or a page keeps its markers, and build_tour.py keeps one side per notebook. A figure cannot be
split after it is drawn, so it is drawn twice when it is shown: in English as its `image/png` and in Chinese
as `ZH_PNG` beside it, the texts of each drawing resolved to its language (titles, labels, legends, tick
labels). A figure text that still holds a pair once drawn stops the build, naming the text.
"""

from __future__ import annotations

from functools import partial

from IPython.core.formatters import BaseFormatter
from traitlets import Unicode

ZH_PNG = "image/x-redthread-zh-png"  # the Chinese drawing of a figure, beside its English image/png
ZH_TEXTS = "application/x-redthread-zh-texts"  # the texts of that drawing, for the checks of the Chinese pages


def draw(fig, lang: str, **kwargs) -> str:
    """The figure as a base64 PNG, its texts in `lang` (redthread.lang.figure_in); the figure is left as it was."""
    from IPython.core.pylabtools import print_figure
    from matplotlib.text import Text

    from redthread.lang import figure_in

    with figure_in(fig, lang):
        data = print_figure(fig, "png", base64=True, **{"bbox_inches": "tight", **kwargs})
        if lang == "zh":
            fig._redthread_zh_texts = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return data


class ChinesePNG(BaseFormatter):
    format_type = Unicode(ZH_PNG)
    print_method = Unicode("_repr_zh_png_")


class ChineseTexts(BaseFormatter):  # runs after ChinesePNG, which leaves the texts it drew on the figure
    format_type = Unicode(ZH_TEXTS)
    print_method = Unicode("_repr_zh_texts_")
    _return_type = (list,)


def _formatters(shell) -> None:
    """Register (again: `%matplotlib inline` may choose the formats anew) the two drawings of a matplotlib figure."""
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters
    if ZH_PNG not in formatters:
        formatters[ZH_PNG] = ChinesePNG(parent=shell.display_formatter)
        formatters[ZH_TEXTS] = ChineseTexts(parent=shell.display_formatter)
    formatters["image/png"].for_type(Figure, partial(draw, lang="en"))
    formatters[ZH_PNG].for_type(Figure, partial(draw, lang="zh"))
    formatters[ZH_TEXTS].for_type(Figure, lambda fig: getattr(fig, "_redthread_zh_texts", None))


def install() -> None:
    import matplotlib.pyplot as plt  # noqa: F401 -- in a kernel, this loads the inline backend, which sets image/png
    import matplotlib_inline.backend_inline as inline
    from IPython import get_ipython

    from redthread.lang import speak_both

    speak_both(True)
    shell = get_ipython()
    chosen = inline.select_figure_formats  # the one place the inline backend sets image/png: ours after it

    def select_figure_formats(*args, **kwargs):
        chosen(*args, **kwargs)
        _formatters(shell)

    inline.select_figure_formats = select_figure_formats
    _formatters(shell)
