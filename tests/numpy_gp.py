"""Numpy references for the GP algebra: the notes' formulas written out literally
(np.linalg.solve and slogdet, no whitening, no Cholesky tricks), shared by the tests."""

import numpy as np


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


def numpy_marginals(Kmm, Kmr, krr_diag, mu, A):
    """The notes' sparse predictive, literally: K_rm Kmm^-1 mu and
    k_rr - diag(K_rm Kmm^-1 K_mr) + diag(K_rm Kmm^-1 A Kmm^-1 K_mr)."""
    G = np.linalg.solve(Kmm, Kmr)  # Kmm^-1 K_mr [M, R]
    return G.T @ mu, krr_diag - np.sum(Kmr * G, 0) + np.sum(G * (A @ G), 0)
