"""Checkpoints: save -> load gives identical logits and optimizer, no pickle, clear errors, atomic writes."""

import json
import struct

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from redthread.errors import RedthreadError
from redthread.models.likelihoods import token_nll
from redthread.models.transformer import EncoderDecoder, TransformerConfig, TransformerLM
from redthread.train import checkpoint as checkpoint_module
from redthread.train.checkpoint import FILENAME, load_checkpoint, read_checkpoint, save_checkpoint

CFG = TransformerConfig(vocab_size=13, block_size=16, n_layer=2, n_head=2, d_model=16)


def batch(seed=0):
    idx = torch.randint(0, CFG.vocab_size, (2, 9), generator=torch.Generator().manual_seed(seed))
    return idx[:, :-1], idx[:, 1:]


def train_step(model, optimizer, seed):
    x, y = batch(seed)
    loss = token_nll(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


@pytest.fixture
def trained(tmp_path):
    """A model and AdamW after two steps, saved at step 2."""
    torch.manual_seed(0)
    model = TransformerLM(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for seed in (1, 2):
        train_step(model, optimizer, seed)
    path = save_checkpoint(tmp_path, model, optimizer, step=2, tokenizer=None)
    return model, optimizer, path


def test_checkpoint_round_trip_gives_identical_logits(trained, tmp_path):
    model, _, path = trained
    assert path == tmp_path / FILENAME and path.is_file()
    loaded = load_checkpoint(tmp_path)
    assert type(loaded) is TransformerLM and loaded.cfg == CFG
    x, _ = batch(3)
    model.eval(), loaded.eval()
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    for name, t in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], t), name


def test_checkpoint_round_trip_keeps_tied_weights_tied(trained, tmp_path):
    loaded = load_checkpoint(tmp_path)
    assert loaded.lm_head.weight is loaded.embed.tok_emb.weight
    with torch.no_grad():
        loaded.embed.tok_emb.weight[0, 0] += 1.0
    assert loaded.lm_head.weight[0, 0] == loaded.embed.tok_emb.weight[0, 0]
    with safe_open(str(tmp_path / FILENAME), framework="pt") as f:  # stored once, restored by alias
        assert "model.embed.tok_emb.weight" in f.keys() and "model.lm_head.weight" not in f.keys()


def test_checkpoint_untied_weights_round_trip(tmp_path):
    torch.manual_seed(0)
    cfg = TransformerConfig(**{**CFG.to_dict(), "tie_weights": False})
    model = TransformerLM(cfg)
    save_checkpoint(tmp_path, model)
    loaded = load_checkpoint(tmp_path)
    assert loaded.lm_head.weight is not loaded.embed.tok_emb.weight
    assert torch.equal(loaded.lm_head.weight, model.lm_head.weight)


def test_checkpoint_encoder_decoder_round_trip(tmp_path):
    torch.manual_seed(0)
    model = EncoderDecoder(TransformerConfig(**{**CFG.to_dict(), "src_vocab_size": 7})).eval()
    save_checkpoint(tmp_path, model)
    loaded = load_checkpoint(tmp_path).eval()
    src, tgt = torch.randint(0, 7, (2, 5)), torch.randint(0, 13, (2, 6))
    with torch.no_grad():
        assert torch.equal(loaded(src, tgt), model(src, tgt))


def test_checkpoint_optimizer_state_round_trips(trained, tmp_path):
    model, optimizer, _ = trained
    ckpt = read_checkpoint(tmp_path)
    assert ckpt.step == 2 and ckpt.optimizer_state is not None
    resumed = ckpt.model
    resumed_opt = torch.optim.AdamW(resumed.parameters(), lr=1.0)  # lr etc. come from the saved param_groups
    resumed_opt.load_state_dict(ckpt.optimizer_state)
    assert resumed_opt.param_groups[0]["lr"] == 1e-2 and resumed_opt.param_groups[0]["weight_decay"] == 0.1
    train_step(model, optimizer, seed=3)
    train_step(resumed, resumed_opt, seed=3)
    for (name, p), q in zip(model.named_parameters(), resumed.parameters()):
        assert torch.equal(p, q), name
    for p, q in zip(model.parameters(), resumed.parameters()):
        state, resumed_state = optimizer.state[p], resumed_opt.state[q]
        assert state.keys() == resumed_state.keys() == {"step", "exp_avg", "exp_avg_sq"}
        for key in state:
            assert torch.equal(state[key], resumed_state[key]), key


