"""The GP-VAE family on batches of videos: reference values and exact identities.

Latent datasets (site means/variances) are random arrays in float64, so every
identity is tested on "the same encoder outputs" without a network in the way;
the end-to-end ELBOs are compared with a shared encoder and the same sampler seed.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_svgpvae.models.gpvae import GPVAE
from gpflow_svgpvae.models.hensman_gpvae import HensmanGPVAE, whitened_gauss_kl
from gpflow_svgpvae.models.sparse_gpvae import SparseGPVAE
from gpflow_svgpvae.models.svgpvae import SVGPVAE
from gpflow_svgpvae.models.vae import VAE
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder

V, T, K, L = 4, 30, 16, 2
TIMES = np.arange(T, dtype=np.float64)


def _rbf(a, b, lengthscale, variance=1.0):
    return variance * np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / lengthscale**2)


def _latent_dataset(rng, num_videos=V, num_frames=T):
    means = rng.normal(size=(num_videos, num_frames, L))
    variances = rng.uniform(0.05, 2.0, size=(num_videos, num_frames, L))
    X = np.broadcast_to(TIMES[None, :num_frames, None], (num_videos, num_frames, 1)).copy()
    return X, means, variances


def _networks(seed=0):
    tf.random.set_seed(seed)
    return mlp_encoder(K, L, hidden_units=(8,)), mlp_decoder(L, K, hidden_units=(8,))


def _videos(rng, num_videos=V, num_frames=T):
    X = np.broadcast_to(TIMES[None, :num_frames, None], (num_videos, num_frames, 1)).copy()
    Y = (rng.random((num_videos, num_frames, K)) < 0.3).astype(np.float32)
    return X, Y


def _kernel(lengthscale=2.0, variance=1.0):
    return gpflow.kernels.SquaredExponential(variance=variance, lengthscales=lengthscale)


def _numpy_exact(K_, y, v):
    """Exact GP regression with heteroscedastic noise (numpy, dense solves)."""
    Kn = K_ + np.diag(v)
    mean = K_ @ np.linalg.solve(Kn, y)
    cov = K_ - K_ @ np.linalg.solve(Kn, K_)
    sign, logdet = np.linalg.slogdet(Kn)
    assert sign > 0
    log_z = -0.5 * (len(y) * np.log(2 * np.pi) + logdet + y @ np.linalg.solve(Kn, y))
    return mean, cov, log_z


def _expected_log_site(m, s, y, v):
    return -0.5 * (np.log(2 * np.pi * v) + ((m - y) ** 2 + s) / v)


# ------------------------------------------------------------------ exact GP-VAE
@pytest.mark.parametrize("separate", [False, True])
def test_exact_gpvae_matches_numpy_gp_regression(rng, separate):
    X, means, variances = _latent_dataset(rng)
    lengthscales = [2.0, 0.8]
    kernel = (
        gpflow.kernels.SeparateIndependent([_kernel(lengthscale) for lengthscale in lengthscales])
        if separate
        else _kernel(2.0, variance=1.3)
    )
    enc, dec = _networks()
    model = GPVAE(enc, dec, kernel, sequence_length=T, num_latent_gps=L)
    post = model.latent_posterior(tf.constant(X), tf.constant(means), tf.constant(variances), num_data=T)
    Xnew = np.linspace(-2.0, 31.0, 11)
    pred_mean, pred_var = model._predict_at(
        tf.constant(X),
        tf.constant(means),
        tf.constant(variances),
        tf.constant(np.broadcast_to(Xnew[None, :, None], (V, 11, 1)).copy()),
    )
    for v in range(V):
        kl_ref = 0.0
        for j in range(L):
            ls, var = (lengthscales[j], 1.0) if separate else (2.0, 1.3)
            K_ = _rbf(TIMES, TIMES, ls, var)
            mean, cov, log_z = _numpy_exact(K_, means[v, :, j], variances[v, :, j])
            np.testing.assert_allclose(post.mean[v, :, j], mean, rtol=1e-8, atol=1e-8)
            np.testing.assert_allclose(post.variance[v, :, j], np.diag(cov), rtol=1e-7, atol=1e-9)
            cross = _expected_log_site(mean, np.diag(cov), means[v, :, j], variances[v, :, j]).sum()
            kl_ref += cross - log_z
            # prediction at new times
            Kn = K_ + np.diag(variances[v, :, j])
            Ksn = _rbf(Xnew, TIMES, ls, var)
            np.testing.assert_allclose(pred_mean[v, :, j], Ksn @ np.linalg.solve(Kn, means[v, :, j]), atol=1e-8)
            np.testing.assert_allclose(
                pred_var[v, :, j], var - np.einsum("ij,ji->i", Ksn, np.linalg.solve(Kn, Ksn.T)), atol=1e-8
            )
        np.testing.assert_allclose(post.kl[v], kl_ref, rtol=1e-9)


def test_exact_gpvae_prior_term_is_the_kl_divergence(rng):
    """KL(q(z) || p(z)) with q the exact posterior, from the full covariances (well conditioned K)."""
    X, means, variances = _latent_dataset(rng)
    enc, dec = _networks()
    model = GPVAE(enc, dec, _kernel(1.0), sequence_length=T)
    post = model.latent_posterior(tf.constant(X), tf.constant(means), tf.constant(variances), num_data=T)
    K_ = _rbf(TIMES, TIMES, 1.0) + 1e-6 * np.eye(T)
    for v in range(V):
        kl = 0.0
        for j in range(L):
            Kn = K_ + np.diag(variances[v, :, j])
            mean = K_ @ np.linalg.solve(Kn, means[v, :, j])
            cov = K_ - K_ @ np.linalg.solve(Kn, K_)
            kl += 0.5 * (
                np.trace(np.linalg.solve(K_, cov))
                + mean @ np.linalg.solve(K_, mean)
                - T
                + np.linalg.slogdet(K_)[1]
                - np.linalg.slogdet(cov)[1]
            )
        np.testing.assert_allclose(post.kl[v], kl, rtol=1e-4)  # jitter 1e-6 in the reference


def test_exact_gpvae_log_marginal_likelihood(rng):
    X, Y = _videos(rng)
    enc, dec = _networks()
    model = GPVAE(enc, dec, _kernel(2.0), "bernoulli", sequence_length=T)
    log_z = model.log_marginal_likelihood((X, Y)).numpy()
    means, variances = (t.numpy() for t in model.encode_videos(tf.constant(Y)))
    for v in range(V):
        for j in range(L):
            ref = _numpy_exact(_rbf(TIMES, TIMES, 2.0), means[v, :, j], variances[v, :, j])[2]
            np.testing.assert_allclose(log_z[v, j], ref, rtol=1e-10)


# ------------------------------------------------------------- SVGP-VAE identities
@pytest.mark.parametrize("jitter", [1e-6, 1e-9])
def test_svgpvae_with_frame_times_as_inducing_points_is_exact(rng, jitter):
    """U = the 30 frame times, b = N: SVGP-VAE posterior and bound = exact GP-VAE (up to the jitter)."""
    X, means, variances = _latent_dataset(rng)
    enc, dec = _networks()
    exact = GPVAE(enc, dec, _kernel(2.0), sequence_length=T)
    sparse = SVGPVAE(enc, dec, _kernel(2.0), TIMES[:, None], sequence_length=T, jitter=jitter)
    args = (tf.constant(X), tf.constant(means), tf.constant(variances))
    a, b = exact.latent_posterior(*args, num_data=T), sparse.latent_posterior(*args, num_data=T)
    tol = 1e3 * jitter  # the deviation is linear in the jitter (measured ~70 x jitter)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=tol, rtol=tol)


def test_svgpvae_elbo_with_frame_times_equals_exact_gpvae_elbo(rng):
    """End to end with a shared encoder/decoder and the same sampler seed."""
    X, Y = _videos(rng)
    enc, dec = _networks()
    exact = GPVAE(enc, dec, _kernel(2.0), "bernoulli", sequence_length=T, seed=3)
    sparse = SVGPVAE(enc, dec, _kernel(2.0), TIMES[:, None], "bernoulli", sequence_length=T, jitter=1e-9, seed=3)
    e, s = exact.objective_terms((X, Y)), sparse.objective_terms((X, Y))
    np.testing.assert_allclose(e.elbo(), s.elbo(), rtol=1e-7)
    np.testing.assert_allclose(e.kl, s.kl, rtol=1e-6)
    fe, fs = exact.predict_f(None, (X, Y)), sparse.predict_f(None, (X, Y))
    np.testing.assert_allclose(fe[0], fs[0], atol=1e-6)


def _numpy_titsias(Kmm, Kmn, kdiag, y, v):
    Q = Kmn.T @ np.linalg.solve(Kmm, Kmn)
    C = Q + np.diag(v)
    sign, logdet = np.linalg.slogdet(C)
    log_n = -0.5 * (len(y) * np.log(2 * np.pi) + logdet + y @ np.linalg.solve(C, y))
    return log_n - 0.5 * np.sum((kdiag - np.diag(Q)) / v)


def test_titsias_bound_matches_numpy_and_svgpvae_at_full_batch(rng):
    X, means, variances = _latent_dataset(rng)
    Z = np.sort(rng.uniform(-1.0, 30.0, size=7))
    jitter = 1e-6
    enc, dec = _networks()
    titsias = SparseGPVAE(enc, dec, _kernel(2.0), Z[:, None], sequence_length=T, jitter=jitter)
    svgp = SVGPVAE(enc, dec, _kernel(2.0), Z[:, None], sequence_length=T, jitter=jitter)
    args = (tf.constant(X), tf.constant(means), tf.constant(variances))
    bound = titsias._titsias(*args)[-1].numpy()  # [V, L]
    Kmm = _rbf(Z, Z, 2.0) + jitter * np.eye(len(Z))
    Kmn = _rbf(Z, TIMES, 2.0)
    for v in range(V):
        for j in range(L):
            ref = _numpy_titsias(Kmm, Kmn, np.ones(T), means[v, :, j], variances[v, :, j])
            np.testing.assert_allclose(bound[v, j], ref, rtol=1e-10)
    a, b = titsias.latent_posterior(*args, num_data=T), svgp.latent_posterior(*args, num_data=T)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-11)


def test_sparse_gpvae_refuses_minibatches_of_frames(rng):
    enc, dec = _networks()
    model = SparseGPVAE(enc, dec, _kernel(), np.linspace(0, 29, 5)[:, None], "bernoulli", sequence_length=T)
    X, Y = _videos(rng, num_frames=20)
    with pytest.raises(ValueError, match="needs whole sequences"):
        model.objective_terms((X, Y))
    spec = (tf.TensorSpec([None, None, 1], tf.float64), tf.TensorSpec([None, None, K], tf.float32))
    elbo = tf.function(lambda X, Y: model.objective_terms((X, Y)).elbo(), input_signature=spec)
    with pytest.raises(tf.errors.InvalidArgumentError, match="needs whole sequences"):
        elbo(X, Y)
    X, Y = _videos(rng)
    assert np.isfinite(elbo(X, Y).numpy())


def test_svgpvae_on_videos_is_the_single_dataset_posterior_per_video(rng):
    """Batched over videos (and with b < N frames, scale N/b) = the amortised posterior of each video's latent
    dataset."""
    X, means, variances = _latent_dataset(rng)
    keep = np.sort(rng.choice(T, size=12, replace=False))
    X, means, variances = X[:, keep], means[:, keep], variances[:, keep]
    Z = np.linspace(0, 29, 6)[:, None]
    enc, dec = _networks()
    batched = SVGPVAE(enc, dec, _kernel(1.5), Z, sequence_length=T)
    amortized = __import__("gpflow_svgpvae").amortized
    iv = batched.inducing_variable
    post = batched.latent_posterior(tf.constant(X), tf.constant(means), tf.constant(variances), num_data=T)
    for v in range(V):
        ref = amortized.minibatch_posterior(
            batched.kernel, iv, tf.constant(X[v]), tf.constant(means[v]), tf.constant(variances[v]), T, jitter=1e-6
        ).posterior
        kl = tf.reduce_sum(amortized.prior_kl(ref))
        mean, var = amortized.predict_marginals(
            ref,
            amortized.cross_covariance(batched.kernel, iv, tf.constant(X[v])),
            amortized.prior_variance_diag(batched.kernel, tf.constant(X[v])),
        )
        np.testing.assert_allclose(post.kl[v], kl, rtol=1e-10)
        np.testing.assert_allclose(post.mean[v], mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(post.variance[v], var, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ Hensman GP-VAE
def test_hensman_whitened_kl_matches_gpflow(rng):
    M = 5
    q_mu = rng.normal(size=(3, M, L))
    q_sqrt = np.tril(rng.normal(size=(3, L, M, M)))
    ours = whitened_gauss_kl(tf.constant(q_mu), tf.constant(q_sqrt)).numpy()
    for q in range(3):
        for j in range(L):
            ref = gpflow.kullback_leiblers.gauss_kl(tf.constant(q_mu[q, :, j : j + 1]), tf.constant(q_sqrt[q, j][None]))
            np.testing.assert_allclose(ours[q, j], ref.numpy(), rtol=1e-10)


def _encoder_gradients(model, X, Y):
    with tf.GradientTape() as tape:
        elbo = model.objective_terms((X, Y)).elbo()
    return elbo, tape.gradient(elbo, model.encoder.trainable_variables), tape


def test_hensman_encoder_gradient_is_exactly_zero_and_others_are_not(rng):
    X, Y = _videos(rng)
    Z = np.linspace(0, 29, 6)[:, None]
    enc, dec = _networks()
    hensman = HensmanGPVAE(
        enc, dec, _kernel(), Z, "bernoulli", sequence_length=T, num_latent_gps=L, q_mu=rng.normal(size=(1, 6, L))
    )
    with tf.GradientTape() as tape:
        terms = hensman.objective_terms((X, Y))
        elbo = terms.elbo()
    grads = tape.gradient(
        elbo, enc.trainable_variables + dec.trainable_variables + [hensman.q_mu.unconstrained_variable]
    )
    n_enc = len(enc.trainable_variables)
    assert n_enc > 0 and all(g is not None for g in grads[:n_enc])
    assert all(np.all(g.numpy() == 0.0) for g in grads[:n_enc])  # exactly zero, not just small
    assert all(np.any(g.numpy() != 0.0) for g in grads[n_enc:])  # decoder and q(u) do learn
    # The long form's encoder terms cancel exactly: kl = KL(q(u) || p(u)) per video.
    kl_u = whitened_gauss_kl(hensman.q_mu, hensman.q_sqrt).numpy().sum()
    assert terms.kl.numpy() == pytest.approx(V * kl_u, rel=1e-12)

    others = [
        GPVAE(enc, dec, _kernel(), "bernoulli", sequence_length=T),
        SVGPVAE(enc, dec, _kernel(), Z, "bernoulli", sequence_length=T),
        SparseGPVAE(enc, dec, _kernel(), Z, "bernoulli", sequence_length=T),
        VAE(enc, dec, "bernoulli", sequence_length=T),
    ]
    for model in others:
        _, grads, _ = _encoder_gradients(model, X, Y)
        assert all(g is not None for g in grads)
        assert max(float(np.max(np.abs(g.numpy()))) for g in grads) > 1e-3, type(model).__name__


def test_hensman_one_free_posterior_per_video(rng):
    X, Y = _videos(rng)
    enc, dec = _networks()
    model = HensmanGPVAE(
        enc,
        dec,
        _kernel(),
        np.linspace(0, 29, 6)[:, None],
        "bernoulli",
        sequence_length=T,
        num_latent_gps=L,
        num_videos=V,
        q_mu=rng.normal(size=(V, 6, L)),
    )
    mean, var = model.predict_f(None, (X, Y))
    assert mean.shape == (V, T, L) and np.all(var.numpy() > 0)
    assert not np.allclose(mean[0], mean[1])  # each video has its own q(u)
    with pytest.raises(ValueError, match="one q\\(u\\) per video"):
        model.objective_terms((X[:2], Y[:2]))


# ---------------------------------------------------------------------- VAE, API
def test_vae_posterior_is_the_encoder_and_kl_is_standard_normal(rng):
    X, Y = _videos(rng)
    enc, dec = _networks()
    model = VAE(enc, dec, "bernoulli", sequence_length=T)
    mean, var = model.predict_f(None, (X, Y))
    ref_mean, ref_var = enc(Y.reshape(-1, K))
    np.testing.assert_allclose(mean.numpy().reshape(-1, L), ref_mean.numpy(), rtol=1e-6)
    terms = model.objective_terms((X, Y))
    m, v = mean.numpy(), var.numpy()
    np.testing.assert_allclose(terms.kl, 0.5 * np.sum(v + m**2 - 1 - np.log(v)), rtol=1e-6)


def test_shapes_checks_and_prediction_at_new_times(rng):
    X, Y = _videos(rng)
    enc, dec = _networks()
    svgp = SVGPVAE(enc, dec, _kernel(), np.linspace(0, 29, 6)[:, None], "bernoulli", sequence_length=T)
    terms = svgp.objective_terms((X, Y))
    assert terms.decoded.shape == Y.shape and float(terms.scale) == 1.0
    mean, var = svgp.predict_f(np.linspace(0, 29, 50)[:, None], (X, Y))
    assert mean.shape == (V, 50, L) and np.all(var.numpy() > 0)
    with pytest.raises(ValueError, match=r"\[num_sequences, num_frames, input_dim\]"):
        svgp.objective_terms((X[None], Y[None]))
    with pytest.raises(ValueError, match="frames but sequence_length is"):
        SVGPVAE(enc, dec, _kernel(), np.zeros((3, 1)), sequence_length=20).objective_terms((X, Y))
    with pytest.raises(ValueError, match="different numbers of frames"):
        svgp.objective_terms((X[:, :10], Y))
    with pytest.raises(ValueError, match="latent channels"):
        GPVAE(enc, dec, _kernel(), sequence_length=T, num_latent_gps=3).objective_terms((X, Y))
    # frame minibatch: scale N/b
    half = svgp.objective_terms((X[:, :15], Y[:, :15]))
    assert float(half.scale) == 2.0


def test_one_prediction_interface_for_every_video_model(rng):
    """predict_f(Xnew, data) / predict_y(Xnew, data, num_samples, seed) / posterior(data) mean the
    same for every model: decoded means equal the decoder's likelihood mean at the latent mean."""
    X, Y = _videos(rng)
    Z = np.linspace(0, 29, 6)[:, None]
    builders = {
        "vae": lambda e, d: VAE(e, d, "bernoulli", sequence_length=T),
        "gpvae": lambda e, d: GPVAE(e, d, _kernel(), "bernoulli", sequence_length=T),
        "svgpvae": lambda e, d: SVGPVAE(e, d, _kernel(), Z, "bernoulli", sequence_length=T),
        "sparse": lambda e, d: SparseGPVAE(e, d, _kernel(), Z, "bernoulli", sequence_length=T),
    }
    for name, build in builders.items():
        model = build(*_networks())
        mean, var = model.predict_f(None, (X, Y))
        for a, b in zip(model.posterior((X, Y)).predict_f(None), (mean, var)):
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=name)
        decoded = model.predict_y(None, (X, Y))
        logits = model.decoder(tf.reshape(tf.cast(mean, tf.float32), [-1, L])).numpy()
        np.testing.assert_allclose(decoded.numpy().reshape(-1, K), 1 / (1 + np.exp(-logits)), rtol=1e-5, err_msg=name)
        first, samples = model.predict_y(None, (X, Y), num_samples=3, seed=7)
        again = model.predict_y(None, (X, Y), num_samples=3, seed=7)[1]
        assert samples.shape == (3,) + tuple(decoded.shape), name
        np.testing.assert_allclose(samples, again, rtol=1e-6, atol=1e-7)  # seeded (float32 decoder)
        with pytest.raises(ValueError, match="data"):
            model.predict_f(None)
