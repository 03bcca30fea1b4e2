"""Data-parallel training over processes, driven by the environment torchrun sets (rung-independent).

    torchrun --nproc_per_node=N -m redthread train ...     the same command line as one process

torchrun starts N copies and gives each WORLD_SIZE, RANK and LOCAL_RANK. `setup` joins them
into one process group (gloo on CPU, NCCL on GPUs, rank r on cuda:LOCAL_RANK) and `wrap` puts
the model in `torch.nn.parallel.DistributedDataParallel`, which averages the gradients over
ranks during backward. What the loop adds around that:
- sharding: rank r draws its batches from its own generator seeded `seed + r`, so a step sees
  world_size x batch_size x grad_accum windows; rank 0 draws exactly what one process would;
- accumulation: `no_sync` on every micro-step but the last, one all-reduce per optimizer step;
- the logged training loss is averaged over ranks (once per log interval);
- evaluation is not sharded: every rank scores the same validation windows (same weights, same
  numbers), so nobody waits on a barrier and every rank knows the result;
- Ctrl-C: torchrun passes the signal on to every worker; the ranks stop together at the end of
  the step and save it (`StopSignals`);
- only rank 0 prints, writes metrics and checkpoints; the checkpoint holds the underlying model
  (no `module.` prefix) and every rank's RNG states (`gather_rng`), so `--resume` with the same
  number of processes restores each rank's own generator (`own_rng`).
Without WORLD_SIZE > 1 every function here is the identity or a no-op: one process runs as before.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from contextlib import contextmanager, nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from redthread.errors import InvalidValue


def world_size() -> int:
    return dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    return rank() == 0


def setup(device: torch.device) -> torch.device:
    """Join torchrun's process group (once per process); return the device this rank trains on."""
    if world_size() == 1:
        return device
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        if device.index is not None:
            raise InvalidValue(f"under torchrun each process uses cuda:LOCAL_RANK: pass --device cuda, not {device}")
        if local_rank >= torch.cuda.device_count():
            raise InvalidValue(f"process {local_rank} on this node has no GPU: {torch.cuda.device_count()} GPUs, "
                                 f"so use --nproc_per_node={torch.cuda.device_count()} at most")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    elif device.type != "cpu":
        raise InvalidValue(f"distributed training runs on cpu (gloo) or cuda (NCCL), not {device.type}")
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        atexit.register(shutdown)
    return device


def shutdown() -> None:
    """Leave the process group together, if this process is in one (at exit, or earlier by a caller
    that is done). A rank that tears its gloo connections down while another still uses them makes
    that one abort at exit ("terminate called without an active exception"), so the ranks first
    meet at a barrier; on gloo a monitored one, which gives up after a minute if a rank is gone."""
    if not dist.is_initialized():
        return
    try:
        if dist.get_backend() == "gloo":
            dist.monitored_barrier(timeout=timedelta(seconds=60))
        else:
            dist.barrier()
    except RuntimeError:  # a rank did not come (it failed): leave anyway
        pass
    dist.destroy_process_group()


def wrap(model: nn.Module, device: torch.device) -> nn.Module:
    """The module that trains: DDP around `model` under torchrun, `model` itself otherwise."""
    if world_size() == 1:
        return model
    # buffers (causal masks) never change: no broadcast before every forward
    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None, forward_sync_buffers=False)


def sync_gradients(model: nn.Module, sync: bool):
    """The context of one micro-step's backward: all-reduce its gradients only when `sync`."""
    return model.no_sync() if isinstance(model, DistributedDataParallel) and not sync else nullcontext()


def average(t: Tensor) -> Tensor:
    """The mean of `t` over ranks (the training loss of the whole step); `t` itself in one process."""
    if world_size() == 1:
        return t
    t = t.clone()
    dist.all_reduce(t)  # a sum: gloo has no average
    return t / world_size()


def maximum(t: Tensor) -> Tensor:
    """The maximum of `t` over ranks (e.g. the first diverged step any rank saw); `t` itself in one process."""
    if world_size() == 1:
        return t
    t = t.clone()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t


def agree(seconds: float, signalled: bool) -> tuple[float, bool]:
    """What every rank must decide together after a step, in one all-reduce: the seconds of training
    (the latest rank's clock, for the time budget and the learning rate) and whether any rank got a
    stop signal."""
    if world_size() == 1:
        return seconds, signalled
    t = torch.tensor([seconds, float(signalled)], dtype=torch.float64, device="cuda" if dist.get_backend() == "nccl" else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    seconds, signalled = t.tolist()
    return seconds, bool(signalled)


class Terminated(KeyboardInterrupt):
    """SIGTERM in one process: stop like Ctrl-C (the loop saves the last completed step), exit 143."""


class StopSignals:
    """Under torchrun, SIGINT and SIGTERM ask every rank to stop at the end of the current step.

    torchrun starts its workers in sessions of their own: Ctrl-C reaches torchrun, which sends the
    same signal to every worker and kills them 30 s later. A worker that raised KeyboardInterrupt at
    once would leave the others waiting inside a collective, and nothing would be saved. So the
    handler only notes the signal; the loop asks `agree(..., stop.seen)` after each step, and the
    ranks save that step together and stop. A second SIGINT stops at once. In one process Ctrl-C
    raises KeyboardInterrupt as usual, and SIGTERM (a scheduler's or `kill`'s stop) raises
    `Terminated`, a KeyboardInterrupt, so both save the last step; inside `deferred()` (a save in
    progress) either waits until the block ends, so a stop never cuts a save in half. Off the main
    thread nothing is installed.
    """

    def __init__(self):
        self.seen = False
        self.previous = {}
        self.depth, self.pending = 0, None  # deferred() nesting, and the stop it holds back
        if threading.current_thread() is not threading.main_thread():
            return
        if world_size() > 1:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._note)
        else:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._interrupt)

    def _note(self, signum, frame) -> None:
        if self.seen and signum == signal.SIGINT:
            raise KeyboardInterrupt  # asked twice: stop now
        self.seen = True

    def _interrupt(self, signum, frame) -> None:
        stop = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        if self.depth:
            self.pending = stop  # raised when the save in progress ends
            return
        raise stop

    @contextmanager
    def deferred(self):
        """A block that a stop signal does not interrupt: the stop is raised once the block ends."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth and self.pending is not None:
                stop, self.pending = self.pending, None
                raise stop

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}


def gather_rng(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """Every rank's RNG states in one dict (rank 0's under their own names, rank r's as `name.r`)."""
    if world_size() == 1:
        return state
    states = [None] * world_size()
    dist.all_gather_object(states, {k: v.cpu() for k, v in state.items()})
    out = {**states[0], "world_size": torch.tensor([world_size()])}
    for r in range(1, world_size()):
        out.update({f"{k}.{r}": v for k, v in states[r].items()})
    return out


def own_rng(saved: dict[str, Tensor]) -> dict[str, Tensor]:
    """This rank's RNG states from a checkpoint written by `gather_rng`."""
    saved_world = int(saved["world_size"]) if "world_size" in saved else 1
    if saved_world != world_size():
        raise InvalidValue(f"the run was trained by {saved_world} process(es), this is {world_size()}: "
                             f"resume it with {saved_world} process(es) in all")
    if rank() == 0:
        return {k: v for k, v in saved.items() if "." not in k and k != "world_size"}
    suffix = f".{rank()}"
    return {k[: -len(suffix)]: v for k, v in saved.items() if k.endswith(suffix)}
