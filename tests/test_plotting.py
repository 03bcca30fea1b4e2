"""Figures go to files outside a notebook (Agg) and inline inside one: redthread never takes a
Jupyter kernel's backend away (importing viz or the experiments used to switch it to Agg)."""

import subprocess
import sys

import pytest

PROBE = """
import sys, types, matplotlib
matplotlib.use("svg")  # a backend someone chose before importing redthread
import ipykernel  # imported, as the notebook tests do: not yet a kernel
if {kernel}:  # as inside a running Jupyter kernel
    shell = types.SimpleNamespace(config={{"IPKernelApp": {{}}}})
    sys.modules["IPython"] = types.SimpleNamespace(get_ipython=lambda: shell)
import redthread.viz.figures, redthread.experiments.report
print(matplotlib.get_backend())
"""


@pytest.mark.parametrize("kernel, backend", [(True, "svg"), (False, "agg")])
@pytest.mark.slow  # a child process per case
def test_the_backend_is_left_alone_in_a_kernel_and_agg_elsewhere(kernel, backend):
    out = subprocess.run([sys.executable, "-c", PROBE.format(kernel=kernel)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().lower() == backend
