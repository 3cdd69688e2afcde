"""The minibatch bias estimator of the inducing posterior mean (:mod:`svgpvae_paper.estimators`)."""

import numpy as np
import pytest

from svgpvae_paper.estimators import inducing_mean_bias
from svgpvae_paper.experiments import rotated_mnist as rm


@pytest.fixture(scope="module")
def tiny_svgpvae():
    """An untrained SVGP-VAE of the rotated-MNIST setting on 12 threes (N = 124), L = 3, m = 16."""
    cfg = rm.Config(n_per_digit=12, num_latent=3, num_inducing_per_angle=1)
    data = rm.load_data(cfg)
    return rm.build_model("svgpvae", data, cfg, seed=0), data


def test_bias_full_data_mean_matches_independent_routes(tiny_svgpvae):
    import tensorflow as tf

    from gpflow_svgpvae.amortized import amortized_inducing_posterior

    model, data = tiny_svgpvae
    X, Y, N = data.X_train, data.Y_train, data.num_data
    result = inducing_mean_bias(model, X, Y, batch_size=32, seed=0)
    mu = result["mu_full"]  # [M, L]

    means, variances = model.encode_all(Y)
    Xm = model.map_inputs(X)
    q_mu, _ = amortized_inducing_posterior(
        model.kernel, model.inducing_variable, Xm, means, variances, num_data=N, jitter=model.jitter
    )  # one batch of all N, s = 1
    np.testing.assert_allclose(mu, q_mu.numpy(), rtol=1e-9, atol=1e-9 * np.abs(mu).max())
    # The model's cached posterior encodes inside a tf.function: the float32 encoder's round-off differs.
    cached_mu, _ = model.posterior((X, Y)).inducing_distribution()
    np.testing.assert_allclose(mu, np.asarray(cached_mu), rtol=1e-4, atol=1e-4 * np.abs(mu).max())

    # The paper's formula in numpy: mu_l = Kmm (Kmm + Kmn Lam_l Knm)^-1 Kmn Lam_l ytil_l.
    Z = model.inducing_variable.Z
    Kmm = model.kernel(Z).numpy() + model.jitter * np.eye(Z.shape[0])
    Kmn = model.kernel(Z, Xm).numpy()
    for channel in range(mu.shape[1]):
        lam = 1.0 / variances.numpy()[:, channel]
        Sigma = Kmm + (Kmn * lam) @ Kmn.T
        expected = Kmm @ np.linalg.solve(Sigma, Kmn @ (lam * means.numpy()[:, channel]))
        np.testing.assert_allclose(mu[:, channel], expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())
    assert tf.reduce_all(tf.math.is_finite(q_mu))


def test_bias_vanishes_with_one_full_batch_and_is_positive_with_minibatches(tiny_svgpvae):
    model, data = tiny_svgpvae
    N = data.num_data
    full = inducing_mean_bias(model, data.X_train, data.Y_train, batch_size=N, seed=3)
    assert full["num_batches"] == 1 and full["relative_bias"] < 1e-10
    mini = inducing_mean_bias(model, data.X_train, data.Y_train, batch_size=16, seed=3)
    assert mini["num_batches"] == int(np.ceil(N / 16))
    assert mini["relative_bias"] > 1e-6  # mu_b is biased ...
    assert mini["precision_relative_deviation"] < 1e-12  # ... while the averaged precision is exact
    np.testing.assert_allclose(mini["mu_full"], full["mu_full"], rtol=1e-12, atol=1e-14)
    # Several passes average out the spread of a single pass but keep the bias: still > 0.
    many = inducing_mean_bias(model, data.X_train, data.Y_train, batch_size=16, seed=3, passes=4)
    assert many["passes"] == 4 and 1e-6 < many["relative_bias"] and many["relative_bias"] != mini["relative_bias"]


def test_figures_module_uses_the_library_estimator():
    from svgpvae_paper.experiments import rotated_mnist_figures as figures

    assert figures.inducing_mean_bias is inducing_mean_bias
