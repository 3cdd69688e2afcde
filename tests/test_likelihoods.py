"""Decoder likelihoods: GPflow Gaussian/Bernoulli adapters against scipy closed forms,
Parameter reuse, set_trainable, checkpoints, clear errors, and the package's own likelihoods."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras
from scipy import special, stats

import gpflow_svgpvae as gv
from gpflow_svgpvae.likelihoods import (
    Bernoulli,
    Gaussian,
    GPflowBernoulli,
    GPflowGaussian,
    as_likelihood,
)


def _has(variables, variable):
    return any(v is variable for v in variables)


# ----------------------------------------------------------------------------- Gaussian


def test_gpflow_gaussian_log_prob_matches_scipy_and_package_gaussian(rng):
    variance = 0.37
    Y = rng.normal(size=(5, 2, 3))  # images: log_prob sums over all pixels of a data point
    params = rng.normal(size=(5, 2, 3)).astype(np.float32)  # decoder output (float32 network)
    gpflow_lik = gpflow.likelihoods.Gaussian(variance=variance)
    lik = as_likelihood(gpflow_lik)
    assert isinstance(lik, GPflowGaussian) and lik.gpflow_likelihood is gpflow_lik

    got = lik.log_prob(Y, params)
    expected = stats.norm.logpdf(Y, loc=params.astype(np.float64), scale=np.sqrt(variance)).sum(axis=(1, 2))
    assert got.dtype == gpflow.default_float() and got.shape == (5,)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(got.numpy(), Gaussian(variance).log_prob(Y, params).numpy(), rtol=1e-12)
    np.testing.assert_array_equal(lik.mean(tf.constant(params)).numpy(), params)


def test_gpflow_gaussian_with_scale_uses_scale_squared(rng):
    Y, params = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    lik = as_likelihood(gpflow.likelihoods.Gaussian(scale=0.3))
    expected = stats.norm.logpdf(Y, loc=params, scale=0.3).sum(axis=1)
    np.testing.assert_allclose(lik.log_prob(Y, params).numpy(), expected, rtol=1e-10)


def test_gpflow_gaussian_sample_has_the_variance():
    lik = as_likelihood(gpflow.likelihoods.Gaussian(variance=0.25))
    params = tf.fill([1, 20000], tf.constant(2.0, tf.float64))
    draws = lik.sample(params, seed=tf.constant([1, 2])).numpy()
    assert abs(draws.mean() - 2.0) < 0.02 and abs(draws.std() - 0.5) < 0.02


def test_gpflow_gaussian_reuses_the_parameter_and_trains_it(rng):
    gpflow_lik = gpflow.likelihoods.Gaussian(variance=0.1, variance_lower_bound=0.05)
    lik = as_likelihood(gpflow_lik)
    assert lik.variance is gpflow_lik.variance  # the Parameter object itself (transform, lower bound)
    (variable,) = lik.trainable_variables
    assert variable is gpflow_lik.variance.unconstrained_variable

    # residuals of size ~1 >> sqrt(0.1): maximising log_prob must increase the variance
    Y, params = rng.normal(size=(8, 6)), np.zeros((8, 6))
    with tf.GradientTape() as tape:
        loss = -tf.reduce_sum(lik.log_prob(Y, params))
    (grad,) = tape.gradient(loss, lik.trainable_variables)
    before = gpflow_lik.variance.numpy()
    variable.assign_sub(0.01 * grad)
    assert gpflow_lik.variance.numpy() > before
    np.testing.assert_allclose(
        lik.log_prob(Y, params).numpy(), stats.norm.logpdf(Y, 0.0, np.sqrt(gpflow_lik.variance.numpy())).sum(axis=1)
    )

    # GPflow's lower bound still holds through the adapter
    variable.assign(-50.0)
    assert gpflow_lik.variance.numpy() >= 0.05
    assert np.all(np.isfinite(lik.log_prob(Y, params).numpy()))


def test_set_trainable_on_the_gpflow_likelihood_removes_it():
    gpflow_lik = gpflow.likelihoods.Gaussian(variance=0.1)
    lik = as_likelihood(gpflow_lik)
    assert len(lik.trainable_variables) == 1
    gpflow.set_trainable(gpflow_lik, False)
    assert lik.trainable_variables == ()
    assert _has(lik.variables, gpflow_lik.variance.unconstrained_variable)


def test_checkpoint_round_trip_restores_the_variance(tmp_path):
    gpflow_lik = gpflow.likelihoods.Gaussian(variance=0.3)
    lik = as_likelihood(gpflow_lik)
    path = tf.train.Checkpoint(likelihood=lik).save(str(tmp_path / "ckpt"))

    gpflow_lik.variance.assign(0.7)
    tf.train.Checkpoint(likelihood=lik).restore(path).assert_consumed()
    np.testing.assert_allclose(gpflow_lik.variance.numpy(), 0.3, rtol=1e-12)

    fresh = as_likelihood(gpflow.likelihoods.Gaussian(variance=1.0))
    tf.train.Checkpoint(likelihood=fresh).restore(path).assert_consumed()
    np.testing.assert_allclose(fresh.gpflow_likelihood.variance.numpy(), 0.3, rtol=1e-12)


# ----------------------------------------------------------------------------- Bernoulli

F_GRID = np.array([[-40.0, -5.0, -0.3, 0.0, 0.7, 6.0, 40.0]] * 2)
Y_GRID = np.array(
    [[0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0]]
)  # every |f| = 40 case with y = 0 and y = 1


def test_bernoulli_logistic_matches_log_expit_and_package_bernoulli():
    gpflow_lik = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)
    lik = as_likelihood(gpflow_lik)
    assert isinstance(lik, GPflowBernoulli) and lik.link == "logistic"

    per_pixel = Y_GRID * special.log_expit(F_GRID) + (1 - Y_GRID) * special.log_expit(-F_GRID)
    got = lik.log_prob(Y_GRID, F_GRID).numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, per_pixel.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(got, Bernoulli().log_prob(Y_GRID, F_GRID).numpy(), rtol=1e-12)
    np.testing.assert_allclose(lik.mean(tf.constant(F_GRID)).numpy(), special.expit(F_GRID), rtol=1e-12)

    # GPflow's own density for the same likelihood where it is accurate (moderate f)
    f, y = F_GRID[:, 1:-1].reshape(-1, 1), Y_GRID[:, 1:-1].reshape(-1, 1)
    own = gpflow_lik.log_prob(np.zeros_like(f), f, y).numpy()
    np.testing.assert_allclose(lik._pixel_log_prob(tf.constant(y), tf.constant(f)).numpy()[:, 0], own, rtol=1e-10)


def test_bernoulli_probit_matches_norm_logcdf_and_stays_finite():
    gpflow_lik = gpflow.likelihoods.Bernoulli()  # GPflow's default link: inv_probit
    lik = as_likelihood(gpflow_lik)
    assert lik.link == "probit"

    per_pixel = Y_GRID * stats.norm.logcdf(F_GRID) + (1 - Y_GRID) * stats.norm.logcdf(-F_GRID)
    got = lik.log_prob(Y_GRID, F_GRID).numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, per_pixel.sum(axis=1), rtol=1e-10)
    np.testing.assert_allclose(lik.mean(tf.constant(F_GRID)).numpy(), stats.norm.cdf(F_GRID), rtol=1e-10, atol=0)
    # log Phi(-40) = -804.6..., far below GPflow's jittered floor log(1e-3)
    np.testing.assert_allclose(lik.log_prob([[1.0]], [[-40.0]]).numpy(), stats.norm.logcdf(-40.0), rtol=1e-10)

    # GPflow's inv_probit is Phi squeezed into [1e-3, 1 - 1e-3]: same p up to 1e-3
    np.testing.assert_allclose(
        lik.mean(tf.constant(F_GRID)).numpy(), gpflow_lik.invlink(tf.constant(F_GRID)).numpy(), atol=1.01e-3
    )


@pytest.mark.parametrize("invlink", [tf.sigmoid, None])
def test_bernoulli_gradients_are_finite_at_large_f(invlink):
    gpflow_lik = gpflow.likelihoods.Bernoulli() if invlink is None else gpflow.likelihoods.Bernoulli(invlink=invlink)
    lik = as_likelihood(gpflow_lik)
    f = tf.constant(F_GRID)
    with tf.GradientTape() as tape:
        tape.watch(f)
        total = tf.reduce_sum(lik.log_prob(Y_GRID, f))
    grad = tape.gradient(total, f).numpy()
    assert np.all(np.isfinite(grad))
    # d/df log p(f) at f = -40, y = 1: phi(f) / Phi(f) ~ 40 (probit), 1 - sigmoid(f) ~ 1 (logistic)
    expected = np.exp(stats.norm.logpdf(-40.0) - stats.norm.logcdf(-40.0)) if invlink is None else special.expit(40.0)
    assert Y_GRID[1, 0] == 1.0 and F_GRID[1, 0] == -40.0
    assert grad[1, 0] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("invlink, p", [(tf.sigmoid, special.expit(0.5)), (None, stats.norm.cdf(0.5))])
def test_bernoulli_samples_have_the_mean(invlink, p):
    gpflow_lik = gpflow.likelihoods.Bernoulli() if invlink is None else gpflow.likelihoods.Bernoulli(invlink=invlink)
    lik = as_likelihood(gpflow_lik)
    draws = lik.sample(tf.fill([1, 20000], tf.constant(0.5, tf.float64)), seed=tf.constant([3, 4])).numpy()
    assert set(np.unique(draws)) <= {0.0, 1.0}
    assert abs(draws.mean() - p) < 0.015


# ----------------------------------------------------------------------------- what does not fit


@pytest.mark.parametrize(
    "gpflow_lik, name",
    [
        (gpflow.likelihoods.StudentT(), "StudentT"),
        (gpflow.likelihoods.Poisson(), "Poisson"),
    ],
)
def test_other_gpflow_likelihoods_raise_a_clear_type_error(gpflow_lik, name):
    with pytest.raises(TypeError) as info:
        as_likelihood(gpflow_lik)
    message = str(info.value)
    assert f"gpflow.likelihoods.{name} does not fit as a decoder likelihood" in message
    assert "closed-form per-pixel log density" in message
    assert "gpflow.likelihoods.Gaussian (constant scalar variance)" in message
    assert "gpflow.likelihoods.Bernoulli (invlink=tf.sigmoid or the default inv_probit)" in message


@pytest.mark.parametrize(
    "gpflow_lik, match",
    [
        (gpflow.likelihoods.Gaussian(variance=gpflow.functions.Linear()), "function of the GP inputs X"),
        (gpflow.likelihoods.Gaussian(variance=np.array([0.1, 0.2])), "one scalar shared by all pixels"),
        (gpflow.likelihoods.Bernoulli(invlink=lambda f: tf.exp(f) / (1 + tf.exp(f))), "logistic link.*probit link"),
        (gpflow.likelihoods.Softmax(3), "not a scalar"),
    ],
)
def test_gpflow_likelihoods_that_do_not_fit_say_why(gpflow_lik, match):
    with pytest.raises(TypeError, match=match):
        as_likelihood(gpflow_lik)


def test_strings_and_package_likelihoods_are_unchanged():
    gaussian = as_likelihood("Gaussian")
    assert type(gaussian) is Gaussian and gaussian.variance.numpy() == 1.0 and gaussian.trainable_variables == ()
    assert type(as_likelihood("bernoulli")) is Bernoulli
    own = Gaussian(0.2, trainable=True)
    assert as_likelihood(own) is own
    with pytest.raises(TypeError, match="likelihood must be"):
        as_likelihood("poisson")
    with pytest.raises(TypeError, match="likelihood must be"):
        as_likelihood(3)


# ----------------------------------------------------------------------------- end to end


def test_svgpvae_accepts_a_gpflow_gaussian_and_trains_its_variance(rng):
    num_data, num_pixels = 12, 4
    tf_keras.utils.set_random_seed(0)
    pixels = tf_keras.Input(shape=(num_pixels,))
    encoder = tf_keras.Model(
        pixels, gv.networks.GaussianSiteHead(num_latent_gps=1)(tf_keras.layers.Dense(4, "tanh")(pixels))
    )
    decoder = tf_keras.Sequential([tf_keras.layers.Dense(4, "tanh"), tf_keras.layers.Dense(num_pixels)])
    kernel = gpflow.kernels.SquaredExponential(lengthscales=2.0)
    Z = np.linspace(0, 10, 3)[:, None]
    gpflow_lik = gpflow.likelihoods.Gaussian(variance=0.1)
    model = gv.SVGPVAE(encoder, decoder, kernel, Z, gpflow_lik, num_data=num_data)

    assert model.likelihood.gpflow_likelihood is gpflow_lik
    variance_variable = gpflow_lik.variance.unconstrained_variable
    assert _has(model.trainable_variables, variance_variable)

    X = np.linspace(0, 10, num_data)[:, None]
    Y = rng.normal(size=(num_data, num_pixels))
    with tf.GradientTape() as tape:
        loss = model.training_loss((X, Y))
    grads = tape.gradient(loss, model.trainable_variables)
    assert np.isfinite(loss.numpy())
    before = gpflow_lik.variance.numpy()
    tf_keras.optimizers.Adam(0.05).apply_gradients(zip(grads, model.trainable_variables))
    assert gpflow_lik.variance.numpy() != before  # training the model trains that very Parameter

    gpflow.set_trainable(gpflow_lik, False)
    assert not _has(model.trainable_variables, variance_variable)


# ----------------------------------------------------------------------------- the package's own samplers


def test_package_gaussian_sample_moments_match_the_closed_form():
    """Per entry: mean = the decoder output, variance = sigma_y^2; checked on 40000 seeded draws of
    each of 4 different means, within 5 standard errors (se of a variance: sigma^2 sqrt(2 / n))."""
    variance, n = 0.3, 40000
    means = np.array([-2.0, 0.0, 0.5, 3.0])
    params = tf.constant(np.tile(means, (n, 1)))  # [n, 4]
    draws = Gaussian(variance).sample(params, seed=tf.constant([5, 6])).numpy()
    sd = np.sqrt(variance)
    np.testing.assert_array_less(np.abs(draws.mean(0) - means), 5 * sd / np.sqrt(n))
    np.testing.assert_array_less(np.abs(draws.var(0) - variance), 5 * variance * np.sqrt(2 / n))
    # Gaussian tails: the fourth central moment is 3 sigma^4 (5 standard errors: 8% of it here).
    np.testing.assert_allclose(((draws - means) ** 4).mean(0), 3 * variance**2, rtol=0.1)
    again = Gaussian(variance).sample(params, seed=tf.constant([5, 6])).numpy()
    np.testing.assert_array_equal(draws, again)  # seeded (the same op, the same process)
    assert np.mean(draws != Gaussian(variance).sample(params, seed=tf.constant([5, 7])).numpy()) > 0.99


def test_package_bernoulli_sample_moments_match_the_closed_form():
    """Draws are 0/1 with mean sigmoid(logit) per entry (5 standard errors); for 0/1 draws the
    mean fixes the distribution (the variance is p (1 - p))."""
    n = 40000
    logits = np.array([-3.0, -0.5, 0.0, 2.0])
    draws = Bernoulli().sample(tf.constant(np.tile(logits, (n, 1))), seed=tf.constant([8, 9])).numpy()
    p = special.expit(logits)
    assert set(np.unique(draws)) == {0.0, 1.0}
    np.testing.assert_array_less(np.abs(draws.mean(0) - p), 5 * np.sqrt(p * (1 - p) / n))
