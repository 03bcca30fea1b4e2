"""matplotlib's pyplot for redthread's figures: drawn to files, or inline in a notebook.

Outside a notebook every figure is written to a file, so the Agg backend is chosen (no display
needed; a desktop backend would open windows or fail in the web app's worker threads). Inside a
Jupyter kernel the notebook's own backend is left alone, so the figures of the tour and of a
learner's cells show inline.
"""

from __future__ import annotations

import sys


def pyplot():
    """matplotlib.pyplot, with the Agg backend unless this process is a Jupyter kernel."""
    import matplotlib

    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
