"""The contract of models/base.py, held by every estimator: distribution(x), nll(x, y) that is
-distribution(x).log_prob(y), the objective the training loop uses, and num_params."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Normal

import redthread as rt
from redthread.data.captions import ImageText
from redthread.data.regression import RegressionData
from redthread.models.base import Estimator
from redthread.models.likelihoods import normal_nll, token_nll
from redthread.models.registry import build_model
from redthread.train.loop import TrainConfig, evaluate, train

V, T, B = 7, 6, 3


def _text(model):
    g = torch.Generator().manual_seed(0)
    return model, torch.randint(V, (B, T), generator=g), torch.randint(V, (B, T), generator=g)


def _lm(rung, **fields):
    torch.manual_seed(0)
    return _text(build_model(rung, vocab_size=V, block_size=T, **fields))


def _features(model, y):
    torch.manual_seed(0)
    return model, torch.randn(B, 4), y


def _vit():
    torch.manual_seed(0)
    model = rt.ViT(rt.ViTConfig(image_size=8, channels=1, patch_size=4, n_classes=5, n_layer=1, n_head=2, d_model=16))
    return model, torch.randn(B, 1, 8, 8), torch.tensor([0, 4, 2])


def _captioner():
    torch.manual_seed(0)
    cfg = rt.CaptionerConfig(vocab_size=V, block_size=T, image_size=8, channels=1, patch_size=4, n_layer_encoder=1,
                             n_layer_decoder=1, n_head=2, d_model=16)
    g = torch.Generator().manual_seed(0)
    x = ImageText(torch.randn(B, 1, 8, 8), torch.randint(V, (B, T), generator=g))
    return rt.Captioner(cfg), x, torch.randint(V, (B, T), generator=g)


ESTIMATORS = {
    "ngram": lambda: _lm("ngram", order=2),
    "bigram": lambda: _lm("bigram"),
    "mlp": lambda: _lm("mlp", context=3, d_embed=8, d_hidden=16),
    "lstm": lambda: _lm("lstm", d_embed=8, d_hidden=16),
    "transformer": lambda: _lm("transformer", n_layer=1, n_head=2, d_model=16),
    "softmax regression": lambda: _features(rt.SoftmaxRegression(4, 3), torch.tensor([0, 2, 1])),
    "MLP classifier": lambda: _features(rt.MLPClassifier(4, 3, d_hidden=8), torch.tensor([1, 1, 0])),
    "MLP regressor": lambda: _features(rt.MLPRegressor(4, d_hidden=8, heteroscedastic=True), torch.randn(B)),
    "Nadaraya-Watson": lambda: _features(rt.NadarayaWatson().fit_memory(torch.randn(10, 4), torch.randn(10)).eval(),
                                         torch.randn(B)),
    "ViT": _vit,
    "captioner": _captioner,
}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_nll_is_minus_the_log_probability_of_the_distribution(name):
    model, x, y = ESTIMATORS[name]()
    assert isinstance(model, Estimator) and model.objective is not None
    model.eval()
    with torch.no_grad():
        log_prob = model.distribution(x).log_prob(y).double()  # every example, every position
        torch.testing.assert_close(model.nll(x, y, reduction="none").double().reshape(log_prob.shape), -log_prob,
                                   rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model.nll(x, y).double(), -log_prob.mean(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model.nll(x, y, reduction="sum").double(), -log_prob.sum(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_num_params_counts_the_trainable_parameters(name):
    model, _, _ = ESTIMATORS[name]()
    every = sum(p.numel() for p in model.parameters())
    if name == "transformer":  # by default without the embeddings, the count FLOPs scale with
        assert model.num_params(non_embedding=False) == every > model.num_params()
    elif name == "ngram":  # a count model: its table's free entries, no trainable parameter
        assert every == 0 and model.num_params() > 0
    else:
        assert model.num_params() == every


def test_reduction_is_checked():
    model, x, y = ESTIMATORS["bigram"]()
    with pytest.raises(ValueError, match="reduction must be one of mean, sum, none"):
        model.nll(x, y, reduction="avg")


def test_train_uses_the_models_own_likelihood():
    """A Gaussian regressor is trained on its Gaussian NLL without being told: same loss as passing it."""
    torch.manual_seed(0)
    X, y = torch.randn(64, 2), torch.randn(64)
    data = RegressionData(X, y, X, y)
    cfg = TrainConfig(max_iters=5, batch_size=16, eval_interval=5, eval_batches=1, log_interval=5, device="cpu")
    runs = []
    for objective in (None, normal_nll):
        torch.manual_seed(0)
        model = rt.MLPRegressor(2, d_hidden=8)
        runs.append(train(model, data, cfg, objective=objective, progress=False).val_nll)
    assert runs[0] == runs[1]
    with torch.no_grad():
        assert evaluate(model, data, "val", 16)["nll"] == pytest.approx(float(normal_nll(model(X), y)), rel=1e-6)


class Laplace(Estimator):
    """A toy estimator that names no objective: nll falls back on its distribution."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.linear(x)[:, 0]

    def distribution(self, x):
        return torch.distributions.Laplace(self(x), 1.0)


def test_an_estimator_without_objective_takes_its_nll_from_the_distribution():
    model, x, y = Laplace(), torch.randn(5, 2), torch.randn(5)
    torch.testing.assert_close(model.nll(x, y), -model.distribution(x).log_prob(y).mean())
    assert model.num_params() == 3


def test_the_likelihoods_are_what_the_families_name():
    assert rt.LanguageModel.objective is token_nll and rt.Classifier.objective is token_nll
    assert rt.GaussianRegressor.objective is normal_nll
    assert isinstance(rt.MLPRegressor(2).distribution(torch.randn(3, 2)), Normal)
