"""``encoder_dropout``: in training steps the encoder sees a random subset of the observed entries,
the likelihood scores all of them.

References: the same networks without dropout conditioned on exactly the entries the encoder
saw (a NaN at every hidden entry), plus the numpy Gaussian log density of the hidden entries.
"""

import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import norm

import gpflow_svgpvae as gv
from gpflow_svgpvae.models.cvae import CVAE
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from tests.conftest import make_tiny_model, tiny_data
from tests.models.test_video_missing import NOISE, Z_INDUCING, LinearDecoder, LinearSites, _build, _kernel, _videos

RATE = 0.3


def _nan_data(seed=3):
    X, Y = tiny_data()
    Y = Y.astype(np.float32).copy()
    Y[np.random.default_rng(seed).uniform(size=Y.shape) < 0.2] = np.nan
    return X, Y


def test_the_encoder_view_hides_observed_entries_only_at_the_rate():
    model = make_tiny_model(missing_values="nan", encoder_dropout=RATE)
    batch = model.data_batch(_nan_data())
    seen = model.encoder_view(batch, training=True)
    observed, visible = batch.mask.numpy() > 0, seen.mask.numpy() > 0
    assert not np.any(visible & ~observed)  # nothing missing is revealed
    np.testing.assert_array_equal(seen.Y.numpy(), np.where(visible, batch.Y.numpy(), 0.0))
    np.testing.assert_array_equal(seen.weights.numpy(), visible.any(-1).astype(float))
    n = observed.sum()
    hidden = (observed & ~visible).sum()
    assert abs(hidden - RATE * n) < 4 * np.sqrt(n * RATE * (1 - RATE))  # binomial(n, RATE)
    # the same draw for the same counter, a new one after a step; none at evaluation
    np.testing.assert_array_equal(model.encoder_view(batch, training=True).mask.numpy(), seen.mask.numpy())
    model.sample_counter.assign_add(1)
    assert np.any(model.encoder_view(batch, training=True).mask.numpy() != seen.mask.numpy())
    assert model.encoder_view(batch, training=False) is batch


def _pair(name, **kwargs):
    """The same float64 networks with and without dropout (fixed codes: z = posterior mean)."""
    with_dropout = _build(name, LinearSites(2 * 4, 2, 1), LinearDecoder(2, 4, 2), encoder_dropout=RATE, **kwargs)
    without = _build(name, with_dropout.encoder, with_dropout.decoder, **kwargs)
    for model in (with_dropout, without):
        model._sample_normal = lambda mean, var: mean[None]
    return with_dropout, without


@pytest.mark.parametrize("name", ["svgpvae", "vae", "gpvae", "sparse", "hensman"])
def test_the_bound_conditions_on_what_the_encoder_saw_and_scores_every_observed_entry(name):
    X, Y = _videos()
    Y[np.random.default_rng(5).uniform(size=Y.shape) < 0.2] = np.nan
    options = dict(missing_values="nan", encoder_sees_mask=True)
    if name == "svgpvae":
        encoder, decoder = LinearSites(8, 2, 1), LinearDecoder(2, 4, 2)
        model = gv.SVGPVAE(encoder, decoder, _kernel(), Z_INDUCING, gv.Gaussian(NOISE), encoder_dropout=RATE, **options)
        reference = gv.SVGPVAE(encoder, decoder, _kernel(), Z_INDUCING, gv.Gaussian(NOISE), **options)
        for m in (model, reference):
            m._sample_normal = lambda mean, var: mean[None]
    else:
        model, reference = _pair(name, **options)
    batch = model.data_batch((X, Y))
    seen = model.encoder_view(batch, training=True)
    visible = seen.mask.numpy() > 0
    terms = model.objective_terms((X, Y), training=True)
    expected = reference.objective_terms((X, np.where(visible, Y, np.nan)), training=True)
    np.testing.assert_allclose(terms.kl.numpy(), expected.kl.numpy(), rtol=1e-10)
    np.testing.assert_allclose(terms.decoded.numpy(), expected.decoded.numpy(), rtol=1e-10)
    hidden = ~np.isnan(Y) & ~visible
    assert hidden.sum() > 5
    extra = norm.logpdf(Y[hidden], terms.decoded.numpy()[hidden], np.sqrt(NOISE)).sum()
    np.testing.assert_allclose(terms.reconstruction.numpy(), expected.reconstruction.numpy() + extra, rtol=1e-6)
    # evaluation does not drop: the bound of the model without dropout
    np.testing.assert_allclose(
        model.objective_terms((X, Y), training=False).elbo().numpy(),
        reference.objective_terms((X, Y), training=False).elbo().numpy(),
        rtol=1e-10,
    )


@pytest.mark.parametrize("rate", [-0.1, 1.0, True, "0.3"])
def test_a_rate_outside_zero_one_is_refused(rate):
    with pytest.raises(ValueError, match="encoder_dropout"):
        make_tiny_model(missing_values="nan", encoder_dropout=rate)


def test_models_without_missing_data_refuse_dropout():
    encoder, decoder = mlp_encoder(4, 2, hidden_units=(8,)), mlp_decoder(4, 4, hidden_units=(8,))
    with pytest.raises(TypeError, match="encoder_dropout"):
        CVAE(encoder, decoder, num_data=10, encoder_dropout=0.2)
    assert tf.is_tensor(make_tiny_model(encoder_dropout=0.2).sample_counter)  # the SVGP-VAE takes it
