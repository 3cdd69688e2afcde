"""Reference-value tests of gpflow_svgpvae.kernels against independent numpy formulas."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from gpflow_svgpvae.kernels import Cauchy, CosineLinear, log_spaced_lengthscales, periodic_linear_kernel


def np_cosine(A, B, variance=1.0):
    """variance * cos(angle) between rows of A and rows of B, written out with loops."""
    out = np.empty((A.shape[0], B.shape[0]))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            out[i, j] = variance * np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
    return out


# --------------------------------------------------------------------------- CosineLinear


def test_cosine_linear_matches_numpy_with_active_dims(rng):
    X = rng.standard_normal((7, 5))
    X2 = rng.standard_normal((4, 5))
    dims = [0, 2, 3]
    k = CosineLinear(variance=1.7, active_dims=dims)
    ref = np_cosine(X[:, dims], X2[:, dims], 1.7)
    ref_sym = np_cosine(X[:, dims], X[:, dims], 1.7)
    np.testing.assert_allclose(k(X, X2).numpy(), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(X).numpy(), ref_sym, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(X, full_cov=False).numpy(), np.diag(ref_sym), rtol=1e-12)
    np.testing.assert_allclose(k.K_diag(X[:, dims]).numpy(), 1.7 * np.ones(7), rtol=1e-12)
    assert k(X).dtype == tf.float64


def test_cosine_linear_slice_active_dims_and_batch(rng):
    X = rng.standard_normal((2, 6, 4))  # leading batch dimension
    k = CosineLinear(variance=0.5, active_dims=slice(1, 4))
    K = k(X).numpy()
    assert K.shape == (2, 6, 6)
    for b in range(2):
        np.testing.assert_allclose(K[b], np_cosine(X[b, :, 1:4], X[b, :, 1:4], 0.5), rtol=1e-12)


def test_cosine_linear_psd(rng):
    X = rng.standard_normal((60, 6))
    K = CosineLinear(variance=2.3)(X).numpy()
    np.testing.assert_allclose(K, K.T, atol=0)
    assert np.linalg.eigvalsh(K).min() >= -1e-10
    # rank <= D
    assert np.sum(np.linalg.eigvalsh(K) > 1e-8) <= 6


def test_cosine_linear_invariant_to_positive_rescaling(rng):
    X = rng.standard_normal((9, 3))
    X2 = rng.standard_normal((5, 3))
    a = rng.uniform(0.01, 100.0, size=(9, 1))  # a different positive factor per row
    b = rng.uniform(0.01, 100.0, size=(5, 1))
    k = CosineLinear(variance=1.3)
    np.testing.assert_allclose(k(a * X, b * X2).numpy(), k(X, X2).numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(1e-3 * X).numpy(), k(X).numpy(), rtol=1e-12, atol=1e-14)
    # a negative factor flips the sign of that row
    np.testing.assert_allclose(k(-X, X2).numpy(), -k(X, X2).numpy(), rtol=1e-12)


def test_cosine_linear_zero_vector_is_finite(rng):
    X = rng.standard_normal((4, 3))
    X[2] = 0.0
    X_tf = tf.constant(X)
    k = CosineLinear()
    with tf.GradientTape() as tape:
        tape.watch(X_tf)
        K = k(X_tf)
        loss = tf.reduce_sum(K)
    grad = tape.gradient(loss, X_tf).numpy()
    assert np.all(np.isfinite(K.numpy())) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(K.numpy()[2], 0.0, atol=1e-12)
    np.testing.assert_allclose(k.K_diag(X).numpy(), np.diag(K.numpy()), rtol=1e-14)
    assert k.K_diag(X).numpy()[2] == 0.0


def test_cosine_linear_rejects_ard_and_bad_epsilon():
    with pytest.raises(ValueError):
        CosineLinear(variance=[1.0, 2.0])
    with pytest.raises(ValueError):
        CosineLinear(epsilon=0.0)


def _central_difference(f, x, h=1e-6):
    """d f / d x by central differences, element by element (float64)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def test_cosine_linear_gradients_match_finite_differences(rng):
    """The gradient of a weighted sum of K with respect to the variance's unconstrained
    parameter and to the inputs agrees with central differences (float64)."""
    X = rng.standard_normal((5, 3))
    weights = rng.standard_normal((5, 5))
    k = CosineLinear(variance=2.0)
    raw = k.variance.unconstrained_variable
    X_tf = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(X_tf)
        s = tf.reduce_sum(weights * k(X_tf))
    g_raw, g_X = tape.gradient(s, raw).numpy(), tape.gradient(s, X_tf).numpy()

    def at_raw(value):
        original = raw.numpy()
        raw.assign(value)
        out = float(tf.reduce_sum(weights * k(X)))
        raw.assign(original)
        return out

    np.testing.assert_allclose(g_raw, _central_difference(at_raw, raw.numpy()), rtol=1e-6)
    np.testing.assert_allclose(
        g_X, _central_difference(lambda x: float(tf.reduce_sum(weights * k(x))), X), rtol=1e-5, atol=1e-8
    )
    assert np.abs(g_X).max() > 1e-2  # a non-trivial gradient


