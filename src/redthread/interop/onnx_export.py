"""The language-model rungs as ONNX graphs, for a page that runs them in a browser (onnxruntime-web).

Not a new rung: bigram, MLP, RNN / LSTM / GRU and the Transformer as they are, written out in
ONNX, with the numbers a reader needs to see one forward pass explained. `export_onnx(model,
"out/model.onnx", tokenizer)` writes two files:

    model.onnx   the graph: input `idx` (1, T) int64 token ids, 1 <= T <= block_size (a dynamic axis);
                 outputs `logits` (1, T, V) first, then the rung's named intermediates (below)
    model.json   what a page needs beside it: the tokenizer (its vocabulary, to encode and decode
                 text), the model's config, every output's name and shape, the lengths allowed,
                 the ONNX opset and the redthread version (`FORMAT`)

The Transformer's graph also returns, per layer `l` (named by the modules they come from), the
input of each sublayer, q, k and v per head as the scores use them (after QK-norm and rotary
positions), the scaled scores q . k / sqrt(d_head) after the causal mask (-inf above the
diagonal) and before the softmax, the softmax weights, their weighted sum of the values per head,
the attention's output, the residual stream after each sublayer (`blocks.l.self_attn_res`,
`blocks.l.ffn_res`), the FFN's hidden activation, and the embedding's parts and the final
LayerNorm's output: claims C6-C11 of the essay, number by number. A recurrent graph returns each
layer's h_t at every position (C5: all that the past leaves the next step).

None of it changes the model's maths. `TransformerGraph` runs the blocks' own modules in the order
`layers/blocks.py` writes them; each attention module hands over q and k through the recorder seam
that `record_attention` uses (`layers/attention.py`, RECORDER), and its own softmax weights by
`need_weights=True` (the explicit path, whose output the fused kernel equals). `RecurrentGraph`
puts torch's nn.RNN / nn.LSTM / nn.GRU in place of the hand-written cells, whose weights are laid
out as torch's (models/recurrent.py), copied 1:1. tests/interop/test_onnx.py checks that both give
the model's logits, and that onnxruntime gives every output to 1e-5.

The exporter is PyTorch's TorchScript-based `torch.onnx.export(dynamo=False)`, not the default
dynamo exporter of torch >= 2.9. With a dynamic length, the dynamo exporter (torch 2.13,
onnxscript 0.7) wrote the recurrent rungs with the example's length fixed inside a Reshape: a graph
that passes `onnx.checker` and fails at run time for any other length. The TorchScript exporter
maps nn.RNN / nn.LSTM / nn.GRU to ONNX's RNN / LSTM / GRU operators, which loop over any length,
exports every rung with one code path, takes well under a second for a small model, and needs no
onnxscript. Opset 17 (`OPSET`): LayerNormalization is a single operator there, and onnxruntime-web
runs every operator these graphs use.

What cannot be exported, and why: an `NGramLM` is a count table of V^order rows looked up by a
Python loop over the first positions (a page can read the counts themselves); an encoder
(`Encoder`, BERT), an `EncoderDecoder` or its `Decoder`, a `ViT` or a `Captioner` read something
other than a text prefix (a bidirectional text, a source, an image), so they have no (1, T) -> logits
graph to put in a text page; a `TransformerLM` subclass with a forward of its own would be bypassed.

Shape legend: T positions, V vocab, C d_model, H heads, D d_head, F d_ff, E d_embed, Hd d_hidden.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from redthread.data.tokenizers import BPETokenizer, CharTokenizer, Tokenizer, tokenizer_from_json
from redthread.errors import InvalidType, InvalidValue, RedthreadError
from redthread.files import atomic_write, atomic_write_text, check_writable
from redthread.layers.attention import RECORDER, MultiHeadAttention, causal_mask
from redthread.models.bigram import BigramLM
from redthread.models.mlp import MLPLM
from redthread.models.recurrent import RecurrentLM
from redthread.models.transformer import TransformerLM, softcap

FORMAT = "redthread-onnx/1"
OPSET = 17
INPUT = "idx"
MAX_BYTES = 2**31 - 2**20  # an ONNX file is one protobuf message (at most 2 GiB), weights and graph together
EXPORTABLE = "BigramLM, MLPLM, RecurrentLM (rnn, lstm, gru) and TransformerLM"
# why each model class that reads no text prefix, or none that a graph can hold, is refused
REFUSED = {
    "NGramLM": "an n-gram model is a count table of V^order rows, looked up by a Python loop; it has no ONNX graph",
    "Encoder": "an encoder reads the whole text both ways: it gives no next-token distribution",
    "EncoderDecoder": "an encoder-decoder reads a source as well as the text: a page of text prefixes cannot feed it",
    "Decoder": "a decoder attends to an encoder's output as well as the text: a page of text prefixes cannot feed it",
    "ConditionedDecoder": "a decoder attends to an encoder's output as well as the text: a page of text prefixes cannot feed it",
    "ViT": "a ViT classifies images: it reads no text",
    "Captioner": "a captioner reads an image as well as the text: a page of text prefixes cannot feed it",
}


@dataclass(frozen=True)
class Output:
    """One output of the graph: its name, its shape ("T" for the dynamic length) and what it holds."""

    name: str
    shape: tuple[int | str, ...]
    what: str

    def to_dict(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": "float32", "what": self.what}


# --- the graphs: the model's own modules, run in its own order, returning what they compute -------


class _Tap:
    """Stands where `record_attention`'s recorder stands (layers/attention.py, RECORDER): each attention
    module of the model hands over q and k as its scores use them. Keeps the tensors themselves, so that
    they stay in the traced graph."""

    def __init__(self, modules: list[MultiHeadAttention]):
        self.ids = {id(m) for m in modules}
        self.qk: dict[int, tuple[Tensor, Tensor]] = {}

    def wants(self, module: nn.Module) -> bool:
        return id(module) in self.ids

    def add(self, module: nn.Module, att: Tensor, q: Tensor, k: Tensor) -> None:
        self.qk[id(module)] = (q, k)


class TransformerGraph(nn.Module):
    """A `TransformerLM` whose forward also returns what each part computes: graph(idx) -> (logits, *parts),
    in the order of `transformer_outputs(cfg)`. The model's modules, not copies: the same parameters, the same maths."""

    def __init__(self, model: TransformerLM):
        super().__init__()
        self.model = model

    def forward(self, idx: Tensor) -> tuple[Tensor, ...]:
        m = self.model
        e = m.embed
        T = idx.size(1)
        parts: list[Tensor] = []
        # the embedding (models/transformer.py, Embedding.forward), its parts kept
        tok = e.tok_emb(idx)  # (1, T, C)
        x = tok
        pos = e.pos_emb(0, T)  # (T, C) or None
        parts.append(tok)
        if pos is not None:
            pos = e.pos_scale * pos  # (T, C): what is added
            x = x + pos
            parts.append(pos)
        if e.type_emb is not None:
            x = x + e.type_emb.weight[0]
        x = e.drop(x if e.norm is None else e.norm(x))
        parts.append(x)
        mask = causal_mask(T, T, idx.device)  # (T, T), True = may attend
        tap = _Tap([block.self_attn for block in m.blocks])
        token = RECORDER.set(tap)
        try:
            for block in m.blocks:
                x = self._block(block, x, mask, tap, parts)
        finally:
            RECORDER.reset(token)
        h = m.norm_f(x)  # (1, T, C)
        logits = softcap(m.lm_head(h), m.cfg.logit_softcap)  # (1, T, V)
        return (logits, *parts, h)

    @staticmethod
    def _block(block: nn.Module, x: Tensor, mask: Tensor, tap: _Tap, parts: list[Tensor]) -> Tensor:
        """One DecoderBlock (layers/blocks.py, without cross-attention), sublayer by sublayer, as its forward writes it."""
        attn, ffn = block.self_attn, block.ffn
        ln1, ln3 = block.self_attn_res.norm, block.ffn_res.norm
        a_in = ln1(x) if block.pre else x  # what attention reads
        y, att = attn(a_in, need_weights=True)  # (1, T, C), (1, H, T, T): the model's own softmax weights
        q, k = tap.qk[id(attn)]  # (1, H, T, D) each, after QK-norm and rotary positions
        scale = attn.scale if attn.scale is not None else q.size(-1) ** -0.5  # as scaled_dot_product_attention
        scores = ((q @ k.transpose(-2, -1)) * scale).masked_fill(~mask, float("-inf"))  # (1, H, T, T)
        C = x.size(-1)
        v = attn.qkv_proj(a_in)[..., 2 * C :].unflatten(-1, (attn.n_head, attn.d_head)).transpose(1, 2)  # (1, H, T, D)
        heads = att @ v  # (1, H, T, T) @ (1, H, T, D) -> (1, H, T, D)
        x = x + block.drop(y) if block.pre else ln1(x + block.drop(y))
        parts += [a_in, q, k, v, scores, att, heads, y, x]
        f_in = ln3(x) if block.pre else x  # what the FFN reads
        hidden = ffn.act(ffn.fc_in(f_in))  # (1, T, F)
        f_out = ffn.fc_out(hidden)  # (1, T, C)
        x = x + block.drop(f_out) if block.pre else ln3(x + block.drop(f_out))
        parts += [f_in, hidden, f_out, x]
        return x


