"""Tests of gpflow_svgpvae.auxiliary: object-vector tables, PCA/random init, inducing init."""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_svgpvae.auxiliary import (
    ObjectVectors,
    fit_gaussian,
    init_inducing_per_view,
    pca_object_vectors,
    random_object_vectors,
    split_id_column,
)
from gpflow_svgpvae.kernels import periodic_linear_kernel

# --------------------------------------------------------------------------- ObjectVectors


def test_lookup_equals_table_rows(rng):
    table = rng.standard_normal((6, 3))
    ov = ObjectVectors(6, 3, initial_vectors=table)
    ids = np.array([4, 0, 0, 5, 2])
    views = rng.standard_normal((5, 2))
    X = np.concatenate([views, ids[:, None].astype(np.float64)], axis=1)
    out = ov(X).numpy()
    assert out.dtype == np.float64 and out.shape == (5, 2 + 3)
    np.testing.assert_array_equal(out[:, :2], views)
    np.testing.assert_array_equal(out[:, 2:], table[ids])
    assert ov.vectors.dtype == tf.float64 and ov.vectors.trainable
    assert len(ov.trainable_variables) == 1


def test_id_column_first_int_input_and_float32(rng):
    table = rng.standard_normal((4, 2))
    ov = ObjectVectors(4, 2, id_column=0, num_view_features=2, initial_vectors=table)
    X = np.array([[3, 10, 20], [1, 11, 21]], dtype=np.int32)
    out = ov(X).numpy()
    np.testing.assert_array_equal(out, np.concatenate([[[10, 20], [11, 21]], table[[3, 1]]], 1))
    Xf = np.array([[2.0, 0.25, -1.5]], dtype=np.float32)
    np.testing.assert_allclose(ov(Xf).numpy(), [[0.25, -1.5, *table[2]]])
    assert ov.mapped_dims() == ([0, 1], [2, 3])


def test_batch_dims_and_tf_function(rng):
    ov = ObjectVectors(5, 3, seed=1)
    X = np.concatenate([rng.standard_normal((2, 4, 1)), rng.integers(0, 5, (2, 4, 1))], -1)
    out = tf.function(ov.__call__)(tf.constant(X)).numpy()
    assert out.shape == (2, 4, 4)
    np.testing.assert_array_equal(out[..., 1:], ov.vectors.numpy()[X[..., 1].astype(int)])


def test_gradient_only_for_used_rows_matches_finite_differences(rng):
    n_obj, Q = 7, 3
    table = rng.standard_normal((n_obj, Q))
    ov = ObjectVectors(n_obj, Q, initial_vectors=table)
    ids = np.array([1, 4, 4, 6, 1, 1])
    views = rng.standard_normal((6, 2))
    X = np.concatenate([views, ids[:, None]], axis=1)
    A = rng.standard_normal((2 + Q, 2 + Q))

    def np_loss(tab):
        Z = np.concatenate([views, tab[ids]], axis=1)
        return np.sum((Z @ A) ** 2) + np.sum(np.sin(Z))

    with tf.GradientTape() as tape:
        Z = ov(X)
        loss = tf.reduce_sum((Z @ A) ** 2) + tf.reduce_sum(tf.sin(Z))
    grad = tf.convert_to_tensor(tape.gradient(loss, ov.vectors.unconstrained_variable)).numpy()
    np.testing.assert_allclose(loss.numpy(), np_loss(table), rtol=1e-12)

    fd = np.zeros_like(table)
    h = 1e-6
    for i in range(n_obj):
        for q in range(Q):
            tp, tm = table.copy(), table.copy()
            tp[i, q] += h
            tm[i, q] -= h
            fd[i, q] = (np_loss(tp) - np_loss(tm)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)
    used = np.zeros(n_obj, bool)
    used[ids] = True
    assert np.all(np.abs(grad[used]).sum(1) > 0)
    assert np.all(grad[~used] == 0.0)


