"""SVGPVAE(decoder_gp_columns=...): the decoder reads ``[z, selected GP-input columns]``.

References: a model whose decoder reads the code alone (the same draws give the same codes),
and the closed-form Gaussian log density of the extra columns.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.transforms import SelectColumns
from tests.models.sites import FixedSites

N, L, K = 24, 2, 6


class PassThrough(tf.Module):
    """A 'decoder' whose output (the Gaussian mean) is its input: it shows what the decoder reads."""

    def __call__(self, inputs):
        return tf.cast(inputs, tf.float64)


def f32(values):
    """The decoder runs in float32 (its inputs are cast at the boundary)."""
    return np.asarray(values).astype(np.float32).astype(np.float64)


def _inputs(rng, n=N):
    return np.c_[np.sort(rng.uniform(0, 5, n)), rng.uniform(-1, 1, n)]  # raw [time, other]


def _sites(rng):
    return rng.normal(size=(N, L)), rng.uniform(0.2, 1.0, size=(N, L))


def _model(encoder, decoder, columns=None, transform=None, num_samples=3, likelihood=None):
    kernel = gpflow.kernels.SquaredExponential(lengthscales=[1.5, 1.0])
    Z = np.c_[np.linspace(0, 5, 5), np.linspace(-1, 1, 5)]
    return gv.SVGPVAE(
        encoder,
        decoder,
        kernel,
        Z,
        likelihood or gv.Gaussian(0.3),
        num_data=N,
        input_transform=transform,
        num_latent_gps=L,
        num_samples=num_samples,
        seed=3,
        decoder_gp_columns=columns,
    )


def test_the_extra_columns_add_exactly_their_gaussian_log_density(rng):
    """Same draws, same codes: the ELBO with the decoder on [z, x_c] minus the ELBO with the decoder on z
    alone is (N/b) * sum_i log N(y_ic | x_ic, sigma^2), for GP inputs reordered by the transform."""
    X = _inputs(rng)
    means, variances = _sites(rng)
    Y_codes = np.c_[np.arange(N), rng.normal(size=(N, L - 1))]
    Y_extra = rng.normal(size=(N, 1))
    transform = SelectColumns([1, 0])  # GP inputs [other, time]: column 1 of the GP inputs is raw column 0
    alone = _model(FixedSites(means, variances), PassThrough(), transform=SelectColumns([1, 0]))
    reading = _model(FixedSites(means, variances), PassThrough(), columns=[1], transform=transform)
    b = 10
    with_codes = alone.elbo((X[:b], Y_codes[:b]), seed=7)
    with_column = reading.elbo((X[:b], np.c_[Y_codes, Y_extra][:b]), seed=7)
    noise = 0.3
    log_density = -0.5 * np.log(2 * np.pi * noise) - 0.5 * (Y_extra[:b, 0] - f32(X[:b, 0])) ** 2 / noise
    np.testing.assert_allclose(with_column.numpy() - with_codes.numpy(), N / b * log_density.sum(), rtol=1e-10)
    terms = reading.objective_terms((X[:b], np.c_[Y_codes, Y_extra][:b]), training=False)
    np.testing.assert_array_equal(terms.decoded.numpy()[:, L:], f32(X[:b, :1]))


def test_predictions_decode_the_query_gp_inputs(rng):
    X = _inputs(rng)
    means, variances = _sites(rng)
    Y = np.c_[np.arange(N), rng.normal(size=(N, L))]
    model = _model(FixedSites(means, variances), PassThrough(), columns=[-1, 0])
    Xnew = _inputs(rng, 7)
    posterior = model.posterior((X, Y))
    f_mean, f_var = posterior.predict_f(Xnew)
    mean, samples = posterior.predict_y(Xnew, num_samples=4, seed=2)
    np.testing.assert_array_equal(mean.numpy(), f32(np.c_[f_mean.numpy(), Xnew[:, [1, 0]]]))
    np.testing.assert_array_equal(samples.numpy()[..., L:], np.broadcast_to(f32(Xnew[:, [1, 0]]), (4, 7, 2)))
    # The code part of the samples is the posterior's: mean + sqrt(var) * eps with the stateless draw.
    eps = tf.random.stateless_normal([4, 7, L], tf.constant([2, 0], tf.int64), dtype=tf.float64).numpy()
    np.testing.assert_array_equal(samples.numpy()[..., :L], f32(f_mean.numpy() + np.sqrt(f_var.numpy()) * eps))
    np.testing.assert_allclose(model.predict_y(Xnew, (X, Y)).numpy(), mean.numpy(), rtol=1e-12)
    f_mean2, f_var2, gp_inputs = model.predict_latents(Xnew, (X, Y))
    np.testing.assert_array_equal(gp_inputs.numpy(), Xnew)
    np.testing.assert_allclose(f_mean2.numpy(), f_mean.numpy(), rtol=1e-12)


def test_many_latent_datasets_decode_their_own_inputs(rng):
    V, T = 3, 8
    X = np.stack([_inputs(rng, T) for _ in range(V)])  # [V, T, 2]
    means, variances = _sites(rng)
    Y = np.concatenate([np.arange(V * T).reshape(V, T, 1) % N, rng.normal(size=(V, T, L))], -1)
    model = _model(FixedSites(means, variances), PassThrough(), columns=[0])
    model.num_data = T
    terms = model.objective_terms((X, Y), training=False)
    np.testing.assert_array_equal(terms.decoded.numpy()[..., L:], f32(X[..., :1]))
    mean = model.predict_y(X[:, :4], (X, Y))
    np.testing.assert_array_equal(mean.numpy()[..., L:], f32(X[:, :4, :1]))


def _networks(seed):
    tf_keras.utils.set_random_seed(seed)
    return mlp_encoder(K, L, hidden_units=(8,)), mlp_decoder(L, K, hidden_units=(8,))


def test_a_decoder_that_ignores_the_columns_gives_the_numbers_of_the_plain_model(rng):
    """Same encoder, same decoder layers behind a slice that drops the columns: ELBO, gradients,
    predictions and imputations equal the plain model's (to float32 round-off: two graphs, and no
    bitwise promise across runs without op determinism)."""
    encoder, decoder = _networks(0)
    inputs = tf_keras.Input([L + 2])
    ignoring = tf_keras.Model(inputs, decoder(tf_keras.layers.Lambda(lambda t: t[:, :L])(inputs)))
    plain = _model(encoder, decoder)
    reading = _model(encoder, ignoring, columns=[0, 1])
    X = _inputs(rng)
    Y = rng.uniform(size=(N, K))
    data = (X[:12], Y[:12])
    np.testing.assert_allclose(plain.elbo(data, seed=1).numpy(), reading.elbo(data, seed=1).numpy(), rtol=1e-7)

    def gradients(model):
        with tf.GradientTape() as tape:
            loss = -model.elbo(data, seed=1)
        return tape.gradient(loss, decoder.trainable_variables + encoder.trainable_variables)

    for a, b in zip(gradients(plain), gradients(reading)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    Xnew = _inputs(rng, 5)
    for a, b in zip(
        plain.posterior((X, Y)).predict_y(Xnew, num_samples=2, seed=4),
        reading.posterior((X, Y)).predict_y(Xnew, num_samples=2, seed=4),
    ):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    mask = rng.uniform(size=Y.shape) > 0.3
    np.testing.assert_allclose(
        plain.impute((X, Y, mask)).numpy(), reading.impute((X, Y, mask)).numpy(), rtol=1e-6, atol=1e-7
    )


def test_gradients_reach_the_decoder_through_the_columns(rng):
    """A decoder that reads only the columns: the ELBO depends on the GP inputs through it."""
    encoder, _ = _networks(0)
    inputs = tf_keras.Input([L + 1])
    only_columns = tf_keras.Model(inputs, tf_keras.layers.Dense(K)(tf_keras.layers.Lambda(lambda t: t[:, L:])(inputs)))
    model = _model(encoder, only_columns, columns=[1])
    X = tf.Variable(_inputs(rng)[:10])
    Y = rng.uniform(size=(10, K))
    with tf.GradientTape() as tape:
        elbo = model.elbo((X, Y), seed=0)
    grads = tape.gradient(elbo, [X] + only_columns.trainable_variables)
    assert all(g is not None for g in grads)
    assert np.all(np.abs(grads[-2].numpy()) > 0)  # the Dense kernel [1, K] learns from the column


def test_an_unbuilt_decoder_is_built_for_the_wider_input():
    encoder, _ = _networks(0)
    decoder = tf_keras.Sequential([tf_keras.layers.Dense(K)])
    _model(encoder, decoder, columns=[0, 1])
    assert decoder.built and decoder.layers[0].kernel.shape == (L + 2, K)


@pytest.mark.parametrize(
    "columns, error, match",
    [
        ([2], ValueError, "outside the 2 GP-input columns"),
        ([-3], ValueError, "outside"),
        ([0, 0], ValueError, "repeats"),
        (["a"], TypeError, "integer column indices"),
        ([True], TypeError, "integer column indices"),
        (1, TypeError, "sequence of column indices"),
    ],
)
def test_bad_columns_are_refused(columns, error, match):
    encoder, decoder = _networks(0)
    with pytest.raises(error, match=match):
        _model(encoder, decoder, columns=columns)


def test_negative_columns_count_from_the_end():
    encoder, decoder = _networks(0)
    model = _model(encoder, tf_keras.Sequential([tf_keras.layers.Dense(K)]), columns=[-1])
    assert model.decoder_gp_columns == (1,)


def test_export_serves_the_decoder_columns(rng, tmp_path):
    encoder, decoder = _networks(0)
    inputs = tf_keras.Input([L + 1])
    reading = tf_keras.Model(inputs, decoder(tf_keras.layers.Dense(L)(inputs)))
    model = _model(encoder, reading, columns=[1])
    X, Y = _inputs(rng), rng.uniform(size=(N, K))
    posterior = model.posterior((X, Y))
    posterior.export(str(tmp_path / "exported"))
    loaded = tf.saved_model.load(str(tmp_path / "exported"))
    Xnew = _inputs(rng, 5)
    # The exported graph and the eager call may round float32 differently (oneDNN kernels on
    # AVX-512 hosts: 6e-8 seen); a wrong column would be off by ~0.1.
    np.testing.assert_allclose(
        loaded.predict_y(tf.constant(Xnew))["mean"].numpy(), posterior.predict_y(Xnew).numpy(), rtol=1e-6, atol=1e-6
    )
