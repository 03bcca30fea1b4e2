"""The report every experiment writes: the claim quoted, the set-up, the pre-registered criteria,
figures, tables, every number as JSON, and a verdict computed from the measurements.

    report = Report("scaling", "C7", setup="...", criterion="...")
    report.number("max_weight_unscaled_512", 0.97)         # every number lands in report.json
    report.table(["d_k", "Var(q.k)", "theory"], rows)      # a Markdown table
    report.figure("variance", draw, "caption", "图注")      # draw() makes the figure: variance.png, variance.zh.png
    report.check("gap", gaps, seeds)                       # a criterion of the experiment's CRITERIA, over seeds
    report.check_proportion("flip", k, n)                  # k of n 0/1 outcomes: Wilson's interval
    report.tuning("lr, no scale", grid, scores, pick)      # a tuning pick, flagged when it sits on the grid's edge
    report.write(out_dir)                                  # report.md, report.json, report.zh.md, *.png

One report is one run over one seed set. Its checks are decided together: a check holds when its
interval lies on the claim's side of the floor; it does not hold when the interval lies on the
other side with Holm's correction over the report's checks (so "does not hold" over many parts is
not a union of chances); otherwise it is inconclusive (`experiments/stats.py`). A full run merges
the two seed sets' reports, and the budgets' for a comparative claim (`experiments/replication.py`):
then each check carries every set's measurement and its replicated verdict.

A claim with several parts gets a verdict per part; the overall verdict hides none: any part that
does not hold makes it "does not hold", then any undecided one leaves it open. A --quick report is
a smoke test: it carries no verdict, and says "smoke" where one would stand.

A figure is given as the function that draws it: called with both languages on, its say() texts hold both, and it
is saved twice, in English beside report.md and in Chinese as STEM.zh.png, which the Chinese site shows in its place.

report.zh.md is the report in Chinese, rendered from report.json alone (`experiments/report_zh.py`): the claim in
docs/claims.md's Chinese wording, the verdicts, and a conclusion generated from the numbers; a module may add its own
conclusion in both languages (`conclusion`, {"en": ..., "zh": ...}), which report.json then carries.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from redthread.errors import InvalidValue, RedthreadError
from redthread.experiments.criteria import criterion
from redthread.experiments.report_zh import render_zh
from redthread.experiments.stats import (
    ABOVE,
    EDGE,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    SMOKE,
    WITHIN,
    Estimate,
    combine,
    estimate,
    holm,
    p_fails,
    p_holds,
    proportion,
)
from redthread.files import atomic_write, atomic_write_text
from redthread.lang import both_languages, cjk_figure, figure_has_pairs, figure_in
from redthread.plotting import pyplot

plt = pyplot()

__all__ = ["Report", "Check", "Measure", "HOLDS", "FAILS", "INCONCLUSIVE", "SMOKE", "CLAIMS"]

CLAIMS = {
    "C1": "Linear regression's prediction for x_new estimates E[y | x = x_new]; MSE is the Gaussian likelihood.",
    "C2": "A softmax output layer estimates P(class | input) (the classification case).",
    "C3": "RNNs suffer vanishing/exploding gradients over long distances, so long-range statistical dependencies are hard to learn.",
    "C4": "RNN computation is sequential (h_t needs h_{t-1}): a speed bottleneck, and no \"equal view\" of the whole context.",
    "C5": "An RNN's memory is a fixed-size state that compresses all of the past, losing detail.",
    "C6": "Attention: Output_i = sum_j softmax_j(Query_i · Key_j) Value_j. The weights are a learned, data-dependent "
    "conditional distribution over positions (they sum to 1), recomputed for every query — unlike linear regression's "
    "fixed global weights.",
    "C7": "Scaling by 1/sqrt(d_k): the variance of q·k grows with d_k, pushing softmax towards one-hot and its gradients "
    "towards zero; the scale restores trainability.",
    "C8": "Self-attention alone is insensitive to order (permuting the input permutes the output); positional encoding "
    "(sinusoidal in the paper) injects order, e.g. the prior \"nearby words matter more\".",
    "C9": "Multi-head attention lets different heads learn different dependency types in different subspaces (syntax, "
    "coreference, collocation) — like an ensemble.",
    "C10": "The position-wise FFN transforms each position's aggregated context non-linearly: attention aggregates, FFN processes.",
    "C11": "Residual connections and LayerNorm keep deep stacks trainable (gradient flow, stable input distributions).",
    "C12": "Training = maximum likelihood (cross-entropy); generation = iterative sampling from the learned P(next | context) "
    "(greedy, top-k, top-p / nucleus).",
    "C13": "Attention maps are a window into what the model learned: e.g. in \"The animal didn't cross the street because it "
    "was too tired\", 'it' should attend to 'animal' more than to 'street'.",
    "C14": "The same machinery carries beyond text: images as sequences of patches (ViT), and cross-attention between text "
    "tokens and image regions (multimodal).",
}
SMOKE_LINE = ("**Smoke test (--quick): too few seeds and steps to decide anything. This report carries no verdict; "
              "run it without --quick for one.**")


@dataclass
class Measure:
    """One seed set's measurement of a check: the estimate over its seeds (or an exact quantity) and the verdict
    that set reaches on its own."""

    seeds: list[int] | None
    estimate: Estimate
    seen: str
    p_holds: float = 1.0
    p_fails: float = 1.0
    verdict: str | None = None  # set by the report, with Holm's correction over its checks

    def to_json(self) -> dict:
        return {"seeds": self.seeds, "value": _plain(self.estimate.mean), "interval": _plain(self.estimate.interval),
                "kind": self.estimate.kind, "p_holds": self.p_holds, "p_fails": self.p_fails, "verdict": self.verdict,
                "seen": self.seen}


@dataclass
class Check:
    """One pre-registered check: what it measures, its floor (the smallest effect size of interest) and why, the
    direction the claim needs, each seed set's measurement, and the verdict computed from them."""

    name: str
    claim: str
    part: str
    what: str
    floor: float | None
    direction: str | None
    why: str
    sets: list[Measure]
    verdict: str | None = None
    budgets: dict[str, dict] | None = None  # a comparative claim: per training budget, its sets and verdict

    @property
    def required(self) -> str:
        if self.floor is None:
            return self.what
        if self.direction == WITHIN:
            return f"|{self.what}| < {self.floor:g}"
        return f"{self.what} {'>' if self.direction == ABOVE else '<'} {self.floor:g}"

    @property
    def passed(self) -> bool:
        return self.verdict == HOLDS

    def to_json(self) -> dict:
        return {"name": self.name, "claim": self.claim, "part": self.part, "what": self.what, "floor": self.floor,
                "direction": self.direction, "why": self.why, "required": self.required,
                "sets": [m.to_json() for m in self.sets], "budgets": self.budgets, "verdict": self.verdict,
                "passed": self.passed}


