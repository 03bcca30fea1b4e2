"""docs/claims.md, the claims in Chinese and English: every link stays in the repository and exists, every
claim has both wordings, and each verdict it states is the one its experiments' reports compute."""

from __future__ import annotations

import json
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
CJK = re.compile(r"[\u4e00-\u9fff]")


def rows() -> dict[str, list[str]]:
    out = {}
    for line in (DOCS / "claims.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (C\d+) \|", line)
        if m:
            out[m.group(1)] = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    return out


def test_every_claim_in_both_languages():
    table = rows()
    assert list(table) == [f"C{i}" for i in range(1, 15)]
    for claim, (_, zh, en, code, tested, _verdict) in table.items():
        assert CJK.search(zh) and not CJK.search(en) and len(en) > 40, claim
        assert "../src/redthread/" in code and "experiments/" in tested, claim


def test_every_link_stays_in_the_repository_and_exists():
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links and not any(link.startswith(("http", "/", "../shared", "../../")) for link in links)
    for link in links:
        assert (DOCS / link).resolve().exists(), link


def test_each_verdict_is_what_the_reports_compute():
    for claim, (*_, tested, verdict) in rows().items():
        reports = re.findall(r"\[([a-z-]+)\]\(experiments/([a-z-]+)/report\.md\)", tested)
        computed = {name: json.loads((DOCS / "experiments" / name / "report.json").read_text())["verdict"]
                    for _, name in reports}
        if len(set(computed.values())) == 1:
            assert verdict == next(iter(computed.values())), (claim, computed)
        else:  # the claim's experiments disagree: each one's verdict is said beside it
            assert verdict == "holds in part", (claim, computed)
            for name, v in computed.items():
                assert f"[{name}](experiments/{name}/report.md) ({v})" in tested, (claim, name, v)
