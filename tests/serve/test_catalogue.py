"""The app's catalogue learns what a run reads and whether it attends from the model classes, not from
a list of class names: a rung registered by a user is served like the shipped ones."""

from redthread.models.base import LanguageModel
from redthread.models.registry import MODELS
from redthread.serve.catalogue import run_kind


def test_each_model_class_says_what_its_runs_read():
    assert run_kind("TransformerLM") == ("text", True)
    assert run_kind("ViT") == ("image", True) and run_kind("Captioner") == ("image", True)
    for rung in ("NGramLM", "BigramLM", "MLPLM", "RecurrentLM"):
        assert run_kind(rung) == ("text", False), rung
    assert run_kind("EncoderDecoder") is None  # a source and a target: neither a text nor an image alone
    assert run_kind("NoSuchModel") is None and run_kind(None) is None


def test_a_registered_language_model_is_served_as_text(monkeypatch):
    class MyLM(LanguageModel):
        pass

    monkeypatch.setitem(MODELS, "MyLM", (MyLM, object))
    assert run_kind("MyLM") == ("text", False)