class RecurrentGraph(nn.Module):
    """A `RecurrentLM` with torch's nn.RNN / nn.LSTM / nn.GRU in place of its cells (their weights copied 1:1):
    ONNX's RNN, LSTM and GRU operators loop over any number of positions. graph(idx) -> (logits, h of each layer)."""

    LAYERS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}

    def __init__(self, model: RecurrentLM):
        super().__init__()
        self.tok_emb, self.drop, self.lm_head = model.tok_emb, model.drop, model.lm_head
        self.layers = nn.ModuleList()
        for cell in model.cells:
            # built on the meta device: no random initialisation (the global RNG is left as it was), then filled
            layer = self.LAYERS[model.cfg.cell](cell.input_size, cell.hidden_size, batch_first=True, device="meta")
            layer = layer.to_empty(device=cell.weight_ih.device).to(cell.weight_ih.dtype)
            with torch.no_grad():
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    getattr(layer, f"{name}_l0").copy_(getattr(cell, name))
            self.layers.append(layer)

    def forward(self, idx: Tensor) -> tuple[Tensor, ...]:
        x = self.drop(self.tok_emb(idx))  # (1, T, E)
        hs = []
        for layer in self.layers:
            h = layer(x)[0]  # (1, T, Hd)
            hs.append(h)
            x = self.drop(h)
        return (self.lm_head(x), *hs)  # (1, T, V), then each layer's (1, T, Hd)


