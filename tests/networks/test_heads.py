"""GaussianSiteHead: the variance and natural-parameter forms of the encoder's sites."""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_svgpvae.networks import GaussianSiteHead, mlp_encoder


def _softplus(a):
    return np.log1p(np.exp(a))


def _head_with_weights(parametrization, W, c, **kwargs):
    head = GaussianSiteHead(W.shape[1] // 2, parametrization=parametrization, **kwargs)
    head(np.zeros((1, W.shape[0]), np.float32))  # builds the dense layer
    head.dense.kernel.assign(W)
    head.dense.bias.assign(c)
    return head


@pytest.mark.parametrize("parametrization", ["variance", "natural"])
def test_sites_match_numpy(rng, parametrization):
    h = rng.normal(size=(7, 5)).astype(np.float32)
    W = rng.normal(size=(5, 6)).astype(np.float32)
    c = rng.normal(size=6).astype(np.float32)
    head = _head_with_weights(parametrization, W, c, min_variance=1e-4, min_precision=1e-3)
    means, variances = (x.numpy() for x in head(h))
    out = h @ W + c
    first, raw = out[:, :3], out[:, 3:]
    if parametrization == "variance":
        np.testing.assert_allclose(means, first, rtol=1e-5)
        np.testing.assert_allclose(variances, _softplus(raw) + 1e-4, rtol=1e-5)
    else:
        precision = np.minimum(_softplus(raw) + 1e-3, 1e4)
        np.testing.assert_allclose(means, first / precision, rtol=1e-5)  # eta / lambda
        np.testing.assert_allclose(variances, 1.0 / precision, rtol=1e-5)


def test_natural_sites_keep_the_posterior_mean_gradient_of_an_uninformative_channel():
    """Under a unit prior the posterior mean is ytil / (1 + v). At a nearly uninformative site
    (v ~ 100) its derivative with respect to the head's first output is 1 / (1 + v) ~ 0.01 in the
    variance form and 1 / (1 + lambda) ~ 0.99 in the natural form."""
    W = np.zeros((1, 2), np.float32)
    grads = {}
    for parametrization, raw in [("variance", 100.0), ("natural", np.log(np.expm1(0.01 - 1e-3)))]:
        c = np.array([0.3, raw], np.float32)
        head = _head_with_weights(parametrization, W, c)
        with tf.GradientTape() as tape:
            means, variances = head(np.ones((1, 1), np.float32))
            posterior_mean = means / (1.0 + variances)
        grads[parametrization] = float(tape.gradient(posterior_mean, head.dense.bias)[0])
        np.testing.assert_allclose(variances.numpy(), 100.0 if parametrization == "variance" else 1 / 0.01, rtol=1e-3)
    np.testing.assert_allclose(grads["variance"], 1 / 101, rtol=1e-3)
    np.testing.assert_allclose(grads["natural"], 1 / 1.01, rtol=1e-3)


def test_precisions_are_capped_at_one_over_min_variance():
    c = np.array([1.0, 1e6], np.float32)
    head = _head_with_weights("natural", np.zeros((1, 2), np.float32), c, min_variance=1e-2)
    _, variances = head(np.ones((1, 1), np.float32))
    np.testing.assert_allclose(variances.numpy(), 1e-2, rtol=1e-6)


def test_bad_settings_are_errors():
    with pytest.raises(ValueError, match="parametrization"):
        GaussianSiteHead(2, parametrization="log_variance")
    with pytest.raises(ValueError, match="min_precision"):
        GaussianSiteHead(2, parametrization="natural", min_precision=0.0)
    with pytest.raises(ValueError, match="parametrization"):
        mlp_encoder(4, 2, hidden_units=(3,), site_parametrization="precision")


def test_config_round_trip():
    head = GaussianSiteHead(3, parametrization="natural", min_precision=0.01)
    clone = GaussianSiteHead.from_config(head.get_config())
    assert (clone.parametrization, clone.min_precision, clone.num_latent_gps) == ("natural", 0.01, 3)
