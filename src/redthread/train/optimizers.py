"""The optimizers of the one training loop: AdamW for everything (the default), or Muon for the
hidden matrices with AdamW for the rest (`TrainConfig.optimizer`).

AdamW (Loshchilov & Hutter 2019) with decoupled weight decay on matrices and embeddings only,
never on biases or LayerNorm gains.

Muon (Jordan et al. 2024, "Muon: an optimizer for hidden layers in neural networks"): momentum
whose update for a weight matrix is orthogonalised by a few Newton-Schulz iterations, so that
every direction of the update moves about as much, instead of the few that dominate the raw
gradient. It is meant for the 2-D weights of hidden layers; the embeddings, the output layer,
biases and gains stay with AdamW, as in the speedrun records that use it. `torch.optim.Muon` does
the update; `adjust_lr_fn="match_rms_adamw"` scales it to the size of an AdamW step (Liu et al.
2025, "Muon is scalable for LLM training"), so one learning rate and one schedule drive both.
"""

from __future__ import annotations

import torch
from torch import nn

from redthread.errors import InvalidValue

OPTIMIZERS = ("adamw", "muon")
OUTPUT_LAYERS = ("lm_head", "head", "linear")  # the ladder's names for the layer that maps to the outputs


def hidden_matrices(model: nn.Module) -> list[nn.Parameter]:
    """The weights of the hidden linear layers: every nn.Linear's but the output layer's, and none
    shared with an embedding (a tied output head)."""
    embedded = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    out = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] not in OUTPUT_LAYERS:
            w = module.weight
            if w.requires_grad and id(w) not in embedded:
                out[id(w)] = w
    return list(out.values())


def make_optimizer(model: nn.Module, cfg, device: torch.device):
    """AdamW over every trainable parameter, or (cfg.optimizer == "muon") Muon over the hidden
    matrices and AdamW over the rest, stepped as one."""
    params = [p for p in model.parameters() if p.requires_grad]  # parameters() yields a tied weight once
    muon = {id(p) for p in hidden_matrices(model)} if cfg.optimizer == "muon" else set()
    rest = [p for p in params if id(p) not in muon]
    decay = [p for p in rest if p.dim() >= 2]
    no_decay = [p for p in rest if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    adamw = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=device.type in ("cuda", "cpu"))
    if not muon:
        return adamw
    if not hasattr(torch.optim, "Muon"):
        raise InvalidValue(f"optimizer muon needs torch >= 2.9 (torch.optim.Muon); this is torch {torch.__version__}")
    matrices = [p for p in params if id(p) in muon]
    return Combined([adamw, torch.optim.Muon(matrices, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                             momentum=cfg.momentum, adjust_lr_fn="match_rms_adamw")])


class Combined:
    """Several optimizers stepped as one. Its param groups are theirs, in order, and its state dict
    is in torch's own format (groups and states numbered on from one optimizer to the next), so the
    schedule, checkpoints and the resume checks see a single optimizer. It is not a
    torch.optim.Optimizer (no add_param_group): torch's LR schedulers do not drive it, the loop's does."""

    def __init__(self, optimizers: list[torch.optim.Optimizer]):
        self.optimizers = optimizers

    @property
    def param_groups(self) -> list[dict]:
        return [g for opt in self.optimizers for g in opt.param_groups]

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        state, groups, offset = {}, [], 0
        for opt in self.optimizers:
            sd = opt.state_dict()
            state.update({i + offset: s for i, s in sd["state"].items()})
            groups += [{**g, "params": [i + offset for i in g["params"]]} for g in sd["param_groups"]]
            offset += sum(len(g["params"]) for g in sd["param_groups"])
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, sd: dict) -> None:
        groups, offset, first = list(sd["param_groups"]), 0, 0
        for opt in self.optimizers:
            mine = groups[first:first + len(opt.param_groups)]
            first += len(mine)
            count = sum(len(g["params"]) for g in mine)
            state = {int(i) - offset: s for i, s in sd["state"].items() if offset <= int(i) < offset + count}
            mine = [{**g, "params": [int(i) - offset for i in g["params"]]} for g in mine]
            opt.load_state_dict({"state": state, "param_groups": mine})
            offset += count
