"""Looking inside a model: load it, read text into labelled tokens, record its attention, and
show its next-token distribution P(token | context) before and after the sampling processors.

Claim C13 of the essay (attention maps are a window into what a model learned) and C12 (sampling
reshapes P(token | context)). The explorer page (`redthread attention`), the web app (`redthread
serve`) and the coreference experiment all stand on this:

    inspector = load_inspector(checkpoint="runs/demo")       # or load_inspector(pretrained="minilm")
    payload = inspector.attention_payload("To be, or not")   # the explorer's data: every layer x head
    dist = inspector.next_token("To be, or not", SampleConfig(top_p=0.9))  # candidates, probabilities, the cut

Kinds of model: "lm" (a decoder-only language model: a redthread TransformerLM run, or a
GPT-2-family folder), "encoder" (a BERT-family folder), "seq2seq" (an encoder-decoder run), and
"image" (`ImageInspector`: a ViT or captioner run, shown on the images of its test split). Other
rungs of the ladder have no attention, so they cannot be inspected here (`redthread sample` still
samples them). Which heads send a word to which: `redthread.viz.heads`.
"""

from __future__ import annotations

import io
import math
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from redthread.errors import InvalidType, InvalidValue
from redthread.generate.config import MAX_SEED, SampleConfig  # noqa: F401 (MAX_SEED: the app's bound too)
from redthread.lang import RUNGS_ZH, both_languages, language, resolve, say
from redthread.models.base import model_device
from redthread.viz.explorer import payload_tab
from redthread.viz.record import record_attention
from redthread.words import plural

MAX_CANDIDATES = 50  # the most next-token candidates one answer lists


def check_text(text: str, what: str = "the text") -> str:
    """The text, if it is text: a lone surrogate (U+D800 to U+DFFF, which JSON's \\ud800 escapes can carry) is
    half of a UTF-16 pair, not a character, and no tokenizer can read it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidValue(f"{what} contains a lone surrogate (U+{ord(text[e.start]):04X}) at character {e.start}, "
                             "which is not a character: send UTF-8 text") from None
    return text


def nats(p: torch.Tensor) -> float:
    """The entropy -sum p log p of a distribution, in nats (a zero probability adds nothing)."""
    return max(0.0, float(-torch.special.xlogy(p, p).sum()))  # max: never a -0.0 (a one-hot greedy draw)


def check_finite(tensor: torch.Tensor, what: str) -> torch.Tensor:
    """The tensor, if every value is a finite number: a NaN or an infinity cannot be shown (nor sent as JSON)."""
    if not torch.isfinite(tensor).all():
        raise InvalidValue(f"{what} NaN or infinite values: are the model's weights corrupt?")
    return tensor


def check_weights(model: nn.Module, path: Path) -> nn.Module:
    """The model, if every weight is a finite number (a garbled checkpoint file can load and hold NaN)."""
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise InvalidValue(f"corrupt checkpoint {path}: the weight {name} holds NaN or infinite values")
    return model


def neuron_vectors(maps, kind: str, layer: int | None) -> dict | None:
    """The payload's `vectors` of one kind for the neuron view: layer `layer`'s q (H, T, D) and k (H, S, D)."""
    if layer is None:
        return None
    layer %= len(maps[kind])  # -1: the last (the recording checked the range)
    qk = maps.query_key(kind, layer)
    return {"layer": layer, "scale": qk.scale, "q": qk.q[0], "k": qk.k[0]}


@dataclass
class Tokens:
    """Text read into tokens: ids, a printable label for each, and each token's character span."""

    ids: list[int]
    labels: list[str]
    spans: list[tuple[int, int]]  # (start, end) in the text; (0, 0) for added special tokens
    notice: str | None = None  # set when the text had to be cut to the model's context
    notice_zh: str | None = None  # the same in Chinese

    def __len__(self) -> int:
        return len(self.ids)

    def cut(self, start: int, end: int, notice: str, notice_zh: str | None = None) -> Tokens:
        return Tokens(self.ids[start:end], self.labels[start:end], self.spans[start:end], notice, notice_zh)


def char_reader(tokenizer):
    def read(text: str) -> Tokens:
        ids = tokenizer.encode(text)
        return Tokens(ids, list(text), [(i, i + 1) for i in range(len(text))])

    return read


