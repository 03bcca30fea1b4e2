"""matplotlib's pyplot for redthread's figures: drawn to files, or inline in a notebook.

Outside a notebook every figure is written to a file, so the Agg backend is chosen (no display
needed; a desktop backend would open windows or fail in the web app's worker threads). Inside a
Jupyter kernel the notebook's own backend is left alone, so the figures of the tour and of a
learner's cells show inline.
"""

from __future__ import annotations

import sys


def in_kernel() -> bool:
    """Whether this process runs a Jupyter kernel now (not merely has ipykernel imported)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def pyplot():
    """matplotlib.pyplot, with the Agg backend unless this process is a Jupyter kernel."""
    import matplotlib

    if not in_kernel():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
