"""Two full runs of the same experiments, side by side: which numbers came out identical, which
differed and by how much, and whether every verdict is the same.

    python -m redthread.experiments.compare runs/run1 runs/run2 [--out replication.md]
    python -m redthread.experiments.compare results/run-1 results/run-2 --into docs/replication.md
    python -m redthread.experiments.compare results/run-1 results/run-2 --into docs/replication.zh.md --lang zh

Each run folder holds NAME/report.json per experiment (`redthread experiment all --out DIR`, or
one `redthread experiment NAME --out DIR/NAME` each). For every check and every seed set the
table gives run 1's value, run 2's, and |difference| ("identical" when bit-equal), then both
runs' verdicts. A verdict that differs between the runs is marked; by design the protocol should
only let a check move between a verdict and "inconclusive (does not replicate)".

--verdicts prints instead one row per experiment of the first folder, with its parts' verdicts and the number of
criterion changes after a result, and the experiment's verdict in each further folder (the README's table: the
reports of docs/experiments, and the verdicts of the full runs; tests/test_readme_verdicts.py holds the READMEs
to it):

    python -m redthread.experiments.compare docs/experiments results/run-{1,2,4} --verdicts [--lang zh]

A folder named run-N is headed "run N" (第 N 次运行); any other by its path.

--into FILE rewrites only the part of FILE between the line `<!-- compare RUN1 RUN2 -->`, naming the two
folders as given, and the next `<!-- /compare -->` (docs/replication.md's tables, which
tests/docs/test_replication.py holds to the committed runs); --lang zh writes the headings and verdicts
in the glossary's Chinese.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from redthread.errors import RedthreadError
from redthread.files import atomic_write_text
from redthread.lang import say, speaking, term

BEGIN, END = "<!-- compare {} {} -->", "<!-- /compare -->"  # the block --into rewrites, naming its two runs


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


def label(folder: str | Path) -> str:
    """How a table heads a folder of reports: results/run-4 is "run 4" (第 4 次运行), any other its path."""
    name = Path(folder).name
    if name.startswith("run-") and name[4:].isdigit():
        return say(f"run {name[4:]}", f"第 {name[4:]} 次运行")
    return Path(folder).as_posix()


def compare(a: dict[str, dict], b: dict[str, dict], names: tuple[str, str] = ("run-1", "run-2")) -> tuple[str, dict]:
    """Markdown and counts for the experiments both runs have; names are the two folders, for the headings."""
    n1, n2 = (label(n) for n in names)
    lines = [say(f"| experiment | check | set | {n1} | {n2} | \\|difference\\| | verdict, {n1} | verdict, {n2} |",
                 f"| 实验 | 检查 | 种子组 | {n1} | {n2} | \\|差\\| | 结论，{n1} | 结论，{n2} |"),
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
                diff = say("identical", "完全相同") if identical else (f"{abs(va - vb):.3g}" if None not in (va, vb) else "—")
                v1, v2 = verdict_text(ca["verdict"]), verdict_text(cb["verdict"])
                v1, v2 = (v1, v2) if same else (f"**{v1}**", f"**{v2}**")
                lines.append(f"| {name} | {ca['name']} | {'AB'[i] if len(ca['sets']) > 1 else ''} | {_num(va)} | "
                             f"{_num(vb)} | {diff} | {v1 if i == 0 else ''} | {v2 if i == 0 else ''} |")
    c = counts
    head = say(f"{c['experiments']} experiments in both runs; {c['same claim verdict']} with the same verdict. "
               f"{c['verdicts']} checks: {c['same verdict']} with the same verdict. {c['values']} measured "
               f"values (per check and seed set): {c['identical']} bit-identical.",
               f"两次运行都有的实验 {c['experiments']} 个，其中结论相同的 {c['same claim verdict']} 个。检查 {c['verdicts']} 项，"
               f"结论相同的 {c['same verdict']} 项。测得的值（每项检查、每组种子一个）{c['values']} 个，其中逐位相同的 "
               f"{c['identical']} 个。")
    return head + "\n\n" + "\n".join(lines) + "\n", counts


def verdict_table(reference: Path, first: dict[str, dict], runs: dict[str, dict[str, dict]]) -> str:
    """One row per experiment of the reference folder, in the registry's order: its verdict in each run of runs
    (folder -> reports; "not yet run" where a run lacks it), the reference's parts and criterion changes."""
    from redthread.experiments import available

    heads = " | ".join(label(folder) for folder in runs)
    rows = [say(f"| experiment | claims | {heads} | by part | criterion changes after a result |",
                f"| 实验 | 论点 | {heads} | 各部分 | 看到结果后判据的修改 |"),
            "|---|---|" + "---|" * len(runs) + "---|---|"]
    for name in [n for n in available() if n in first]:
        r = first[name]
        verdicts = " | ".join(verdict_text(run[name]["verdict"]) if name in run else say("not yet run", "尚未运行")
                              for run in runs.values())
        parts = "; ".join(f"`{k}`: {verdict_text(v)}" for k, v in (r.get("parts") or {}).items() if k)
        rows.append(f"| [{name}]({reference.as_posix()}/{name}/report.md) | {r['claims']} | {verdicts} | "
                    f"{parts.replace('|', chr(92) + '|') or '—'} | {len(r.get('history') or [])} |")
    return "\n".join(rows) + "\n"


