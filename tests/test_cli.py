"""The command line end to end on a tiny budget, and every bad input of the foundation issue:
one line on stderr naming the problem, a non-zero exit, no traceback, nothing saved lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import TINY_MODEL, TINY_TRAIN, assert_one_line_error, cli, digest, train_tiny_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, corpus) -> Path:
    out, stdout = train_tiny_run(tmp_path_factory, corpus)
    assert "bits/char" in stdout
    return out


def test_train_writes_a_complete_run_folder(run_dir):
    for name in ("checkpoint.safetensors", "config.json", "tokenizer.json", "metrics.jsonl", "loss.png"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sample_continues_the_prompt_reproducibly(run_dir):
    args = ("sample", "--checkpoint", run_dir, "--prompt", "to be", "--max-new-tokens", "20", "--seed", "3", "--top-p", "0.9")
    code, first, err = cli(*args)
    assert code == 0, err
    assert first.startswith("to be") and len(first.rstrip("\n")) >= 5 + 20 - 2
    assert cli(*args)[1] == first


def test_sample_without_cache_matches_cached(run_dir):
    base = ("sample", "--checkpoint", run_dir, "--max-new-tokens", "40", "--seed", "0", "--temperature", "0")
    assert cli(*base)[1] == cli(*base, "--no-cache")[1]


def test_sample_several_and_beyond_the_context(run_dir):
    code, out, err = cli("sample", "--checkpoint", run_dir, "--num-samples", "3", "--max-new-tokens", "40", "--seed", "1")
    assert code == 0, err
    assert out.count("--- sample") == 3  # 40 new tokens with a 16-token context: the window slides


def test_eval_reports_every_validation_token(run_dir):
    code, out, err = cli("eval", "--checkpoint", run_dir)
    assert code == 0, err
    assert "nats/token" in out and "bits/char" in out


def test_resume_continues_and_extends(run_dir, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    code, out, err = cli("train", "--out", copy, "--resume", "--max-iters", "15", "--no-progress")
    assert code == 0, err
    from redthread.train.checkpoint import read_checkpoint

    assert read_checkpoint(copy).step == 15


# ---- bad input: one line, non-zero exit, nothing saved lost ---------------------------------------


def test_existing_run_is_refused_and_untouched(run_dir, corpus):
    before = digest(run_dir / "checkpoint.safetensors")
    code, _, err = cli("train", "--data", corpus, "--out", run_dir, *TINY_MODEL, *TINY_TRAIN)
    assert_one_line_error(code, err, str(run_dir), "--resume", "--overwrite")
    assert digest(run_dir / "checkpoint.safetensors") == before


@pytest.mark.parametrize(
    "content, needle",
    [(None, "not found"), (b"", "empty"), (b"   \n\n", "empty"), (b"caf\xe9 au lait\n" * 10, "UTF-8")],
)
def test_bad_data_file(tmp_path, content, needle):
    path = tmp_path / "data.txt"
    if content is not None:
        path.write_bytes(content)
    code, _, err = cli("train", "--data", path, "--out", tmp_path / "run", *TINY_MODEL, *TINY_TRAIN)
    assert_one_line_error(code, err, str(path))
    assert needle.lower() in err.lower()
    assert not (tmp_path / "run" / "checkpoint.safetensors").exists()


def test_data_is_a_folder(tmp_path):
    code, _, err = cli("train", "--data", tmp_path, "--out", tmp_path / "run", *TINY_TRAIN)
    assert_one_line_error(code, err, str(tmp_path))


def test_corpus_shorter_than_the_context(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("just a few words here\n" * 3)
    code, _, err = cli("train", "--data", path, "--out", tmp_path / "run", "--block-size", "64", *TINY_TRAIN)
    assert_one_line_error(code, err, "too short", "65")


def test_d_model_not_divisible_by_n_head(tmp_path, corpus):
    code, _, err = cli("train", "--data", corpus, "--out", tmp_path / "run", "--d-model", "30", "--n-head", "4", *TINY_TRAIN)
    assert_one_line_error(code, err, "30", "4")


def test_unseen_prompt_characters_error_or_replace(run_dir):
    code, out, err = cli("sample", "--checkpoint", run_dir, "--prompt", "Zebra€", "--max-new-tokens", "5")
    assert_one_line_error(code, err, "prompt", "'Z'", "'€'")
    assert out == ""  # the prompt is not echoed before it is known to be readable
    code, out, err = cli("sample", "--checkpoint", run_dir, "--prompt", "Zebra€", "--max-new-tokens", "5", "--unknown", "replace")
    assert code == 0, err


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--top-p", "1.5"], "top_p"),
        (["--top-p", "0"], "top_p"),
        (["--top-k", "0"], "top_k"),
        (["--temperature", "-1"], "temperature"),
        (["--min-p", "2"], "min_p"),
        (["--num-samples", "0"], "num_samples"),
    ],
)
def test_bad_sampling_values(run_dir, flags, needle):
    code, _, err = cli("sample", "--checkpoint", run_dir, "--max-new-tokens", "5", *flags)
    assert_one_line_error(code, err, needle)


def test_missing_truncated_and_corrupt_checkpoints(run_dir, tmp_path):
    code, _, err = cli("sample", "--checkpoint", tmp_path / "nowhere")
    assert_one_line_error(code, err, "no checkpoint")
    data = (run_dir / "checkpoint.safetensors").read_bytes()
    for name, blob in (("truncated", data[: len(data) // 2]), ("garbage", os.urandom(4096)), ("empty", b"")):
        bad = tmp_path / name / "checkpoint.safetensors"
        bad.parent.mkdir()
        bad.write_bytes(blob)
        code, _, err = cli("sample", "--checkpoint", bad.parent)
        assert_one_line_error(code, err, str(bad))


def test_resume_with_a_model_that_does_not_fit(run_dir, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    before = digest(copy / "checkpoint.safetensors")
    code, _, err = cli("train", "--out", copy, "--resume", "--d-model", "32", "--no-progress")
    assert_one_line_error(code, err, "d_model", "16", "32")
    assert digest(copy / "checkpoint.safetensors") == before


def test_resume_without_a_run(tmp_path):
    code, _, err = cli("train", "--out", tmp_path / "empty", "--resume")
    assert_one_line_error(code, err, "nothing to resume")


def test_demo_rejects_a_non_positive_budget(tmp_path):
    code, out, err = cli("demo", "--minutes", "0", "--out", tmp_path / "demo")
    assert_one_line_error(code, err, "--minutes")
    assert out == "" and not (tmp_path / "demo").exists()


def test_unknown_flag_is_one_line():
    code, _, err = cli("train", "--n-layers", "3")
    assert_one_line_error(code, err, "--n-layers", "did you mean --n-layer?")


@pytest.mark.parametrize("words, suggestion", [
    (("train", "--steps", "10"), "did you mean --max-iters?"),  # the ladder's spelling, given to train
    (("sample", "--checkpoint", "x", "--temprature", "2"), "did you mean --temperature?"),
    (("tarin",), "did you mean train?"),
    (("ladder", "--rung", "mlp", "--batchsize", "4"), "did you mean --batch-size?"),
])
def test_a_mistyped_word_gets_did_you_mean(words, suggestion):
    code, _, err = cli(*words)
    assert_one_line_error(code, err, suggestion)


def test_nothing_close_gets_no_guess():
    code, _, err = cli("train", "--zzzzzz", "1")
    assert_one_line_error(code, err, "--zzzzzz")
    assert "did you mean" not in err


def test_unknown_data_names_list_the_shipped_texts(tmp_path):
    for command in ("train", "ladder"):
        code, _, err = cli(command, "--data", "shakespear", "--out", tmp_path / command)
        assert_one_line_error(code, err, "shakespear", "shakespeare (the default)", "tang300", "tinyshakespeare")
        assert not (tmp_path / command).exists()
    code, _, err = cli("train", "--data", str(tmp_path / "missing.txt"), "--out", tmp_path / "t")
    assert_one_line_error(code, err, "missing.txt")
    assert "shipped" not in err  # a path, not a name: no list


def test_train_accepts_the_default_corpus_by_name(monkeypatch):
    from redthread.data import lm

    class Loaded(Exception):
        pass

    def load_corpus(data):
        raise Loaded(data)

    monkeypatch.setattr(lm, "load_corpus", load_corpus)
    with pytest.raises(Loaded, match="shakespeare"):
        lm.load_splits("shakespeare")  # the plays, not a file called ./shakespeare
    assert "shakespeare (the default" in build_parser_help("train")


def build_parser_help(command: str) -> str:
    from redthread.cli import build_parser

    return build_parser()._subparsers._group_actions[0].choices[command].format_help()


@pytest.mark.slow  # a child process
def test_console_script_exits_nonzero_without_traceback(tmp_path):
    """The real process: `python -m redthread`, exit code and stderr as a user sees them."""
    proc = subprocess.run(
        [sys.executable, "-m", "redthread", "sample", "--checkpoint", str(tmp_path / "missing")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("error: no checkpoint") and "Traceback" not in proc.stderr


def test_demo_end_to_end_on_a_tiny_budget(tmp_path):
    """The README's main job, shortened: trains on the default corpus, prints baselines and samples."""
    out = tmp_path / "demo"
    code, stdout, err = cli("demo", "--minutes", "0.05", "--out", out)
    assert code == 0, err
    assert "unigram" in stdout and "bigram" in stdout and "Transformer" in stdout
    assert stdout.count("--- sample") == 3
    assert (out / "checkpoint.safetensors").is_file() and (out / "loss.png").is_file()
    code, sample, err = cli("sample", "--checkpoint", out, "--max-new-tokens", "10", "--seed", "0")
    assert code == 0, err


