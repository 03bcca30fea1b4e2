"""English prose in Chinese material: what the Chinese-everywhere checks look for.

A Chinese surface (a tour page, a figure's text, the app's controls, a report's conclusion) may hold Latin
letters that are not prose: code identifiers (snake_case, dotted names, flags, anything with a digit or a
bracket), acronyms (NLL, GRU), names (Transformer, Shakespeare) and the data itself — a model's English
sample, a token — which the Chinese quotes (“…”, 「…」, or a repr's '…'). What is left is prose when two or
more words in a row are English words outside `ALLOWED`: "validation NLL" is a label that was never
translated; "Transformer" or "NLL" alone is a name.
"""

from __future__ import annotations

import re

ALLOWED = {  # names and notation that Chinese text keeps in Latin letters (lower case here)
    "transformer", "transformers", "vit", "lstm", "gru", "rnn", "mlp", "bert", "gpt", "gelu", "relu", "softmax",
    "layernorm", "rmsnorm", "adamw", "adam", "sgd", "muon", "rope", "bpe", "shakespeare", "tiny", "tinyshakespeare",
    "names", "tang", "hugging", "face", "pytorch", "torch", "numpy", "scikit-learn", "sklearn", "matplotlib",
    "nadaraya-watson", "nadaraya", "watson", "xavier", "kaiming", "he", "chrono", "top-k", "top-p", "min-p",
    "nucleus", "redthread", "nanogpt", "makemore", "d2l", "jupyter", "chromium", "n-gram", "bigram", "trigram",
    "unigram", "q", "k", "v", "x", "y", "w", "b", "z", "h", "t", "n", "d", "log", "exp", "max", "min", "argmax",
    "mnist", "cifar", "kv", "cache", "minilm", "bos", "eos", "pad", "unk", "vs",
}
QUOTED = re.compile(r"“[^”]*”|「[^」]*」|‘[^’\n]*’|'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")
NOT_WORDS = re.compile(r"\S*[_./=:()\[\]{}<>#@\\0-9]\S*|https?://\S+")  # identifiers, numbers, paths, links
RUN = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ \t]+[A-Za-z][A-Za-z'’-]*)+")


def prose_word(word: str) -> bool:
    """An English word, not a name, an acronym or notation."""
    w = word.strip("'’-")
    return len(w) > 1 and not w.isupper() and w.lower() not in ALLOWED


def latin_prose(text: str) -> list[str]:
    """The runs of English prose in a Chinese text: two or more prose words in a row."""
    text = NOT_WORDS.sub(" ", QUOTED.sub(" ", text))
    hits = []
    for run in RUN.finditer(text):
        words = run.group().split()
        if sum(prose_word(w) for w in words) >= 2:
            hits.append(run.group())
    return hits
