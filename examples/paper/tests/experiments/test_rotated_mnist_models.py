"""Smoke runs of the four Table-1 models of the rotated-MNIST experiment."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny_mnist():
    from svgpvae_paper.experiments.rotated_mnist import Config, load_data

    cfg = Config(epochs=2, seeds=(0,), n_per_digit=12, eval_every=1, deep_svigp_eval_steps=2, batch_size=64)
    return cfg, load_data(cfg)


@pytest.mark.slow  # smoke only; make test-all (keeps the default suite under 10 minutes)
@pytest.mark.parametrize("name", ["cvae", "gppvae", "svgpvae", "deep_svigp"])
def test_smoke_train_each_model(name, tiny_mnist, tmp_path):
    from svgpvae_paper.experiments.rotated_mnist import run_model

    cfg, data = tiny_mnist
    result = run_model(name, data, cfg, seed=0, workdir=str(tmp_path))
    assert len(result["history"]["loss"]) == 2
    assert np.all(np.isfinite(result["history"]["loss"]))
    assert 0 < result["test_mse_mean"] < 0.5 and 0 < result["test_mse_sample"] < 0.5
    assert result["best_epoch"] in (1, 2)
    mean, sample = result["_images"]
    assert mean.shape[1:] == (28, 28, 1) and sample.shape == mean.shape
