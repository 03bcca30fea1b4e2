"""Messages in plain English: "1 layer", "an MLPLM"."""

import pytest

from redthread.errors import RedthreadError
from redthread.words import article, plural


@pytest.mark.parametrize("n, expected", [(0, "0 layers"), (1, "1 layer"), (2, "2 layers"), (1200, "1,200 layers")])
def test_plural(n, expected):
    assert plural(n, "layer") == expected


@pytest.mark.parametrize("name, expected", [
    ("TransformerLM", "a TransformerLM"), ("MLPLM", "an MLPLM"), ("NGramLM", "an NGramLM"), ("BigramLM", "a BigramLM"),
    ("EncoderDecoder", "an EncoderDecoder"), ("ViT", "a ViT"), ("RecurrentLM", "a RecurrentLM"), ("Captioner", "a Captioner"),
])
def test_article(name, expected):
    assert article(name) == expected


def test_a_refusal_reads_as_english():
    from redthread.models.mlp import MLPConfig
    from redthread.models.size import check_model_fits

    with pytest.raises(RedthreadError, match=r"for the weights of an MLPLM;"):
        check_model_fits("MLPLM", MLPConfig(vocab_size=10**7, d_embed=10**5))
