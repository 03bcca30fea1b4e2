import pytest
import torch

from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData
from redthread.train.calibration import calibration, plot_reliability


class FixedModel(torch.nn.Module):
    """Predicts the same distribution at every position."""

    def __init__(self, probs):
        super().__init__()
        self.register_buffer("logits", torch.tensor(probs).log())

    def forward(self, idx):
        return self.logits.expand(*idx.shape, -1)


def data_from(tokens):
    split = TokenSplit(torch.tensor(tokens).numpy(), len(tokens), "val")
    return LMData(split, split, block_size=4)


def test_calibration_of_a_calibrated_model_is_near_zero():
    # targets drawn from the model's own distribution: top token (id 0, p = 0.7) right ~70% of the time
    g = torch.Generator().manual_seed(0)
    tokens = torch.multinomial(torch.tensor([0.7, 0.2, 0.1]), 20001, replacement=True, generator=g).tolist()
    result = calibration(FixedModel([0.7, 0.2, 0.1]), data_from(tokens), n_bins=10)
    assert result.n == 20000
    assert result.ece < 0.01


def test_calibration_matches_a_hand_computation_for_an_overconfident_model():
    tokens = [0, 1] * 50 + [0]  # the top token (0) is the target half the time
    result = calibration(FixedModel([0.95, 0.03, 0.02]), data_from(tokens), n_bins=10)
    assert result.counts[9] == result.n == 100
    assert result.confidence[9] == pytest.approx(0.95, abs=1e-6)
    assert result.accuracy[9] == pytest.approx(0.5)
    assert result.ece == pytest.approx(0.45, abs=1e-6)


def test_reliability_diagram_is_written(tmp_path):
    result = calibration(FixedModel([0.6, 0.4]), data_from([0, 1, 0, 0, 1, 0, 0, 0, 1]), n_bins=5)
    plot_reliability({"fixed": result, "again": result}, tmp_path / "rel.png")
    assert (tmp_path / "rel.png").stat().st_size > 1000
