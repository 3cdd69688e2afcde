"""Edge cases of the SVGP-VAE: NaN pixels, empty batches, single-point batches,
duplicate auxiliary inputs, huge and tiny input scales.

Each case ends in either a correct result (checked against a numpy reference
built from the definitions, with ``np.linalg.solve``) or a clear error that
leaves the model unchanged. The one case where neither holds (inputs offset by
~1e8 lengthscales: GPflow's expanded squared distance) is ``xfail(strict=True)``
with the exact reason, so it fails the suite (XPASS) once fixed.
"""

import os

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae import amortized
from gpflow_svgpvae.training import GECO, train
from gpflow_svgpvae.training.step import training_step
from tests.conftest import make_tiny_model, tiny_data

JITTER = 1e-6  # the model's default


# ------------------------------------------------------------------ numpy reference
def np_se(A, B, lengthscale=1.0, variance=1.0):
    d = A[:, None, :] - B[None, :, :]  # differences (no expanded-square cancellation)
    return variance * np.exp(-0.5 * np.sum(d**2, -1) / lengthscale**2)


def np_inducing_posterior(Kmm, Kmb, means, variances, s):
    """Per channel l: Sigma = Kmm + s Kmb Lam Kbm, mu = s Kmm Sigma^-1 Kmb Lam y, A = Kmm Sigma^-1 Kmm."""
    mus, As = [], []
    for j in range(means.shape[1]):
        lam = 1.0 / variances[:, j]
        Sigma = Kmm + s * (Kmb * lam) @ Kmb.T
        mus.append(s * Kmm @ np.linalg.solve(Sigma, Kmb @ (lam * means[:, j])))
        As.append(Kmm @ np.linalg.solve(Sigma, Kmm))
    return np.stack(mus, 1), np.stack(As)  # [M, L], [L, M, M]


def np_kl(mu, A, Kmm):
    """sum_l KL(N(mu_l, A_l) || N(0, Kmm))."""
    M = Kmm.shape[0]
    total = 0.0
    for j in range(mu.shape[1]):
        total += 0.5 * (
            np.trace(np.linalg.solve(Kmm, A[j]))
            + mu[:, j] @ np.linalg.solve(Kmm, mu[:, j])
            - M
            + np.linalg.slogdet(Kmm)[1]
            - np.linalg.slogdet(A[j])[1]
        )
    return total


def np_predict(Kmm, Kmr, krr, mu, A):
    """Sparse predictive marginals K_rm Kmm^-1 mu and k_rr - Q_rr + K_rm Kmm^-1 A Kmm^-1 K_mr."""
    W = np.linalg.solve(Kmm, Kmr)  # Kmm^-1 K_mr  [M, R]
    mean = W.T @ mu
    var = np.stack([krr - np.sum(Kmr * W, 0) + np.sum(W * (A[j] @ W), 0) for j in range(mu.shape[1])], 1)
    return mean, var


def _model_parts(model):
    Z = model.inducing_variable.Z.numpy()
    ell = float(model.kernel.lengthscales.numpy())
    var = float(model.kernel.variance.numpy())
    Kmm = np_se(Z, Z, ell, var) + model.jitter * np.eye(len(Z))
    return Z, ell, var, Kmm


def _snapshot(model):
    return [v.numpy().copy() for v in model.variables]


def _unchanged(model, snapshot):
    return all(np.array_equal(a, v.numpy()) for a, v in zip(snapshot, model.variables))


def _finite(model):
    return all(np.all(np.isfinite(v.numpy())) for v in model.trainable_variables)