def test_checkpoint_writes_config_json(trained, tmp_path):
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_class"] == "TransformerLM"
    assert saved["config"] == CFG.to_dict() and saved["step"] == 2
    assert not (tmp_path / "tokenizer.json").exists()  # tokenizer=None


def test_checkpoint_file_is_safetensors_not_pickle(trained, tmp_path):
    raw = (tmp_path / FILENAME).read_bytes()
    assert not raw.startswith((b"\x80", b"PK"))  # neither a pickle nor torch.save's zip
    (n,) = struct.unpack("<Q", raw[:8])  # safetensors: u64 header length, then a JSON header
    header = json.loads(raw[8 : 8 + n])
    assert header["__metadata__"]["format"] == "redthread-checkpoint/1"
    with safe_open(str(tmp_path / FILENAME), framework="pt") as f:
        assert f.metadata()["model_class"] == "TransformerLM"
        assert any(k.startswith("optim.") for k in f.keys())


# --- bad checkpoints ---------------------------------------------------------------------------


def assert_one_line_naming(err, path):
    msg = str(err.value)
    assert "\n" not in msg
    assert str(path) in msg


def test_checkpoint_missing_file_raises(tmp_path):
    with pytest.raises(RedthreadError) as err:
        load_checkpoint(tmp_path / "nowhere")
    assert_one_line_naming(err, tmp_path / "nowhere" / FILENAME)


def test_checkpoint_truncated_file_raises(trained, tmp_path):
    path = tmp_path / FILENAME
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(RedthreadError) as err:
        load_checkpoint(path)
    assert_one_line_naming(err, path)


@pytest.mark.parametrize("garbage", [b"", b"not a checkpoint at all", bytes(range(256)) * 8])
def test_checkpoint_garbage_bytes_raise(tmp_path, garbage):
    path = tmp_path / FILENAME
    path.write_bytes(garbage)
    with pytest.raises(RedthreadError) as err:
        load_checkpoint(path)
    assert_one_line_naming(err, path)


@pytest.mark.parametrize("metadata", [None, {"format": "something-else"}])
def test_checkpoint_foreign_safetensors_file_raises(tmp_path, metadata):
    path = tmp_path / "weights.safetensors"
    save_file({"w": torch.zeros(3)}, str(path), metadata=metadata)
    with pytest.raises(RedthreadError, match="not a redthread checkpoint") as err:
        load_checkpoint(path)
    assert_one_line_naming(err, path)


def test_checkpoint_into_model_of_other_shape_names_tensor_and_shapes(trained, tmp_path):
    other = TransformerLM(TransformerConfig(**{**CFG.to_dict(), "vocab_size": 17}))
    with pytest.raises(RedthreadError) as err:
        load_checkpoint(tmp_path, model=other)
    assert_one_line_naming(err, tmp_path / FILENAME)
    msg = str(err.value)
    assert "embed.tok_emb.weight" in msg and "(13, 16)" in msg and "(17, 16)" in msg


def test_checkpoint_into_model_of_other_depth_names_missing_tensor(trained, tmp_path):
    other = TransformerLM(TransformerConfig(**{**CFG.to_dict(), "n_layer": 3}))
    with pytest.raises(RedthreadError, match=r"blocks\.2\.") as err:
        load_checkpoint(tmp_path, model=other)
    assert_one_line_naming(err, tmp_path / FILENAME)


def test_checkpoint_into_matching_model_loads(trained, tmp_path):
    model, _, _ = trained
    fresh = TransformerLM(CFG)
    assert load_checkpoint(tmp_path, model=fresh) is fresh
    assert torch.equal(fresh.lm_head.weight, model.lm_head.weight)
    assert fresh.lm_head.weight is fresh.embed.tok_emb.weight


