"""`redthread experiment NAME|all [--quick] [--out DIR] [--resume]`: run experiments, write their reports.

A full run measures each experiment on two independent seed sets (and a comparative claim at three
training budgets) and merges them (experiments/replication.py); --quick is a smoke test with no
verdict. Experiments run torch on one thread (their models are tiny). Each report folder holds
report.md (the claim, the set-up, the pre-registered criterion, the checks per seed set, the
history of the criteria, figures and tables, the verdict), report.json (every number), report.zh.md
(the claim, the verdicts and a conclusion from the numbers, in Chinese: experiments/report_zh.py) and
the PNG figures. `all` also writes index.md (and index.zh.md, in Chinese), one line per experiment with its verdict and a link; with
--resume it keeps every report already finished in --out (same mode, seed and criteria) and runs the
rest.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from redthread.errors import RedthreadError
from redthread.experiments import EXPERIMENTS, available, load, one_thread
from redthread.experiments.history import code_commit, commit_of, criteria_commit
from redthread.experiments.replication import run_experiment
from redthread.experiments.report_zh import write_index_zh
from redthread.files import atomic_write_text, check_not_foreign, check_writable

REPORT_FILES = ("report.json", "report.md", "report.zh.md")  # an experiment's folder; `all` adds index.md and a folder per experiment


def check_out(out: Path, overwrite: bool, resume: bool = False, every: bool = False) -> None:
    if out.exists() and not out.is_dir():
        raise RedthreadError(f"--out {out} is a file, not a folder")
    check_not_foreign(out, (*REPORT_FILES, "index.md", "index.zh.md", *available()) if every else REPORT_FILES, "experiment report")
    if out.is_dir() and any(out.iterdir()) and not (overwrite or resume):
        raise RedthreadError(f"{out} already holds a report; pass --resume to finish it or --overwrite to replace it")
    check_writable(out)  # a read-only or full place fails now, not after the experiment has run


def run_one(name: str, out: Path, quick: bool, seed: int, progress) -> tuple[object, float]:
    commit = code_commit()  # asked before the run: the checkout may move while it runs
    with one_thread():
        where = environment()  # inside: the threads the experiment runs on
        t0 = time.perf_counter()
        report = run_experiment(name, quick=quick, seed=seed, progress=progress)
        seconds = time.perf_counter() - t0
    report.number("seconds", round(seconds, 2))
    report.number("seed", seed)
    report.number("code_commit", commit)  # which code made these numbers (a replication compares two)
    report.number("environment", where)  # and where: the same commit gave other numbers on another machine
    report.write(out)
    return report, seconds


def environment() -> dict[str, str]:
    """What besides the code can change a float: the processor, its instruction sets that kernels dispatch on, the
    threads and the library versions (docs/replication.md: one commit, two machines, other numbers)."""
    import platform

    import numpy
    import torch

    from redthread.train.precision import cpu_flags

    cpu = platform.processor() or platform.machine()
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
        cpu = fields.get("model name\t", cpu).strip() or cpu
    except (OSError, ValueError):
        pass
    flags = " ".join(sorted(f for f in cpu_flags() if f.startswith(("avx", "fma", "amx"))))
    return {"cpu": cpu, "cpu_flags": flags, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_threads": str(torch.get_num_threads()), "torch": torch.__version__, "numpy": numpy.__version__,
            "python": platform.python_version()}


def finished(folder: Path, name: str, quick: bool, seed: int) -> dict | None:
    """The report.json already in folder, if it is a finished run of the same mode and seed, decided by the
    experiment's criteria as they stand now (a report made under earlier criteria is run again)."""
    try:
        data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    same = data.get("quick") == quick and data.get("numbers", {}).get("seed") == seed
    return data if same and data.get("criteria_commit") == criteria_commit(name) else None