# ------------------------------------------------------------------- NaN pixels
def test_nan_pixels_are_a_clear_error_on_every_path():
    """One NaN pixel: the eager objective, ``posterior``, ``train`` and Keras ``fit`` raise
    an error naming Y, and a rejected step changes nothing (weights, optimiser step,
    Monte Carlo counter). (XLA: see the next test.)"""
    X, Y = tiny_data()
    Y = Y.copy()
    Y[3, 4] = np.nan  # first batch of 20
    model = make_tiny_model()
    snapshot = _snapshot(model)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Y \(observations\) contains NaN"):
        model.objective_terms((X[:20], Y[:20]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"contains NaN"):
        model.posterior((X, Y), batch_size=25)
    batches = tf.data.Dataset.from_tensor_slices((X, Y)).batch(20)
    optimizer = tf_keras.optimizers.Adam(1e-2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Y \(observations\) contains NaN"):
        train(model, batches, epochs=1, optimizer=optimizer, progress=False)
    assert _unchanged(model, snapshot) and int(optimizer.iterations.numpy()) == 0

    view = model.as_training_model(objective=GECO(0.02))
    view.compile(tf_keras.optimizers.Adam(1e-2))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Y \(observations\) contains NaN"):
        view.fit(batches, epochs=1, verbose=0)
    assert _unchanged(model, snapshot)


@pytest.fixture(scope="module")
def xla_nan_run(tmp_path_factory):
    """One XLA training epoch over data with a NaN pixel, checkpointing to a directory
    (shared by the two tests below: XLA compilation is the slow part)."""
    X, Y = tiny_data()
    Y = Y.copy()
    Y[23, 4] = np.nan  # second batch of 20
    checkpoint_dir = str(tmp_path_factory.mktemp("xla_nan"))
    model = make_tiny_model()
    try:
        train(
            model,
            tf.data.Dataset.from_tensor_slices((X, Y)).batch(20),
            epochs=1,
            optimizer=tf_keras.optimizers.Adam(1e-2),
            progress=False,
            jit_compile=True,
            checkpoint_dir=checkpoint_dir,
        )
    except Exception as error:  # noqa: BLE001 - inspected by the tests
        return error, checkpoint_dir
    return None, checkpoint_dir


def test_xla_nan_pixels_raise_at_the_end_of_the_epoch(xla_nan_run):
    """With XLA the per-step checks are compiled away; ``train`` raises FloatingPointError
    (naming the epoch and how to locate the cause) once the epoch's loss is non-finite."""
    error, _ = xla_nan_run
    assert isinstance(error, FloatingPointError)
    assert "non-finite in epoch 0" in str(error) and "rerun without XLA" in str(error)


def test_xla_nan_epoch_is_not_checkpointed(xla_nan_run):
    """No checkpoint holds weights reached through a non-finite loss (a restart would
    resume from them): the loop checks the loss before every save."""
    _, checkpoint_dir = xla_nan_run
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest is None:
        return  # nothing saved: fine
    restored = make_tiny_model(seed=9)
    tf.train.Checkpoint(model=restored).restore(latest).expect_partial()
    assert _finite(restored), f"{os.path.basename(latest)} holds non-finite weights"


def test_posterior_prediction_rejects_non_finite_inputs():
    """predict_f on NaN/inf query inputs is an error, as non-finite X is in the objective."""
    X, Y = tiny_data()
    posterior = make_tiny_model().posterior((X, Y))
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="NaN|inf|finite"):
        posterior.predict_f(np.array([[np.nan]]))


# ------------------------------------------------------------------ empty batches
def test_empty_batches_raise_and_change_nothing():
    """An empty batch has no ELBO estimate (s = N/0): every entry point refuses it and
    no variable changes (the messages: next test)."""
    X, Y = tiny_data()
    model = make_tiny_model()
    snapshot = _snapshot(model)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        model.objective_terms((X[:0], Y[:0]))
    with pytest.raises(ValueError, match="empty dataset"):
        model.posterior((X[:0], Y[:0]))
    # a dataset whose first batch is empty
    batches = tf.data.Dataset.from_tensor_slices((X, Y)).batch(20)
    with_empty = batches.take(1).map(lambda x, y: (x[:0], y[:0])).concatenate(batches)
    optimizer = tf_keras.optimizers.Adam(1e-2)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        train(model, with_empty, epochs=1, optimizer=optimizer, progress=False)
    assert _unchanged(model, snapshot) and int(optimizer.iterations.numpy()) == 0
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        train(model, (X[:0], Y[:0]), batch_size=10, epochs=1, progress=False)


@pytest.mark.parametrize("entry", ["objective_terms", "inducing_posterior", "train_arrays"])
def test_empty_batch_error_says_empty(entry):
    """The error for an empty batch or data set says so (not a Cholesky failure)."""
    X, Y = tiny_data()
    model = make_tiny_model()
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="(?i)empty|no points|zero points"):
        if entry == "objective_terms":
            model.objective_terms((X[:0], Y[:0]))
        elif entry == "inducing_posterior":
            model.inducing_posterior(X[:0], Y[:0])
        else:
            train(model, (X[:0], Y[:0]), batch_size=10, epochs=1, progress=False)


