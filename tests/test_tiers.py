"""The two tiers of tests: plain `pytest` (CI) runs everything; `pytest -m "not slow"` is the fast loop.

`slow` is registered once, in pyproject.toml (with --strict-markers, so a misspelt mark is an error); no conftest
registers it again or skips slow tests on its own. The fast tier drives no browser, builds no docs and starts no
process: tests/conftest.py marks the tests that ask for those fixtures, and refuses a process to a fast test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]


def test_slow_is_registered_in_pyproject_and_nowhere_else():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert [m for m in options["markers"] if m.startswith("slow:")], options.get("markers")
    assert "--strict-markers" in options["addopts"]
    elsewhere = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "tests").rglob("*.py"))
                 if re.search(r"addinivalue_line\(\s*[\"']markers", p.read_text(encoding="utf-8"))]
    elsewhere += [name for name in ("pytest.ini", "tox.ini", "setup.cfg", "tests/pytest.ini")
                  if (ROOT / name).is_file() and "markers" in (ROOT / name).read_text()]
    assert elsewhere == []


def test_no_conftest_skips_or_deselects_tests_by_mark():
    """The full run runs every test: no conftest turns `slow` (or any mark) into a silent skip."""
    for conftest in (ROOT / "tests").rglob("conftest.py"):
        text = conftest.read_text(encoding="utf-8")
        assert 'getoption("-m")' not in text and "getoption('-m')" not in text, conftest


def conftest(request):
    """tests/conftest.py as pytest loaded it (importing it again would make a second copy)."""
    return request.config.pluginmanager.get_plugin(str(ROOT / "tests" / "conftest.py"))


def test_the_fast_tier_asks_for_no_browser_docs_build_or_clone(request):
    """Whatever this run selected: every test in it that is not slow uses none of the slow fixtures."""
    SLOW_FIXTURES = conftest(request).SLOW_FIXTURES  # noqa: N806
    assert {"browser", "executed_tour", "site"} <= SLOW_FIXTURES
    fast = [item for item in request.session.items if item.get_closest_marker("slow") is None]
    assert request.node in fast
    offenders = [item.nodeid for item in fast if SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))]
    assert offenders == []


def test_a_fast_test_is_refused_a_process(spawned, request):
    with pytest.raises(conftest(request).ProcessInFastTest, match="without the slow mark"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert len(spawned) == 1
    spawned.clear()  # this one was on purpose


@pytest.mark.slow
def test_a_slow_test_may_start_one(spawned):
    assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout == "42\n"
    assert spawned == []


@pytest.mark.slow  # two pytest processes
def test_the_long_campaign_is_slow_and_asked_for_by_name():
    """The fault campaign (hours: 30 kills, thousands of fuzz examples, a 2 GB file) is deselected by pyproject's
    addopts, visibly ("deselected"), and runs with `-m campaign`; each of its tests is slow as well."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not campaign'" in options["addopts"] and [m for m in options["markers"] if m.startswith("campaign:")]
    listed = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-m", "campaign", "tests/faults",
                             "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300).stdout
    campaign = [line for line in listed.splitlines() if "::" in line]
    assert len(campaign) >= 8, listed[-2000:]
    assert any("2gb" in t for t in campaign) and any("_long" in t for t in campaign)
    not_slow = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-m", "campaign and not slow",
                               "tests/faults", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                              timeout=300).stdout
    assert not [line for line in not_slow.splitlines() if "::" in line], not_slow[-2000:]