@dataclass
class Report:
    name: str
    claims: str  # "C7", or "C3, C5, C6"
    setup: str = ""
    criterion: str = ""  # stated before the run: what must be measured for the claim to hold
    quick: bool = False
    numbers: dict = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)  # Markdown, in order: tables, figures, notes
    figures: dict[str, plt.Figure] = field(default_factory=dict)
    captions: dict[str, dict] = field(default_factory=dict)  # per figure: {"en": ..., "zh": ...}
    skipped: str | None = None  # why the experiment could not run here (e.g. an optional model missing)
    tunings: list[dict] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)  # each change of a criterion after a result had been seen
    criteria_commit: str = ""
    replication: list[str] = field(default_factory=list)  # Markdown lines: how the sets and budgets compare
    plan: dict = field(default_factory=dict)  # the module's pre-registration: hypothesis, budget(s), grid, seeds
    conclusion: dict = field(default_factory=dict)  # a module's own conclusion, {"en": ..., "zh": ...}, if it writes one

    def number(self, key: str, value) -> None:
        """Record a number (or a list / dict of numbers) for report.json."""
        self.numbers[key] = _plain(value)

    def table(self, header: list[str], rows: list[list], title: str) -> None:
        """A Markdown table; its rows also go to report.json under tables[title]."""
        if title in self.numbers.setdefault("tables", {}):
            raise InvalidValue(f"table {title!r} added twice")
        self.numbers["tables"][title] = {"header": header, "rows": _plain(rows)}
        lines = [f"### {title}", "", "| " + " | ".join(_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
        self.sections.append("\n".join(lines))

    def note(self, text: str) -> None:
        self.sections.append(text)

    def figure(self, stem: str, draw, caption: str = "", caption_zh: str = "") -> None:
        """A figure beside report.md, with its caption in both languages. `draw` is the function that makes it:
        called with both languages on, its say() texts hold both, and `write` saves it as STEM.png in English and
        STEM.zh.png in Chinese. A figure already made (a matplotlib Figure) is saved as drawn, in one language."""
        if stem in self.figures:
            raise InvalidValue(f"figure {stem!r} added twice")
        if isinstance(draw, plt.Figure):
            fig = cjk_figure(draw)  # its Chinese words (rt.set_language("zh")) drawn in a CJK font
        else:
            with both_languages():
                fig = draw()
        self.figures[stem] = fig
        self.captions[stem] = {"en": caption, "zh": caption_zh}
        self.sections.append(f"![{caption or stem}]({stem}.png)" + (f"\n\n*{caption}*" if caption else ""))

    def check(self, name: str, values, seeds: list[int] | None = None, seen: str = "") -> None:
        """Measure criterion `name` (the experiment's CRITERIA) on per-seed `values` (a list, one per seed in
        `seeds`) or on an exact quantity (a number). Decided with the report's other checks."""
        c = criterion(self.name, name)
        if isinstance(values, (list, tuple)) and seeds is not None and len(seeds) != len(values):
            raise InvalidValue(f"check {name!r}: {len(values)} values for {len(seeds)} seeds")
        est = estimate(values, c.bounds)
        self._add(name, c, Measure(None if est.lo is None else list(seeds or []), est, seen or str(est)))

    def check_proportion(self, name: str, successes: int, trials: int, seen: str = "", method: str = "wilson") -> None:
        """Measure criterion `name` on k successes of n independent 0/1 outcomes (Wilson's interval by default)."""
        c = criterion(self.name, name)
        est = proportion(successes, trials, method)
        self._add(name, c, Measure(None, est, seen or f"{successes} of {trials}: {est}"))

    def _add(self, name: str, c, measure: Measure) -> None:
        if any(k.name == name for k in self.checks):
            raise InvalidValue(f"check {name!r} made twice")
        measure.p_holds = p_holds(measure.estimate, c.floor, c.direction)
        measure.p_fails = p_fails(measure.estimate, c.floor, c.direction)
        self.checks.append(Check(name, c.claim, c.part, c.what, c.floor, c.direction, c.why, [measure]))

    def decide(self, passed: bool, required: str, seen: str, part: str = "") -> bool:
        """An exact yes/no check (a property that holds or not, with nothing random in it)."""
        measure = Measure(None, estimate(1.0 if passed else 0.0), seen, 0.0 if passed else 1.0, 1.0 if passed else 0.0)
        self.checks.append(Check(required, self.claims.split(",")[0].strip(), part, required, None, None,
                                 "an exact property: nothing random in it", [measure]))
        return bool(passed)

    def tuning(self, setting: str, grid, scores, pick, edge: bool | None = None) -> None:
        """A tuned setting: its grid, each value's validation score and the pick. A pick on the grid's edge (after the
        grid has extended itself as far as it may: experiments/tuning.py) makes this run's verdicts inconclusive."""
        grid = [_plain(g) for g in grid]
        if edge is None:
            edge = len(grid) > 1 and pick in (grid[0], grid[-1])
        self.tunings.append({"setting": setting, "grid": grid, "scores": _plain(list(scores)), "pick": _plain(pick),
                             "edge": bool(edge)})

    def tuned(self, setting: str, tuned) -> float:
        """Record a `Tuned` result (experiments/tuning.py) and return its pick."""
        self.tuning(setting, tuned.grid, tuned.scores, tuned.pick, tuned.edge)
        return tuned.pick

    def skip(self, reason: str) -> None:
        self.skipped = reason

    def settle(self) -> None:
        """Decide each check of this one run: holds at 2.5% one-sided; does not hold where Holm's correction over the
        report's checks rejects 'the claim's side may be reached'; a run with a tuning pick on an edge decides none of
        its measured checks."""
        undecided = [c for c in self.checks if c.verdict is None]
        if not undecided:
            return
        fails = holm([c.sets[0].p_fails for c in self.checks])
        edge = any(t["edge"] for t in self.tunings)
        for c, fail in zip(self.checks, fails):
            m = c.sets[0]
            if m.verdict is None:
                m.verdict = HOLDS if m.p_holds <= 0.025 else FAILS if fail else INCONCLUSIVE
                if edge and m.estimate.kind != "exact" and m.verdict != INCONCLUSIVE:
                    m.verdict = EDGE
            if c.verdict is None:
                c.verdict = SMOKE if self.quick else m.verdict

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "not run"
        if not self.checks:
            raise RedthreadError(f"experiment {self.name} made no check: no verdict can be computed")
        if self.quick:
            return SMOKE
        return combine(self.parts.values())

    @property
    def parts(self) -> dict[str, str]:
        """The verdict of each part of the claim ("" when the claim is tested as one part)."""
        self.settle()
        parts: dict[str, list[str]] = {}
        for c in self.checks:
            parts.setdefault(c.part, []).append(c.verdict)
        return {part: SMOKE if self.quick else combine(verdicts) for part, verdicts in parts.items()}

    def markdown(self) -> str:
        quotes = "\n".join(f"> **{c.strip()}** {CLAIMS[c.strip()]}" for c in self.claims.split(","))
        lines = [f"# {self.name}" + (" (quick)" if self.quick else ""), ""]
        if self.quick:
            lines = [SMOKE_LINE, "", *lines]
        lines += [quotes, ""]
        if self.skipped:
            return "\n".join([*lines, f"**Not run:** {self.skipped}", ""])
        named = {part: v for part, v in self.parts.items() if part}
        overall = "**Verdict: smoke (no verdict).**" if self.quick else f"**Verdict: the claim {self.verdict}.**"
        if named and not self.quick:
            overall += " By part: " + "; ".join(f"{part}: {v}" for part, v in named.items()) + "."
        n_sets = max(len(c.sets) for c in self.checks)
        set_names = [f"set {'AB'[i]}" if n_sets > 1 else "seen" for i in range(n_sets)]
        lines += [overall, "", "## Set-up", "", self.setup, ""]
        if self.plan:
            lines += ["## Pre-registration", "", *(f"- **{k}**: {_escape(v)}" for k, v in self.plan.items()), ""]
        lines += ["## Criterion (pre-registered)", "", self.criterion, "",
                  f"Criteria last changed at: {self.criteria_commit or 'unknown'}.", "", "## Checks", "",
                  "| part | required | why this floor | " + " | ".join(f"{s} (mean [95% interval])" for s in set_names)
                  + " | verdict |", "|---|---|---|" + "---|" * n_sets + "---|"]
        for c in self.checks:
            seen = [f"{m.seen} → {m.verdict}" if n_sets > 1 else m.seen for m in c.sets]
            seen += [""] * (n_sets - len(seen))
            shown = c.verdict if c.verdict in (HOLDS, SMOKE) else f"**{c.verdict}**"
            lines.append(f"| {_escape(c.part or c.claim)} | {_escape(c.required)} | {_escape(c.why)} | "
                         + " | ".join(_escape(s) for s in seen) + f" | {shown} |")
        if self.replication:
            lines += ["", "## Replication", "", *self.replication]
        if self.tunings:
            lines += ["", "## Tuning (on seeds that enter no verdict)", "",
                      "| setting | grid | validation scores | pick | on the edge |", "|---|---|---|---|---|"]
            lines += [f"| {_escape(t['setting'])} | {', '.join(f'{g:g}' if isinstance(g, float) else str(g) for g in t['grid'])} | "
                      f"{', '.join(_cell(s) for s in t['scores'])} | {_cell(t['pick'])} | "
                      f"{'**yes**' if t['edge'] else 'no'} |" for t in self.tunings]
        lines += ["", "## History of the criteria", ""]
        if self.history:
            lines += ["Each change of a criterion made after a result had been seen:", "",
                      "| date | change | result before the change | reason |", "|---|---|---|---|"]
            lines += [f"| {h['date']} | {_escape(h['change'])} | {_escape(h['before'])} | {_escape(h['reason'])} |"
                      for h in self.history]
        else:
            lines.append("No criterion has been changed after a result was seen.")
        lines += ["", "## Results", ""]
        for section in self.sections:
            lines += [section, ""]
        lines += ["Every number above is in `report.json`."]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        return {
            "name": self.name, "claims": self.claims, "quick": self.quick, "verdict": self.verdict,
            "parts": None if self.skipped else self.parts, "skipped": self.skipped, "criterion": self.criterion,
            "criteria_commit": self.criteria_commit, "history": self.history, "preregistration": self.plan,
            "checks": [c.to_json() for c in self.checks], "tuning": self.tunings,
            "numbers": self.numbers,
            "figures": [{"stem": stem, "caption": c["en"], "caption_zh": c["zh"], "zh": figure_has_pairs(self.figures[stem])}
                        for stem, c in self.captions.items()],
            **({"conclusion": self.conclusion} if self.conclusion else {}),
        }

    def write(self, out: Path) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        for stem, fig in self.figures.items():
            save = lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=110)  # noqa: E731
            if figure_has_pairs(fig):
                for lang, path in (("en", out / f"{stem}.png"), ("zh", out / f"{stem}.zh.png")):
                    with figure_in(fig, lang):
                        atomic_write(path, save)
            else:
                atomic_write(out / f"{stem}.png", save)
                (out / f"{stem}.zh.png").unlink(missing_ok=True)  # an earlier run's Chinese drawing no longer matches
            plt.close(fig)
        data = json.dumps(self.to_json(), indent=2, allow_nan=True)
        atomic_write_text(out / "report.json", data)
        atomic_write_text(out / "report.md", self.markdown())
        atomic_write_text(out / "report.zh.md", render_zh(json.loads(data)))  # from report.json as written
        return out / "report.md"


def _plain(value):
    """Tensors, numpy values and nested containers -> JSON-ready Python numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def _cell(v) -> str:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.3g}" if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5) else f"{v:.4f}".rstrip("0").rstrip(".")
    return _escape(v)