def verdict_text(verdict: str) -> str:
    """A verdict in the language chosen: "inconclusive (does not replicate)" -> "无定论（不能复现）" in Chinese."""
    main, _, note = verdict.partition(" (")
    if main not in ("holds", "does not hold", "inconclusive", "holds in part"):
        return verdict  # "smoke", or a verdict this table does not know: as the report wrote it
    if not note:
        return term(main)
    note = note.rstrip(")")
    zh = term(note) if note == "does not replicate" else NOTES_ZH.get(note, note)
    return term(main) + say(f" ({note})", f"（{zh}）")


NOTES_ZH = {"tuning pick on the grid's edge": "调参选在网格边上"}  # stats.EDGE's note, as poetry_heads.VERDICT_ZH says it


def into(path: Path, table: str, run1: str, run2: str) -> None:
    """Replace the block that names run1 and run2 in path with table; the rest of the file is kept as it is."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RedthreadError(f"cannot read {path}: {e.strerror}") from None
    begin = BEGIN.format(run1, run2)
    start = text.find(begin)
    end = text.find(END, start)
    if start < 0 or end < 0:
        raise RedthreadError(f"{path} has no {begin} ... {END} block to write the table into")
    atomic_write_text(path, text[:start + len(begin)] + "\n\n" + table.strip() + "\n\n" + text[end:])


def _num(v) -> str:
    return "—" if v is None else f"{v:.6g}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m redthread.experiments.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("run1")
    p.add_argument("run2", nargs="+", help="the run to compare with (--verdicts: one or more)")
    p.add_argument("--out", help="write the table to this Markdown file")
    p.add_argument("--into", help="rewrite the <!-- compare RUN1 RUN2 --> ... <!-- /compare --> block of this Markdown file")
    p.add_argument("--verdicts", action="store_true", help="one row per experiment instead of one per check")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="the table's language (default en)")
    args = p.parse_args(argv)
    if len(args.run2) > 1 and not args.verdicts:
        print(f"error: compare takes two runs; {len(args.run2) + 1} were given (more than two only with --verdicts)",
              file=sys.stderr)
        return 2
    try:
        first, runs = load_run(Path(args.run1)), {folder: load_run(Path(folder)) for folder in args.run2}
        with speaking(args.lang):
            if args.verdicts:
                text = verdict_table(Path(args.run1), first, runs)
            else:
                text = compare(first, runs[args.run2[0]], (args.run1, args.run2[0]))[0]
        if args.out:
            atomic_write_text(Path(args.out), text)
        if args.into:
            into(Path(args.into), text, args.run1, args.run2[0])
    except RedthreadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        print(text)
    except BrokenPipeError:  # piped into `head`, which has read what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