def experiment_command(name: str, out: str | None, quick: bool, seed: int, overwrite: bool, show_progress: bool,
                       resume: bool = False, log=print) -> None:
    names = available() if name == "all" else [name]
    if name != "all" and name not in EXPERIMENTS:
        raise RedthreadError(f"unknown experiment {name!r}; experiments: {', '.join(available())}, or all")
    if resume and overwrite:
        raise RedthreadError("--resume keeps the finished reports and --overwrite replaces them: pass one of them")
    root = Path(out or ("runs/experiments" if name == "all" else f"runs/experiments/{name}"))
    check_out(root, overwrite, resume, every=name == "all")
    for n in names:
        load(n)  # every name resolves before anything runs
    progress = _Progress(len(names), show_progress)
    t_all = time.perf_counter()
    try:
        for i, n in enumerate(names):
            folder = root / n if name == "all" else root
            done = finished(folder, n, quick, seed) if resume else None
            if done is not None:
                log(f"{n:<24} {done['claims']:<12} {done['verdict']:<14} (kept from the earlier run)")
                continue
            progress.start(i, n)
            report, seconds = run_one(n, folder, quick, seed, progress)
            log(f"{n:<24} {report.claims:<12} {report.verdict:<14} {seconds:6.1f} s")
    finally:
        progress.close()
    total = time.perf_counter() - t_all
    if name == "all":
        write_index(root, names, quick, seed)
        log(f"index: {root / 'index.md'} ({total / 60:.1f} min)")
    else:
        log(f"report: {root / 'report.md'}")


def write_index(root: Path, names: list[str], quick: bool, seed: int) -> Path:
    """index.md over the reports in root/NAME/report.json: each claim's verdict, by part, its history and its time;
    then every check with both seed sets' values and intervals, its floor and its verdict."""
    lines = ["# Experiments: the claims of the essay, tested" + (" (quick)" if quick else ""), ""]
    if quick:
        lines += ["**Smoke test (--quick): these reports carry no verdict.**", ""]
    lines += ["| experiment | claims | verdict | by part | changes after a result | seconds | commit |",
              "|---|---|---|---|---|---|---|"]
    total, reports = 0.0, {}
    for n in names:
        reports[n] = report = json.loads((root / n / "report.json").read_text(encoding="utf-8"))
        seconds = float(report["numbers"].get("seconds", 0.0))
        total += seconds
        parts = "; ".join(f"{part}: {v}" for part, v in (report.get("parts") or {}).items() if part).replace("|", "\\|") or "—"
        history = len(report.get("history") or [])
        lines.append(f"| [{n}]({n}/report.md) | {report['claims']} | {report['verdict']} | {parts} | {history} | "
                     f"{seconds:.1f} | {commit_of(report)} |")
    sets = "one seed set (smoke)" if quick else f"seed sets from {seed} and {seed + 100}"
    lines += ["", f"Total: {total / 60:.1f} min of experiments, {sets}.", "",
              "## Every check", "",
              "Each check's mean and 95% interval in each seed set (at the full budget where it was run at three), "
              "the floor it is decided against, and its verdict; a check that is a part's only one decides the part. "
              "Each report's history lists every change of a criterion made after a result had been seen.", "",
              "| experiment | part | check | needs | set A | set B | verdict |", "|---|---|---|---|---|---|---|"]
    for n, report in reports.items():
        for check in report.get("checks", []):
            direction, floor = check.get("direction"), _figure(check.get("floor"))
            needs = ("—" if check.get("floor") is None else f"\\|·\\| < {floor}" if direction == "within"
                     else f"{'>' if direction == 'above' else '<'} {floor}")
            values = [_estimate(s) for s in check.get("sets", [])] + ["—", "—"]
            lines.append(f"| {n} | {check.get('part') or '—'} | {check['name']} | {needs} | {values[0]} | {values[1]} | "
                         f"{check['verdict']} |".replace("\n", " "))
    atomic_write_text(root / "index.md", "\n".join(lines) + "\n")
    write_index_zh(root, names)  # index.zh.md, the same in Chinese
    return root / "index.md"


def _figure(v) -> str:
    return "—" if v is None else f"{v:.4g}"


def _estimate(s: dict) -> str:
    lo, hi = (s.get("interval") or [None, None])[:2]
    if s.get("value") is None:
        return "—"
    return f"{_figure(s['value'])} [{_figure(lo)}, {_figure(hi)}]"


class _Progress:
    """A rich progress bar over experiments; experiments may call update(fraction, text) inside."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=total)
        self.index = 0

    def start(self, index: int, name: str) -> None:
        self.index, self.name = index, name
        if self.bar:
            self.bar.update(self.task, completed=index, description=name)

    def update(self, fraction: float, text: str = "") -> None:
        if self.bar:
            self.bar.update(self.task, completed=self.index + min(max(fraction, 0.0), 1.0),
                            description=f"{self.name} {text}".strip())

    def close(self) -> None:
        if self.bar:
            self.bar.stop()