def hf_reader(hf_tokenizer, add_special_tokens: bool):
    """Tokens of a Hugging Face `tokenizers.Tokenizer` (BPE or WordPiece), spans from its offsets."""

    def read(text: str) -> Tokens:
        enc = hf_tokenizer.encode(text, add_special_tokens=add_special_tokens)
        labels = [text[a:b] if b > a else tok for tok, (a, b) in zip(enc.tokens, enc.offsets)]
        return Tokens(list(enc.ids), labels, [tuple(o) for o in enc.offsets])

    return read


@dataclass
class Inspector:
    """A model with attention, ready to be looked into."""

    name: str
    model: nn.Module
    kind: str  # "lm", "encoder" or "seq2seq"
    description: str
    context: int  # the most tokens the model reads at once
    read: object  # text -> Tokens
    decode: object  # list of ids -> text
    meta: dict = field(default_factory=dict)
    attends: bool = True  # False: a ladder rung without attention (n-gram, bigram, MLP, RNN): P(next | text) only
    vocabulary: frozenset[str] | None = None  # the characters a character-level tokenizer reads; None: any text
    rung: str | None = None  # its place on the ladder (models/registry.py's RUNGS): "unigram", ..., "transformer"
    description_zh: str = ""  # the description in Chinese ("": the English one)

    @property
    def shown_description(self) -> str:
        """The description in the language chosen (redthread.lang)."""
        return say(self.description, self.description_zh or self.description)

    def tokens(self, text: str) -> Tokens:
        """The text as tokens, cut to the context: a language model keeps the end (what it would
        condition on when predicting the next token), an encoder the beginning."""
        if not isinstance(text, str):
            raise InvalidType("the text is empty")
        if not text.strip():
            raise InvalidValue("the text is empty")
        toks = self.read(check_text(text))
        n, C = len(toks), self.context
        if n == 0:
            raise InvalidValue("the text gives no tokens")
        if n <= C:
            return toks
        if self.kind == "lm":
            return toks.cut(n - C, n, f"the text is {n} tokens, longer than the context ({C}): kept the last {C}",
                            f"文本有 {n} 个词元，超过了上下文（{C}）：保留最后 {C} 个")
        return toks.cut(0, C, f"the text is {n} tokens, longer than the context ({C}): kept the first {C}",
                        f"文本有 {n} 个词元，超过了上下文（{C}）：保留最前面 {C} 个")

    def _device(self) -> torch.device:
        """Where the model's tensors are: its parameters', else its buffers' (the counting rungs, unigram and
        n-gram, have only buffers), else the CPU."""
        return model_device(self.model)

    def missing(self, text: str) -> list[str]:
        """The characters of the text that this model's tokenizer cannot read, in order of first appearance
        (none for a byte-level BPE, which reads any text)."""
        return [] if self.vocabulary is None else [c for c in dict.fromkeys(text) if c not in self.vocabulary]

    @torch.inference_mode()
    def attention(self, text: str, target: str | None = None, vectors: bool | int = False):
        """Tokens and the recorded maps (AttentionMaps) of one forward pass over the text. An
        encoder-decoder reads `text` as its source and `target` as the decoder's input; then the
        answer is (source tokens, maps, target tokens). `vectors`: the queries and keys of layer l
        (or of every layer: True) are recorded too, as `record_attention` says."""
        if not self.attends:
            raise InvalidValue(f"{self.name} has no attention to show ({self.description}): ask for its next-token "
                               "distribution instead")
        toks = self.tokens(text)
        idx = torch.tensor([toks.ids], device=self._device())  # (1, S)
        if self.kind != "seq2seq":
            if target is not None:
                raise InvalidValue(f"{self.name} is not an encoder-decoder: it takes no target text")
            with record_attention(self.model, vectors) as maps:
                self.model(idx)
            return toks, maps, toks
        if target is None:
            raise InvalidValue(f"{self.name} is an encoder-decoder: give the decoder's input as a target text too")
        tgt = self.tokens(target)
        with record_attention(self.model, vectors) as maps:
            self.model(idx, torch.tensor([tgt.ids], device=self._device()))  # (1, S), (1, T)
        return toks, maps, tgt

    def attention_payload(self, text: str, target: str | None = None, title: str | None = None,
                          neuron_layer: int | None = -1) -> dict:
        """The explorer's payload: every recorded kind as one tab of (L, H, T, S) weights, with the queries
        and keys of layer `neuron_layer` for the neuron view (-1: the last layer; None: no vectors)."""
        if neuron_layer is not None and (isinstance(neuron_layer, bool) or not isinstance(neuron_layer, int)):
            raise InvalidType(f"neuron_layer must be a layer number (-1: the last) or None, got {neuron_layer!r}")
        src, maps, tgt = self.attention(text, target, vectors=False if neuron_layer is None else neuron_layer)
        labels = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}
        tabs = [payload_tab(kind, labels[kind][0].labels, labels[kind][1].labels, maps.stacked(kind)[:, 0],
                            vectors=neuron_vectors(maps, kind, neuron_layer))
                for kind in maps.kinds]
        notice = "; ".join(n for n in dict.fromkeys((src.notice, tgt.notice)) if n) or None
        notice_zh = "；".join(n for n in dict.fromkeys((src.notice_zh, tgt.notice_zh)) if n) or None
        return {"title": title or text.strip(), "model": self.description, "notice": notice, "tabs": tabs,
                "zh": {"model": self.description_zh or self.description, "notice": notice_zh or notice}}

    @torch.inference_mode()
    def next_token(self, text: str, sampling: SampleConfig | None = None, candidates: int = 20) -> dict:
        """P(next token | text) from the model, and what sampling with these settings would draw from.

        Each candidate has `p` (the model's probability), `p_sample` (after temperature and the
        top-k / top-p / min-p filters, renormalised: 0 where a filter cut it) and `kept`. The
        candidates are the most probable under the model, in order; `kept` counts the tokens
        (over the whole vocabulary) that survive the filters, so the cut falls after that many.
        `entropy` (and `perplexity`) are the model's distribution's, in nats; `entropy_sample` (and
        `perplexity_sample`) those of the distribution sampling draws from, which the settings change.
        """
        return self._next(text, sampling or SampleConfig(), candidates)[0]

    @torch.inference_mode()
    def step(self, text: str, sampling: SampleConfig | None = None, candidates: int = 20) -> dict:
        """Draw one next token with these settings (and their seed, else a random one): the new text,
        and the distribution it came from."""
        sampling = sampling or SampleConfig()
        dist, p_sample = self._next(text, sampling, candidates)
        gen = sampling.generator() or torch.Generator().manual_seed(secrets.randbits(31))
        token = int(torch.multinomial(p_sample.cpu(), 1, generator=gen))  # greedy: p_sample is one-hot
        piece = self.decode([token])
        return {"token": piece, "id": token, "text": text + piece, "distribution": dist}

    def _next(self, text: str, sampling: SampleConfig, candidates: int) -> tuple[dict, torch.Tensor]:
        if self.kind != "lm":
            raise InvalidValue(f"{self.name} is not a language model: it gives no next-token distribution here")
        if not isinstance(candidates, int):
            raise InvalidType(f"candidates must be an integer from 1 to {MAX_CANDIDATES}, got {candidates!r}")
        if not 1 <= candidates <= MAX_CANDIDATES:
            raise InvalidValue(f"candidates must be an integer from 1 to {MAX_CANDIDATES}, got {candidates!r}")
        toks = self.tokens(text)
        idx = torch.tensor([toks.ids], device=self._device())  # (1, T)
        logits = check_finite(self.model(idx)[:, -1, :].float(), "the model's next-token scores hold")  # (1, V)
        p = logits.softmax(-1)[0]  # (V,)
        p_sample = sampling.probabilities(logits, idx)[0]  # (V,): one-hot on the argmax when greedy
        order = p.argsort(descending=True)[: min(candidates, p.numel())]
        entropy, entropy_sample = nats(p), nats(p_sample)
        dist = {
            "tokens": toks.labels,
            "notice": toks.notice,
            "candidates": [
                {"id": int(i), "token": self.decode([int(i)]), "p": float(p[i]), "p_sample": float(p_sample[i]),
                 "kept": bool(p_sample[i] > 0)}
                for i in order
            ],
            "kept": int((p_sample > 0).sum()),
            "vocab_size": int(p.numel()),
            "entropy": entropy,  # the model's distribution
            "perplexity": math.exp(entropy),
            "entropy_sample": entropy_sample,  # the distribution sampling draws from: 0 when greedy
            "perplexity_sample": math.exp(entropy_sample),
            "settings": {k: getattr(sampling, k) for k in ("temperature", "top_k", "top_p", "min_p")},
        }
        return dist, p_sample


