"""`redthread attention` end to end on a tiny run: the page, figures, the pronoun report, and bad input."""

from __future__ import annotations

import json
import re

import pytest
import torch

import redthread as rt
from redthread.data.tokenizers import CharTokenizer
from tests.cli_helpers import assert_one_line_error, cli, digest
from tests.tiny import save_tiny_run

TEXT = "the cat sat on the mat because it was tired"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    tok = save_tiny_run(root / "tiny", TEXT + "\n.,", block_size=48)
    rt.save_checkpoint(root / "bigram", rt.build_model("bigram", vocab_size=tok.vocab_size), tokenizer=tok)
    return root


def page_payload(path):
    html = path.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="payload">(.*?)</script>', html, re.DOTALL)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_page_figure_and_pronoun_report(run, tmp_path):
    out = tmp_path / "page.html"
    code, stdout, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", out, "--figure", tmp_path / "grid.svg")
    assert code == 0, err
    payload = page_payload(out)
    (tab,) = payload["tabs"]
    assert tab["kind"] == "decoder" and tab["queries"] == list(TEXT)
    assert torch.tensor(tab["weights"]).shape == (2, 2, len(TEXT), len(TEXT))
    assert (tmp_path / "grid.svg").read_bytes().startswith(b"<?xml")
    report = (tmp_path / "page-heads.md").read_text()
    assert "Where 'it' looks" in report and "| cat |" in report and "| mat |" in report
    assert "| tired |" not in report  # after 'it': a causal model cannot look there
    assert "| cat |" in stdout

    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", tmp_path / "one.html",
                       "--figure", tmp_path / "head.png", "--layer", "1", "--head", "0", "--source", "it", "--targets", "cat,mat")
    assert code == 0, err
    assert (tmp_path / "head.png").read_bytes().startswith(b"\x89PNG")
    assert "| tired |" not in (tmp_path / "one-heads.md").read_text()


def test_a_long_text_is_cut_with_a_notice(run, tmp_path):
    code, stdout, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT * 2, "--out", tmp_path / "p.html")
    assert code == 0, err
    assert "notice: the text is 86 tokens, longer than the context (48): kept the last 48" in stdout
    assert len(page_payload(tmp_path / "p.html")["tabs"][0]["queries"]) == 48


@pytest.mark.parametrize(
    "extra, needles",
    [
        (["--text", "   "], ["the text is empty"]),
        ([], ["--text or --text-file"]),
        (["--text", "x", "--text-file", "f.txt"], ["--text or --text-file"]),
        (["--text-file", "missing.txt"], ["text file not found"]),
        (["--text", "the cat", "--out", "page.txt"], ["ending in .html"]),
        (["--text", "the cat", "--figure", "f.jpg"], ["unknown format '.jpg'"]),
        (["--text", "the cat", "--figure", "f.png", "--layer", "1"], ["--layer and --head together"]),
        (["--text", "the cat", "--figure", "f.png", "--layer", "5", "--head", "0"], ["out of range", "2 layers"]),
        (["--text", "the cat", "--source", "dog"], ["'dog' is not in the text"]),
        (["--text", "the cat zz"], ["never seen"]),
        (["--text", "the cat", "--neuron-layer", "2"], ["layer 2 for the query and key vectors is out of range", "2 decoder"]),
    ],
)
def test_bad_input_is_one_line(run, tmp_path, monkeypatch, extra, needles):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("attention", "--checkpoint", run / "tiny", *extra)
    assert_one_line_error(code, err, *needles)
    assert not list(tmp_path.glob("*.html"))  # nothing written


def test_the_page_carries_one_layers_q_and_k_for_the_neuron_view(run, tmp_path):
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", tmp_path / "last.html")
    assert code == 0, err
    vectors = page_payload(tmp_path / "last.html")["tabs"][0]["vectors"]
    assert vectors["layer"] == 1 and torch.tensor(vectors["q"]).shape == (2, len(TEXT), 8)  # the last layer by default
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", tmp_path / "first.html",
                       "--neuron-layer", "0")
    assert code == 0, err
    assert page_payload(tmp_path / "first.html")["tabs"][0]["vectors"]["layer"] == 0
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", tmp_path / "none.html",
                       "--neuron-layer", "none")
    assert code == 0, err
    assert "vectors" not in page_payload(tmp_path / "none.html")["tabs"][0]
    assert (tmp_path / "none.html").stat().st_size < (tmp_path / "last.html").stat().st_size
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", tmp_path / "bad.html",
                       "--neuron-layer", "last")
    assert code == 2 and "--neuron-layer: expected a layer number or none, got 'last'" in err
    assert not (tmp_path / "bad.html").exists()


