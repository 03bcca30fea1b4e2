"""ONNX export: every language-model rung, and the Transformer with every position kind, gives in onnxruntime
the logits and every intermediate PyTorch gives (max abs difference <= 1e-5, float32), at every length from 1
to the context window; the graph modules give the model's own logits and the weights `record_attention` records;
the description beside the graph holds a tokenizer a page can encode and decode with; and what cannot or must
not be exported is refused in one line. Tiny random-init models, built here: no training, no download.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import redthread as rt
from redthread.data.tokenizers import BPETokenizer, CharTokenizer
from redthread.errors import RedthreadError
from redthread.interop.onnx_export import FORMAT, OPSET, compare_onnx, export_onnx, onnx_graph, read_tokenizer
from redthread.models.captioner import Captioner, CaptionerConfig
from redthread.viz.record import record_attention

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

TOL = 1e-5  # onnxruntime against PyTorch, float32
V, BLOCK = 23, 12
POSITIONS = ("sinusoidal", "learned", "rope", "none")
TEXT = "the cat sat on the mat."


def transformer(**overrides) -> rt.TransformerLM:
    cfg = dict(vocab_size=V, block_size=BLOCK, n_layer=2, n_head=2, d_model=16)
    return rt.TransformerLM(rt.TransformerConfig(**{**cfg, **overrides}))


def bigram() -> rt.BigramLM:
    model = rt.BigramLM(rt.BigramConfig(vocab_size=V, block_size=BLOCK))
    torch.nn.init.normal_(model.logits.weight)  # it starts at zeros: uniform, where any graph would agree
    return model


def recurrent(cell: str) -> rt.RecurrentLM:
    return rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=BLOCK, cell=cell, n_layer=2, d_embed=8, d_hidden=12))


RUNGS = {
    "bigram": bigram,
    "mlp": lambda: rt.MLPLM(rt.MLPConfig(vocab_size=V, block_size=BLOCK, context=4, d_embed=8, d_hidden=16)),
    "rnn": lambda: recurrent("rnn"),
    "lstm": lambda: recurrent("lstm"),
    "gru": lambda: recurrent("gru"),
    **{f"transformer-{pos}": (lambda pos=pos: transformer(pos=pos)) for pos in POSITIONS},
    # the variants: post-norm, QK-norm, ReLU squared, soft-capped logits, no biases, an untied head, exact and tanh GELU
    "transformer-variants": lambda: transformer(pos="rope", norm="post", qk_norm=True, activation="relu2",
                                                logit_softcap=3.0, bias=False, tie_weights=False, d_ff=24),
    "transformer-gpt2": lambda: transformer(pos="learned", activation="gelu_tanh", n_head=4, n_layer=3),
}


@pytest.mark.parametrize("rung", RUNGS)
def test_onnxruntime_gives_every_output_of_every_rung(rung, tmp_path):
    torch.manual_seed(0)
    model = RUNGS[rung]().eval()
    path = export_onnx(model, tmp_path / "model.onnx")
    onnx.checker.check_model(onnx.load(path), full_check=True)
    meta = json.loads((tmp_path / "model.json").read_text(encoding="utf-8"))
    graph = onnx.load(path).graph
    assert [o.name for o in graph.output] == [o["name"] for o in meta["outputs"]]
    assert [i.name for i in graph.input] == ["idx"] and meta["input"]["max_length"] == BLOCK
    for T in (1, 7, BLOCK):  # every length the description allows: the axis is dynamic
        idx = torch.randint(V, (1, T))
        diffs = compare_onnx(model, path, idx)
        assert max(diffs.values()) <= TOL, {k: v for k, v in diffs.items() if v > TOL}
        got = onnxruntime_outputs(path, idx)
        for o in meta["outputs"]:  # the shapes the description promises, T filled in
            assert list(got[o["name"]].shape) == [T if s == "T" else s for s in o["shape"]], o["name"]


def onnxruntime_outputs(path, idx) -> dict[str, np.ndarray]:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, {"idx": idx.numpy()})))


@pytest.mark.parametrize("rung", RUNGS)
def test_the_graph_module_gives_the_models_logits(rung):
    torch.manual_seed(0)
    model = RUNGS[rung]().eval()
    graph, outputs = onnx_graph(model)
    idx = torch.randint(V, (2, BLOCK))
    with torch.no_grad():
        parts = graph(idx)
        torch.testing.assert_close(parts[0], model(idx), atol=1e-6, rtol=0)
    assert len(parts) == len(outputs) and outputs[0].name == "logits"


@pytest.mark.parametrize("pos", [*POSITIONS, "post-norm"])
def test_the_transformers_intermediates_are_the_models_own(pos):
    """Against what the model computes, not against the graph module's own arithmetic: record_attention's weights
    and queries and keys, the block outputs a forward hook sees, and the sums that the residual stream is."""
    torch.manual_seed(1)
    model = (transformer(pos=pos) if pos != "post-norm" else transformer(norm="post", qk_norm=True)).eval()
    graph, outputs = onnx_graph(model)
    idx = torch.randint(V, (1, BLOCK))
    blocks_out = []
    hooks = [b.register_forward_hook(lambda m, i, o: blocks_out.append(o)) for b in model.blocks]
    with torch.no_grad(), record_attention(model, vectors=True) as maps:
        model(idx)
    for h in hooks:
        h.remove()
    with torch.no_grad():
        got = dict(zip([o.name for o in outputs], graph(idx)))
    for layer, block in enumerate(model.blocks):
        b = f"blocks.{layer}"
        qk = maps.query_key("decoder", layer)
        torch.testing.assert_close(got[f"{b}.self_attn.weights"], maps.decoder[layer], atol=1e-6, rtol=0)
        torch.testing.assert_close(got[f"{b}.self_attn.q"], qk.q, atol=0, rtol=0)
        torch.testing.assert_close(got[f"{b}.self_attn.k"], qk.k, atol=0, rtol=0)
        scores = got[f"{b}.self_attn.scores"]
        hidden = torch.ones(BLOCK, BLOCK, dtype=torch.bool).triu(1)  # keys after the query
        assert torch.isneginf(scores[..., hidden]).all() and torch.isfinite(scores[..., ~hidden]).all()
        torch.testing.assert_close(scores[..., ~hidden], qk.scores()[..., ~hidden], atol=1e-6, rtol=0)
        torch.testing.assert_close(scores.softmax(-1), got[f"{b}.self_attn.weights"], atol=1e-6, rtol=0)
        heads = got[f"{b}.self_attn.heads"].transpose(1, 2).flatten(2)  # (1, T, C): the heads side by side
        torch.testing.assert_close(block.self_attn.out_proj(heads), got[f"{b}.self_attn.output"], atol=1e-6, rtol=0)
        torch.testing.assert_close(got[f"{b}.ffn_res"], blocks_out[layer], atol=1e-6, rtol=0)
        if block.pre:  # the stream is the sum of what the sublayers add
            before = got["embed"] if layer == 0 else got[f"blocks.{layer - 1}.ffn_res"]
            torch.testing.assert_close(got[f"{b}.self_attn_res"], before + got[f"{b}.self_attn.output"], atol=1e-6, rtol=0)
            torch.testing.assert_close(got[f"{b}.ffn_res"], got[f"{b}.self_attn_res"] + got[f"{b}.ffn.output"], atol=1e-6, rtol=0)
    if model.cfg.pos in ("sinusoidal", "learned"):
        torch.testing.assert_close(got["embed"], got["embed.tok_emb"] + got["embed.pos_emb"], atol=0, rtol=0)
    else:
        assert "embed.pos_emb" not in got
        torch.testing.assert_close(got["embed"], got["embed.tok_emb"], atol=0, rtol=0)


def test_the_description_says_what_a_page_needs(tmp_path):
    tok = CharTokenizer.from_text(TEXT)
    model = transformer(vocab_size=tok.vocab_size, pos="rope")
    export_onnx(model, tmp_path / "m.onnx", tokenizer=tok)
    meta = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert meta["format"] == FORMAT and meta["opset"] == OPSET == onnx.load(tmp_path / "m.onnx").opset_import[0].version
    assert meta["redthread_version"] == rt.__version__ and meta["model_class"] == "TransformerLM"
    assert meta["rung"] == "transformer" and rt.TransformerConfig(**meta["config"]) == model.cfg
    assert meta["input"] == {**meta["input"], "name": "idx", "dtype": "int64", "shape": [1, "T"], "min_length": 1,
                             "max_length": BLOCK}
    assert meta["attention"]["scale"] == pytest.approx(8 ** -0.5) and meta["attention"]["positions"] == "rope"
    names = [o["name"] for o in meta["outputs"]]
    per_layer = ["self_attn.input", "self_attn.q", "self_attn.k", "self_attn.v", "self_attn.scores", "self_attn.weights",
                 "self_attn.heads", "self_attn.output", "self_attn_res", "ffn.input", "ffn.hidden", "ffn.output", "ffn_res"]
    assert names == ["logits", "embed.tok_emb", "embed", *(f"blocks.{i}.{n}" for i in range(2) for n in per_layer), "norm_f"]
    assert meta["tokenizer"]["tokens"] == list(tok.chars) and read_tokenizer(meta).encode(TEXT) == tok.encode(TEXT)


def test_a_bpe_tokenizer_is_described_so_that_its_bytes_decode_any_text(tmp_path):
    text = "床前明月光，疑是地上霜。To be, or not to be: that is the question.\n" * 20
    tok = BPETokenizer.train(text, vocab_size=300)
    export_onnx(rt.BigramLM(rt.BigramConfig(vocab_size=tok.vocab_size)), tmp_path / "bpe.onnx", tokenizer=tok)
    described = json.loads((tmp_path / "bpe.json").read_text(encoding="utf-8"))["tokenizer"]
    assert described["kind"] == "bpe" and len(described["token_bytes"]) == len(described["tokens"]) == tok.vocab_size
    ids = tok.encode("疑是地上霜, to be")
    assert bytes(b for i in ids for b in described["token_bytes"][i]).decode("utf-8") == "疑是地上霜, to be"
    assert all(len(b) == 1 for b in described["token_bytes"][:256])  # the 256 byte tokens come first
    rebuilt = read_tokenizer({"tokenizer": described})
    assert rebuilt.encode(text) == tok.encode(text)


def test_export_leaves_the_model_and_the_random_numbers_as_they_were(tmp_path):
    model = rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, cell="lstm", n_layer=2, d_embed=8, d_hidden=8, dropout=0.5))
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    export_onnx(model, tmp_path / "lstm.onnx")
    assert model.training and torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    diffs = compare_onnx(model, tmp_path / "lstm.onnx", torch.randint(V, (1, 9)))  # the graph is the model in eval mode
    assert max(diffs.values()) <= TOL and model.training


class OwnForward(rt.TransformerLM):
    def forward(self, idx, cache=None):
        return super().forward(idx, cache) * 2


@pytest.mark.parametrize(("build", "needle"), [
    (lambda: rt.NGramLM(rt.NGramConfig(vocab_size=V)), "n-gram model is a count table"),
    (lambda: rt.Encoder(rt.TransformerConfig(vocab_size=V, n_layer=1, d_model=8, n_head=2)), "encoder reads"),
    (lambda: rt.EncoderDecoder(rt.TransformerConfig(vocab_size=V, n_layer=1, d_model=8, n_head=2)), "reads a source"),
    (lambda: rt.Decoder(rt.TransformerConfig(vocab_size=V, n_layer=1, d_model=8, n_head=2)), "encoder's output"),
    (lambda: rt.ViT(rt.ViTConfig()), "classifies images"),
    (lambda: Captioner(CaptionerConfig(vocab_size=V)), "reads an image"),
    (lambda: OwnForward(rt.TransformerConfig(vocab_size=V, n_layer=1, d_model=8, n_head=2)), "a forward of its own"),
    (lambda: torch.nn.Linear(2, 2), "does not export to ONNX"),
])
def test_what_cannot_be_exported_is_refused_in_one_line(build, needle, tmp_path):
    with pytest.raises(ValueError, match=needle) as e:
        export_onnx(build(), tmp_path / "m.onnx")
    assert isinstance(e.value, RedthreadError) and len(str(e.value).splitlines()) == 1
    assert "exportable: BigramLM, MLPLM, RecurrentLM" in str(e.value)
    assert not any(tmp_path.iterdir())


def test_files_that_exist_are_replaced_only_when_asked_and_only_if_they_are_an_exports(tmp_path):
    path = tmp_path / "m.onnx"
    export_onnx(bigram(), path)
    first = path.read_bytes()
    with pytest.raises(RedthreadError, match="already exists"):
        export_onnx(transformer(), path)
    assert path.read_bytes() == first
    export_onnx(transformer(), path, overwrite=True)
    assert path.read_bytes() != first and json.loads((tmp_path / "m.json").read_text())["rung"] == "transformer"
    (tmp_path / "notes.json").write_text('{"mine": true}')
    with pytest.raises(RedthreadError, match="not a redthread ONNX description"):
        export_onnx(bigram(), tmp_path / "notes.onnx", overwrite=True)
    assert (tmp_path / "notes.json").read_text() == '{"mine": true}' and not (tmp_path / "notes.onnx").exists()
    with pytest.raises(ValueError, match="must end in .onnx"):
        export_onnx(bigram(), tmp_path / "m.txt")
    (tmp_path / "folder.onnx").mkdir()
    with pytest.raises(RedthreadError, match="it is a folder"):
        export_onnx(bigram(), tmp_path / "folder.onnx")
    with pytest.raises(ValueError, match="the tokenizer has 11 tokens, the model only 5"):
        export_onnx(rt.BigramLM(rt.BigramConfig(vocab_size=5)), tmp_path / "small.onnx", CharTokenizer.from_text(TEXT))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.onnx", "m.json", "m.onnx", "notes.json"]


def test_without_the_onnx_extra_the_export_says_how_to_install_it(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "onnx", None)  # as if it were not installed
    with pytest.raises(RedthreadError, match=r"needs the optional package onnx: pip install 'redthread\[onnx\]'"):
        export_onnx(bigram(), tmp_path / "m.onnx")
    assert not any(tmp_path.iterdir())


def test_a_model_too_large_for_one_onnx_file_is_refused_before_any_work(tmp_path, monkeypatch):
    from redthread.interop import onnx_export

    monkeypatch.setattr(onnx_export, "MAX_BYTES", 1000)  # the bigram's table is 23 x 23 x 4 bytes
    with pytest.raises(ValueError, match="GiB of weights: an ONNX file holds at most 2 GiB"):
        export_onnx(bigram(), tmp_path / "m.onnx")
    assert not any(tmp_path.iterdir())