# --- loading ---------------------------------------------------------------------------------


def load_inspector(checkpoint: str | Path | None = None, pretrained: str | Path | None = None,
                   device: str = "cpu", rungs: bool = False) -> Inspector:
    """An inspector for a redthread run folder (or checkpoint file), a reference model shipped with redthread
    ("shakespeare-transformer"), or a Hugging Face-format folder / a known pretrained name ("minilm"), where
    a shipped model's name is looked up first. rungs=True also opens a ladder rung without attention (n-gram,
    bigram, MLP, RNN/LSTM/GRU): its P(next | text), with `attends` False."""
    from redthread.models.base import resolve_device

    if (checkpoint is None) == (pretrained is None):
        raise InvalidValue("give a checkpoint or a pretrained model, not both or neither")
    device = str(resolve_device(device))
    if checkpoint is not None:
        return _load_run(Path(checkpoint), device, rungs)
    return _load_pretrained(pretrained, device)


def _load_run(path: Path, device: str, rungs: bool = False) -> Inspector:
    from redthread.data.shipped_models import MODELS_DIR
    from redthread.train.checkpoint import read_checkpoint

    ckpt = read_checkpoint(path, map_location=device)
    if ckpt.model_class in ("ViT", "Captioner"):  # image models: their attention is over an image's patches
        raise InvalidValue(f"{path} holds a {ckpt.model_class}, an image model: show its attention with --index N or --image FILE "
                           "(in Python: rt.show_image_attention)")
    if ckpt.tokenizer is None:
        raise InvalidValue(f"the checkpoint {path} holds no tokenizer, so it cannot read text")
    name = path.name if path.is_dir() else path.parent.name
    if ckpt.path.parent == MODELS_DIR:  # a reference model shipped with redthread, named or given by its file
        name = ckpt.path.stem
    check_weights(ckpt.model, path).eval()
    return inspect_model(ckpt.model, ckpt.tokenizer, name, rungs=rungs, step=ckpt.step, rung=ckpt.extra.get("rung"),
                         where=str(path))


