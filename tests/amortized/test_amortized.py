"""The amortised inducing posterior against independent numpy computations and
the exact identities of the notes (Titsias at b = N, exact GP at U = X,
unbiasedness of Sigma_b over minibatches)."""

import itertools

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.inducing_variables import (
    InducingPoints,
    SeparateIndependentInducingVariables,
    SharedIndependentInducingVariables,
)

from gpflow_svgpvae import amortized
from gpflow_svgpvae.amortized import amortized_inducing_posterior

JITTER = 1e-8


# ----------------------------------------------------------------- numpy refs
def rbf(A, B, variance, lengthscale):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return variance * np.exp(-0.5 * d2 / lengthscale**2)


def numpy_posterior(Kmm, Kmb, y, v, scale):
    """The notes' formulas, literally (np.linalg.solve, no whitening)."""
    Lam = np.diag(1.0 / v)
    Sigma = Kmm + scale * Kmb @ Lam @ Kmb.T
    mu = scale * Kmm @ np.linalg.solve(Sigma, Kmb @ Lam @ y)
    A = Kmm @ np.linalg.solve(Sigma, Kmm)
    return mu, A, Sigma


def numpy_kl(mu, A, K):
    M = len(mu)
    return 0.5 * (
        np.trace(np.linalg.solve(K, A))
        + mu @ np.linalg.solve(K, mu)
        - M
        + np.linalg.slogdet(K)[1]
        - np.linalg.slogdet(A)[1]
    )


def numpy_titsias(Kmm, Kmn, knn_diag, y, v):
    """Titsias' collapsed bound with heteroscedastic noise V = diag(v)."""
    Qnn = Kmn.T @ np.linalg.solve(Kmm, Kmn)
    C = Qnn + np.diag(v)
    _, logdet = np.linalg.slogdet(C)
    n = len(y)
    log_normal = -0.5 * (n * np.log(2 * np.pi) + logdet + y @ np.linalg.solve(C, y))
    return log_normal - 0.5 * np.sum((knn_diag - np.diag(Qnn)) / v)


def numpy_titsias_q(Kmm, Kmn, y, v):
    """Titsias' optimal q(u): m = Kmm S^-1 Kmn V^-1 y, A = Kmm S^-1 Kmm, S = Kmm + Kmn V^-1 Knm."""
    S = Kmm + Kmn @ np.diag(1 / v) @ Kmn.T
    return Kmm @ np.linalg.solve(S, Kmn @ (y / v)), Kmm @ np.linalg.solve(S, Kmm)


@pytest.fixture
def problem(rng):
    N, M, L, D = 12, 5, 3, 2
    X = rng.normal(size=(N, D))
    Z = rng.normal(size=(M, D))
    y = rng.normal(size=(N, L))
    v = rng.uniform(0.2, 1.5, size=(N, L))
    return X, Z, y, v


