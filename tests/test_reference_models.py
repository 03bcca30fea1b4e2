"""The reference models shipped inside the package (benchmarks/reference_models.py, issue 27 item 2): each loads
by name and scores the validation figure recorded in its metadata, to 1e-4, on its own data with the project's
`evaluate`; the names resolve wherever a run is read, after any file or folder of that name; a name that is
neither gets one line that lists the shipped ones. No training here.

The fast tier scores each model's `check` sample (the periodic estimate's fixed windows of the validation split:
`evaluate(..., max_batches=N)`); the slow tier scores the whole split, every token once, as `redthread eval` does.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import redthread as rt
from redthread.commands.sample import run_data
from redthread.data.shipped_models import MODELS_DIR, shipped_model_file
from redthread.errors import MissingFile
from redthread.models.registry import RUNGS
from redthread.train.loop import evaluate
from tests.cli_helpers import assert_one_line_error, cli, token_cache  # noqa: F401  (token_cache: autouse)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = rt.shipped_models()
MAX_MB = 20  # the whole set, as issue 27 aims
TOLERANCE = 1e-4
METADATA = ("name", "corpus", "rung", "model", "train", "steps", "seed", "threads", "cpu_seconds", "wall_seconds",
            "command", "commit", "val_nll", "val_tokens", "val_nll_fp32", "check", "storage")


def reference(name: str) -> tuple:
    ckpt = rt.read_checkpoint(name)
    return ckpt, ckpt.extra["reference"]


def test_the_names_are_the_files_in_the_package_and_the_package_data_carries_them():
    assert SHIPPED == sorted(p.stem for p in MODELS_DIR.glob("*.safetensors"))
    every = {f"{corpus}-{rung}" for corpus in ("shakespeare", "names", "tang300")
             for rung in ("ngram", "bigram", "mlp", "lstm", "gru", "transformer")}
    assert set(SHIPPED) == every - {"tang300-bigram"}  # its 2,562 x 2,562 logits would weigh 13 MB (docs/benchmarks.md)
    tomllib = pytest.importorskip("tomllib")
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "data/models/*" in package_data["redthread"]
    assert sum(p.stat().st_size for p in MODELS_DIR.glob("*.safetensors")) <= MAX_MB * 1e6


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_model_records_how_it_was_made(name):
    ckpt, meta = reference(name)
    assert set(METADATA) <= set(meta), set(METADATA) - set(meta)
    corpus, rung = name.rsplit("-", 1)
    assert (meta["name"], meta["corpus"], meta["rung"]) == (name, corpus, rung) and rung in RUNGS
    assert ckpt.extra["rung"] == rung and ckpt.model_class == RUNGS[rung][0]
    assert meta["model"] == ckpt.config and meta["steps"] == ckpt.step and f"--only {name}" in meta["command"]
    assert meta["cpu_seconds"] >= 0 and meta["wall_seconds"] >= 0 and meta["threads"] == 1
    assert abs(meta["val_nll"] - meta["val_nll_fp32"]) < 1e-2  # the float16 copy costs little
    assert meta["val_bpc"] is None or math.isclose(meta["val_bpc"] * math.log(2), meta["val_nll"], rel_tol=0.05)


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_model_scores_its_recorded_check_figure(name):
    ckpt, meta = reference(name)
    model, tokenizer = rt.pretrained(name)
    assert not model.training and tokenizer.to_json() == ckpt.tokenizer.to_json()
    check = meta["check"]
    got = evaluate(model, run_data(ckpt), "val", batch_size=check["batch_size"], max_batches=check["max_batches"])
    assert got["tokens"] == check["tokens"]
    assert abs(got["nll"] - check["nll"]) <= TOLERANCE, (got["nll"], check["nll"])


@pytest.mark.slow  # every validation token once: seconds per model, a minute in all
@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_model_scores_its_recorded_figure_on_the_whole_validation_split(name):
    ckpt, meta = reference(name)
    got = rt.evaluate(rt.pretrained(name)[0], run_data(ckpt), "val", batch_size=64)
    assert got["tokens"] == meta["val_tokens"]
    assert abs(got["nll"] - meta["val_nll"]) <= TOLERANCE, (got["nll"], meta["val_nll"])


def test_eval_and_sample_take_a_shipped_name(capsys):
    name = SHIPPED[0]
    _, meta = reference(name)
    code, out, err = cli("eval", "--run", name)
    assert code == 0, err
    assert f"val: {meta['val_nll']:.4f} nats/token" in out and f"over {meta['val_tokens']:,} tokens" in out
    code, out, err = cli("sample", "--run", name, "--max-new-tokens", "12", "--seed", "0")
    assert code == 0 and out.strip(), err


def test_a_run_of_ones_own_is_never_shadowed_by_a_shipped_name(tmp_path, monkeypatch):
    name = SHIPPED[0]
    monkeypatch.chdir(tmp_path)
    model = rt.build_model("bigram", vocab_size=5, block_size=4)
    rt.save_checkpoint(tmp_path / name, model)
    assert rt.read_checkpoint(name).path.resolve() == tmp_path / name / "checkpoint.safetensors"
    assert rt.read_checkpoint(f"./{name}").config["vocab_size"] == 5
    (tmp_path / name / "checkpoint.safetensors").unlink()  # a folder of that name without a run: no fallback either
    with pytest.raises(MissingFile, match="no checkpoint at"):
        rt.read_checkpoint(name)


def test_a_name_that_is_neither_a_run_nor_shipped_is_one_line_listing_the_shipped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    typo = SHIPPED[0][:-1]
    with pytest.raises(MissingFile, match=f"did you mean {SHIPPED[0]}") as e:
        rt.read_checkpoint(typo)
    assert all(n in str(e.value) for n in SHIPPED) and "\n" not in str(e.value)
    with pytest.raises(MissingFile, match=f"no shipped model named 'nope'.*shipped models: {SHIPPED[0]}"):
        rt.pretrained("nope")
    for command in ("sample", "eval"):
        code, _, err = cli(command, "--run", typo)
        assert_one_line_error(code, err, "no checkpoint at", f"did you mean {SHIPPED[0]}", *SHIPPED)
    code, _, err = cli("sample", "--checkpoint", "runs/nope")  # a path, not a name: the runs nearby only
    assert_one_line_error(code, err, "no checkpoint at runs/nope")
    assert SHIPPED[0] not in err
    assert shipped_model_file("../texts/names") is None and shipped_model_file(SHIPPED[0]) == MODELS_DIR / f"{SHIPPED[0]}.safetensors"


def test_a_shipped_model_generates_from_its_tokenizer():
    name = SHIPPED[0]
    model, tok = rt.pretrained(name)
    prompt = torch.tensor([[0]])
    out = rt.generate(model, prompt, 10, seed=0)
    assert out.shape == (1, 11) and isinstance(tok.decode(out[0].tolist()), str)


def test_an_onnx_export_of_a_shipped_model_is_written_here_not_into_the_package(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    name = next(n for n in SHIPPED if n.endswith("-bigram"))
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("export", name, "--format", "onnx")
    assert code == 0, err
    assert (tmp_path / f"{name}.onnx").is_file() and not list(MODELS_DIR.glob("*.onnx"))


def test_the_attention_viewers_take_a_shipped_transformer_by_name(tmp_path):
    name = "shakespeare-transformer"
    code, out, err = cli("attention", "--run", name, "--text", "To be, or not to be", "--out", tmp_path / "a.html")
    assert code == 0, err
    assert (tmp_path / "a.html").is_file()
    view = rt.show_attention(name, "To be, or not to be")  # a name the notebook views look up among the shipped first
    assert "d_model 128, step 2,300" in view.html


@pytest.mark.slow  # runs the training script in a child process
def test_the_script_trains_a_row_and_records_its_metadata(tmp_path):
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "REDTHREAD_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    script = [sys.executable, str(ROOT / "benchmarks" / "reference_models.py")]
    listed = subprocess.run([*script, "--list"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert listed.returncode == 0 and all(name in listed.stdout for name in SHIPPED), listed.stderr[-2000:]
    run = subprocess.run([*script, "--only", "names-bigram", "--try", '{"steps": 20}', "--tag", "smoke", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    meta = json.loads((tmp_path / "names-bigram-smoke" / "reference.json").read_text(encoding="utf-8"))
    assert meta["steps"] == 20 and meta["cpu_seconds"] > 0 and "--tag smoke" in meta["command"]
    ckpt = rt.read_checkpoint(tmp_path / "names-bigram-smoke" / "shipped")
    assert ckpt.extra["reference"]["check"] == meta["check"] and not list(MODELS_DIR.glob("*smoke*"))
