"""GECO's gradient against a hand computation: where its stop-gradient sits."""

import numpy as np
import tensorflow as tf

from gpflow_svgpvae.models.base import ELBOTerms
from gpflow_svgpvae.training import GECO


def _terms(decoded, kl_source, scale):
    kl = 3.0 * tf.reduce_sum(kl_source**2)  # dKL/dtheta = 6 theta
    return ELBOTerms(
        reconstruction=tf.constant(0.0, tf.float64), kl=kl, scale=scale, decoded=decoded, mask=None, num_replicas=1
    )


def test_geco_gradient_is_lambda_times_the_batch_constraint_gradient():
    """loss = KL/s + lambda (C + sg(C_ma - C)): its value is KL/s + lambda C_ma, but its gradient is
    that of KL/s + lambda C, the current batch's constraint (not (1 - alpha) lambda dC, which the
    moving average alone would give). lambda and C_ma get no gradient; lambda changes only in
    after_step, lambda <- clip(lambda exp(nu C_ma))."""
    rng = np.random.default_rng(4)
    Y = rng.uniform(size=(5, 6))
    kappa2, alpha, nu, scale = 0.01, 0.9, 0.5, tf.constant(4.0, tf.float64)
    geco = GECO(kappa2, alpha=alpha, nu=nu, lambda_init=2.0)
    theta = tf.Variable(rng.normal(size=3))
    lam, C_ma = 2.0, None
    for step in range(3):
        decoded = tf.Variable(Y + rng.normal(scale=0.3, size=Y.shape))
        with tf.GradientTape(persistent=True) as tape:
            loss, logs = geco.loss(_terms(decoded, theta, scale), tf.constant(Y))
        # by hand
        residual = decoded.numpy() - Y
        C = np.mean(residual**2) - kappa2
        C_ma = C if step == 0 else alpha * C_ma + (1 - alpha) * C
        kl = 3.0 * np.sum(theta.numpy() ** 2)
        np.testing.assert_allclose(loss.numpy(), kl / 4.0 + lam * C_ma, rtol=1e-12)
        np.testing.assert_allclose(logs["geco_constraint"].numpy(), C, rtol=1e-12)
        np.testing.assert_allclose(logs["geco_constraint_ma"].numpy(), C_ma, rtol=1e-12)
        np.testing.assert_allclose(logs["geco_lambda"].numpy(), lam, rtol=1e-12)
        np.testing.assert_allclose(tape.gradient(loss, decoded).numpy(), lam * 2 * residual / Y.size, rtol=1e-10)
        np.testing.assert_allclose(tape.gradient(loss, theta).numpy(), 6 * theta.numpy() / 4.0, rtol=1e-12)
        for state in (geco.lagrange_multiplier, geco.constraint_ma):
            assert tape.gradient(loss, state) is None  # non-trainable: no update through the loss
        np.testing.assert_allclose(geco.lagrange_multiplier.numpy(), lam)  # unchanged by loss()
        geco.after_step()
        lam = float(np.clip(lam * np.exp(nu * C_ma), 1e-6, 1e6))
        np.testing.assert_allclose(geco.lagrange_multiplier.numpy(), lam, rtol=1e-12)
    assert lam != 2.0


def test_geco_lambda_is_clipped_to_its_bounds():
    Y = np.zeros((2, 3))
    geco = GECO(0.01, nu=1.0, lambda_init=1.0, lambda_bounds=(0.5, 2.0))
    theta = tf.Variable(np.zeros(1))
    for _ in range(3):  # C = 4 - 0.01: lambda would grow by e^4 each step
        geco.loss(_terms(tf.constant(Y + 2.0), theta, tf.constant(1.0, tf.float64)), tf.constant(Y))
        geco.after_step()
    assert geco.lagrange_multiplier.numpy() == 2.0
    geco = GECO(1.0, alpha=0.0, lambda_init=1.0, lambda_bounds=(0.5, 2.0))
    for _ in range(3):  # C = -1: lambda shrinks
        geco.loss(_terms(tf.constant(Y), theta, tf.constant(1.0, tf.float64)), tf.constant(Y))
        geco.after_step()
    assert geco.lagrange_multiplier.numpy() == 0.5