def test_bpe_run_is_self_contained(tmp_path, corpus):
    out = tmp_path / "bpe"
    code, _, err = cli("train", "--data", corpus, "--tokenizer", "bpe", "--vocab-size", "300", "--out", out, *TINY_MODEL, *TINY_TRAIN)
    assert code == 0, err
    from redthread.train.checkpoint import read_checkpoint

    ckpt = read_checkpoint(out)
    assert ckpt.tokenizer.kind == "bpe" and ckpt.model.cfg.vocab_size == ckpt.tokenizer.vocab_size
    code, text, err = cli("sample", "--checkpoint", out, "--prompt", "naïve ☃", "--max-new-tokens", "8", "--seed", "0")
    assert code == 0 and text.startswith("naïve ☃"), err


def test_sample_flags_are_built_from_sample_config():
    """One flag per SampleConfig field, with its meaning; a bad value is SampleConfig's one-line error."""
    from dataclasses import fields

    from redthread.cli import build_parser
    from redthread.generate.config import SampleConfig

    sample = build_parser()._subparsers._group_actions[0].choices["sample"]
    actions = {a.dest: a for a in sample._actions}
    for f in fields(SampleConfig):
        assert actions[f.name].default == f.default and actions[f.name].help.startswith(f.metadata["help"]), f.name
    code, _, err = cli("sample", "--checkpoint", "nowhere", "--top-p", "0")
    assert code == 1 and err.startswith("error: top_p") and len(err.strip().splitlines()) == 1