# -------------------------------------------------------------- single-point batch
def test_single_point_batch_matches_numpy():
    """b = 1: q(u) with s = N, the KL in the ELBO, and (s = 1) the predictive of the
    one-point posterior equal the numpy formulas; a training step on one point works."""
    X, Y = tiny_data()
    model = make_tiny_model()
    N = model.num_data
    x, y = X[7:8], Y[7:8]
    means, variances = (t.numpy() for t in model.encode(y, training=False))
    Z, ell, var, Kmm = _model_parts(model)
    Kmb = np_se(Z, x, ell, var)

    mu, A = np_inducing_posterior(Kmm, Kmb, means, variances, s=N / 1)
    q_mu, q_sqrt = model.inducing_posterior(x, y, num_data=N)
    np.testing.assert_allclose(q_mu.numpy(), mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(q_sqrt.numpy() @ np.swapaxes(q_sqrt.numpy(), -1, -2), A, rtol=1e-7, atol=1e-10)
    terms = model.objective_terms((x, y), training=False)
    np.testing.assert_allclose(float(terms.kl), np_kl(mu, A, Kmm), rtol=1e-7)
    assert float(terms.scale) == N and np.isfinite(float(terms.elbo()))

    mu1, A1 = np_inducing_posterior(Kmm, Kmb, means, variances, s=1.0)
    Xnew = np.linspace(-1.0, 11.0, 7)[:, None]
    mean, variance = model.posterior((x, y)).predict_f(Xnew)
    ref_mean, ref_var = np_predict(Kmm, np_se(Z, Xnew, ell, var), np.full(len(Xnew), var), mu1, A1)
    # (the posterior encodes in a tf.function: float32 encoder round-off differs from eager by ~1e-7)
    np.testing.assert_allclose(mean.numpy(), ref_mean, rtol=2e-6, atol=1e-9)
    np.testing.assert_allclose(variance.numpy(), ref_var, rtol=2e-6, atol=1e-9)

    optimizer, geco = tf_keras.optimizers.Adam(1e-2), GECO(0.02)
    logs = tf.function(lambda b: training_step(model, geco, optimizer, b))((tf.constant(x), tf.constant(y)))
    assert np.isfinite(float(logs["loss"])) and _finite(model) and int(optimizer.iterations.numpy()) == 1


# ------------------------------------------------------- duplicate auxiliary inputs
def test_duplicate_inputs_equal_one_point_with_combined_precision(rng):
    """Sites (y1, v1), (y2, v2) at the same x give exactly the posterior of one site at x
    with precision 1/v1 + 1/v2 and mean (y1/v1 + y2/v2) / (1/v1 + 1/v2) (s = 1),
    checked in numpy and through the package (several duplicated points at once)."""
    kernel = gpflow.kernels.SquaredExponential(lengthscales=1.3, variance=0.8)
    Z = np.linspace(0, 5, 5)[:, None]
    x = np.array([[0.7], [2.2], [4.1]])
    L = 2
    m1, m2 = rng.normal(size=(3, L)), rng.normal(size=(3, L))
    v1, v2 = rng.uniform(0.1, 2.0, size=(3, L)), rng.uniform(0.1, 2.0, size=(3, L))
    lam = 1 / v1 + 1 / v2
    m_comb, v_comb = (m1 / v1 + m2 / v2) / lam, 1 / lam

    Kmm = np_se(Z, Z, 1.3, 0.8) + JITTER * np.eye(5)
    dup = np_inducing_posterior(Kmm, np_se(Z, np.r_[x, x], 1.3, 0.8), np.r_[m1, m2], np.r_[v1, v2], s=1.0)
    one = np_inducing_posterior(Kmm, np_se(Z, x, 1.3, 0.8), m_comb, v_comb, s=1.0)
    np.testing.assert_allclose(dup[0], one[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dup[1], one[1], rtol=1e-9, atol=1e-12)

    q_dup = amortized.amortized_inducing_posterior(kernel, Z, np.r_[x, x], np.r_[m1, m2], np.r_[v1, v2], num_data=6)
    q_one = amortized.amortized_inducing_posterior(kernel, Z, x, m_comb, v_comb, num_data=3)
    for a, b in zip(q_dup, q_one):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(q_dup[0].numpy(), one[0], rtol=1e-8, atol=1e-11)
    A_pkg = q_dup[1].numpy() @ np.swapaxes(q_dup[1].numpy(), -1, -2)
    np.testing.assert_allclose(A_pkg, one[1], rtol=1e-7, atol=1e-11)


def test_duplicated_images_in_the_model():
    """Through the model: the same image twice at the same input is one site with half
    the variance (the encoder gives identical sites), for the posterior and the KL."""
    X, Y = tiny_data()
    model = make_tiny_model()
    x, y = X[:10], Y[:10]
    means, variances = (t.numpy() for t in model.encode(y, training=False))
    Z, ell, var, Kmm = _model_parts(model)
    q_mu, q_sqrt = model.inducing_posterior(np.r_[x, x], np.r_[y, y])  # s = 1
    mu, A = np_inducing_posterior(Kmm, np_se(Z, x, ell, var), means, variances / 2, s=1.0)
    np.testing.assert_allclose(q_mu.numpy(), mu, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(q_sqrt.numpy() @ np.swapaxes(q_sqrt.numpy(), -1, -2), A, rtol=1e-7, atol=1e-10)
    # and with the ELBO's scale s = N/b for the batch of 20 (= the batch of 10 with N/20 * 2 = N/10 weight)
    kl_dup = float(model.prior_kl(np.r_[x, x], np.r_[y, y]))
    mu_s, A_s = np_inducing_posterior(Kmm, np_se(Z, x, ell, var), means, variances / 2, s=model.num_data / 20)
    np.testing.assert_allclose(kl_dup, np_kl(mu_s, A_s, Kmm), rtol=1e-7)


def test_duplicate_inducing_inputs_need_jitter():
    """Duplicate inducing inputs make Kmm singular: with the default jitter the ELBO is
    finite; with jitter = 0 the Cholesky error names Kuu and the fix."""
    X, Y = tiny_data()
    model = make_tiny_model()
    model.inducing_variable.Z.assign(np.r_[np.linspace(0, 10, 3), np.linspace(0, 10, 3)][:, None])
    assert np.isfinite(float(model.elbo((X[:20], Y[:20]))))
    strict = make_tiny_model(jitter=0.0)
    strict.inducing_variable.Z.assign(model.inducing_variable.Z.numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition of Kuu.*jitter"):
        strict.elbo((X[:20], Y[:20]))


# ----------------------------------------------------------------- input scales
@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_tiny_and_huge_input_scales_are_exact(scale):
    """Scaling X, Z and the lengthscale together changes nothing (float64): q(u), the KL
    and predictions agree with the unscaled model to ~1e-14."""
    X, Y = tiny_data()
    base = make_tiny_model()
    scaled = make_tiny_model()
    scaled.kernel.lengthscales.assign(scale)
    scaled.inducing_variable.Z.assign(base.inducing_variable.Z.numpy() * scale)
    for a, b in zip(base.inducing_posterior(X, Y), scaled.inducing_posterior(X * scale, Y)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(scaled.prior_kl(X * scale, Y)), float(base.prior_kl(X, Y)), rtol=1e-10)
    Xnew = np.linspace(0, 10, 5)[:, None]
    for a, b in zip(base.posterior((X, Y)).predict_f(Xnew), scaled.posterior((X * scale, Y)).predict_f(Xnew * scale)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-12)


def test_data_far_from_inducing_points_give_the_prior():
    """Inputs 10^6 lengthscales away from every inducing point carry no information
    about u: q(u) = p(u) (KL = 0) and predictions equal the prior, as the exact
    formulas give (Kmb underflows to 0)."""
    X, Y = tiny_data()
    model = make_tiny_model()
    far = X + 1e6
    assert float(model.prior_kl(far, Y)) == 0.0
    assert np.isfinite(float(model.elbo((far[:20], Y[:20]))))
    mean, variance = model.posterior((far, Y)).predict_f(np.array([[0.0], [5.0]]))
    np.testing.assert_allclose(mean.numpy(), 0.0, atol=1e-12)
    np.testing.assert_allclose(variance.numpy(), float(model.kernel.variance.numpy()), rtol=1e-12)


def test_moderate_input_offsets_are_exact():
    """A common offset of 10^3 lengthscales on X and Z (stationary kernel) changes the
    posterior by < 1e-8: GPflow's expanded squared distance loses about
    offset^2 * 1e-16 (see the xfail below for large offsets)."""
    X, Y = tiny_data()
    base = make_tiny_model()
    shifted = make_tiny_model()
    shifted.inducing_variable.Z.assign(base.inducing_variable.Z.numpy() + 1e3)
    for a, b in zip(base.inducing_posterior(X, Y), shifted.inducing_posterior(X + 1e3, Y)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-8)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "silent wrong result: with X and Z offset by 1e8 lengthscales, GPflow's square_distance "
        "(|x|^2 + |z|^2 - 2 x.z) cancels catastrophically; q(u) and the KL are wrong by O(1) with no error "
        "(measured: KL off by ~125%). A fix could centre inputs before the kernel or detect |x|/lengthscale > ~1e6"
    ),
)
def test_huge_input_offset_is_exact_or_an_error():
    X, Y = tiny_data()
    base = make_tiny_model()
    shifted = make_tiny_model()
    shifted.inducing_variable.Z.assign(base.inducing_variable.Z.numpy() + 1e8)
    try:
        kl = float(shifted.prior_kl(X + 1e8, Y))
    except (ValueError, tf.errors.InvalidArgumentError):
        return  # a clear error is acceptable
    np.testing.assert_allclose(kl, float(base.prior_kl(X, Y)), rtol=1e-6)