def test_wrong_kind_of_checkpoint_and_unknown_pretrained(run, tmp_path):
    code, _, err = cli("attention", "--checkpoint", run / "bigram", "--text", "the cat", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "BigramLM", "no attention")
    code, _, err = cli("attention", "--pretrained", "gpt-17", "--text", "the cat", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "gpt-17")
    code, _, err = cli("attention", "--checkpoint", tmp_path / "nothing", "--text", "the cat", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "no checkpoint")


def test_existing_files_are_kept_without_overwrite(run, tmp_path):
    out = tmp_path / "page.html"
    out.write_text("keep me")
    before = digest(out)
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", "the cat", "--out", out)
    assert_one_line_error(code, err, "already exists", "--overwrite")
    assert digest(out) == before
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", "the cat", "--out", out, "--overwrite")
    assert code == 0, err
    assert digest(out) != before


def test_contrast_says_what_moves_between_two_texts(run, tmp_path):
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", tmp_path / "p.html",
                            "--contrast", "the cat sat on the mat because it was wide", "--targets", "cat,mat")
    assert code == 0, err
    report = (tmp_path / "p-heads.md").read_text()
    assert "## What moves: 'it' in the two texts" in report and "| cat |" in report and "->" in report
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", TEXT, "--out", tmp_path / "q.html",
                       "--contrast", "the cat sat because", "--targets", "cat")
    assert_one_line_error(code, err, "'it' is not in the text")


def test_export_writes_a_gpt2_folder_transformers_loads(run, tmp_path):
    transformers = pytest.importorskip("transformers")
    code, _, err = cli("export", "--checkpoint", run / "tiny", "--out", tmp_path / "gpt2")
    assert code == 0, err
    hf = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "gpt2").eval()
    ours = rt.load_checkpoint(run / "tiny").eval()
    idx = torch.randint(ours.cfg.vocab_size, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(hf(idx).logits, ours(idx), atol=1e-5, rtol=0)
    code, _, err = cli("export", "--checkpoint", run / "tiny", "--out", tmp_path / "gpt2")
    assert_one_line_error(code, err, "not empty")
    code, _, err = cli("export", "--checkpoint", run / "bigram", "--out", tmp_path / "other")
    assert_one_line_error(code, err, "BigramLM")


def test_encoder_decoder_run_gives_encoder_decoder_and_cross_tabs(run, tmp_path):
    tok = CharTokenizer.from_text(TEXT + "\n.,")
    torch.manual_seed(0)
    cfg = rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=48, n_layer=2, n_head=2, d_model=16)
    rt.save_checkpoint(tmp_path / "seq2seq", rt.EncoderDecoder(cfg), tokenizer=tok)
    code, _, err = cli("attention", "--checkpoint", tmp_path / "seq2seq", "--text", "the cat sat", "--target", "it was",
                       "--out", tmp_path / "p.html", "--source", "cat", "--targets", "sat")
    assert code == 0, err
    tabs = {t["kind"]: t for t in page_payload(tmp_path / "p.html")["tabs"]}
    assert list(tabs) == ["encoder", "decoder", "cross"]
    assert torch.tensor(tabs["encoder"]["weights"]).shape == (2, 2, 11, 11)
    assert torch.tensor(tabs["decoder"]["weights"]).shape == (2, 2, 6, 6)
    assert torch.tensor(tabs["cross"]["weights"]).shape == (2, 2, 6, 11)
    assert tabs["cross"]["queries"] == list("it was") and tabs["cross"]["keys"] == list("the cat sat")
    code, _, err = cli("attention", "--checkpoint", tmp_path / "seq2seq", "--text", "the cat", "--out", tmp_path / "q.html")
    assert_one_line_error(code, err, "encoder-decoder", "target")
    code, _, err = cli("attention", "--checkpoint", run / "tiny", "--text", "the cat", "--target", "x", "--out", tmp_path / "r.html")
    assert_one_line_error(code, err, "not an encoder-decoder")
