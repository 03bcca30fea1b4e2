"""Reference models shipped inside the package, by name: the best model of each rung of the ladder on
each shipped corpus (`shakespeare-transformer`, `names-lstm`, `tang300-mlp`, ...), trained by
`benchmarks/reference_models.py` with recorded settings and seeds (docs/benchmarks.md).

Each is a redthread checkpoint, `models/NAME.safetensors` beside this file, whose metadata holds
its validation figure, settings, steps, seed, CPU seconds and commit (`extra["reference"]`). A
name is taken wherever a run folder is read (`redthread sample --run NAME`, `eval`, `attention`,
`export`; `rt.read_checkpoint(NAME)`), when no file or folder of that name exists; `rt.pretrained(NAME)`
returns the model and its tokenizer.
"""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent / "models"
SUFFIX = ".safetensors"


def shipped_models() -> list[str]:
    """The names of the reference models shipped with this install, sorted."""
    try:
        return sorted(p.name[: -len(SUFFIX)] for p in MODELS_DIR.iterdir() if p.name.endswith(SUFFIX))
    except OSError:  # an install without them
        return []


def shipped_model_file(name: str) -> Path | None:
    """The file of a shipped reference model by its name, or None when no shipped model has that name."""
    return MODELS_DIR / f"{name}{SUFFIX}" if isinstance(name, str) and name in shipped_models() else None