class MLPGraph(nn.Module):
    """An `MLPLM`'s forward with its windows cut by c shifted slices instead of `unfold` (which the exporter
    cannot write for a dynamic length): the same windows, the same maths. graph(idx) -> (logits, hidden)."""

    def __init__(self, model: MLPLM):
        super().__init__()
        self.model = model

    def forward(self, idx: Tensor) -> tuple[Tensor, Tensor]:
        m, c = self.model, self.model.cfg.context
        T = idx.size(1)
        padded = F.pad(idx, (c - 1, 0), value=m.cfg.vocab_size)  # (1, c - 1 + T): the padding id before the start
        windows = torch.stack([padded[:, j : j + T] for j in range(c)], dim=-1)  # (1, T, c), as padded.unfold(1, c, 1)
        e = m.tok_emb(windows).flatten(2)  # (1, T, c * E)
        h = m.drop(m.hidden(e).tanh())  # (1, T, Hd)
        return m.lm_head(h), h  # (1, T, V), (1, T, Hd)


class LogitsGraph(nn.Module):
    """A rung whose graph is its forward as it is (the bigram's row lookup): graph(idx) -> (logits,)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, idx: Tensor) -> tuple[Tensor]:
        return (self.model(idx),)


def onnx_graph(model: nn.Module) -> tuple[nn.Module, list[Output]]:
    """The module to export for `model`, and its outputs in order; a model that cannot be exported is refused."""
    check_exportable(model)
    cfg = model.cfg
    logits = logits_output(cfg.vocab_size)
    if isinstance(model, TransformerLM):
        return TransformerGraph(model), transformer_outputs(cfg)
    if isinstance(model, RecurrentLM):
        hs = [Output(f"cells.{i}.h", (1, "T", cfg.d_hidden), f"layer {i}'s state h_t after each position")
              for i in range(cfg.n_layer)]
        return RecurrentGraph(model), [logits, *hs]
    if isinstance(model, MLPLM):
        return MLPGraph(model), [logits, Output("hidden", (1, "T", cfg.d_hidden), "the tanh hidden layer at every position")]
    return LogitsGraph(model), [logits]


def logits_output(vocab_size: int) -> Output:
    return Output("logits", (1, "T", vocab_size),
                  "the next token's logits at every position: row t is P(token t+1 | tokens <= t) before the softmax")


def transformer_outputs(cfg) -> list[Output]:
    """The outputs of `TransformerGraph`, in its order."""
    C, H, D, d_ff = cfg.d_model, cfg.n_head, cfg.d_head, cfg.ffn_size
    out = [logits_output(cfg.vocab_size), Output("embed.tok_emb", (1, "T", C), "each token's embedding vector")]
    if cfg.pos in ("sinusoidal", "learned"):
        out.append(Output("embed.pos_emb", ("T", C), "the position vector added to each token's embedding"))
    out.append(Output("embed", (1, "T", C), "the residual stream entering the first block: token + position"))
    for i in range(cfg.n_layer):
        b = f"blocks.{i}"
        out += [
            Output(f"{b}.self_attn.input", (1, "T", C), "what attention reads: LayerNorm(x) (pre-norm) or x (post-norm)"),
            Output(f"{b}.self_attn.q", (1, H, "T", D), "each head's queries, as the scores use them"),
            Output(f"{b}.self_attn.k", (1, H, "T", D), "each head's keys, as the scores use them"),
            Output(f"{b}.self_attn.v", (1, H, "T", D), "each head's values"),
            Output(f"{b}.self_attn.scores", (1, H, "T", "T"),
                   "q . k * scale for every query (row) and key (column), -inf where the causal mask hides the key; before the softmax"),
            Output(f"{b}.self_attn.weights", (1, H, "T", "T"), "the softmax of the scores over the keys: each row sums to 1"),
            Output(f"{b}.self_attn.heads", (1, H, "T", D), "each head's weighted sum of the values: weights @ v"),
            Output(f"{b}.self_attn.output", (1, "T", C), "the heads concatenated and projected (out_proj): the sublayer's output"),
            Output(f"{b}.self_attn_res", (1, "T", C), "the residual stream after the attention sublayer"),
            Output(f"{b}.ffn.input", (1, "T", C), "what the FFN reads: LayerNorm(x) (pre-norm) or x (post-norm)"),
            Output(f"{b}.ffn.hidden", (1, "T", d_ff), "the FFN's hidden activation, act(W_1 x + b_1)"),
            Output(f"{b}.ffn.output", (1, "T", C), "the FFN's output, W_2 hidden + b_2"),
            Output(f"{b}.ffn_res", (1, "T", C), "the residual stream after the FFN sublayer: the block's output"),
        ]
    out.append(Output("norm_f", (1, "T", C), "what lm_head reads: the final LayerNorm of the stream (pre-norm), or the stream"))
    return out


def check_exportable(model: nn.Module) -> None:
    """Refuse, in one line, a model that has no (1, T) token ids -> logits graph (see the module docstring)."""
    name = type(model).__name__
    if not isinstance(model, nn.Module):
        raise InvalidType(f"export_onnx writes a language model (an nn.Module), got {name}")
    for cls in type(model).__mro__:
        if cls.__name__ in REFUSED:
            raise InvalidValue(f"a {name} does not export to ONNX: {REFUSED[cls.__name__]} (exportable: {EXPORTABLE})")
    if isinstance(model, TransformerLM):
        if not model.can_step:  # a forward of its own, or cross-attention blocks
            raise InvalidValue(f"a {name} with a forward of its own, or with cross-attention, does not export to ONNX "
                               f"(exportable: {EXPORTABLE})")
    elif not isinstance(model, (BigramLM, MLPLM, RecurrentLM)):
        raise InvalidValue(f"a {name} does not export to ONNX (exportable: {EXPORTABLE})")


# --- the files -------------------------------------------------------------------------------------


def meta_path(path: str | os.PathLike) -> Path:
    """Where the JSON beside a graph goes: model.onnx -> model.json."""
    return Path(path).with_suffix(".json")


def export_onnx(
    model: nn.Module, path: str | os.PathLike, tokenizer: Tokenizer | None = None, overwrite: bool = False
) -> Path:
    """Write `model` as an ONNX graph at `path` (a .onnx file) and its description beside it (.json); returns the
    graph's path. The graph is checked with `onnx.checker` before it is put in place. With no `tokenizer` the JSON's
    "tokenizer" is null: the graph takes ids, but a page cannot turn text into them.

    Files that exist are refused unless `overwrite`; even then a JSON beside the graph that is not one of these
    descriptions is left alone and refused."""
    path = Path(path)
    graph, outputs = onnx_graph(model)
    cfg = model.cfg
    if path.suffix != ".onnx":
        raise InvalidValue(f"the ONNX graph's path must end in .onnx, got {path}")
    meta_file = meta_path(path)
    for p in (path, meta_file):
        if p.exists() and not p.is_file():
            raise RedthreadError(f"cannot export to {p}: it is {'a folder' if p.is_dir() else 'not a regular file'}")
        if p.exists() and not overwrite:
            raise RedthreadError(f"{p} already exists: pass --overwrite (overwrite=True) to replace it")
    if meta_file.exists() and not _is_description(meta_file):
        raise RedthreadError(f"{meta_file} is not a redthread ONNX description: it is left alone; give another .onnx path")
    check_writable(path.parent, "export folder")
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    if weights >= MAX_BYTES:
        raise InvalidValue(f"the model has {weights / 2**30:.1f} GiB of weights: an ONNX file holds at most 2 GiB "
                           "(a protobuf's limit), and a page could not load it anyway")
    if tokenizer is not None and tokenizer.vocab_size > cfg.vocab_size:
        raise InvalidValue(f"the tokenizer has {tokenizer.vocab_size} tokens, the model only {cfg.vocab_size}")
    onnx, _ = _onnx_packages()
    meta = description(model, outputs, tokenizer)

    def write(tmp: str) -> None:
        example = torch.arange(min(cfg.block_size, 8), device=_device(model))[None] % cfg.vocab_size  # (1, T)
        was_training = model.training
        torch.onnx.register_custom_op_symbolic("aten::rms_norm", _rms_norm, OPSET)  # QK-norm; opset 17 has no RMSNorm
        model.eval()  # no dropout: the graph is the model at inference
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # the tracer's notes on Python ints and the exporter's deprecation
                torch.onnx.export(
                    graph, (example,), tmp, dynamo=False, opset_version=OPSET, input_names=[INPUT],
                    output_names=[o.name for o in outputs], do_constant_folding=True,
                    dynamic_axes={INPUT: {1: "T"}, **{o.name: {i: "T" for i, s in enumerate(o.shape) if s == "T"}
                                                       for o in outputs}},
                )
        finally:
            model.train(was_training)
        proto = onnx.load(tmp)
        proto.doc_string = f"redthread {meta['redthread_version']}: a {meta['model_class']} (see {meta_file.name})"
        onnx.checker.check_model(proto, full_check=True)
        onnx.save(proto, tmp)

    atomic_write(path, write)
    atomic_write_text(meta_file, json.dumps(meta, ensure_ascii=False))
    return path


def compare_onnx(model: nn.Module, path: str | os.PathLike, idx: Tensor) -> dict[str, float]:
    """Run the graph at `path` in onnxruntime on `idx` (1, T) and the model's own graph module in PyTorch (float32,
    eval mode): the largest absolute difference of each output, by name. The masked scores' -inf must sit in the
    same places in both (else that output's difference is inf); the finite entries are compared."""
    import numpy as np

    _, ort = _onnx_packages()
    graph, outputs = onnx_graph(model)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run([o.name for o in outputs], {INPUT: idx.cpu().numpy().astype(np.int64)})
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            want = [t.float().cpu().numpy() for t in graph(idx)]
    finally:
        model.train(was_training)
    diffs = {}
    for o, a, b in zip(outputs, want, got):
        finite = np.isfinite(a)
        if a.shape != b.shape or not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite]):
            diffs[o.name] = math.inf
        else:
            diffs[o.name] = float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0
    return diffs