def test_train_prints_plain_progress_lines_when_output_is_not_a_terminal(tmp_path, corpus):
    args = [a for a in TINY_TRAIN if a != "--no-progress"]
    code, out, err = cli("train", "--data", corpus, "--out", tmp_path / "run", *TINY_MODEL, *args)
    assert code == 0, err
    steps = [line for line in out.splitlines() if line.startswith("step ") and "/12 (" in line]
    assert steps and steps[-1].startswith("step 12/12 (100%)")


@pytest.mark.slow  # child processes
def test_version_and_the_experiment_list():
    from importlib.metadata import version

    from redthread.cli import build_parser
    from redthread.experiments import EXPERIMENTS, SUMMARIES

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["--version"])
    assert e.value.code == 0
    r = subprocess.run([sys.executable, "-m", "redthread", "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == f"redthread {version('redthread')}"
    assert set(SUMMARIES) == set(EXPERIMENTS)  # every experiment is listed with its claims
    r = subprocess.run([sys.executable, "-m", "redthread", "experiment", "--help"], capture_output=True, text=True, timeout=120)
    for name, (claims, _) in SUMMARIES.items():
        assert any(line.split()[:1] == [name] and claims in line for line in r.stdout.splitlines()), name


def test_every_flag_explains_itself():
    """Every flag of every command has a one-line meaning, and every choice it accepts is listed in it."""
    import argparse

    from redthread.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    for name, command in commands.items():
        text = command.format_help()
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flag = action.option_strings[0] if action.option_strings else action.dest
            assert action.help and action.help != argparse.SUPPRESS and "\n" not in action.help, f"{name} {flag}"
            for choice in action.choices or ():
                assert str(choice) in text, f"{name} {flag}: choice {choice} not listed"
    train = commands["train"].format_help()
    assert train.index("data and run folder") < train.index("model:") < train.index("other tasks")  # what users reach for first
    assert "rope" in train and "attention heads per block" in train
    devices = [c._option_string_actions["--device"] for c in commands.values() if "--device" in c._option_string_actions]
    assert all(d.default in ("auto", None) and "auto" in d.help and "default" in d.help for d in devices)  # auto everywhere


def test_config_files_set_flags_flags_win_and_a_run_saves_its_own(tmp_path, corpus):
    tomllib = pytest.importorskip("tomllib")

    config = tmp_path / "small.toml"
    config.write_text("[model]\nn_layer = 1\nn-head = 2\nd_model = 16\nblock_size = 16\npos = \"rope\"\n\n[training]\n"
                      "max_iters = 6\nbatch_size = 4\neval_interval = 6\neval_batches = 2\nlog_interval = 3\nwarmup_iters = 1\n")
    code, out, err = cli("train", "--data", corpus, "--out", tmp_path / "a", "--config", config, "--lr", "0.002", "--no-progress")
    assert code == 0, err
    assert "model settings: " in out and "pos=rope" in out and "lr=0.002" in out  # printed at the start
    saved = tomllib.loads((tmp_path / "a" / "run.toml").read_text())
    assert saved["model"]["pos"] == "rope" and saved["training"]["lr"] == 0.002  # the flag won over the file's default
    code, out, err = cli("train", "--data", corpus, "--out", tmp_path / "b", "--config", tmp_path / "a" / "run.toml", "--no-progress")
    assert code == 0, err
    again = tomllib.loads((tmp_path / "b" / "run.toml").read_text())
    assert again["model"] == saved["model"] and again["training"] == saved["training"]  # the saved file repeats the run


@pytest.mark.parametrize("text, needle", [
    ("n_layers = 2\n", "unknown setting 'n_layers'"),
    ("[model]\nn_layer = \n", "not TOML"),
    ("[model]\nn_layer = \"two\"\n", "--n-layer: invalid int value: 'two'"),
    ("[model]\nn_layer = 1.5\n", "n_layer must be a positive integer, got 1.5"),
])
def test_a_bad_config_file_is_one_line(tmp_path, corpus, text, needle):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    code, _, err = cli("train", "--data", corpus, "--out", tmp_path / "run", "--config", config)
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()
    code, _, err = cli("ladder", "--config", tmp_path / "missing.toml")
    assert_one_line_error(code, err, "no such file")


@pytest.mark.parametrize("words", [
    ("train", "--data", "{corpus}", *TINY_MODEL, *TINY_TRAIN),
    ("train", "--data", "{corpus}", "--overwrite", *TINY_MODEL, *TINY_TRAIN),
    ("train", "--task", "vit-digits", "--overwrite", "--max-iters", "1"),
    ("train", "--task", "caption-shapes", "--overwrite", "--max-iters", "1"),
    ("demo", "--minutes", "0.05"),
    ("ladder", "--data", "{corpus}", "--rungs", "unigram", "--overwrite"),
    ("ladder", "--regression", "linear", "--overwrite"),
    ("experiment", "regression", "--quick", "--overwrite"),
    ("experiment", "all", "--quick", "--overwrite"),
    ("export", "--checkpoint", "{run}", "--overwrite"),
])
def test_out_never_writes_into_a_folder_that_is_not_redthreads(words, tmp_path, corpus, run_dir):
    """`--out docs` once wrote a whole run into the docs' sources: a non-empty folder holding none of the
    files the command writes is refused, with or without --overwrite, and left exactly as it was."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("the user's own page")
    (docs / "img").mkdir()
    words = [w.format(corpus=corpus, run=run_dir) for w in words]
    if words[:2] == ["experiment", "all"]:
        (docs / "index.md").unlink()  # index.md is a file `experiment all` writes: take another
        (docs / "notes.md").write_text("the user's own page")
    before = sorted(p.name for p in docs.iterdir())
    code, _, err = cli(*words, "--out", docs)
    assert_one_line_error(code, err, str(docs), "not empty")
    assert sorted(p.name for p in docs.iterdir()) == before and not any((docs / "img").iterdir())


def test_out_still_takes_an_empty_folder_and_redthreads_own(tmp_path, corpus):
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)  # hidden entries are not content
    code, _, err = cli("ladder", "--data", corpus, "--rungs", "unigram", "--out", empty)
    assert code == 0, err
    code, _, err = cli("ladder", "--data", corpus, "--rungs", "unigram", "--out", empty, "--overwrite")
    assert code == 0, err


def test_the_demo_writes_runs_demo_first_and_never_replaces_it(tmp_path):
    from redthread.commands.demo import default_out

    runs = tmp_path / "runs"
    assert default_out(runs) == runs / "demo"  # the name the README's later commands use
    (runs / "demo").mkdir(parents=True)
    assert default_out(runs) == runs / "demo"  # an empty folder is free
    (runs / "demo" / "checkpoint.safetensors").write_bytes(b"")
    assert default_out(runs).name.startswith("demo-")  # taken: a second demo gets a folder of its own


def test_a_missing_run_names_the_runs_that_exist(run_dir, tmp_path):
    runs = run_dir.parent
    code, _, err = cli("sample", "--checkpoint", runs / "tinny")
    assert_one_line_error(code, err, "no checkpoint", f"did you mean {runs / 'tiny'}?", "runs in", "tiny")
    code, _, err = cli("attention", "--checkpoint", tmp_path / "none", "--text", "ab", "--out", tmp_path / "a.html")
    assert_one_line_error(code, err, "no checkpoint", "no run beside it")