def inspect_model(model: nn.Module, tokenizer, name: str = "model", rungs: bool = False, step: int | None = None,
                  rung: str | None = None, where: str | None = None) -> Inspector:
    """An inspector for a model in memory and the tokenizer it was trained with (a CharTokenizer or a
    BPETokenizer): a TransformerLM or an EncoderDecoder; with rungs=True also a ladder rung without
    attention (its P(next | text) only). The model is used as it is: put it in eval mode first."""
    from redthread.data.tokenizers import BPETokenizer, CharTokenizer
    from redthread.models.base import LanguageModel
    from redthread.models.transformer import EncoderDecoder, TransformerLM

    where = where or name
    if not isinstance(model, nn.Module):
        raise InvalidType(f"{where}: expected a redthread model (an nn.Module), got {type(model).__name__}")
    model_class = type(model).__name__
    rung_model = rungs and isinstance(model, LanguageModel) and not isinstance(model, TransformerLM)
    if not rung_model and not isinstance(model, (TransformerLM, EncoderDecoder)):
        raise InvalidValue(f"{where} holds a {model_class}, which has no attention to show; attention needs a Transformer run")
    vocabulary = None
    if isinstance(tokenizer, CharTokenizer):
        read, vocabulary = char_reader(tokenizer), frozenset(tokenizer.chars)
    elif isinstance(tokenizer, BPETokenizer):
        read = hf_reader(tokenizer.hf_tokenizer, add_special_tokens=False)
    else:
        raise InvalidType(f"{where}: unsupported tokenizer {type(tokenizer).__name__} (a CharTokenizer or a BPETokenizer reads text)")
    cfg = model.cfg
    place = ladder_rung(model, rung)
    at = "" if step is None else f", step {step:,}"
    at_zh = "" if step is None else f"，第 {step:,} 步"
    meta = {} if step is None else {"step": step}
    if rung_model:  # no attention: what it conditions on, from the ladder's own names
        what = rung or model_class
        desc = f"redthread {what} rung ({model_class}), {model.num_params():,} parameters{at}"
        desc_zh = f"redthread 阶梯上的{RUNGS_ZH.get(what, what)}（{model_class}），{model.num_params():,} 个参数{at_zh}"
        return Inspector(name, model, "lm", desc, cfg.block_size, read, tokenizer.decode, {**meta, "rung": what},
                         attends=False, vocabulary=vocabulary, rung=place, description_zh=desc_zh)
    kind, what = ("lm", "Transformer LM") if isinstance(model, TransformerLM) else ("seq2seq", "encoder-decoder")
    desc = f"redthread {what}, {plural(cfg.n_layer, 'layer')} x {plural(cfg.n_head, 'head')}, d_model {cfg.d_model}{at}"
    what_zh = "Transformer 语言模型" if kind == "lm" else "编码器-解码器"
    desc_zh = f"redthread {what_zh}，{cfg.n_layer} 层 × {cfg.n_head} 个头，d_model {cfg.d_model}{at_zh}"
    return Inspector(name, model, kind, desc, cfg.block_size, read, tokenizer.decode, meta, vocabulary=vocabulary,
                     rung=place, description_zh=desc_zh)


