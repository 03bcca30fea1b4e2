"""What counts as English prose on a surface drawn in Chinese: the Latin-letter words of a text that are not
code identifiers, units, model names or proper names (`ALLOWED`), nor model text the caller names. Used by the
figure tests (every text artist of a matplotlib figure) and the browser tests (the visible text of a page)."""

from __future__ import annotations

import re

# identifiers, units, symbols, model and proper names a Chinese surface may show as they are
ALLOWED = {
    # units, measures and notation
    "NLL", "ECE", "MSE", "RMSE", "RSS", "KL", "Var", "std", "log", "ln", "exp", "max", "min", "argmax", "softmax",
    "logit", "logits", "tanh", "ReLU", "GELU", "sqrt", "cos", "sin", "dB", "ms", "MB", "KB", "GiB", "MiB", "px",
    "FLOPs", "MFU", "CPU", "GPU", "RSS", "AUC", "ROC", "Jacobian",
    # sampling
    "top", "greedy", "dropout",
    # models and their parts, as the glossary leaves them untranslated
    "MLP", "RNN", "LSTM", "GRU", "Transformer", "ViT", "RoPE", "BPE", "ONNX", "WordPiece", "chrono",
    "GPT", "BERT", "MiniLM", "all", "L6", "v2", "GPT2", "Nadaraya", "Watson", "Winograd", "Wilson", "Holm", "Adam",
    "AdamW", "SGD", "Muon", "NW", "HF", "Silverman", "JSD",
    # proper names and the project's own
    "redthread", "Shakespeare", "makemore", "Hugging", "Face", "Runtime", "Web", "WebAssembly", "tang300",
    "scikit", "learn", "digits", "MNIST",
    # code identifiers that figures and pages show (flags, fields)
    "d_model", "d_k", "d_ff", "n_head", "n_layer", "block_size", "vocab_size", "lr", "pos", "cls", "torch", "nn",
    "autograd", "perm", "MultiHeadAttention", "Encoder", "TransformerLM", "EncoderDecoder", "Captioner",
    "BigramLM", "MLPLM", "NGramLM", "RecurrentLM",  # the ladder's classes, as model descriptions name them

}


def prose(text: str, allowed: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The Latin-letter words of `text` that are English prose: not in ALLOWED or `allowed` (model text), not one
    letter (a symbol: x, y, k, p, T), not inside a code-like token (d_model, --lang, run.toml, L1.H2), not quoted
    ('it', `pos`: code or the model's own text)."""

    words = []
    text = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`", " ", text)  # quoted: code or the model's own text
    for token in re.findall(r"[A-Za-z0-9_.\-/]+", text):
        if re.search(r"[_/]|^--?|\.[a-z]{2,4}$|\d", token):  # an identifier, a flag, a file or a numbered label
            continue
        for word in re.findall(r"[A-Za-z]+", token):
            if len(word) > 1 and word not in ALLOWED and word not in allowed:
                words.append(word)
    return words
