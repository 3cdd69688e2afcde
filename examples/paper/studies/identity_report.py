"""Print the maximum deviation seen in each exact identity of the notes.

The test suite asserts these identities with fixed tolerances; this script
prints the deviations themselves (float64), for the record:

    python examples/paper/studies/identity_report.py
"""

import itertools
import os
import sys

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.inducing_variables import InducingPoints, SharedIndependentInducingVariables

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))  # the repository
from gpflow_svgpvae import amortized  # noqa: E402
from tests.amortized.test_amortized import (  # noqa: E402  (numpy references live with the tests)
    numpy_posterior,
    numpy_titsias,
    numpy_titsias_q,
    rbf,
)


def marginals(post, kernel, iv, X):
    return amortized.predict_marginals(
        post, amortized.cross_covariance(kernel, iv, X), amortized.prior_variance_diag(kernel, X)
    )


def main():
    rng = np.random.default_rng(20261125)
    N, M, L = 12, 5, 3
    X, Z = rng.normal(size=(N, 2)), rng.normal(size=(M, 2))
    y, v = rng.normal(size=(N, L)), rng.uniform(0.2, 1.5, size=(N, L))
    rows = []

    # 1. pure function vs numpy, shared kernel (minibatch) and per-channel kernels
    kernel = gpflow.kernels.SquaredExponential(variance=1.7, lengthscales=0.9)
    b = 5
    q_mu, q_sqrt = amortized.amortized_inducing_posterior(kernel, Z, X[:b], y[:b], v[:b], N, jitter=1e-8)
    Kmm = rbf(Z, Z, 1.7, 0.9) + 1e-8 * np.eye(M)
    dev = 0.0
    for j in range(L):
        mu, A, _ = numpy_posterior(Kmm, rbf(Z, X[:b], 1.7, 0.9), y[:b, j], v[:b, j], N / b)
        S = q_sqrt[j].numpy()
        dev = max(dev, np.abs(q_mu[:, j] - mu).max(), np.abs(S @ S.T - A).max())
    rows.append(("q(u) vs numpy, shared kernel, b=5 of N=12", dev))
    params = [(0.5 + j, 0.6 + 0.4 * j) for j in range(L)]
    sep = gpflow.kernels.SeparateIndependent(
        [gpflow.kernels.SquaredExponential(variance=a, lengthscales=c) for a, c in params]
    )
    q_mu, q_sqrt = amortized.amortized_inducing_posterior(
        sep, SharedIndependentInducingVariables(InducingPoints(Z)), X, y, v, N, jitter=1e-8
    )
    dev = 0.0
    for j, (a, c) in enumerate(params):
        mu, A, _ = numpy_posterior(rbf(Z, Z, a, c) + 1e-8 * np.eye(M), rbf(Z, X, a, c), y[:, j], v[:, j], 1.0)
        S = q_sqrt[j].numpy()
        dev = max(dev, np.abs(q_mu[:, j] - mu).max(), np.abs(S @ S.T - A).max())
    rows.append(("q(u) vs numpy, SeparateIndependent kernels", dev))

    # 2. b = N: Titsias' q(u) and collapsed bound
    kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=1.2)
    iv = InducingPoints(Z)
    post = amortized.minibatch_posterior(kernel, iv, X, y, v, N, jitter=1e-8).posterior
    q_mu, q_sqrt = amortized.inducing_distribution(post)
    kl = amortized.prior_kl(post).numpy()
    mean, var = marginals(post, kernel, iv, X)
    Kmm, Kmn = rbf(Z, Z, 1.3, 1.2) + 1e-8 * np.eye(M), rbf(Z, X, 1.3, 1.2)
    dq, db = 0.0, 0.0
    for j in range(L):
        m_t, A_t = numpy_titsias_q(Kmm, Kmn, y[:, j], v[:, j])
        S = q_sqrt[j].numpy()
        dq = max(dq, np.abs(q_mu[:, j] - m_t).max(), np.abs(S @ S.T - A_t).max())
        hensman = (
            np.sum(
                -0.5
                * (np.log(2 * np.pi * v[:, j]) + ((y[:, j] - mean[:, j].numpy()) ** 2 + var[:, j].numpy()) / v[:, j])
            )
            - kl[j]
        )
        db = max(db, abs(hensman - numpy_titsias(Kmm, Kmn, np.full(N, 1.3), y[:, j], v[:, j])))
    rows.append(("b=N: q(u) vs Titsias optimal q(u)", dq))
    rows.append(("b=N: bound vs Titsias collapsed bound", db))

    # 3. U = X, b = N: exact GP posterior and log marginal likelihood
    kernel = gpflow.kernels.SquaredExponential(variance=0.8, lengthscales=1.4)
    iv = InducingPoints(X)
    Xnew = rng.normal(size=(7, 2))
    post = amortized.minibatch_posterior(kernel, iv, X, y, v, N, jitter=1e-12).posterior
    mean, var = marginals(post, kernel, iv, Xnew)
    mean_x, var_x = marginals(post, kernel, iv, X)
    kl = amortized.prior_kl(post).numpy()
    K, Ks = rbf(X, X, 0.8, 1.4), rbf(Xnew, X, 0.8, 1.4)
    dp, dl = 0.0, 0.0
    for j in range(L):
        C = K + np.diag(v[:, j])
        dp = max(
            dp,
            np.abs(mean[:, j] - Ks @ np.linalg.solve(C, y[:, j])).max(),
            np.abs(var[:, j] - (0.8 - np.sum(Ks * np.linalg.solve(C, Ks.T).T, axis=1))).max(),
        )
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
        dl = max(dl, abs(bound - lml))
    rows.append(("U=X: predictive vs exact GP (mean, var)", dp))
    rows.append(("U=X: bound vs exact log marginal likelihood", dl))

    # 4. long form (Hensman data term + cross-entropy) vs KL form
    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.8)
    iv = InducingPoints(Z)
    Nbig, b = 40, 6
    post = amortized.minibatch_posterior(kernel, iv, X[:b], y[:b], v[:b], Nbig, jitter=1e-6).posterior
    mean, var = (t.numpy() for t in marginals(post, kernel, iv, X[:b]))
    kl = amortized.prior_kl(post).numpy().sum()
    cross = np.sum(-0.5 * (np.log(2 * np.pi * v[:b]) + ((y[:b] - mean) ** 2 + var) / v[:b]))
    long_form = -cross + (b / Nbig) * ((Nbig / b) * cross - kl)
    rows.append(("long-form ELBO vs KL form", abs(long_form - (-(b / Nbig) * kl))))

    # 5. KL vs gpflow.kullback_leiblers.gauss_kl
    q_mu, q_sqrt = amortized.inducing_distribution(post)
    ref = gpflow.kullback_leiblers.gauss_kl(q_mu, q_sqrt, K=gpflow.covariances.Kuu(iv, kernel, jitter=1e-6))
    rows.append(("KL vs gpflow gauss_kl", abs(kl - float(ref))))

    # 6. E[Sigma_b] over all C(8, 3) minibatches
    n, bb = 8, 3
    X1, Z1 = rng.normal(size=(n, 1)), np.linspace(-1, 1, 4)[:, None]
    y1, v1 = rng.normal(size=(n, 1)), rng.uniform(0.3, 1.0, size=(n, 1))
    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.7)
    Kmm = rbf(Z1, Z1, 1.0, 0.7) + 1e-6 * np.eye(4)
    sig = []
    for idx in itertools.combinations(range(n), bb):
        idx = list(idx)
        _, qs = amortized.amortized_inducing_posterior(kernel, Z1, X1[idx], y1[idx], v1[idx], n, jitter=1e-6)
        sig.append(Kmm @ np.linalg.solve(qs[0].numpy() @ qs[0].numpy().T, Kmm))
    _, _, Sigma = numpy_posterior(Kmm, rbf(Z1, X1, 1.0, 0.7), y1[:, 0], v1[:, 0], 1.0)
    rows.append(
        (
            "E_b[Sigma_b] vs Sigma (relative, 56 minibatches)",
            np.abs(np.mean(sig, 0) - Sigma).max() / np.abs(Sigma).max(),
        )
    )

    width = max(len(r[0]) for r in rows)
    print(f"{'identity':<{width}}  max deviation")
    for name, value in rows:
        print(f"{name:<{width}}  {value:.2e}")


if __name__ == "__main__":
    tf.get_logger().setLevel("ERROR")
    main()
