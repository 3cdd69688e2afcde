"""The SVGP-VAE objective's gradient against central finite differences (float64, a tiny model)
with respect to the encoder's outputs (site means and variances), the kernel hyperparameters and
the inducing inputs, with the Monte Carlo draw held fixed (``elbo(data, seed=...)``)."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

import gpflow_svgpvae as gv


class TrainableSites(tf.Module):
    """An 'encoder' whose outputs are variables: the site means and variances of each point, looked
    up by the index in ``Y[:, 0]`` (float64 end to end)."""

    compute_dtype = tf.float64

    def __init__(self, means, variances):
        super().__init__()
        self.means = tf.Variable(means, dtype=tf.float64)
        self.variances = tf.Variable(variances, dtype=tf.float64)

    def __call__(self, Y):
        idx = tf.cast(Y[:, 0], tf.int32)
        return tf.gather(self.means, idx), tf.gather(self.variances, idx)


class Float64Decoder(tf.Module):
    """A small nonlinear decoder in float64: tanh(z W1) W2."""

    compute_dtype = tf.float64

    def __init__(self, rng, L, K):
        super().__init__()
        self.W1 = tf.Variable(rng.normal(size=(L, 4)), dtype=tf.float64)
        self.W2 = tf.Variable(rng.normal(size=(4, K)), dtype=tf.float64)

    def __call__(self, Z):
        return tf.matmul(tf.tanh(tf.matmul(tf.cast(Z, tf.float64), self.W1)), self.W2)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(11)
    N, b, L, K, M = 8, 5, 2, 3, 4
    X = np.sort(rng.uniform(0, 4, size=(N, 1)), axis=0)
    Y = np.c_[np.arange(N), rng.normal(size=(N, K - 1))]  # column 0: the point's index
    encoder = TrainableSites(rng.normal(size=(N, L)), rng.uniform(0.3, 1.0, size=(N, L)))
    kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=0.9)
    Z = np.linspace(0.2, 3.8, M)[:, None] + 0.05 * rng.normal(size=(M, 1))
    model = gv.SVGPVAE(
        encoder, Float64Decoder(rng, L, K), kernel, Z, gv.Gaussian(0.2), num_data=N, num_samples=3, seed=0
    )
    batch = (tf.constant(X[:b]), tf.constant(Y[:b]))
    return model, batch


def _gradient_check(model, batch, variable, h=1e-6):
    with tf.GradientTape() as tape:
        value = model.elbo(batch, seed=7)
    analytic = tape.gradient(value, variable)
    analytic = tf.convert_to_tensor(analytic).numpy()
    start = np.array(variable.numpy())
    numeric = np.zeros_like(start)
    evaluate = tf.function(lambda: model.elbo(batch, seed=7))  # one trace, many evaluations
    for i in np.ndindex(start.shape):
        for sign in (1.0, -1.0):
            shifted = start.copy()
            shifted[i] += sign * h
            variable.assign(shifted)
            numeric[i] += sign * float(evaluate()) / (2 * h)
    variable.assign(start)
    return analytic, numeric


@pytest.mark.parametrize("part", ["site means", "site variances", "kernel", "inducing inputs"])
def test_elbo_gradient_matches_central_differences(problem, part):
    model, batch = problem
    variables = {
        "site means": [model.encoder.means],
        "site variances": [model.encoder.variances],
        "kernel": [model.kernel.variance.unconstrained_variable, model.kernel.lengthscales.unconstrained_variable],
        "inducing inputs": [model.inducing_variable.Z.unconstrained_variable],
    }[part]
    for variable in variables:
        analytic, numeric = _gradient_check(model, batch, variable)
        assert np.max(np.abs(analytic)) > 1e-3, "a gradient this small checks nothing"
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6 * np.max(np.abs(numeric)))
    if part.startswith("site"):
        # Only the batch's points (the first 5) reach the bound.
        assert np.all(analytic[5:] == 0) and np.all(np.abs(analytic[:5]).sum(1) > 0)
