"""Generation: processors (processors.py), the settings (config.py), the sampler (sampler.py), speculative
sampling with a draft from a lower rung (speculative.py), captions (captions.py)."""

from redthread.generate.speculative import Round, speculative_generate, speculative_rounds

__all__ = ["Round", "speculative_generate", "speculative_rounds"]
