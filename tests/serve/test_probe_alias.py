"""`redthread.serve.probe`, the inspection library's old home, still answers with the new names, and warns."""

import pytest

from redthread.serve import probe
from redthread.viz import heads, inspector


@pytest.mark.parametrize("old,new", [
    ("Probe", inspector.Inspector), ("ImageProbe", inspector.ImageInspector), ("load_probe", inspector.load_inspector),
    ("check_text", inspector.check_text), ("rank_heads", heads.rank_heads), ("PRONOUNS", heads.PRONOUNS),
])
def test_the_old_probe_names_are_the_new_objects_with_a_deprecation_warning(old, new):
    with pytest.warns(DeprecationWarning, match=f"redthread.serve.probe.{old} is deprecated: use redthread.viz"):
        assert getattr(probe, old) is new


def test_the_old_probe_module_has_no_other_names():
    with pytest.raises(AttributeError, match="no attribute 'Inspector'"):
        probe.Inspector  # noqa: B018 - the attribute access is the test
