"""The covariances of PeriodicLinear (gpflow_svgpvae.covariances) against GPflow's generic path, and
amortized.minibatch_posterior against written-out reference formulas."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow import covariances as gcov
from gpflow.inducing_variables import InducingPoints
from gpflow.kernels import Kernel, Product

from gpflow_svgpvae import amortized
from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.kernels import PeriodicLinear, periodic_linear_kernel

generic_Kuu = gcov.Kuu.dispatch(InducingPoints, Kernel)
generic_Kuf = gcov.Kuf.dispatch(InducingPoints, Kernel, object)


def _kernels():
    k1 = periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 5)), lengthscales=0.7, variance=1.3)
    k2 = PeriodicLinear(angle_dims=slice(0, 1), object_dims=slice(1, 5))
    k3 = PeriodicLinear(
        angle_dims=[0, 4], object_dims=[1, 2, 3], period=3.0, lengthscales=[0.5, 0.9], linear_variance=0.4
    )  # ARD over two angle columns
    return [k1, k2, k3]


def _data(seed=0, M=12, N=20, D=5):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((M, D))
    Z[:, 0] = rng.uniform(0, 2 * np.pi, M)
    X = rng.standard_normal((N, D))
    X[:, 0] = rng.uniform(0, 2 * np.pi, N)
    return Z, X


@pytest.mark.parametrize("index", range(3))
def test_periodic_linear_kuu_kuf_equal_gpflow_generic(index):
    kernel = _kernels()[index]
    assert isinstance(kernel, Product) and gcov.Kuu.dispatch(InducingPoints, type(kernel)) is not generic_Kuu
    Z, X = _data(index)
    iv = InducingPoints(Z)
    np.testing.assert_allclose(
        gcov.Kuu(iv, kernel, jitter=1e-6), generic_Kuu(iv, kernel, jitter=1e-6), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(gcov.Kuf(iv, kernel, X), generic_Kuf(iv, kernel, X), rtol=1e-12, atol=1e-12)
    Xb = X.reshape(4, 5, -1)  # leading dimensions
    np.testing.assert_allclose(gcov.Kuf(iv, kernel, Xb), generic_Kuf(iv, kernel, Xb), rtol=1e-12, atol=1e-12)
    # and a kernel evaluation by hand, from the formula
    angle, objects = kernel.periodic.active_dims, kernel.linear.active_dims
    base = kernel.periodic.base_kernel
    sines = np.sin(np.pi * (Z[:, None, angle] - X[None, :, angle]) / kernel.periodic.period.numpy())
    expected = base.variance.numpy() * np.exp(-0.5 * np.sum((sines / base.lengthscales.numpy()) ** 2, -1))
    expected = expected * (kernel.linear.variance.numpy() * Z[:, objects] @ X[:, objects].T)
    np.testing.assert_allclose(gcov.Kuf(iv, kernel, X), expected, rtol=1e-12, atol=1e-12)


def test_periodic_linear_covariance_gradients_equal_gpflow_generic():
    kernel = _kernels()[0]
    Z, X = _data(1)
    iv = InducingPoints(Z)
    Xv = tf.Variable(X)
    variables = list(kernel.trainable_variables) + list(iv.trainable_variables) + [Xv]

    def grads(fast):
        with tf.GradientTape() as tape:
            Kuu, Kuf = (gcov.Kuu, gcov.Kuf) if fast else (generic_Kuu, generic_Kuf)
            loss = tf.reduce_sum(tf.sin(Kuu(iv, kernel, jitter=1e-6))) + tf.reduce_sum(tf.cos(Kuf(iv, kernel, Xv)))
        return tape.gradient(loss, variables)

    for a, b in zip(grads(True), grads(False)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_gpflows_own_products_keep_gpflows_path():
    """Importing the package changes nothing for GPflow's kernels: a plain Periodic x Linear product
    (the same function as PeriodicLinear) dispatches to GPflow's generic Kuu/Kuf."""
    periodic = gpflow.kernels.Periodic(gpflow.kernels.SquaredExponential(active_dims=[0]), period=2 * np.pi)
    kernel = periodic * gpflow.kernels.Linear(active_dims=[1, 2, 3, 4])
    assert type(kernel) is Product
    assert gcov.Kuu.dispatch(InducingPoints, Product) is generic_Kuu
    assert gcov.Kuf.dispatch(InducingPoints, Product, object) is generic_Kuf
    Z, X = _data(2)
    iv = InducingPoints(Z)
    np.testing.assert_allclose(gcov.Kuf(iv, kernel, X), gcov.Kuf(iv, PeriodicLinear(), X), rtol=1e-12)