def redthread_metadata(**changes):
    meta = {"format": "redthread-checkpoint/1", "model_class": "TransformerLM", "config": json.dumps(CFG.to_dict())}
    meta.update({"aliases": "{}", "step": "0", "tokenizer": "null", **changes})
    return {k: v for k, v in meta.items() if v is not None}


@pytest.mark.parametrize(
    "changes",
    [
        dict(step="two"),
        dict(aliases=None),
        dict(config="{not json"),
        dict(model_class=None),
        dict(config="[1, 2]"),
        dict(model_class="Nope"),
    ],
    ids=["step_not_int", "no_aliases", "config_not_json", "no_model_class", "config_not_object", "unknown_class"],
)
def test_checkpoint_bad_metadata_raises(tmp_path, changes):
    path = tmp_path / FILENAME
    save_file({"model.w": torch.zeros(1)}, str(path), metadata=redthread_metadata(**changes))
    with pytest.raises(RedthreadError) as err:
        load_checkpoint(path)
    assert_one_line_naming(err, path)


def test_checkpoint_missing_tensor_raises(trained, tmp_path):
    path = tmp_path / FILENAME
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys() if k != "model.norm_f.weight"}
    save_file(tensors, str(path), metadata=meta)
    with pytest.raises(RedthreadError, match="norm_f.weight") as err:
        load_checkpoint(path)
    assert_one_line_naming(err, path)


# --- atomic writes -----------------------------------------------------------------------------


def test_checkpoint_interrupted_save_leaves_old_file_and_no_temp(trained, tmp_path, monkeypatch):
    model, optimizer, path = trained
    before = path.read_bytes()

    class Interrupted(Exception):
        pass

    def half_write(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"\x00" * 1000)  # partial bytes, then the process "dies"
        raise Interrupted

    monkeypatch.setattr(checkpoint_module, "save_file", half_write)
    with torch.no_grad():
        model.lm_head.weight.add_(1.0)
    with pytest.raises(Interrupted):
        save_checkpoint(tmp_path, model, optimizer, step=3)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.safetensors", "config.json"]
    assert read_checkpoint(tmp_path).step == 2


def test_checkpoint_module_importable_by_dotted_path():
    import redthread.train.checkpoint as ck

    assert ck is checkpoint_module


def test_rng_state_is_read_on_the_cpu_whatever_the_model_device(tmp_path):
    """torch.set_rng_state takes a CPU ByteTensor: resuming a GPU run must not read it onto the GPU."""
    model = TransformerLM(CFG)
    save_checkpoint(tmp_path, model, rng={"torch": torch.get_rng_state()})
    ckpt = read_checkpoint(tmp_path, map_location="meta")  # a device other than the CPU, available everywhere
    assert next(ckpt.model.parameters()).device.type == "meta"
    assert ckpt.rng["torch"].device.type == "cpu" and ckpt.rng["torch"].dtype == torch.uint8
    torch.set_rng_state(ckpt.rng["torch"])


# --- resumable or not, and does the optimizer state fit -----------------------------------------


def loop_optimizer(model):
    """The training loop's optimizer: two param groups (decay, no decay)."""
    from redthread.train.loop import TrainConfig, make_optimizer

    return make_optimizer(model, TrainConfig(), torch.device("cpu"))


@pytest.fixture
def resumable(tmp_path):
    """A checkpoint as the training loop writes one: optimizer (two groups), train config, run settings, RNG."""
    torch.manual_seed(0)
    model = TransformerLM(CFG)
    optimizer = loop_optimizer(model)
    train_step(model, optimizer, seed=1)
    rng = {"torch": torch.get_rng_state(), "data": torch.Generator().manual_seed(1).get_state()}
    save_checkpoint(tmp_path, model, optimizer, step=1, train_config={"lr": 1e-3}, rng=rng, extra={"data": None})
    return tmp_path / FILENAME


def test_a_full_checkpoint_is_resumable_into_the_loops_optimizer(resumable):
    ckpt = read_checkpoint(resumable)
    assert ckpt.path == resumable and ckpt.absent == ()
    optimizer = loop_optimizer(ckpt.model)
    ckpt.require_resumable(optimizer)
    optimizer.load_state_dict(ckpt.optimizer_state)