def _rms_norm(g, x, normalized_shape, weight, eps):
    """ONNX for F.rms_norm (the exporter has none before opset 23): x / sqrt(mean(x^2) + eps) over the last dims."""
    from torch.onnx import symbolic_helper as sh

    dims = sh._get_const(normalized_shape, "is", "normalized_shape")
    eps = torch.finfo(torch.float32).eps if sh._is_none(eps) else sh._get_const(eps, "f", "eps")  # F.rms_norm's default
    mean_square = g.op("ReduceMean", g.op("Mul", x, x), axes_i=list(range(-len(dims), 0)), keepdims_i=1)
    y = g.op("Div", x, g.op("Sqrt", g.op("Add", mean_square, g.op("Constant", value_t=torch.tensor(eps)))))
    return y if sh._is_none(weight) else g.op("Mul", y, weight)


def description(model: nn.Module, outputs: list[Output], tokenizer: Tokenizer | None) -> dict:
    """The JSON written beside the graph."""
    cfg = model.cfg
    return {
        "format": FORMAT,
        "redthread_version": _version(),
        "opset": OPSET,
        "exporter": f"torch.onnx.export (TorchScript), torch {torch.__version__.split('+')[0]}",
        "model_class": type(model).__name__,
        "rung": rung_name(model),
        "config": cfg.to_dict(),
        "input": {"name": INPUT, "dtype": "int64", "shape": [1, "T"], "min_length": 1, "max_length": cfg.block_size,
                  "what": "token ids; T may be any length from min_length to max_length (the context window)"},
        "outputs": [o.to_dict() for o in outputs],
        "attention": _attention_notes(model),
        "tokenizer": None if tokenizer is None else tokenizer_description(tokenizer),
    }