# --------------------------------------------------------------------------- periodic x linear


def np_periodic_linear(A, B, angle_col, obj_cols, var, lengthscale, period, lin_var):
    out = np.empty((A.shape[0], B.shape[0]))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            d = A[i, angle_col] - B[j, angle_col]
            per = var * np.exp(-0.5 * np.sin(np.pi * d / period) ** 2 / lengthscale**2)
            out[i, j] = per * (np.dot(A[i, obj_cols], B[j, obj_cols]) * lin_var)
    return out


def test_periodic_linear_matches_numpy(rng):
    Q = 4
    angles = rng.uniform(0, 2 * np.pi, size=(9, 1))
    X = np.concatenate([angles, rng.standard_normal((9, Q))], axis=1)
    X2 = np.concatenate([rng.uniform(-7, 7, size=(5, 1)), rng.standard_normal((5, Q))], axis=1)
    k = periodic_linear_kernel(
        angle_dims=[0],
        object_dims=slice(1, 1 + Q),
        lengthscales=0.7,
        variance=1.4,
        linear_variance=0.3,
    )
    obj = list(range(1, 1 + Q))
    ref = np_periodic_linear(X, X2, 0, obj, 1.4, 0.7, 2 * np.pi, 0.3)
    ref_sym = np_periodic_linear(X, X, 0, obj, 1.4, 0.7, 2 * np.pi, 0.3)
    np.testing.assert_allclose(k(X, X2).numpy(), ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(k(X).numpy(), ref_sym, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(k(X, full_cov=False).numpy(), np.diag(ref_sym), rtol=1e-12)
    # 2 pi periodic in the angle
    Xs = X.copy()
    Xs[:, 0] += 2 * np.pi * rng.integers(-3, 4, size=9)
    np.testing.assert_allclose(k(Xs, X2).numpy(), ref, rtol=1e-10, atol=1e-12)


def test_periodic_linear_angle_not_first_column(rng):
    # layout [object vector (3), angle]
    X = np.concatenate([rng.standard_normal((6, 3)), rng.uniform(0, 6, (6, 1))], axis=1)
    k = periodic_linear_kernel(angle_dims=[3], object_dims=[0, 1, 2], period=5.0, lengthscales=1.3)
    ref = np_periodic_linear(X, X, 3, [0, 1, 2], 1.0, 1.3, 5.0, 1.0)
    np.testing.assert_allclose(k(X).numpy(), ref, rtol=1e-12, atol=1e-13)


def test_periodic_linear_trainability():
    k = periodic_linear_kernel()
    periodic, linear = k.kernels
    assert not periodic.period.trainable
    np.testing.assert_allclose(periodic.period.numpy(), 2 * np.pi)
    assert not linear.variance.trainable
    assert periodic.base_kernel.lengthscales.trainable
    assert periodic.base_kernel.variance.trainable
    assert len(k.trainable_parameters) == 2


def test_periodic_linear_lengthscale_is_half_tfp_exp_sin_squared(rng):
    """Our kernel's periodic factor uses GPflow's convention, in which the lengthscale is half
    TFP's ExpSinSquared ``length_scale``:
    with object vectors of unit inner product the kernel is TFP's kernel at twice our lengthscale."""
    a = rng.uniform(0, 2 * np.pi, size=(7, 1))
    ell, variance = 0.8, 1.3
    X = np.c_[a, np.ones((7, 1))]  # [angle, object vector (1)]
    ours = periodic_linear_kernel(angle_dims=[0], object_dims=[1], lengthscales=ell, variance=variance)
    tfp_k = tfp.math.psd_kernels.ExpSinSquared(
        amplitude=np.float64(np.sqrt(variance)), length_scale=np.float64(2 * ell), period=np.float64(2 * np.pi)
    )
    np.testing.assert_allclose(ours(X).numpy(), tfp_k.matrix(a, a).numpy(), rtol=1e-12)
    wrong = tfp.math.psd_kernels.ExpSinSquared(np.float64(np.sqrt(variance)), np.float64(ell), np.float64(2 * np.pi))
    assert np.max(np.abs(ours(X).numpy() - wrong.matrix(a, a).numpy())) > 1e-2


# --------------------------------------------------------------------------------- Cauchy


def np_cauchy(A, B, variance, lengthscales):
    """variance / (1 + sum_d (a_d - b_d)^2 / l_d^2), written out with loops."""
    lengthscales = np.broadcast_to(np.asarray(lengthscales, np.float64), (A.shape[1],))
    out = np.empty((A.shape[0], B.shape[0]))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            out[i, j] = variance / (1.0 + np.sum((a - b) ** 2 / lengthscales**2))
    return out


@pytest.mark.parametrize("lengthscales", [0.7, [0.5, 2.0]], ids=["isotropic", "ard"])
def test_cauchy_matches_numpy(rng, lengthscales):
    X = rng.standard_normal((7, 2))
    X2 = rng.standard_normal((4, 2))
    k = Cauchy(variance=1.9, lengthscales=lengthscales)
    np.testing.assert_allclose(k(X, X2).numpy(), np_cauchy(X, X2, 1.9, lengthscales), rtol=1e-12)
    np.testing.assert_allclose(k(X).numpy(), np_cauchy(X, X, 1.9, lengthscales), rtol=1e-12)
    np.testing.assert_allclose(k(X, full_cov=False).numpy(), 1.9 * np.ones(7), rtol=1e-12)
    assert k(X).dtype == tf.float64
    assert len(k.trainable_parameters) == 2  # variance and lengthscales; the exponent is fixed
    # Polynomial tails: k(r) r^2 -> variance * l^2.
    far = k(np.array([[0.0, 0.0]]), np.array([[1e4, 0.0]])).numpy()[0, 0]
    l0 = np.atleast_1d(lengthscales)[0]
    np.testing.assert_allclose(far * 1e8, 1.9 * l0**2, rtol=1e-6)


def test_cauchy_is_rational_quadratic_with_alpha_one(rng):
    X = rng.uniform(0, 5, size=(9, 1))
    X2 = rng.uniform(0, 5, size=(3, 1))
    ell = 1.3
    cauchy = Cauchy(variance=0.8, lengthscales=ell)
    rq = gpflow.kernels.RationalQuadratic(variance=0.8, lengthscales=ell / np.sqrt(2.0), alpha=1.0)
    np.testing.assert_allclose(cauchy(X, X2).numpy(), rq(X, X2).numpy(), rtol=1e-12)
    np.testing.assert_allclose(cauchy(X).numpy(), rq(X).numpy(), rtol=1e-12)


def test_cauchy_batched_inputs_and_active_dims(rng):
    from gpflow_svgpvae.models.video import batched_cross_gram, batched_gram, batched_prior_variance

    X = rng.standard_normal((3, 5, 2))  # [V, T, D]
    k = Cauchy(variance=1.4, lengthscales=0.9, active_dims=[1])
    K = k(X).numpy()
    assert K.shape == (3, 5, 5)
    gram = batched_gram(k, X).numpy()  # [V, C = 1, T, T]
    Xnew = rng.standard_normal((3, 2, 2))
    cross = batched_cross_gram(k, X, Xnew).numpy()
    for v in range(3):
        np.testing.assert_allclose(K[v], np_cauchy(X[v, :, 1:], X[v, :, 1:], 1.4, 0.9), rtol=1e-12)
        np.testing.assert_allclose(gram[v, 0], K[v], rtol=1e-12)
        np.testing.assert_allclose(cross[v, 0], np_cauchy(X[v, :, 1:], Xnew[v, :, 1:], 1.4, 0.9), rtol=1e-12)
    np.testing.assert_allclose(batched_prior_variance(k, X).numpy(), 1.4 * np.ones((3, 5, 1)), rtol=1e-12)
    assert np.linalg.eigvalsh(K[0]).min() > 0  # positive definite for distinct inputs


def test_batched_prior_variance_has_one_column_per_channel_kernel(rng):
    """``[V, T, C]`` with C = 1 for a plain or ``SharedIndependent`` kernel (the channels share it) and
    C = L for ``SeparateIndependent``, each column the numpy k(x, x) of its own kernel."""
    from gpflow_svgpvae.models.video import batched_prior_variance

    X = rng.standard_normal((3, 5, 1))  # [V, T, D]
    variances = [0.7, 1.9, 2.5]
    separate = gpflow.kernels.SeparateIndependent([Cauchy(variance=v, lengthscales=1.1) for v in variances])
    got = batched_prior_variance(separate, X).numpy()
    np.testing.assert_allclose(got, np.broadcast_to(np.array(variances), (3, 5, 3)), rtol=1e-12)
    shared = gpflow.kernels.SharedIndependent(Cauchy(variance=1.3, lengthscales=1.1), output_dim=4)
    np.testing.assert_allclose(batched_prior_variance(shared, X).numpy(), 1.3 * np.ones((3, 5, 1)), rtol=1e-12)
    coregion = gpflow.kernels.LinearCoregionalization([Cauchy(), Cauchy()], W=np.ones((2, 2)))
    with pytest.raises(TypeError, match="Unsupported multi-output kernel"):
        batched_prior_variance(coregion, X)


def test_log_spaced_lengthscales_gives_one_matern_per_channel(rng):
    kernel = log_spaced_lengthscales(gpflow.kernels.Matern52, 4, 1.0, 8.0, variance=2.0)
    assert isinstance(kernel, gpflow.kernels.SeparateIndependent) and len(kernel.kernels) == 4
    np.testing.assert_allclose([float(k.lengthscales.numpy()) for k in kernel.kernels], [1.0, 2.0, 4.0, 8.0])
    X = rng.uniform(0, 10, size=(6, 1))
    r = np.abs(X - X.T)
    K_all = kernel.K(X, full_output_cov=False).numpy()
    assert K_all.shape == (4, 6, 6)  # [L, N, N]
    for ell, K in zip([1.0, 2.0, 4.0, 8.0], K_all):
        s = np.sqrt(5.0) * r / ell
        np.testing.assert_allclose(K, 2.0 * (1 + s + s**2 / 3) * np.exp(-s), rtol=1e-10)
    assert len(log_spaced_lengthscales(gpflow.kernels.SquaredExponential, 1, 3.0, 3.0).kernels) == 1
    for bad in [dict(num_latent_gps=0), dict(num_latent_gps=2.5), dict(shortest=0.0), dict(shortest=5.0, longest=2.0)]:
        with pytest.raises(ValueError):
            log_spaced_lengthscales(
                gpflow.kernels.Matern52, **{**dict(num_latent_gps=3, shortest=1.0, longest=4.0), **bad}
            )
