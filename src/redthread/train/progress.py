"""How far along a run is: its clock (`Clock`) and what it shows of it (`Progress`).

The loop (`train/loop.py`) shows a rich bar on a terminal, plain lines in a log or CI, or nothing;
`progress_mode` decides which, the same way for every command. The ladder and the experiments draw
bars of other shapes, each beside its command: `commands/ladder.py`'s `LadderProgress` (a bar over
the rungs and one over the current rung's steps, handed to the loop as its `progress`) and
`commands/experiment.py`'s (one bar over the experiments, moved by fractions from inside each);
they show a bar only where `progress_mode` gives one, and no plain lines.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def progress_mode(quiet: bool = False) -> bool | str:
    """A progress bar on a terminal (True), plain lines in a log or CI ("plain": output not a terminal), nothing when quiet."""
    if quiet:
        return False
    return True if sys.stderr.isatty() else "plain"


class Clock:
    """Seconds of training: those spent before a resume, then this process's, less the time it was paused.

    `timer`: the seconds counter it reads (time.perf_counter)."""

    def __init__(self, spent: float = 0.0, timer: Callable[[], float] = time.perf_counter):
        self.spent, self.timer, self.paused = spent, timer, 0.0
        self.t0 = timer()

    def __call__(self) -> float:
        return self.spent + self.timer() - self.t0 - self.paused

    @contextmanager
    def pause(self) -> Iterator[None]:
        """A block whose time is not training (a monitor's full-split score, say)."""
        t = self.timer()
        try:
            yield
        finally:
            self.paused += self.timer() - t


class Progress:
    """How a run shows its progress: a rich bar (loss, tokens/s, ETA) on a terminal (enabled=True);
    plain lines through `log` for logs and CI (enabled="plain": one line every ~2.5% of the run,
    so a run prints about 40); nothing (enabled=False).

    With a time budget (`budget` seconds, `spent` of them before a resume) the run is as far along as
    its steps or its clock, whichever is further: it ends at max_iters or when the time is spent.
    `timer`: the seconds counter it reads for the ETA (time.perf_counter)."""

    LINES = 40  # about how many plain lines a run prints

    def __init__(self, total: int, start: int, enabled: bool | str, log: Callable[[str], None] | None = None,
                 budget: float | None = None, spent: float = 0.0, timer: Callable[[], float] = time.perf_counter):
        self.bar, self.timer = None, timer
        self.total, self.start, self.budget, self.spent, self.t0 = total, start, budget, spent, timer()
        self.log = log if enabled == "plain" else None
        self.next_line = 1  # print when the run is this many LINES-ths done
        if enabled is True:
            from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            steps = "step {task.fields[step]}" + ("" if budget else f"/{total}")
            self.bar = Bar(
                TextColumn("[bold]train"), BarColumn(), TextColumn(steps),
                TextColumn("{task.fields[info]}"), TimeRemainingColumn(), transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task("train", total=1.0, completed=self.done(start)[0], info="", step=start)

    def done(self, step: int) -> tuple[float, float]:
        """How far along the run is (0 to 1), overall and since this process started (for the ETA)."""
        elapsed = self.timer() - self.t0
        overall, here = step / self.total, (step - self.start) / max(1, self.total - self.start)
        if self.budget:
            overall = max(overall, (self.spent + elapsed) / self.budget)
            here = max(here, elapsed / max(1e-9, self.budget - self.spent))
        return min(1.0, overall), min(1.0, here)

    def update(self, step: int, info: str) -> None:
        overall, here = self.done(step)
        if self.bar is not None:
            self.bar.update(self.task, completed=overall, info=info, step=step)
        if self.log is not None and (overall * self.LINES >= self.next_line or step == self.total):
            self.next_line = int(overall * self.LINES) + 1
            elapsed = self.timer() - self.t0
            eta = elapsed * (1 - here) / here if here > 0 else float("nan")
            where = f"step {step} ({overall:.0%} of {_duration(self.budget)})" if self.budget else f"step {step}/{self.total} ({overall:.0%})"
            self.log(f"{where}: {info}, {_duration(elapsed)} elapsed, ~{_duration(eta)} left")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, s = divmod(int(round(seconds)), 60)
    return f"{minutes}m{s:02d}s" if minutes else f"{s}s"