def rung_name(model: nn.Module) -> str:
    """The ladder's name for the rung (models/registry.py's RUNGS)."""
    if isinstance(model, RecurrentLM):
        return model.cfg.cell
    return next(name for cls, name in ((BigramLM, "bigram"), (MLPLM, "mlp"), (TransformerLM, "transformer"))
                if isinstance(model, cls))


def _attention_notes(model: nn.Module) -> dict | None:
    if not isinstance(model, TransformerLM):
        return None
    cfg = model.cfg
    scale = 1.0 if not cfg.scale_attention else 1 / math.sqrt(cfg.d_head)
    return {"scale": scale, "mask": "causal: query t sees keys 0..t; the scores are -inf above the diagonal",
            "positions": cfg.pos, "norm": cfg.norm, "activation": cfg.activation}


def tokenizer_description(tokenizer: Tokenizer) -> dict:
    """The tokenizer as a page reads it.

    Both kinds: "tokens", each id's text (a BPE token that holds part of a character shows U+FFFD there).
    "char": id i is the code point tokens[i]; encode by code point (not by UTF-16 unit); redthread refuses
    characters outside the vocabulary (encode(errors="replace") maps them to "replacement_id").
    "bpe": "token_bytes", each id's bytes (decode: join them, then UTF-8), and "hf_tokenizer", the Hugging
    Face tokenizer.json (byte-level pre-tokenizer, vocabulary, merges) that encodes any text."""
    if isinstance(tokenizer, CharTokenizer):
        return {"kind": "char", "vocab_size": tokenizer.vocab_size, "tokens": list(tokenizer.chars),
                "replacement_id": tokenizer.replacement_id}
    if isinstance(tokenizer, BPETokenizer):
        token_bytes = [_bpe_bytes(tokenizer, i) for i in range(tokenizer.vocab_size)]
        return {"kind": "bpe", "vocab_size": tokenizer.vocab_size,
                "tokens": [bytes(b).decode("utf-8", "replace") for b in token_bytes],
                "token_bytes": token_bytes, "hf_tokenizer": json.loads(tokenizer.hf_tokenizer.to_str())}
    raise InvalidType(f"cannot describe a {type(tokenizer).__name__} for a page: expected a char or BPE tokenizer")


