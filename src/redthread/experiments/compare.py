"""Two full runs of the same experiments, side by side: which numbers came out identical, which
differed and by how much, and whether every verdict is the same.

    python -m redthread.experiments.compare runs/run1 runs/run2 [--out replication.md]

Each run folder holds NAME/report.json per experiment (`redthread experiment all --out DIR`, or
one `redthread experiment NAME --out DIR/NAME` each). For every check and every seed set the
table gives run 1's value, run 2's, and |difference| ("identical" when bit-equal), then both
runs' verdicts. A verdict that differs between the runs is marked; by design the protocol should
only let a check move between a verdict and "inconclusive (does not replicate)".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from redthread.errors import RedthreadError
from redthread.files import atomic_write_text


def load_run(folder: Path) -> dict[str, dict]:
    if not folder.is_dir():
        raise RedthreadError(f"{folder} is not a folder of experiment reports")
    reports = {}
    for path in sorted(folder.glob("*/report.json")):
        try:
            reports[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise RedthreadError(f"{path} is not a report: {e}") from None
    if not reports:
        raise RedthreadError(f"{folder} holds no NAME/report.json")
    return reports


def compare(a: dict[str, dict], b: dict[str, dict]) -> tuple[str, dict]:
    """Markdown and counts for the experiments both runs have."""
    lines = ["| experiment | check | set | run 1 | run 2 | \\|difference\\| | verdict, run 1 | verdict, run 2 |",
             "|---|---|---|---|---|---|---|---|"]
    counts = {"values": 0, "identical": 0, "verdicts": 0, "same verdict": 0, "experiments": 0, "same claim verdict": 0}
    for name in [n for n in a if n in b]:
        ra, rb = a[name], b[name]
        counts["experiments"] += 1
        counts["same claim verdict"] += ra["verdict"] == rb["verdict"]
        checks_b = {c["name"]: c for c in rb["checks"]}
        for ca in ra["checks"]:
            cb = checks_b.get(ca["name"])
            if cb is None:
                continue
            counts["verdicts"] += 1
            same = ca["verdict"] == cb["verdict"]
            counts["same verdict"] += same
            for i, (ma, mb) in enumerate(zip(ca["sets"], cb["sets"])):
                va, vb = ma["value"], mb["value"]
                counts["values"] += 1
                identical = va == vb
                counts["identical"] += identical
                diff = "identical" if identical else (f"{abs(va - vb):.3g}" if None not in (va, vb) else "—")
                v1 = ca["verdict"] if same else f"**{ca['verdict']}**"
                v2 = cb["verdict"] if same else f"**{cb['verdict']}**"
                lines.append(f"| {name} | {ca['name']} | {'AB'[i] if len(ca['sets']) > 1 else ''} | {_num(va)} | "
                             f"{_num(vb)} | {diff} | {v1 if i == 0 else ''} | {v2 if i == 0 else ''} |")
    head = (f"{counts['experiments']} experiments in both runs; {counts['same claim verdict']} with the same verdict. "
            f"{counts['verdicts']} checks: {counts['same verdict']} with the same verdict. {counts['values']} measured "
            f"values (per check and seed set): {counts['identical']} bit-identical.")
    return head + "\n\n" + "\n".join(lines) + "\n", counts


def _num(v) -> str:
    return "—" if v is None else f"{v:.6g}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m redthread.experiments.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("run1")
    p.add_argument("run2")
    p.add_argument("--out", help="write the table to this Markdown file")
    args = p.parse_args(argv)
    try:
        text, _ = compare(load_run(Path(args.run1)), load_run(Path(args.run2)))
        if args.out:
            atomic_write_text(Path(args.out), text)
    except RedthreadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