def without(path, key):
    with safe_open(str(path), framework="pt") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    meta.pop(key, None)
    for name in [k for k in tensors if k.startswith(f"{key}.")]:
        tensors.pop(name)
    save_file(tensors, str(path), metadata=meta)


@pytest.mark.parametrize("key, what", [
    ("optimizer", "has no optimizer state"),
    ("train_config", "has no training config"),
    ("extra", "has no run settings"),
    ("rng", "has no RNG state"),
])
def test_a_checkpoint_without_what_resuming_needs_is_refused(resumable, key, what):
    """It still loads (to sample from), but resuming it would start from fresh state: refused, in one line."""
    without(resumable, key)
    ckpt = read_checkpoint(resumable)
    with pytest.raises(RedthreadError) as err:
        ckpt.require_resumable()
    assert_one_line_naming(err, resumable)
    assert what in str(err.value) and "it cannot be resumed exactly" in str(err.value)


def test_a_null_train_config_is_not_resumable(trained, tmp_path):
    """save_checkpoint without a train config writes null: fine to sample from, not to resume."""
    with pytest.raises(RedthreadError, match="has no training config"):
        read_checkpoint(tmp_path).require_resumable()


def merged_groups(model):
    return torch.optim.AdamW(model.parameters())


def shuffled_groups(model):
    """Two groups of the loop's sizes, holding other parameters: the moments' shapes do not fit."""
    decay, no_decay = (g["params"] for g in loop_optimizer(model).param_groups)
    return torch.optim.AdamW([{"params": no_decay[: len(decay)]}, {"params": decay + no_decay[len(decay) :]}])


@pytest.mark.parametrize("make, needle", [(merged_groups, "2 param group(s) saved, 1 now"), (shuffled_groups, "optim.")],
                         ids=["group_count", "moment_shape"])
def test_optimizer_state_that_does_not_fit_the_optimizer_is_refused(resumable, make, needle):
    ckpt = read_checkpoint(resumable)
    with pytest.raises(RedthreadError, match="'optimizer' does not fit") as err:
        ckpt.require_resumable(make(ckpt.model))
    assert_one_line_naming(err, resumable)
    assert needle in str(err.value)


def test_optimizer_hyperparameters_of_the_wrong_kind_are_refused(resumable):
    with safe_open(str(resumable), framework="pt") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    optim = json.loads(meta["optimizer"])
    optim["param_groups"][0]["betas"] = "fast"
    save_file(tensors, str(resumable), metadata={**meta, "optimizer": json.dumps(optim)})
    ckpt = read_checkpoint(resumable)
    with pytest.raises(RedthreadError, match="betas") as err:
        ckpt.require_resumable(loop_optimizer(ckpt.model))
    assert_one_line_naming(err, resumable)


# --- the file before it is opened ------------------------------------------------------------------


def test_a_folder_named_like_the_checkpoint_is_reported_as_a_folder(tmp_path):
    (tmp_path / FILENAME).mkdir()
    for given in (tmp_path, tmp_path / FILENAME):
        with pytest.raises(RedthreadError, match="it is a folder, not a file") as err:
            read_checkpoint(given)
        assert_one_line_naming(err, tmp_path / FILENAME)


def test_a_file_that_cannot_be_opened_gives_the_reason(trained, tmp_path, monkeypatch):
    """Not "No such file or directory" (what safetensors says for any failed open)."""
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(checkpoint_module, "open", refuse, raising=False)
    with pytest.raises(RedthreadError, match="cannot read checkpoint .*: Permission denied") as err:
        read_checkpoint(tmp_path)
    assert_one_line_naming(err, tmp_path / FILENAME)


def test_nan_weights_are_refused_naming_the_tensor(trained, tmp_path):
    path = tmp_path / FILENAME
    with safe_open(str(path), framework="pt") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    tensors["model.blocks.1.ffn.fc_in.weight"][3, 4] = float("nan")
    save_file(tensors, str(path), metadata=meta)
    with pytest.raises(RedthreadError, match="'model.blocks.1.ffn.fc_in.weight' holds NaN or infinite values") as err:
        read_checkpoint(path)
    assert_one_line_naming(err, path)
