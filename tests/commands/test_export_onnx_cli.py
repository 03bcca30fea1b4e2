"""`redthread export RUN --format onnx` on tiny runs: a trained Transformer and a random-init run of every other
exportable rung give onnxruntime's numbers within 1e-5 of PyTorch's on a text the description's tokenizer encodes;
the GPT-2 export keeps working under the new spelling; and bad input (a run with no tokenizer, a model that does
not export, an output that exists, a wrong path) is one line with a non-zero exit."""

from __future__ import annotations

import json

import pytest
import torch

import redthread as rt
from redthread.data.tokenizers import CharTokenizer
from redthread.interop.onnx_export import compare_onnx, read_tokenizer
from tests.cli_helpers import assert_one_line_error, cli, corpus, digest, train_tiny_run  # noqa: F401 (corpus: a fixture)
from tests.tiny import save_tiny_captioner_run, save_tiny_vit_run

pytest.importorskip("onnxruntime")

TOL = 1e-5
PROMPT = "to be, or not"


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus):  # noqa: F811 (the fixture imported above)
    return train_tiny_run(tmp_path_factory, corpus, "onnx")[0]  # a Transformer, 12 steps of training


def test_a_trained_run_exports_and_onnxruntime_gives_its_numbers(trained):
    code, stdout, err = cli("export", trained, "--format", "onnx")
    assert code == 0, err
    path, meta_file = trained / "model.onnx", trained / "model.json"
    assert f"ONNX graph: {path}" in stdout and "onnxruntime gives PyTorch's numbers" in stdout
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    model = rt.load_checkpoint(trained)
    assert meta["rung"] == "transformer" and meta["input"]["max_length"] == model.cfg.block_size == 16
    idx = torch.tensor([read_tokenizer(meta).encode(PROMPT)])  # the text, through the page's own tokenizer
    diffs = compare_onnx(model, path, idx)
    assert len(diffs) == len(meta["outputs"]) == 4 + 13 + 1 and max(diffs.values()) <= TOL, diffs

    before = digest(path)
    code, _, err = cli("export", trained, "--format", "onnx")
    assert_one_line_error(code, err, "model.onnx already exists", "--overwrite")
    assert digest(path) == before
    code, _, err = cli("export", "--checkpoint", trained / "checkpoint.safetensors", "--format", "onnx", "--overwrite")
    assert code == 0, err


@pytest.mark.parametrize("rung", ["bigram", "mlp", "rnn", "lstm", "gru"])
def test_every_other_rung_exports_through_the_command(rung, tmp_path):
    tok = CharTokenizer.from_text(PROMPT + " the question")
    torch.manual_seed(0)
    model = rt.build_model(rung, vocab_size=tok.vocab_size, block_size=24)
    if rung == "bigram":
        torch.nn.init.normal_(model.logits.weight)  # off the uniform start
    rt.save_checkpoint(tmp_path / "run", model, tokenizer=tok)
    code, stdout, err = cli("export", tmp_path / "run", "--format", "onnx", "--out", tmp_path / "page" / f"{rung}.onnx")
    assert code == 0, err
    meta = json.loads((tmp_path / "page" / f"{rung}.json").read_text(encoding="utf-8"))
    assert meta["rung"] == rung and meta["tokenizer"]["tokens"] == list(tok.chars)
    idx = torch.tensor([read_tokenizer(meta).encode(PROMPT)])
    assert max(compare_onnx(model.eval(), tmp_path / "page" / f"{rung}.onnx", idx).values()) <= TOL


def test_the_gpt2_export_takes_the_run_as_an_argument_too(trained, tmp_path):
    transformers = pytest.importorskip("transformers")
    code, _, err = cli("export", trained, "--out", tmp_path / "gpt2")
    assert code == 0, err
    hf = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "gpt2").eval()
    idx = torch.randint(10, (1, 8))
    with torch.no_grad():
        torch.testing.assert_close(hf(idx).logits, rt.load_checkpoint(trained)(idx), atol=1e-5, rtol=0)
    code, _, err = cli("export", trained)
    assert_one_line_error(code, err, "--format gpt2 (the default) writes a folder", "--out FOLDER", "--format onnx")


def test_bad_input_is_one_line(trained, tmp_path):
    torch.manual_seed(0)
    rt.save_checkpoint(tmp_path / "no-tokenizer", rt.TransformerLM(rt.TransformerConfig(vocab_size=9, n_layer=1, d_model=8, n_head=2)))
    code, _, err = cli("export", tmp_path / "no-tokenizer", "--format", "onnx")
    assert_one_line_error(code, err, "has no tokenizer")

    tok = CharTokenizer.from_text(PROMPT)
    rt.save_checkpoint(tmp_path / "ngram", rt.build_model("ngram", vocab_size=tok.vocab_size), tokenizer=tok)
    seq2seq = rt.EncoderDecoder(rt.TransformerConfig(vocab_size=tok.vocab_size, n_layer=1, d_model=8, n_head=2))
    rt.save_checkpoint(tmp_path / "seq2seq", seq2seq, tokenizer=tok)
    save_tiny_vit_run(tmp_path / "vit")
    save_tiny_captioner_run(tmp_path / "captioner")
    for run, needle in [("ngram", "NGramLM does not export to ONNX"), ("seq2seq", "EncoderDecoder does not export"),
                        ("vit", "ViT does not export"), ("captioner", "Captioner does not export")]:
        code, _, err = cli("export", tmp_path / run, "--format", "onnx")
        assert_one_line_error(code, err, needle, "exportable: BigramLM")
        assert not (tmp_path / run / "model.onnx").exists()

    for args, needle in [
        ((trained, "--format", "onnx", "--out", tmp_path / "graph.txt"), "must end in .onnx"),
        (("--format", "onnx"), "which run?"),
        ((trained, "--checkpoint", tmp_path / "other", "--format", "onnx"), "two runs given"),
        ((tmp_path / "nowhere", "--format", "onnx"), "nowhere"),
    ]:
        code, _, err = cli("export", *args)
        assert_one_line_error(code, err, needle)
    code, _, err = cli("export", trained, "--format", "tflite")
    assert code == 2 and "invalid choice: 'tflite'" in err