def ladder_rung(model: nn.Module, named: str | None = None) -> str | None:
    """The model's rung on the ladder: the name the ladder saved with it, else the first rung of the registry
    (in the ladder's order) whose class and defining settings it has (an order-1 NGramLM: "unigram");
    None for a model on no rung (an encoder-decoder)."""
    from redthread.models.registry import RUNGS

    if named in RUNGS:
        return named
    for rung, (class_name, defining) in RUNGS.items():
        if type(model).__name__ == class_name and all(getattr(model.cfg, k, None) == v for k, v in defining.items()):
            return rung
    return None


def _load_pretrained(name: str | Path, device: str) -> Inspector:
    from redthread.data.pretrained_tokenizer import load_pretrained_tokenizer
    from redthread.data.shipped_models import shipped_model_file
    from redthread.interop.huggingface import from_pretrained, resolve_pretrained
    from redthread.models.transformer import TransformerLM

    if shipped_model_file(str(name)) is not None and not Path(name).exists():  # a reference model shipped with redthread
        return _load_run(Path(name), device)
    folder = resolve_pretrained(str(name))
    model = from_pretrained(folder).to(device).eval()
    tok = load_pretrained_tokenizer(folder)
    cfg = model.cfg
    kind = "lm" if isinstance(model, TransformerLM) else "encoder"
    family = "GPT-2 decoder" if kind == "lm" else "BERT encoder"
    label = "all-MiniLM-L6-v2" if str(name) == "minilm" else Path(folder).name
    desc = f"{label} ({family}, {cfg.n_layer} layers x {cfg.n_head} heads, hidden {cfg.d_model})"
    family_zh = "GPT-2 解码器" if kind == "lm" else "BERT 编码器"
    desc_zh = f"{label}（{family_zh}，{cfg.n_layer} 层 × {cfg.n_head} 个头，隐藏维度 {cfg.d_model}）"
    read = hf_reader(tok.hf_tokenizer, add_special_tokens=True)
    return Inspector(str(name), model, kind, desc, cfg.block_size, read, tok.decode, description_zh=desc_zh)



class ImageInspector:
    """An image run (a ViT or a captioner): the explorer payload of one image of its test split, or of a file."""

    kind = "image"

    def __init__(self, path: Path):
        from redthread.train.checkpoint import read_checkpoint

        self.ckpt = read_checkpoint(path, map_location="cpu")  # small models, one image: the CPU is enough
        if self.ckpt.model_class not in ("ViT", "Captioner"):
            raise InvalidValue(f"{path} holds a {self.ckpt.model_class}, not an image model")
        check_weights(self.ckpt.model, path).eval()
        self.name = path.name

    def image_payload(self, index: int) -> dict:
        from redthread.viz.image_attention import image_attention, test_image

        with both_languages():  # the page switches language: its title in both
            image, title = test_image(self.ckpt, index)
        return image_attention(self.ckpt, image, title).payload

    def upload_payload(self, data: bytes, name: str) -> dict:
        """The same for an image file's bytes: converted and resized to what the model takes, said in the notice.
        A larger image is resized as it is decoded (bounded memory), so its own size comes from the file's header."""
        from PIL import Image

        from redthread.data.image_files import read_image_bytes
        from redthread.data.images import prepare_image
        from redthread.viz.image_attention import image_attention

        cfg = self.ckpt.model.cfg
        with both_languages():  # the page switches language: a file with no name is named in both
            name = name or say("your image", "你的图像")
        # (C, H, W); refuses a decompression bomb, naming the file in the language chosen
        pixels = read_image_bytes(data, resolve(name, language()), fit=cfg.image_size)
        with both_languages():  # its notices in both
            image, notices = prepare_image(pixels, cfg.channels, cfg.image_size)
        with Image.open(io.BytesIO(data)) as img:  # read once already: the header is sound
            width, height = img.size
        if (height, width) != tuple(pixels.shape[1:]):
            with both_languages():
                notices.append(say(f"resized the image from {height}x{width} to {cfg.image_size}x{cfg.image_size} pixels",
                                   f"图像从 {height}x{width} 像素缩放为 {cfg.image_size}x{cfg.image_size} 像素"))
        return image_attention(self.ckpt, image, name, "; ".join(notices) or None).payload
