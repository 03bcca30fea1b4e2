"""Small pieces of English for messages: "1 layer" / "2 layers", "a TransformerLM" / "an MLPLM"."""

from __future__ import annotations


def plural(n: int, noun: str) -> str:
    """n with its noun, singular for one: plural(1, "layer") -> "1 layer", plural(1200, "step") -> "1,200 steps"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def article(name: str) -> str:
    """name with "a" or "an" as it is read aloud: an EncoderDecoder, an MLPLM (em-), an NGramLM (en-), a ViT."""
    vowel = name[:1] in "AEIOaeio"
    spelled = name[:2].isupper() and name[:1] in "FHLMNRSX"  # an initialism read letter by letter
    return f"{'an' if vowel or spelled else 'a'} {name}"