def _bpe_bytes(tokenizer: BPETokenizer, i: int) -> list[int]:
    """The bytes of BPE token i: its byte-level string mapped back through GPT-2's byte alphabet."""
    alphabet = _byte_alphabet()
    return [alphabet[ch] for ch in tokenizer.hf_tokenizer.id_to_token(i)]


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet (Radford et al. 2019): each byte's printable stand-in -> the byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    codes, n = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, codes)}


def read_tokenizer(meta: dict) -> Tokenizer | None:
    """The tokenizer a description holds, rebuilt from the fields a page reads (None when it holds none)."""
    tok = meta.get("tokenizer")
    if tok is None:
        return None
    if tok.get("kind") == "char":
        return CharTokenizer("".join(tok["tokens"]))
    if tok.get("kind") == "bpe":
        return tokenizer_from_json(json.dumps({"kind": "bpe", "tokenizer": json.dumps(tok["hf_tokenizer"])}))
    raise InvalidValue(f"unknown tokenizer kind {tok.get('kind')!r} in an ONNX description")


def _is_description(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _onnx_packages():
    """onnx and onnxruntime, or a one-line error saying how to install them."""
    try:
        import onnx
        import onnxruntime
    except ImportError as e:
        raise RedthreadError(f"exporting to ONNX needs the optional package {e.name}: pip install 'redthread[onnx]' "
                             "(bash setup.sh installs it)") from None
    return onnx, onnxruntime


def _device(model: nn.Module) -> torch.device:
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


def _version() -> str:
    try:
        return importlib.metadata.version("redthread")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"
