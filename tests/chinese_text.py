"""What counts as English prose on a surface drawn in Chinese: the Latin-letter words of a text that are not
code identifiers, units, model names or proper names (`ALLOWED`), nor model text the caller names. Used by the
figure tests (every text artist of a matplotlib figure) and the browser tests (the visible text of a page).
`prose_runs` is the looser rule for the tour's pages: runs of two or more such words (a label never translated),
with the Chinese quotes “…” and 「…」 marking data (a model's English sample) as well."""

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
    ('it', `pos`: code or the model's own text), not math text ($...$)."""

    words = []
    text = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`", " ", text)  # quoted: code or the model's own text
    text = re.sub(r"\$[^$\n]*\$", " ", text)  # matplotlib's math text: a log axis' $\\mathdefault{10^{-3}}$
    for token in re.findall(r"[A-Za-z0-9_.\-/]+", text):
        if re.search(r"[_/]|^--?|\.[a-z]{2,4}$|\d", token):  # an identifier, a flag, a file or a numbered label
            continue
        for word in re.findall(r"[A-Za-z]+", token):
            if len(word) > 1 and word not in ALLOWED and word not in allowed:
                words.append(word)
    return words


# ---- runs of English prose: the tour's pages -------------------------------------------------------------------

RUN_ALLOWED = {  # besides ALLOWED, in lower case: names and notation the tour's pages keep in Latin letters
    "transformer", "transformers", "vit", "lstm", "gru", "rnn", "mlp", "bert", "gpt", "gelu", "relu", "softmax",
    "layernorm", "rmsnorm", "adamw", "adam", "sgd", "muon", "rope", "bpe", "shakespeare", "tiny", "tinyshakespeare",
    "names", "tang", "hugging", "face", "pytorch", "torch", "numpy", "scikit-learn", "sklearn", "matplotlib",
    "nadaraya-watson", "nadaraya", "watson", "xavier", "kaiming", "he", "chrono", "top-k", "top-p", "min-p",
    "nucleus", "redthread", "nanogpt", "makemore", "d2l", "jupyter", "chromium", "n-gram", "bigram", "trigram",
    "unigram", "q", "k", "v", "x", "y", "w", "b", "z", "h", "t", "n", "d", "log", "exp", "max", "min", "argmax",
    "mnist", "cifar", "kv", "cache", "minilm", "bos", "eos", "pad", "unk", "vs",
}
# data and names, removed first: Chinese quotes (a model's sample, an example sentence), a title in 《》, an English
# gloss in full-width brackets after its Chinese term (因果掩码（causal mask）, as the glossary allows); then ASCII
# quotes that are not apostrophes (a repr's '…', code in `…`)
CHINESE_QUOTED = re.compile(r"“[^”]*”|「[^」]*」|《[^》]*》|（[^（）\u4e00-\u9fff]*）")
GLOSS = re.compile(r"（[A-Za-z][^（）\u4e00-\u9fff，；]*(?=[，；])")  # （attention rollout，Abnar 与 Zuidema，2020）
QUOTED = re.compile(r"‘[^’\n]*’|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])|\"[^\"\n]*\"|`[^`\n]*`")
_LATIN = r"[^\s\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"  # a character of a Latin-script token: not CJK, not its punctuation
NOT_WORDS = re.compile(rf"{_LATIN}*[_./=:()\[\]{{}}<>#@\\0-9]{_LATIN}*|https?://\S+")  # identifiers, numbers, paths, links
RUN = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ \t]+[A-Za-z][A-Za-z'’-]*)+")


def _prose_word(word: str) -> bool:
    """An English word, not a name, an acronym or notation."""
    w = word.strip("'’-")
    return len(w) > 1 and not w.isupper() and w.lower() not in RUN_ALLOWED and w not in ALLOWED


def prose_runs(text: str) -> list[str]:
    """The runs of English prose in a Chinese text: two or more prose words in a row. Looser than `prose`, for the
    tour's pages, whose printed outputs name models, files and settings freely: a label left untranslated reads as a
    run ("validation loss"), a name as one word ("Transformer")."""
    text = GLOSS.sub("（", CHINESE_QUOTED.sub(" ", text))
    text = NOT_WORDS.sub(" ", QUOTED.sub(" ", text))
    hits = []
    for run in RUN.finditer(text):
        words = run.group().split()
        if sum(_prose_word(w) for w in words) >= 2:
            hits.append(run.group())
    return hits
