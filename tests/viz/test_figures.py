"""Static attention figures: PNG, SVG and PDF, written whole, with one-line errors for bad input."""

import pytest
import torch

import redthread as rt
from redthread.viz.figures import plot_grid, plot_head

MAGIC = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}


def maps():
    torch.manual_seed(0)
    model = rt.TransformerLM(rt.TransformerConfig(vocab_size=9, block_size=8, n_layer=2, n_head=3, d_model=12)).eval()
    with rt.record_attention(model) as m:
        model(torch.randint(9, (1, 6)))
    return m.stacked("decoder")[:, 0]  # (L, H, T, S)


@pytest.mark.parametrize("suffix", list(MAGIC))
def test_head_and_grid_in_every_format(tmp_path, suffix):
    att = maps()
    tokens = list("to be\n")
    plot_head(att[1, 2], tokens, tokens, tmp_path / f"head{suffix}", title="layer 1, head 2")
    plot_grid(att, tokens, tokens, tmp_path / f"grid{suffix}")
    for name in ("head", "grid"):
        data = (tmp_path / f"{name}{suffix}").read_bytes()
        assert data.startswith(MAGIC[suffix]) and len(data) > 1000
    assert not list(tmp_path.glob(".*.tmp"))  # atomic: no temporary file left behind


def test_bad_input_is_a_one_line_error(tmp_path):
    att = maps()
    tokens = list("abcdef")
    with pytest.raises(rt.RedthreadError, match="unknown format '.jpg'"):
        plot_head(att[0, 0], tokens, tokens, tmp_path / "x.jpg")
    with pytest.raises(rt.RedthreadError, match="5 query"):
        plot_head(att[0, 0], tokens[:5], tokens, tmp_path / "x.png")
    with pytest.raises(rt.RedthreadError, match="one head's map"):
        plot_head(att, tokens, tokens)
    with pytest.raises(rt.RedthreadError, match="layers, heads"):
        plot_grid(att[0], tokens, tokens)
    assert not list(tmp_path.iterdir())
