"""docs/replication.md and its Chinese page: each table between `<!-- compare RUN1 RUN2 -->` and `<!-- /compare -->`
is what `python -m redthread.experiments.compare RUN1 RUN2` gives over the committed reports, in the page's language.
A report changed, added or removed without the page written again fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redthread.experiments.compare import END, compare, load_run
from redthread.lang import speaking

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- compare (\S+) (\S+) -->\n(.*?)" + re.escape(END), re.S)


@pytest.mark.parametrize("page, lang", [("replication.md", "en"), ("replication.zh.md", "zh")])
def test_every_table_is_the_comparison_of_the_committed_runs(page, lang):
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    blocks = BLOCK.findall(text)
    assert blocks, f"docs/{page} has no comparison block"
    for run1, run2, table in blocks:
        assert (REPO / run1).is_dir() and (REPO / run2).is_dir(), (run1, run2)
        with speaking(lang):
            expected, counts = compare(load_run(REPO / run1), load_run(REPO / run2), (run1, run2))
        assert table.strip() == expected.strip(), (
            f"docs/{page}: the table of {run1} against {run2} is stale; write it again with "
            f"python -m redthread.experiments.compare {run1} {run2} --into docs/{page}" + (" --lang zh" if lang == "zh" else ""))
        assert counts["experiments"] >= 8, (run1, run2, counts)  # run-3 holds the experiments run again, not all