def test_bad_ids_and_widths_raise():
    ov = ObjectVectors(3, 2, num_view_features=1, seed=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="< num_objects=3"):
        ov(np.array([[0.0, 3.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=">= 0"):
        ov(np.array([[0.0, -1.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="integers"):
        ov(np.array([[0.0, 1.5]]))
    with pytest.raises(ValueError, match="columns"):
        ov(np.array([[0.0, 0.5, 1.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="< num_objects"):
        tf.function(ov.__call__)(tf.constant([[0.0, 7.0]]))
    with pytest.raises(ValueError, match="id_column"):
        ObjectVectors(3, 2, id_column=5)(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="initial_vectors"):
        ObjectVectors(3, 2, initial_vectors=np.zeros((3, 4)))


def test_check_ids_numpy():
    ov = ObjectVectors(4, 2, seed=0)
    np.testing.assert_array_equal(ov.check_ids(np.array([0.0, 3.0, 2.0])), [0, 3, 2])
    assert ov.check_ids(np.array([1, 2], np.int32)).dtype == np.int64
    for bad in ([4.0], [-1], [0.5]):
        with pytest.raises(ValueError, match="object ids"):
            ov.check_ids(np.array(bad))


def test_split_id_column(rng):
    X = rng.standard_normal((4, 5))
    views, ids = split_id_column(X, id_column=2)
    np.testing.assert_array_equal(views.numpy(), X[:, [0, 1, 3, 4]])
    np.testing.assert_array_equal(ids.numpy(), X[:, 2])


def test_mapped_inputs_and_inducing_inputs_share_kernel_space(rng):
    n_obj, Q = 5, 3
    ov = ObjectVectors(n_obj, Q, num_view_features=1, seed=2)
    angle_dims, obj_dims = ov.mapped_dims()
    k = periodic_linear_kernel(angle_dims=angle_dims, object_dims=obj_dims)
    Z = init_inducing_per_view(np.linspace(0, 2 * np.pi, 4, endpoint=False), 2, ov.vectors.numpy(), seed=0)
    X = np.stack([rng.uniform(0, 6, 10), rng.integers(0, n_obj, 10)], axis=1)
    weights = rng.standard_normal((8, 10))
    with tf.GradientTape() as tape:
        Kuf = k(Z, ov(X))
        s = tf.reduce_sum(weights * Kuf)
    assert Kuf.shape == (8, 10)
    grad = tf.convert_to_tensor(tape.gradient(s, ov.vectors.unconstrained_variable)).numpy()  # a gather: sparse

    def objective(table):
        return float(tf.reduce_sum(weights * k(Z, ObjectVectors(n_obj, Q, initial_vectors=table)(X))))

    table, h = ov.vectors.numpy(), 1e-6
    numeric = np.zeros_like(table)
    for i in np.ndindex(table.shape):
        step = np.zeros_like(table)
        step[i] = h
        numeric[i] = (objective(table + step) - objective(table - step)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    seen = np.isin(np.arange(n_obj), X[:, 1].astype(int))
    assert np.all(np.abs(grad[seen]).sum(1) > 0) and np.all(grad[~seen] == 0)  # only looked-up rows move


# --------------------------------------------------------------------------- initialisations


def _structured_data(rng, n=60, P=20):
    # low-rank signal with distinct variances plus small noise
    scales = np.array([5.0, 3.0, 2.0, 1.0, 0.5])
    W = rng.standard_normal((5, P))
    return (rng.standard_normal((n, 5)) * scales) @ W + 0.1 * rng.standard_normal((n, P)) + 3.0


def test_pca_scores_match_covariance_eigendecomposition(rng):
    Y = _structured_data(rng)
    Q = 4
    T = pca_object_vectors(Y.reshape(60, 4, 5), Q)  # image-shaped input is flattened
    assert T.shape == (60, Q) and T.dtype == np.float64
    C = np.cov(Y, rowvar=False)
    evals, evecs = np.linalg.eigh(C)
    order = np.argsort(evals)[::-1][:Q]
    ref = (Y - Y.mean(0)) @ evecs[:, order]
    for q in range(Q):
        sign = np.sign(np.dot(ref[:, q], T[:, q]))
        np.testing.assert_allclose(T[:, q], sign * ref[:, q], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(T.var(0, ddof=1), evals[order], rtol=1e-8)
    np.testing.assert_allclose(T.mean(0), 0.0, atol=1e-10)
    # deterministic; whitening gives unit variances
    np.testing.assert_array_equal(T, pca_object_vectors(Y, Q, seed=123))
    Tw = pca_object_vectors(Y, Q, whiten=True)
    np.testing.assert_allclose(np.cov(Tw, rowvar=False), np.eye(Q), atol=1e-10)
    with pytest.raises(ValueError):
        pca_object_vectors(Y, 61)
    # scale: one factor for all entries, RMS = scale (the raw and whitened scores alike)
    for whiten, base in ((False, T), (True, Tw)):
        Ts = pca_object_vectors(Y, Q, whiten=whiten, scale=0.1)
        np.testing.assert_allclose(np.sqrt(np.mean(Ts**2)), 0.1, rtol=1e-12)
        np.testing.assert_allclose(Ts / Ts[0, 0], base / base[0, 0], rtol=1e-10)
    for bad in (0.0, -0.1, np.nan):
        with pytest.raises(ValueError, match="scale"):
            pca_object_vectors(Y, Q, scale=bad)


def test_random_object_vectors():
    V = random_object_vectors(4000, 3, scale=1.5, seed=7)
    assert V.shape == (4000, 3) and V.dtype == np.float64
    np.testing.assert_allclose(V.std(0), 1.5, rtol=0.05)
    np.testing.assert_array_equal(V, random_object_vectors(4000, 3, scale=1.5, seed=7))
    # the defaults of the function and of an ObjectVectors table without initial vectors: sd 0.1
    np.testing.assert_allclose(random_object_vectors(4000, 3, seed=7), V / 15.0, rtol=1e-12)
    table = ObjectVectors(4000, 3, seed=7)
    np.testing.assert_allclose(table.vectors.numpy(), V / 15.0, rtol=1e-12)
    ov = ObjectVectors(4000, 3, init_scale=1.5, seed=7)
    np.testing.assert_array_equal(ov.vectors.numpy(), V)


def test_init_inducing_per_view_shapes_and_views(rng):
    obj = pca_object_vectors(_structured_data(rng), 8)
    angles = np.arange(16) * 2 * np.pi / 16
    Z = init_inducing_per_view(angles, 2, obj, seed=0)
    assert Z.shape == (32, 1 + 8) and Z.dtype == np.float64
    vals, counts = np.unique(Z[:, 0], return_counts=True)
    np.testing.assert_allclose(vals, angles)
    assert np.all(counts == 2)
    np.testing.assert_array_equal(Z[:, 0], np.repeat(angles, 2))
    # 2-D view features
    views2 = rng.standard_normal((3, 2))
    Z2 = init_inducing_per_view(views2, 5, obj, seed=1)
    assert Z2.shape == (15, 10)
    np.testing.assert_array_equal(Z2[:, :2], np.repeat(views2, 5, axis=0))
    np.testing.assert_array_equal(Z2, init_inducing_per_view(views2, 5, obj, seed=1))


def test_init_inducing_object_parts_follow_fitted_gaussian(rng):
    obj = pca_object_vectors(_structured_data(rng), 4)
    mean, cov = obj.mean(0), np.cov(obj, rowvar=False)
    Z = init_inducing_per_view(np.array([0.0, 1.0]), 20000, obj, seed=3)
    sampled = Z[:, 1:]
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(sampled.mean(0), mean, atol=0.03 * sd.max())
    corr_err = (np.cov(sampled, rowvar=False) - cov) / np.outer(sd, sd)
    assert np.abs(corr_err).max() < 0.05


def test_fit_gaussian_singular_covariance(rng):
    V = rng.standard_normal((3, 5))  # fewer objects than dimensions: rank-2 covariance
    mean, cov, chol = fit_gaussian(V)
    np.testing.assert_allclose(cov, np.cov(V, rowvar=False))
    np.testing.assert_allclose(chol @ chol.T, cov, atol=1e-6 * np.mean(np.diag(cov)))
    assert np.allclose(chol, np.tril(chol))
