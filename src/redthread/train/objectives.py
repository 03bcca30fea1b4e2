"""Deprecated: the likelihoods moved to `redthread.models.likelihoods` (each model names its own).

This module stays for one release so `from redthread.train.objectives import token_nll` keeps
working; it warns once on import.
"""

import warnings

from redthread.models.likelihoods import (  # noqa: F401 (re-exported)
    IGNORE_INDEX,
    bits_per_char,
    gaussian_nll,
    normal_nll,
    perplexity,
    scored,
    token_nll,
)

warnings.warn("redthread.train.objectives is deprecated: import from redthread.models.likelihoods",
              DeprecationWarning, stacklevel=2)