def max_dev(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


# ---------------------------------------------------------------------- tests
@pytest.mark.parametrize("batch", [12, 5])
def test_shared_kernel_matches_numpy(problem, batch):
    X, Z, y, v = problem
    N, L = y.shape
    kernel = gpflow.kernels.SquaredExponential(variance=1.7, lengthscales=0.9)
    q_mu, q_sqrt = amortized_inducing_posterior(kernel, Z, X[:batch], y[:batch], v[:batch], N, jitter=JITTER)
    assert q_mu.shape == (len(Z), L) and q_sqrt.shape == (L, len(Z), len(Z))
    Kmm = rbf(Z, Z, 1.7, 0.9) + JITTER * np.eye(len(Z))
    Kmb = rbf(Z, X[:batch], 1.7, 0.9)
    for j in range(L):
        mu, A, _ = numpy_posterior(Kmm, Kmb, y[:batch, j], v[:batch, j], N / batch)
        S = q_sqrt[j].numpy()
        assert max_dev(q_mu[:, j], mu) < 1e-10
        assert max_dev(S @ S.T, A) < 1e-10
        assert np.all(np.triu(S, 1) == 0.0), "q_sqrt must be lower triangular"


@pytest.mark.parametrize("separate_inducing", [False, True])
def test_per_channel_kernels_match_numpy(problem, separate_inducing, rng):
    X, Z, y, v = problem
    N, L = y.shape
    params = [(0.5 + j, 0.6 + 0.4 * j) for j in range(L)]
    kernel = gpflow.kernels.SeparateIndependent(
        [gpflow.kernels.SquaredExponential(variance=a, lengthscales=b) for a, b in params]
    )
    Zs = [Z + 0.1 * j for j in range(L)] if separate_inducing else [Z] * L
    if separate_inducing:
        iv = SeparateIndependentInducingVariables([InducingPoints(z) for z in Zs])
    else:
        iv = SharedIndependentInducingVariables(InducingPoints(Z))
    q_mu, q_sqrt = amortized_inducing_posterior(kernel, iv, X, y, v, N, jitter=JITTER)
    for j, (a, b) in enumerate(params):
        Kmm = rbf(Zs[j], Zs[j], a, b) + JITTER * np.eye(len(Z))
        mu, A, _ = numpy_posterior(Kmm, rbf(Zs[j], X, a, b), y[:, j], v[:, j], 1.0)
        S = q_sqrt[j].numpy()
        assert max_dev(q_mu[:, j], mu) < 1e-10
        assert max_dev(S @ S.T, A) < 1e-10


def test_shared_independent_equals_plain_kernel(problem):
    X, Z, y, v = problem
    base = gpflow.kernels.Matern32(lengthscales=1.1)
    plain = amortized_inducing_posterior(base, Z, X, y, v, 40, jitter=JITTER)
    shared = amortized_inducing_posterior(
        gpflow.kernels.SharedIndependent(base, output_dim=y.shape[1]), Z, X, y, v, 40, jitter=JITTER
    )
    for a, b in zip(plain, shared):
        assert max_dev(a, b) < 1e-12


def test_full_batch_equals_titsias(problem):
    """b = N: (mu, A) are Titsias' optimal q(u) and the bound (with s = 1) is his collapsed bound."""
    X, Z, y, v = problem
    N, L = y.shape
    kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=1.2)
    iv = InducingPoints(Z)
    post = amortized.minibatch_posterior(kernel, iv, X, y, v, N, jitter=JITTER).posterior
    q_mu, q_sqrt = amortized.inducing_distribution(post)
    kl = amortized.prior_kl(post).numpy()
    mean, var = amortized.predict_marginals(
        post, amortized.cross_covariance(kernel, iv, X), amortized.prior_variance_diag(kernel, X)
    )
    Kmm = rbf(Z, Z, 1.3, 1.2) + JITTER * np.eye(len(Z))
    Kmn = rbf(Z, X, 1.3, 1.2)
    for j in range(L):
        m_t, A_t = numpy_titsias_q(Kmm, Kmn, y[:, j], v[:, j])
        assert max_dev(q_mu[:, j], m_t) < 1e-10
        assert max_dev(q_sqrt[j].numpy() @ q_sqrt[j].numpy().T, A_t) < 1e-10
        # Hensman's bound of the latent dataset with this q(u) ...
        expected_loglik = -0.5 * (
            np.log(2 * np.pi * v[:, j]) + ((y[:, j] - mean[:, j].numpy()) ** 2 + var[:, j].numpy()) / v[:, j]
        )
        hensman = expected_loglik.sum() - kl[j]
        # ... equals Titsias' collapsed bound
        titsias = numpy_titsias(Kmm, Kmn, np.full(N, 1.3), y[:, j], v[:, j])
        assert abs(hensman - titsias) < 1e-8


def test_titsias_matches_gpflow_sgpr(problem):
    """Homoscedastic sites: the same bound as GPflow's own SGPR.elbo()."""
    X, Z, y, _ = problem
    y1 = y[:, :1]
    noise = 0.3
    kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=1.2)
    sgpr = gpflow.models.SGPR((X, y1), kernel, inducing_variable=Z, noise_variance=noise)
    v = np.full_like(y1, noise)
    post = amortized.minibatch_posterior(kernel, InducingPoints(Z), X, y1, v, len(X), jitter=0.0).posterior
    mean, var = amortized.predict_marginals(
        post, amortized.cross_covariance(kernel, InducingPoints(Z), X), amortized.prior_variance_diag(kernel, X)
    )
    bound = np.sum(-0.5 * (np.log(2 * np.pi * noise) + ((y1 - mean.numpy()) ** 2 + var.numpy()) / noise))
    bound -= amortized.prior_kl(post).numpy().sum()
    with gpflow.config.as_context(gpflow.config.Config(jitter=0.0)):
        assert abs(bound - sgpr.elbo().numpy()) < 1e-8


