"""Tests of the GPPVAE low-rank prior term against dense references."""

import math

import gpflow
import numpy as np
import pytest
import scipy.stats
import tensorflow as tf
from check_shapes.exceptions import ShapeMismatchError

from gpflow_svgpvae.lowrank import (
    gp_term_for_hyperparameters,
    gppvae_kronecker_features,
    gppvae_taylor_surrogate,
    lowrank_gaussian_nll,
    lowrank_nll_gradient,
    rowwise_kronecker,
    taylor_linear_term,
)

F64 = gpflow.default_float()
# (N, H, L, alpha): includes H > N and H == N
SIZES = [(7, 3, 2, 0.3), (12, 12, 3, 1.7), (5, 9, 2, 0.05), (40, 6, 4, 1.0), (3, 20, 1, 2.5)]


def _problem(rng, N, H, L, alpha):
    Z = rng.normal(size=(N, L))
    V = rng.normal(size=(N, H)) / math.sqrt(H)
    return Z, V, alpha


def dense_nll(Z, V, alpha):
    """Reference: -sum_l log N(Z[:, l] | 0, V V^T + alpha I) with a dense Cholesky."""
    N = tf.shape(Z)[0]
    K = tf.linalg.matmul(V, V, transpose_b=True) + alpha * tf.eye(N, dtype=Z.dtype)
    Lk = tf.linalg.cholesky(K)
    A = tf.linalg.triangular_solve(Lk, Z, lower=True)
    n = tf.cast(N, Z.dtype)
    num_columns = tf.cast(tf.shape(Z)[1], Z.dtype)
    return 0.5 * tf.reduce_sum(tf.square(A)) + num_columns * (
        tf.reduce_sum(tf.math.log(tf.linalg.diag_part(Lk))) + 0.5 * n * math.log(2 * math.pi)
    )