# --------------------------------------------------------------------------- the GP block of a step
def _reference_block(kernel, iv, X, means, variances, num_data, jitter, weights=None):
    """The formulas written out: GPflow's generic covariances, W broadcast to the channels,
    triangular solves for the mean, the KL (U^-1 against the identity) and the predictive."""
    Kmm = generic_Kuu(iv, kernel, jitter=jitter)[None]
    Kmb = generic_Kuf(iv, kernel, X)[None]
    Lm = tf.linalg.cholesky(Kmm)
    W = tf.linalg.triangular_solve(Lm, Kmb, lower=True)
    prec = 1.0 / variances
    if weights is not None:
        prec = prec * weights[:, None]
    weighted = W * tf.transpose(prec)[:, None, :]
    P = tf.matmul(weighted, W, transpose_b=True)
    r = tf.linalg.matvec(weighted, tf.transpose(means))
    s = tf.cast(num_data, tf.float64) / tf.cast(tf.shape(X)[0], tf.float64)
    B = tf.eye(P.shape[-1], dtype=tf.float64) + s * P
    U = tf.reverse(tf.linalg.cholesky(tf.reverse(B, [-2, -1])), [-2, -1])
    tmp = tf.linalg.triangular_solve(U, s * r[..., None], lower=False)
    wm = tf.linalg.triangular_solve(U, tmp, lower=False, adjoint=True)[..., 0]
    U_inv = tf.linalg.triangular_solve(U, tf.eye(P.shape[-1], batch_shape=[P.shape[0]], dtype=tf.float64), lower=False)
    M = tf.cast(P.shape[-1], tf.float64)
    kl = 0.5 * (
        tf.reduce_sum(U_inv**2, [-2, -1])
        + tf.reduce_sum(wm**2, -1)
        - M
        + 2 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(U)), -1)
    )
    mean = tf.linalg.matvec(W, wm, transpose_a=True)
    V = tf.linalg.triangular_solve(U, tf.broadcast_to(W, [P.shape[0]] + W.shape[1:]), lower=False)
    var = kernel(X, full_cov=False)[None] - tf.reduce_sum(W**2, -2) + tf.reduce_sum(V**2, -2)
    return tf.transpose(mean), tf.transpose(var), kl


@pytest.mark.parametrize("weighted, M, L", [(False, 32, 16), (True, 32, 16), (False, 48, 4)])
def test_table1_gp_block_equals_reference_values_and_gradients(weighted, M, L):
    """b = 256, m = 32, L = 16, Q = 8, periodic x linear kernel, ObjectVectors: the GP block of a
    training step (values and gradients of an ELBO-like loss) equals the reference formulas
    (M = 48 > 2 L: the per-channel products instead of the pairs)."""
    rng = np.random.default_rng(0)
    b, Q, n_obj, N = 256, 8, 60, 4050
    vectors = rng.standard_normal((n_obj, Q))
    table = ObjectVectors(n_obj, Q, num_view_features=1, initial_vectors=vectors)
    angles = 2 * np.pi * np.arange(16) / 16
    X_raw = np.stack([angles[rng.integers(0, 16, b)], rng.integers(0, n_obj, b).astype(float)], 1)
    Z = np.concatenate([np.repeat(angles, M // 16)[:, None], rng.standard_normal((M, Q))], 1)
    kernel = periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 1 + Q)))
    iv = InducingPoints(Z)
    means = tf.Variable(rng.standard_normal((b, L)))
    raw = tf.Variable(rng.standard_normal((b, L)))
    weights = tf.constant(rng.integers(0, 2, b).astype(float)) if weighted else None
    variables = (
        list(kernel.trainable_variables) + list(iv.trainable_variables) + list(table.trainable_variables) + [means, raw]
    )

    def run(reference):
        with tf.GradientTape() as tape:
            X = table(X_raw)
            variances = tf.nn.softplus(raw) + 1e-4
            if reference:
                mean, var, kl = _reference_block(kernel, iv, X, means, variances, N, 1e-6, weights)
            else:
                out = amortized.minibatch_posterior(kernel, iv, X, means, variances, N, 1e-6, weights=weights)
                mean, var, kl = out.mean, out.variance, out.kl
            loss = -0.5 * tf.reduce_sum((mean - 0.3) ** 2 + var) - tf.reduce_sum(kl)
        return [loss, mean, var, kl], tape.gradient(loss, variables)

    (values, grads), (ref_values, ref_grads) = run(False), run(True)
    for a, r in zip(values, ref_values):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10 * np.max(np.abs(r)))
    for a, r in zip(grads, ref_grads):
        a, r = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(r).numpy()
        np.testing.assert_allclose(a, r, rtol=1e-9, atol=1e-10 * np.max(np.abs(r)))


def test_object_vectors_without_in_graph_checks():
    table = ObjectVectors(5, 2, num_view_features=1, seed=0)
    unchecked = ObjectVectors(5, 2, num_view_features=1, seed=0, check_ids_in_graph=False)
    X = tf.constant([[0.1, 3.0], [0.2, 0.0]])
    np.testing.assert_array_equal(table(X), unchecked(X))

    def asserts(t):
        graph = tf.function(t.__call__).get_concrete_function(tf.TensorSpec([None, 2], tf.float32)).graph
        return [op for op in graph.get_operations() if op.type in ("Assert", "If", "StatelessIf")]

    assert len(asserts(table)) == 1
    assert asserts(unchecked) == []
    with pytest.raises(ValueError, match="object ids"):  # the check at the data boundary
        unchecked.check_inputs(np.array([[0.0, 5.0]]))
