"""The report every experiment writes: the claim quoted, the set-up, figures, a table, every number
as JSON, and a verdict computed from the measurements against a criterion stated before the run.

    report = Report("scaling", "C7", setup="...", criterion="the largest weight exceeds 0.9 at d_k = 512 without scaling")
    report.number("max_weight_unscaled_512", 0.97)         # every number lands in report.json
    report.table(["d_k", "Var(q.k)", "theory"], rows)      # a Markdown table
    report.figure("variance", fig)                         # variance.png beside report.md
    report.check("gap", gaps, seeds)                       # a criterion of experiments/criteria.py, over seeds
    report.write(out_dir)                                  # report.md, report.json, *.png

A check is decided by `check`: the per-seed values' mean and 95% interval against a threshold
fixed in `experiments/criteria.py` give holds, does not hold or inconclusive (`experiments/stats.py`).
A claim with several parts (C11: residuals, LayerNorm) gets a verdict per part, and the overall
verdict hides none: any part that does not hold makes it "does not hold", then any inconclusive one
"inconclusive". `decide(passed, required, seen)` records an exact yes/no check (no seeds).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from redthread.errors import InvalidValue, RedthreadError
from redthread.experiments.criteria import criterion
from redthread.experiments.stats import ABOVE, FAILS, HOLDS, INCONCLUSIVE, combine, estimate, verdict
from redthread.files import atomic_write, atomic_write_text
from redthread.plotting import pyplot

plt = pyplot()

__all__ = ["Report", "Check", "HOLDS", "FAILS", "INCONCLUSIVE", "CLAIMS"]

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


@dataclass
class Check:
    """One check of the criterion: the value measured (mean over seeds, with its 95% interval, or an
    exact quantity), the threshold it had to clear and why, and the verdict computed from them."""

    name: str
    claim: str
    part: str
    required: str  # what the claim needs, in words: "> 0 nats (val NLL without the scale minus with)"
    why: str  # why that threshold
    value: float | None
    interval: list[float] | None  # [lo, hi], or None for an exact quantity
    seeds: list[int] | None
    threshold: float | None
    direction: str | None
    verdict: str
    seen: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == HOLDS

    def to_json(self) -> dict:
        return {"name": self.name, "claim": self.claim, "part": self.part, "value": self.value,
                "interval": self.interval, "seeds": self.seeds, "threshold": self.threshold,
                "direction": self.direction, "verdict": self.verdict, "required": self.required, "why": self.why,
                "seen": self.seen, "passed": self.passed}


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
    skipped: str | None = None  # why the experiment could not run here (e.g. an optional model missing)

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

    def figure(self, stem: str, fig: plt.Figure, caption: str = "") -> None:
        if stem in self.figures:
            raise InvalidValue(f"figure {stem!r} added twice")
        self.figures[stem] = fig
        self.sections.append(f"![{caption or stem}]({stem}.png)" + (f"\n\n*{caption}*" if caption else ""))

    def check(self, name: str, values, seeds: list[int] | None = None, seen: str = "") -> str:
        """Decide criterion `name` (experiments/criteria.py) on per-seed `values` (a list, one per seed in
        `seeds`) or on an exact quantity (a number); returns the verdict."""
        c = criterion(self.name, name)
        est = estimate(values)
        if isinstance(values, (list, tuple)) and seeds is not None and len(seeds) != len(values):
            raise InvalidValue(f"check {name!r}: {len(values)} values for {len(seeds)} seeds")
        side = ">" if c.direction == ABOVE else "<"
        outcome = verdict(est, c.threshold, c.direction)
        self.checks.append(Check(
            name=name, claim=c.claim, part=c.part, required=f"{c.what} {side} {c.threshold:g}", why=c.why,
            value=_plain(est.mean), interval=_plain(est.interval), seeds=None if est.lo is None else list(seeds or []),
            threshold=c.threshold, direction=c.direction, verdict=outcome, seen=seen or str(est),
        ))
        return outcome

    def decide(self, passed: bool, required: str, seen: str, part: str = "") -> bool:
        """An exact yes/no check (a property that holds or not, with nothing random in it)."""
        self.checks.append(Check(
            name=required, claim=self.claims.split(",")[0].strip(), part=part, required=required,
            why="an exact property: nothing random in it", value=None, interval=None, seeds=None, threshold=None,
            direction=None, verdict=HOLDS if passed else FAILS, seen=seen,
        ))
        return bool(passed)

    def skip(self, reason: str) -> None:
        self.skipped = reason

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "not run"
        if not self.checks:
            raise RedthreadError(f"experiment {self.name} made no check: no verdict can be computed")
        return combine(self.parts.values())

    @property
    def parts(self) -> dict[str, str]:
        """The verdict of each part of the claim ("" when the claim is tested as one part)."""
        parts: dict[str, list[str]] = {}
        for c in self.checks:
            parts.setdefault(c.part, []).append(c.verdict)
        return {part: combine(verdicts) for part, verdicts in parts.items()}

    def markdown(self) -> str:
        quotes = "\n".join(f"> **{c.strip()}** {CLAIMS[c.strip()]}" for c in self.claims.split(","))
        lines = [f"# {self.name}" + (" (quick)" if self.quick else ""), "", quotes, ""]
        if self.skipped:
            return "\n".join([*lines, f"**Not run:** {self.skipped}", ""])
        named = {part: v for part, v in self.parts.items() if part}
        overall = f"**Verdict: the claim {self.verdict}.**"
        if named:
            overall += " By part: " + "; ".join(f"{part}: {v}" for part, v in named.items()) + "."
        lines += [overall, "", "## Set-up", "", self.setup, "",
                  "## Criterion (stated before the run)", "", self.criterion, "", "## Checks", "",
                  "| part | required | why this threshold | seen (mean [95% interval]) | verdict |", "|---|---|---|---|---|"]
        lines += [f"| {_escape(c.part or c.claim)} | {_escape(c.required)} | {_escape(c.why)} | {_escape(c.seen)} | "
                  f"{c.verdict if c.verdict == HOLDS else '**' + c.verdict + '**'} |" for c in self.checks]
        lines += ["", "## Results", ""]
        for section in self.sections:
            lines += [section, ""]
        lines += ["Every number above is in `report.json`."]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        return {
            "name": self.name, "claims": self.claims, "quick": self.quick, "verdict": self.verdict,
            "parts": None if self.skipped else self.parts, "skipped": self.skipped, "criterion": self.criterion,
            "checks": [c.to_json() for c in self.checks],
            "numbers": self.numbers,
        }

    def write(self, out: Path) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        for stem, fig in self.figures.items():
            atomic_write(out / f"{stem}.png", lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=110))
            plt.close(fig)
        atomic_write_text(out / "report.json", json.dumps(self.to_json(), indent=2, allow_nan=True))
        atomic_write_text(out / "report.md", self.markdown())
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