def test_inducing_at_data_equals_exact_gp(problem):
    """U = X and b = N: predictions equal the exact GP posterior (heteroscedastic numpy,
    and GPflow's GPR for constant noise); the bound equals the log marginal likelihood."""
    X, _, y, v = problem
    N, L = y.shape
    kernel = gpflow.kernels.SquaredExponential(variance=0.8, lengthscales=1.4)
    iv = InducingPoints(X)
    Xnew = np.random.default_rng(3).normal(size=(7, 2))
    # Tiny jitter: with U = X the sparse model is the exact GP only up to the jitter.
    post = amortized.minibatch_posterior(kernel, iv, X, y, v, N, jitter=1e-12).posterior
    mean, var = amortized.predict_marginals(
        post, amortized.cross_covariance(kernel, iv, Xnew), amortized.prior_variance_diag(kernel, Xnew)
    )
    mean_x, var_x = amortized.predict_marginals(
        post, amortized.cross_covariance(kernel, iv, X), amortized.prior_variance_diag(kernel, X)
    )
    kl = amortized.prior_kl(post).numpy()
    K = rbf(X, X, 0.8, 1.4)
    Ks = rbf(Xnew, X, 0.8, 1.4)
    for j in range(L):
        C = K + np.diag(v[:, j])
        exact_mean = Ks @ np.linalg.solve(C, y[:, j])
        exact_var = 0.8 - np.sum(Ks * np.linalg.solve(C, Ks.T).T, axis=1)
        assert max_dev(mean[:, j], exact_mean) < 1e-8
        assert max_dev(var[:, j], exact_var) < 1e-8
        lml = -0.5 * (N * np.log(2 * np.pi) + np.linalg.slogdet(C)[1] + y[:, j] @ np.linalg.solve(C, y[:, j]))
        bound = (
            np.sum(
                -0.5
                * (
                    np.log(2 * np.pi * v[:, j])
                    + ((y[:, j] - mean_x[:, j].numpy()) ** 2 + var_x[:, j].numpy()) / v[:, j]
                )
            )
            - kl[j]
        )
        assert abs(bound - lml) < 1e-6
    # GPflow's GPR with homoscedastic noise
    noise = 0.25
    gpr = gpflow.models.GPR((X, y[:, :1]), kernel, noise_variance=noise)
    gpr_mean, gpr_var = gpr.predict_f(Xnew)
    post1 = amortized.minibatch_posterior(kernel, iv, X, y[:, :1], np.full((N, 1), noise), N, jitter=1e-12).posterior
    m1, v1 = amortized.predict_marginals(
        post1, amortized.cross_covariance(kernel, iv, Xnew), amortized.prior_variance_diag(kernel, Xnew)
    )
    assert max_dev(m1, gpr_mean) < 1e-7 and max_dev(v1, gpr_var) < 1e-7


def test_kl_matches_gpflow_gauss_kl(problem):
    X, Z, y, v = problem
    kernel = gpflow.kernels.Matern52(lengthscales=0.7)
    iv = InducingPoints(Z)
    post = amortized.minibatch_posterior(kernel, iv, X[:6], y[:6], v[:6], 30, jitter=1e-6).posterior
    q_mu, q_sqrt = amortized.inducing_distribution(post)
    Kmm = gpflow.covariances.Kuu(iv, kernel, jitter=1e-6)
    reference = gpflow.kullback_leiblers.gauss_kl(q_mu, q_sqrt, K=Kmm)
    assert abs(float(tf.reduce_sum(amortized.prior_kl(post))) - float(reference)) < 1e-9
    for j in range(y.shape[1]):
        S = q_sqrt[j].numpy()
        assert abs(amortized.prior_kl(post)[j].numpy() - numpy_kl(q_mu[:, j].numpy(), S @ S.T, Kmm.numpy())) < 1e-8


def test_predictions_match_gpflow_conditional(problem):
    X, Z, y, v = problem
    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.8)
    iv = InducingPoints(Z)
    Xnew = np.random.default_rng(5).normal(size=(9, 2))
    post = amortized.minibatch_posterior(kernel, iv, X[:4], y[:4], v[:4], 50, jitter=1e-6).posterior
    q_mu, q_sqrt = amortized.inducing_distribution(post)
    mean, var = amortized.predict_marginals(
        post, amortized.cross_covariance(kernel, iv, Xnew), amortized.prior_variance_diag(kernel, Xnew)
    )
    with gpflow.config.as_context(gpflow.config.Config(jitter=1e-6)):
        ref_mean, ref_var = gpflow.conditionals.conditional(
            tf.constant(Xnew), iv, kernel, q_mu, q_sqrt=q_sqrt, white=False
        )
    assert max_dev(mean, ref_mean) < 1e-8 and max_dev(var, ref_var) < 1e-8