def _grads(fn, Z, V, alpha):
    Zv, Vv, av = (tf.Variable(np.asarray(x, dtype=np.float64)) for x in (Z, V, alpha))
    with tf.GradientTape() as tape:
        value = fn(Zv, Vv, av)
    gZ, gV, ga = tape.gradient(value, [Zv, Vv, av], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return value.numpy(), gZ.numpy(), gV.numpy(), ga.numpy()


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


# ----------------------------------------------------------------------------- exact NLL


@pytest.mark.parametrize("N,H,L,alpha", SIZES)
def test_nll_value_matches_scipy(rng, N, H, L, alpha):
    Z, V, alpha = _problem(rng, N, H, L, alpha)
    K = V @ V.T + alpha * np.eye(N)
    expected = -sum(scipy.stats.multivariate_normal(mean=np.zeros(N), cov=K).logpdf(Z[:, j]) for j in range(L))
    value = lowrank_gaussian_nll(tf.constant(Z, F64), tf.constant(V, F64), alpha).numpy()
    assert value.dtype == np.float64
    np.testing.assert_allclose(value, expected, rtol=1e-9)


@pytest.mark.parametrize("N,H,L,alpha", SIZES)
def test_nll_gradients_match_dense_autodiff(rng, N, H, L, alpha):
    Z, V, alpha = _problem(rng, N, H, L, alpha)
    value, gZ, gV, ga = _grads(lowrank_gaussian_nll, Z, V, alpha)
    ref_value, rZ, rV, ra = _grads(dense_nll, Z, V, alpha)
    np.testing.assert_allclose(value, ref_value, rtol=1e-10)
    assert _rel(gZ, rZ) < 1e-8
    assert _rel(gV, rV) < 1e-8
    assert _rel(ga, ra) < 1e-8


@pytest.mark.parametrize("N,H,L,alpha", SIZES)
def test_closed_form_gradient_is_Kinv_Z(rng, N, H, L, alpha):
    Z, V, alpha = _problem(rng, N, H, L, alpha)
    G = lowrank_nll_gradient(tf.constant(Z, F64), tf.constant(V, F64), alpha).numpy()
    K = V @ V.T + alpha * np.eye(N)
    expected = scipy.linalg.cho_solve(scipy.linalg.cho_factor(K, lower=True), Z)
    assert _rel(G, expected) < 1e-9
    _, rZ, _, _ = _grads(dense_nll, Z, V, alpha)
    assert _rel(G, rZ) < 1e-9


def test_nll_accepts_gpflow_parameter_and_rejects_bad_shapes(rng):
    Z, V, alpha = _problem(rng, 6, 2, 3, 0.4)
    param = gpflow.Parameter(alpha, transform=gpflow.utilities.positive())
    value = lowrank_gaussian_nll(tf.constant(Z), tf.constant(V), param)
    np.testing.assert_allclose(value.numpy(), dense_nll(Z, V, alpha).numpy(), rtol=1e-10)
    with pytest.raises(ShapeMismatchError):
        lowrank_gaussian_nll(tf.constant(Z), tf.constant(V[:5]), alpha)


# ----------------------------------------------------------------------------- Taylor surrogate


def _surrogate_deviations(surrogate, Z, V, alpha):
    """Deviations of a candidate surrogate from the required behaviour."""
    value, gZ, gV, ga = _grads(surrogate, Z, V, alpha)
    ref_value, rZ, _, _ = _grads(dense_nll, Z, V, alpha)
    return {
        "value": abs(value - ref_value) / abs(ref_value),
        "grad_Z": _rel(gZ, rZ),
        "grad_V": float(np.max(np.abs(gV))),
        "grad_alpha": float(np.abs(ga)),
    }


def _surrogate_ok(dev):
    return dev["value"] < 1e-10 and dev["grad_Z"] < 1e-8 and dev["grad_V"] == 0.0 and (dev["grad_alpha"] == 0.0)


def _flipped_sign_surrogate(Z, V, alpha):
    G = tf.stop_gradient(lowrank_nll_gradient(Z, V, alpha))
    nll = tf.stop_gradient(lowrank_gaussian_nll(Z, V, alpha))
    return nll - tf.reduce_sum(G * (Z - tf.stop_gradient(Z)))


def _no_stop_gradient_surrogate(Z, V, alpha):
    G = lowrank_nll_gradient(tf.stop_gradient(Z), V, alpha)
    nll = lowrank_gaussian_nll(tf.stop_gradient(Z), V, alpha)
    return nll + tf.reduce_sum(G * (Z - tf.stop_gradient(Z)))


def _research_code_surrogate(Z, V, alpha):
    # both mistakes at once: flipped sign, coefficients not stopped
    G = lowrank_nll_gradient(tf.stop_gradient(Z), V, alpha)
    nll = lowrank_gaussian_nll(tf.stop_gradient(Z), V, alpha)
    return nll - tf.reduce_sum(G * (Z - tf.stop_gradient(Z)))


@pytest.mark.parametrize("N,H,L,alpha", SIZES)
def test_taylor_surrogate_value_and_gradients(rng, N, H, L, alpha):
    Z, V, alpha = _problem(rng, N, H, L, alpha)
    dev = _surrogate_deviations(gppvae_taylor_surrogate, Z, V, alpha)
    assert _surrogate_ok(dev), dev


@pytest.mark.parametrize("mutant", [_flipped_sign_surrogate, _no_stop_gradient_surrogate, _research_code_surrogate])
def test_surrogate_checks_catch_known_mistakes(rng, mutant):
    Z, V, alpha = _problem(rng, 10, 4, 3, 0.5)
    dev = _surrogate_deviations(mutant, Z, V, alpha)
    assert not _surrogate_ok(dev), dev


def test_surrogate_step_on_network_decreases_exact_nll(rng):
    """A gradient step through a (linear) encoder on the surrogate lowers the exact NLL."""
    N, D, L, H, alpha = 30, 5, 3, 4, 0.2
    X = tf.constant(rng.normal(size=(N, D)))
    W = tf.Variable(rng.normal(size=(D, L)))
    V = tf.constant(rng.normal(size=(N, H)))
    with tf.GradientTape() as tape:
        loss = gppvae_taylor_surrogate(X @ W, V, alpha)
    (gW,) = tape.gradient(loss, [W])
    before = dense_nll(X @ W, V, alpha).numpy()
    np.testing.assert_allclose(loss.numpy(), before, rtol=1e-10)
    step = 1e-4 / np.linalg.norm(gW.numpy())  # move W by 1e-4 in Euclidean norm
    W.assign_sub(step * gW)
    after = dense_nll(X @ W, V, alpha).numpy()
    assert after < before
    # first-order prediction of the decrease is accurate for a small step
    predicted = step * np.sum(gW.numpy() ** 2)
    np.testing.assert_allclose(before - after, predicted, rtol=1e-3)


def test_surrogate_plus_hyperparameter_term_has_exact_gradients(rng):
    Z, V, alpha = _problem(rng, 9, 5, 2, 0.7)
    _, gZ, gV, ga = _grads(
        lambda z, v, a: gppvae_taylor_surrogate(z, v, a) + gp_term_for_hyperparameters(z, v, a),
        Z,
        V,
        alpha,
    )
    _, rZ, rV, ra = _grads(dense_nll, Z, V, alpha)
    assert _rel(gZ, rZ) < 1e-8
    assert _rel(gV, rV) < 1e-8
    assert _rel(ga, ra) < 1e-8
    # the hyperparameter term alone: exact value, no gradient into Z
    value, hZ, _, _ = _grads(gp_term_for_hyperparameters, Z, V, alpha)
    np.testing.assert_allclose(value, dense_nll(Z, V, alpha).numpy(), rtol=1e-10)
    assert np.all(hZ == 0.0)


def test_minibatch_linear_term_gradient_is_rows_of_full_gradient(rng):
    Z, V, alpha = _problem(rng, 20, 6, 3, 0.5)
    G = lowrank_nll_gradient(tf.constant(Z), tf.constant(V), alpha)
    batch = np.array([3, 17, 0, 8])
    Zb = tf.Variable(Z[batch])
    with tf.GradientTape() as tape:
        term = taylor_linear_term(Zb, tf.gather(G, batch))
    np.testing.assert_allclose(tape.gradient(term, Zb).numpy(), G.numpy()[batch], rtol=0)
    _, rZ, _, _ = _grads(dense_nll, Z, V, alpha)
    assert _rel(G.numpy()[batch], rZ[batch]) < 1e-9


# ----------------------------------------------------------------------------- Kronecker features


def test_rowwise_kronecker_matches_numpy_kron(rng):
    A, B = rng.normal(size=(6, 3)), rng.normal(size=(6, 4))
    out = rowwise_kronecker(tf.constant(A), tf.constant(B)).numpy()
    expected = np.stack([np.kron(a, b) for a, b in zip(A, B)])
    np.testing.assert_array_equal(out.shape, (6, 12))
    np.testing.assert_allclose(out, expected, rtol=1e-15)


@pytest.mark.parametrize("per_point", [False, True])
def test_kronecker_features_give_product_kernel(rng, per_point):
    P, Q, num_views, N = 5, 3, 4, 25
    X = rng.normal(size=(P, Q))
    angles = np.linspace(0, 2 * np.pi, num_views, endpoint=False)
    Kview = np.exp(-2.0 * np.sin((angles[:, None] - angles[None, :]) / 2) ** 2) + 1e-6 * np.eye(num_views)
    Lv = np.linalg.cholesky(Kview)
    obj = rng.integers(0, P, size=N)
    view = rng.integers(0, num_views, size=N)
    if per_point:
        V = gppvae_kronecker_features(tf.constant(X[obj]), tf.constant(Lv), view)
    else:
        V = gppvae_kronecker_features(tf.constant(X), tf.constant(Lv), view, obj)
    V = V.numpy()
    assert V.shape == (N, Q * num_views)
    expected = (X @ X.T)[np.ix_(obj, obj)] * Kview[np.ix_(view, view)]
    np.testing.assert_allclose(V @ V.T, expected, rtol=1e-12, atol=1e-12)


def test_kronecker_features_with_low_rank_view_factor(rng):
    P, Q, num_views, R, N = 4, 2, 6, 2, 15
    X, F = rng.normal(size=(P, Q)), rng.normal(size=(num_views, R))
    obj, view = rng.integers(0, P, size=N), rng.integers(0, num_views, size=N)
    V = gppvae_kronecker_features(tf.constant(X), tf.constant(F), view, obj).numpy()
    assert V.shape == (N, Q * R)
    expected = (X @ X.T)[np.ix_(obj, obj)] * (F @ F.T)[np.ix_(view, view)]
    np.testing.assert_allclose(V @ V.T, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ShapeMismatchError):
        gppvae_kronecker_features(tf.constant(X), tf.constant(F), view, obj[:-1])
