"""Damaged checkpoints (issue 14): every defect of a real run's checkpoint, through the commands
that read one (`sample`, `eval`, `train --resume`, `export`), is one line naming the file and the
key or tensor at fault, a non-zero exit, no traceback, and the run folder left as it was.

The cases start from a real tiny run and rewrite its checkpoint with one thing wrong: each
metadata key corrupted (and removed), tensors with NaN, infinities, wrong dtypes or shapes or
names, and the file itself truncated, empty, random, lying about its sizes, a folder, a FIFO,
or unreadable.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from tests.cli_helpers import train_tiny_run
from tests.faults.conftest import assert_one_line_error, cli, cli_process, folder_digest

FILENAME = "checkpoint.safetensors"
NOBODY = 65534


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus) -> Path:
    """A real tiny run (12 steps, checkpoint with optimizer, RNG and tokenizer), never modified."""
    return train_tiny_run(tmp_path_factory, corpus)[0]


@pytest.fixture
def run(trained, tmp_path) -> Path:
    """A copy of the tiny run that a test may damage."""
    return Path(shutil.copytree(trained, tmp_path / "run"))


def read_file(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


def rewrite(run: Path, meta_changes: dict | None = None, tensors=None) -> Path:
    """Rewrite the run's checkpoint with some metadata values replaced (None removes the key)
    and, given `tensors`, a function that changes the tensor dict in place."""
    path = run / FILENAME
    tensors_now, meta = read_file(path)
    for key, value in (meta_changes or {}).items():
        if value is None:
            meta.pop(key)
        else:
            meta[key] = value(meta) if callable(value) else value
    if tensors is not None:
        tensors(tensors_now)
    save_file(tensors_now, str(path), metadata=meta)
    return path


def commands(run: Path, corpus: Path, tmp: Path) -> dict[str, tuple]:
    """Every command that reads a checkpoint, on `run`."""
    return {
        "sample": ("sample", "--checkpoint", run, "--max-new-tokens", "4", "--seed", "0"),
        "eval": ("eval", "--checkpoint", run, "--data", corpus),
        "train --resume": ("train", "--out", run, "--resume", "--no-progress"),
        "export": ("export", "--checkpoint", run, "--out", tmp / "exported"),
    }


def assert_every_command_refuses(run: Path, corpus: Path, tmp: Path, *needles: str) -> None:
    """Each command: one line naming the file and `needles`; the run folder untouched."""
    before = folder_digest(run)
    for name, args in commands(run, corpus, tmp).items():
        code, _, err = cli(*args)
        try:
            assert_one_line_error(code, err, str(run / FILENAME), *needles)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
        assert folder_digest(run) == before, name
    assert not (tmp / "exported").exists()


# --- metadata: every key corrupted, every key removed --------------------------------------------


def changed(key: str, **fields):
    """The real JSON object under `key` with some fields changed."""
    return lambda meta: json.dumps({**json.loads(meta[key]), **fields})


def optimizer_with(edit):
    """The real optimizer metadata, edited by `edit(obj)` in place."""
    def value(meta):
        obj = json.loads(meta["optimizer"])
        edit(obj)
        return json.dumps(obj)
    return value


def duplicate_index(obj):
    obj["param_groups"][1]["params"].append(obj["param_groups"][0]["params"][0])


def drop_group(obj):
    obj["param_groups"].pop()


CORRUPTIONS = [
    ("format", "redthread-checkpoint/0"),
    ("format", ""),
    ("model_class", "Nope"),
    ("model_class", "lstm"),  # a rung name, not a class name
    ("model_class", "ViT"),  # a class whose config this is not
    ("config", "{not json"),
    ("config", "[1]"),
    ("config", "{}"),
    ("config", changed("config", vocab_size="17")),
    ("config", changed("config", d_model=16.5)),
    ("config", changed("config", bias="yes")),
    ("config", changed("config", dropout=float("nan"))),
    ("config", changed("config", n_layer=2)),  # valid, but not the model the tensors are of
    ("config", changed("config", colour="red")),
    ("aliases", "[1]"),
    ("aliases", "{not json"),
    ("aliases", '{"lm_head.weight": "nowhere"}'),
    ("aliases", '{"lm_head.weight": 3}'),
    ("aliases", '{"norm_f.weight": "embed.tok_emb.weight"}'),  # overwrites a stored tensor
    ("step", "-3"),
    ("step", "1e9x"),
    ("step", ""),
    ("step", "12.0"),
    ("step", " 12"),
    ("step", "9" * 5000),
    ("tokenizer", "{not json"),
    ("tokenizer", "[]"),
    ("tokenizer", '{"kind": "bpe"}'),
    ("tokenizer", '{"kind": "char", "chars": ""}'),
    ("tokenizer", '{"kind": "char", "chars": "aa"}'),
    ("tokenizer", json.dumps({"kind": "char", "chars": "".join(map(chr, range(65, 65 + 40)))})),  # 40 > vocab 17
    ("train_config", "{not json"),
    ("train_config", "[1]"),
    ("train_config", '"fast"'),
    ("extra", "{not json"),
    ("extra", "[1]"),
    ("extra", "null"),
    ("optimizer", "{not json"),
    ("optimizer", "null"),
    ("optimizer", "[]"),
    ("optimizer", '{"param_groups": []}'),
    ("optimizer", '{"param_groups": [], "scalars": {}}'),
    ("optimizer", '{"param_groups": {}, "scalars": {}}'),
    ("optimizer", '{"param_groups": [{"params": ["a"]}], "scalars": {}}'),
    ("optimizer", optimizer_with(lambda obj: obj.update(scalars=[]))),
    ("optimizer", optimizer_with(lambda obj: obj.update(scalars={"x.step": 1}))),
    ("optimizer", optimizer_with(lambda obj: obj.update(scalars={"0.step": "one"}))),
    ("optimizer", optimizer_with(duplicate_index)),
    ("optimizer", optimizer_with(drop_group)),  # the parameters of the dropped group have state but no group
]


def case_id(case) -> str:
    key, value = case
    return f"{key}={value if isinstance(value, str) else 'edited'}"[:40]


@pytest.mark.parametrize("key, value", CORRUPTIONS, ids=[f"{i}-{case_id(c)}" for i, c in enumerate(CORRUPTIONS)])
def test_corrupt_metadata_is_one_line_from_every_command(run, corpus, tmp_path, key, value):
    rewrite(run, {key: value})
    assert_every_command_refuses(run, corpus, tmp_path, f"'{key}'")


def test_every_metadata_key_has_corruption_cases(trained):
    _, meta = read_file(trained / FILENAME)
    assert set(meta) == {key for key, _ in CORRUPTIONS}


REQUIRED = ["format", "model_class", "config", "aliases", "step", "tokenizer"]
OPTIONAL = ["train_config", "extra", "optimizer"]  # inference needs none of these; resuming needs all


def test_every_metadata_key_is_required_or_optional(trained):
    _, meta = read_file(trained / FILENAME)
    assert set(meta) == set(REQUIRED) | set(OPTIONAL)


@pytest.mark.parametrize("key", REQUIRED)
def test_removed_required_key_is_one_line_from_every_command(run, corpus, tmp_path, key):
    rewrite(run, {key: None})
    assert_every_command_refuses(run, corpus, tmp_path, f"'{key}'")


@pytest.mark.parametrize("key", OPTIONAL)
def test_removed_optional_key_still_samples_evaluates_and_exports(run, corpus, tmp_path, key):
    rewrite(run, {key: None})
    for name, args in commands(run, corpus, tmp_path).items():
        if name != "train --resume":
            code, _, err = cli(*args)
            assert code == 0, (name, err)


@pytest.mark.parametrize("key", OPTIONAL)
def test_removed_optional_key_refuses_to_resume(run, key):
    """Without its optimizer state, training config or run settings a run would resume from
    fresh state (or the default corpus) without a word: it must refuse instead."""
    rewrite(run, {key: None})
    before = folder_digest(run)
    code, _, err = cli("train", "--out", run, "--resume", "--no-progress")
    assert_one_line_error(code, err, str(run / FILENAME), "cannot be resumed")
    assert folder_digest(run) == before


def merge_groups(obj):
    first, second = obj["param_groups"]
    first["params"] += second["params"]
    obj["param_groups"] = [first]


def wrong_moment_shape(tensors):
    tensors["optim.0.exp_avg"] = torch.zeros(3)


@pytest.mark.parametrize("meta_changes, tensors, needle", [
    ({"optimizer": optimizer_with(merge_groups)}, None, "param group"),
    (None, wrong_moment_shape, "optim.0.exp_avg"),
], ids=["one_param_group_not_two", "moment_of_the_wrong_shape"])
def test_optimizer_state_that_does_not_fit_refuses_to_resume(run, meta_changes, tensors, needle):
    """Well-formed optimizer state that does not fit the optimizer being resumed (torch checks the
    group count with a traceback, the moments' shapes not at all)."""
    rewrite(run, meta_changes, tensors)
    code, _, err = cli("train", "--out", run, "--resume", "--no-progress")
    assert_one_line_error(code, err, str(run / FILENAME), "'optimizer'", needle)


# --- tensors: NaN and infinities, wrong dtypes, shapes and names ---------------------------------


def put(name, value):
    def edit(tensors):
        tensors[name] = tensors[name].clone()
        tensors[name].view(-1)[0] = value
    return edit


def replace(name, tensor):
    def edit(tensors):
        tensors[name] = tensor
    return edit


def rename(old, new):
    def edit(tensors):
        tensors[new] = tensors.pop(old)
    return edit


def recast(name, dtype):
    def edit(tensors):
        tensors[name] = tensors[name].to(dtype)
    return edit


TENSOR_DEFECTS = {
    "nan_weight": (put("model.norm_f.weight", float("nan")), "model.norm_f.weight"),
    "inf_embedding": (put("model.embed.tok_emb.weight", float("inf")), "model.embed.tok_emb.weight"),
    "inf_moment": (put("optim.3.exp_avg_sq", float("-inf")), "optim.3.exp_avg_sq"),
    "nan_moment": (put("optim.1.exp_avg", float("nan")), "optim.1.exp_avg"),
    "nan_optimizer_step": (put("optim.0.step", float("nan")), "optim.0.step"),
    "rng_float": (recast("rng.torch", torch.float32), "rng.torch"),
    "rng_2d": (lambda t: t.update({"rng.torch": t["rng.torch"].view(2, -1)}), "rng.torch"),
    "rng_short": (lambda t: t.update({"rng.data": t["rng.data"][:100].clone()}), "rng.data"),
    "rng_invalid_state": (replace("rng.torch", torch.zeros(5056, dtype=torch.uint8)), "rng.torch"),
    "rng_world_size": (replace("rng.world_size", torch.tensor([0.5])), "rng.world_size"),
    "optim_index_not_a_number": (rename("optim.2.exp_avg", "optim.x.exp_avg"), "optim.x.exp_avg"),
    "optim_no_state_name": (rename("optim.2.exp_avg", "optim.2"), "optim.2"),
    "stray_tensor": (replace("junk", torch.zeros(2)), "junk"),
    "weight_as_integers": (recast("model.norm_f.weight", torch.int64), "model.norm_f.weight"),
    "alias_target_missing": (lambda t: t.pop("model.embed.tok_emb.weight"), "'aliases'"),
    "weight_missing": (lambda t: t.pop("model.norm_f.weight"), "norm_f.weight"),
}


@pytest.mark.parametrize("defect", list(TENSOR_DEFECTS))
def test_tensor_defects_are_one_line_from_every_command(run, corpus, tmp_path, defect):
    edit, needle = TENSOR_DEFECTS[defect]
    rewrite(run, tensors=edit)
    assert_every_command_refuses(run, corpus, tmp_path, needle)


# --- the file itself ----------------------------------------------------------------------------


def header_claiming(run: Path, **fields) -> bytes:
    """The checkpoint's bytes with the header's first model tensor given other `fields`."""
    raw = (run / FILENAME).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    first = next(k for k in header if k.startswith("model."))
    header[first].update(fields)
    new = json.dumps(header).encode()
    return len(new).to_bytes(8, "little") + new + raw[8 + n :]


DAMAGED_FILES = {
    "truncated": lambda raw, run: raw[: len(raw) // 2],
    "zero_bytes": lambda raw, run: b"",
    "seven_bytes": lambda raw, run: raw[:7],
    "header_only": lambda raw, run: raw[: 8 + int.from_bytes(raw[:8], "little")],
    "random_bytes": lambda raw, run: torch.randint(0, 256, (4096,), generator=torch.Generator().manual_seed(0),
                                                   dtype=torch.uint8).numpy().tobytes(),
    "header_length_huge": lambda raw, run: (2**63).to_bytes(8, "little") + raw[8:],
    "header_length_past_the_end": lambda raw, run: len(raw).to_bytes(8, "little") + raw[8:],
    "tensor_offsets_huge": lambda raw, run: header_claiming(run, data_offsets=[0, 2**62]),
    "tensor_shape_huge": lambda raw, run: header_claiming(run, shape=[2**31, 2**31]),
}


@pytest.mark.parametrize("damage", list(DAMAGED_FILES))
def test_damaged_file_is_one_line_from_every_command(run, corpus, tmp_path, damage):
    path = run / FILENAME
    path.write_bytes(DAMAGED_FILES[damage](path.read_bytes(), run))
    assert_every_command_refuses(run, corpus, tmp_path)


def test_a_directory_in_place_of_the_file_says_so(run, corpus):
    (run / FILENAME).unlink()
    (run / FILENAME).mkdir()
    for args in (("eval", "--checkpoint", run, "--data", corpus), ("eval", "--checkpoint", run / FILENAME, "--data", corpus)):
        code, _, err = cli(*args)
        assert_one_line_error(code, err, str(run / FILENAME), "is a folder")
        assert "No such file" not in err


@pytest.mark.slow  # a child process
def test_a_fifo_in_place_of_the_file_is_refused_not_opened(run, corpus):
    """Opening a FIFO for reading blocks until a writer comes: it must be refused before opening."""
    (run / FILENAME).unlink()
    os.mkfifo(run / FILENAME)
    result = cli_process("eval", "--checkpoint", run, "--data", corpus, timeout=120)
    assert_one_line_error(result.returncode, result.stderr, str(run / FILENAME), "FIFO")


SAMPLE_AS_NOBODY = """
import os, sys
from redthread.cli import build_parser, main
import redthread.commands.sample  # before dropping privileges: the interpreter's own files may be root's alone,
import redthread.train.distributed
build_parser()  # and so may the checkout (a 0700 folder, as CI's): every module the parser imports, now
os.setgid({uid}); os.setuid({uid})
sys.exit(main(["sample", "--checkpoint", sys.argv[1], "--max-new-tokens", "2"]))
"""


@pytest.mark.slow  # a child process, as user nobody
def test_an_unreadable_file_says_permission_denied(trained):
    """Reported as the operating system says it, not as "No such file or directory". As root
    (where chmod 000 stops nobody) the command runs in a child that drops to user nobody."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        shutil.copytree(trained, folder)
        os.chmod(tmp, 0o755)
        (folder / FILENAME).chmod(0)
        if os.geteuid() == 0:
            result = subprocess.run([sys.executable, "-c", SAMPLE_AS_NOBODY.format(uid=NOBODY), str(folder)],
                                    capture_output=True, text=True, timeout=120)
            code, err = result.returncode, result.stderr
        else:
            code, _, err = cli("sample", "--checkpoint", folder, "--max-new-tokens", "2")
        (folder / FILENAME).chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert_one_line_error(code, err, str(folder / FILENAME), "Permission denied")
    assert "No such file" not in err
