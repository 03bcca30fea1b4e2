"""Deprecated: the inspection library moved to `redthread.viz` (issue 16), where "probe" no longer
clashes with the linear probes of `redthread.experiments.ffn`.

    Probe, ImageProbe, load_probe      ->  redthread.viz.inspector: Inspector, ImageInspector, load_inspector
    rank_heads, heads_report, ...      ->  redthread.viz.heads (the same names)

Every old name still answers, with a DeprecationWarning naming the new one.
"""

from __future__ import annotations

import importlib
import warnings

RENAMED = {"Probe": "Inspector", "ImageProbe": "ImageInspector", "load_probe": "load_inspector"}
INSPECTOR = ("MAX_CANDIDATES", "MAX_SEED", "Tokens", "char_reader", "hf_reader", "check_text", "check_finite",
             "check_weights", *RENAMED)
HEADS = ("PRONOUNS", "STOPWORDS", "word_spans", "token_positions", "rank_heads", "heads_report", "contrast_report")
MOVED = {**{name: "redthread.viz.inspector" for name in INSPECTOR}, **{name: "redthread.viz.heads" for name in HEADS},
         "RedthreadError": "redthread.errors"}

__all__ = list(MOVED)


def __getattr__(name: str):
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = RENAMED.get(name, name)
    warnings.warn(f"redthread.serve.probe.{name} is deprecated: use {MOVED[name]}.{new}", DeprecationWarning,
                  stacklevel=2)
    return getattr(importlib.import_module(MOVED[name]), new)