def test_long_form_elbo_equals_kl_form(problem):
    """Paper eq. 12: sum_b E[log p - log q~] + (b/N) L_H equals sum_b E[log p] - (b/N) KL."""
    X, Z, y, v = problem
    N, b = 40, 6
    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.8)
    iv = InducingPoints(Z)
    post = amortized.minibatch_posterior(kernel, iv, X[:b], y[:b], v[:b], N, jitter=1e-6).posterior
    mean, var = amortized.predict_marginals(
        post, amortized.cross_covariance(kernel, iv, X[:b]), amortized.prior_variance_diag(kernel, X[:b])
    )
    mean, var = mean.numpy(), var.numpy()
    kl = amortized.prior_kl(post).numpy().sum()
    log_p = -0.37 * b  # any decoder term: it appears identically on both sides
    # E_q[log q~(z|y)] = E_q[log N(ytil | z, vtil)] in closed form
    cross = np.sum(-0.5 * (np.log(2 * np.pi * v[:b]) + ((y[:b] - mean) ** 2 + var) / v[:b]))
    hensman = (N / b) * cross - kl
    long_form = log_p - cross + (b / N) * hensman
    short_form = log_p - (b / N) * kl
    assert abs(long_form - short_form) < 1e-8


def test_sigma_is_unbiased_over_minibatches_mu_is_not(rng):
    """E_b[Sigma_b] = Sigma over all C(N, b) minibatches; mu_b is only consistent."""
    N, b, M = 8, 3, 4
    X = rng.normal(size=(N, 1))
    Z = np.linspace(-1, 1, M)[:, None]
    y = rng.normal(size=(N, 1))
    v = rng.uniform(0.3, 1.0, size=(N, 1))
    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.7)
    Kmm = rbf(Z, Z, 1.0, 0.7) + 1e-6 * np.eye(M)
    sigmas, mus = [], []
    for idx in itertools.combinations(range(N), b):
        idx = list(idx)
        q_mu, q_sqrt = amortized_inducing_posterior(kernel, Z, X[idx], y[idx], v[idx], N, jitter=1e-6)
        A = q_sqrt[0].numpy() @ q_sqrt[0].numpy().T
        sigmas.append(Kmm @ np.linalg.solve(A, Kmm))  # Sigma_b = Kmm A_b^-1 Kmm
        mus.append(q_mu[:, 0].numpy())
    _, _, Sigma = numpy_posterior(Kmm, rbf(Z, X, 1.0, 0.7), y[:, 0], v[:, 0], 1.0)
    full_mu, _ = amortized_inducing_posterior(kernel, Z, X, y, v, N, jitter=1e-6)
    rel = np.max(np.abs(np.mean(sigmas, axis=0) - Sigma)) / np.max(np.abs(Sigma))
    assert rel < 1e-8
    assert np.max(np.abs(np.mean(mus, axis=0) - full_mu[:, 0].numpy())) > 1e-3


def test_statistics_are_additive_over_chunks(problem):
    X, Z, y, v = problem
    kernel = gpflow.kernels.SquaredExponential()
    iv = InducingPoints(Z)
    Lm = amortized.prior_cholesky(kernel, iv, 1e-6)
    P, r = amortized.whitened_statistics(Lm, amortized.cross_covariance(kernel, iv, X), y, v)
    parts = [
        amortized.whitened_statistics(Lm, amortized.cross_covariance(kernel, iv, X[s]), y[s], v[s])
        for s in (slice(0, 5), slice(5, 9), slice(9, None))
    ]
    assert max_dev(P, sum(p for p, _ in parts)) < 1e-12
    assert max_dev(r, sum(q for _, q in parts)) < 1e-12


def test_leading_batch_dimension_matches_loop(rng):
    """One latent dataset per video: batched call equals per-video calls."""
    V, T, M, L = 3, 6, 4, 2
    times = np.arange(T, dtype=float)[:, None]
    Z = np.linspace(0, T, M)[:, None]
    y = rng.normal(size=(V, T, L))
    v = rng.uniform(0.2, 1.0, size=(V, T, L))
    kernel = gpflow.kernels.SquaredExponential(lengthscales=2.0)
    iv = InducingPoints(Z)
    Lm = amortized.prior_cholesky(kernel, iv, 1e-6)  # [1, M, M]
    Kmb = amortized.cross_covariance(kernel, iv, times)  # [1, M, T]
    P, r = amortized.whitened_statistics(Lm[None], Kmb[None], y, v)
    post = amortized.posterior_from_statistics(Lm[None], P, r, 1.0)
    kl = amortized.prior_kl(post)
    for i in range(V):
        single = amortized.minibatch_posterior(kernel, iv, times, y[i], v[i], T, jitter=1e-6).posterior
        assert max_dev(kl[i], amortized.prior_kl(single)) < 1e-12
        assert max_dev(post.whitened_mean[i], single.whitened_mean) < 1e-12


def test_failed_cholesky_names_the_matrix():
    kernel = gpflow.kernels.SquaredExponential()
    Z = np.zeros((3, 1))  # duplicate inducing inputs and no jitter: singular Kmm
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Cholesky decomposition of Kuu.*jitter"):
        amortized_inducing_posterior(kernel, Z, np.ones((2, 1)), np.ones((2, 1)), np.ones((2, 1)), 2, jitter=0.0)
