r"""Estimators that diagnose the SVGP-VAE objective.

:func:`inducing_mean_bias` measures how biased the *minibatch* estimate of the
amortised inducing posterior mean is. For output channel :math:`l`, the
encoder's sites :math:`(\tilde y_{il}, \lambda_{il}^{-1})` of a batch
:math:`b` of :math:`|b|` points out of :math:`N`, scaled by :math:`s = N/|b|`,
give the inducing posterior

.. math::

    \Sigma_{b,l} = K_{mm} + s\,K_{mb}\Lambda_{bl}K_{bm},\qquad
    \mu_{b,l} = s\,K_{mm}\Sigma_{b,l}^{-1}K_{mb}\Lambda_{bl}\tilde y_{bl},

and the full data (:math:`b` = all :math:`N` points, :math:`s = 1`) give
:math:`\Sigma` and :math:`\mu`. The precision is linear in the data, so the
:math:`|b|/N`-weighted average of the :math:`\Sigma_b` over one pass through
the data (a partition into batches) is exactly :math:`\Sigma`; the mean is not
(:math:`\Sigma_b^{-1}` enters non-linearly), and the estimator reports

.. math::

    \mathrm{bias} = \frac{\lVert \bar\mu_b - \mu\rVert_F}{\lVert\mu\rVert_F},
    \qquad \bar\mu_b = \sum_b \frac{|b|}{N}\,\mu_b

(averaged over ``passes`` independent passes).
"""

import numpy as np
import tensorflow as tf

from gpflow_svgpvae import amortized

__all__ = ["inducing_mean_bias"]


def inducing_mean_bias(model, X, Y, batch_size: int, seed: int = 0, passes: int = 1) -> dict:
    r"""Relative bias of the minibatch estimator of the inducing posterior mean of an SVGP-VAE.

    With :math:`W = L_m^{-1}K_{mN}` over all :math:`N` training points and the
    encoder's sites, the full-data posterior (:math:`s = 1`) has mean
    :math:`\mu`. One pass of minibatches -- a seeded random permutation cut
    into batches of ``batch_size`` (the last one may be smaller, as in
    training) -- gives estimates :math:`\mu_b` with :math:`s = N/|b|`. Their
    average, weighted by :math:`|b|/N` (the plain mean when ``batch_size``
    divides :math:`N`), is compared with :math:`\mu`:

    .. math:: \mathrm{bias} = \lVert \bar\mu_b - \mu\rVert_F / \lVert\mu\rVert_F.

    The average over one pass mixes the bias with the estimator's spread
    divided by the number of batches; ``passes > 1`` averages over that many
    independent passes (fresh permutations), which leaves the bias.

    The same weighted average of the minibatch precisions
    :math:`\Sigma_b = K_{mm} + s K_{mb}\Lambda K_{bm}` equals the full-data
    :math:`\Sigma` exactly (the batches partition the data);
    ``precision_relative_deviation`` is that check (round-off only).

    :param model: an :class:`~gpflow_svgpvae.SVGPVAE` (raw inputs are mapped
        through its input transform).
    :param X: ``[N, D]`` raw auxiliary inputs of all training points.
    :param Y: ``[N, ...]`` their images.
    :param passes: number of passes (permutations) averaged over.
    :return: dict with ``relative_bias``, ``precision_relative_deviation``,
        ``num_batches``, ``mu_norm``, and ``mu_full`` (``[M, L]``).
    """
    N = len(X)
    batch_size = int(min(batch_size, N))
    Xm = model.map_inputs(np.asarray(X))
    Xm = tf.cast(Xm, tf.float64)
    means, variances = model.encode_all(Y)
    Lm = amortized.prior_cholesky(model.kernel, model.inducing_variable, model.jitter)  # [1 or L, M, M]
    W = amortized.whiten(Lm, amortized.cross_covariance(model.kernel, model.inducing_variable, Xm))  # [., M, N]

    def mean_of(P, r, scale):
        post = amortized.posterior_from_statistics(Lm, P, r, scale)
        return tf.linalg.matvec(Lm, post.whitened_mean)  # [L, M]

    P_full, r_full = amortized.statistics_from_whitened(W, means, variances)
    mu_full = mean_of(P_full, r_full, 1.0)
    rng = np.random.default_rng([int(seed), 20210413])
    mu_avg = tf.zeros_like(mu_full)
    P_avg = tf.zeros_like(P_full)  # weighted average of s * P_b (B_b = I + s P_b), first pass
    num_batches = 0
    for p in range(int(passes)):
        order = rng.permutation(N)
        for start in range(0, N, batch_size):
            idx = order[start : start + batch_size]
            weight, scale = len(idx) / N, N / len(idx)
            P_b, r_b = amortized.statistics_from_whitened(
                tf.gather(W, idx, axis=-1), tf.gather(means, idx), tf.gather(variances, idx)
            )
            mu_avg += weight / passes * mean_of(P_b, r_b, scale)
            if p == 0:
                P_avg += weight * scale * P_b
                num_batches += 1
    M = int(P_full.shape[-1])
    eye = tf.eye(M, dtype=P_full.dtype)

    def precision(P):  # Sigma = Kmm + Kmb Lam Kbm = Lm (I + P) Lm^T
        return tf.matmul(tf.matmul(Lm, eye + P), Lm, transpose_b=True)

    mu_norm = float(tf.norm(mu_full))
    return {
        "relative_bias": float(tf.norm(mu_avg - mu_full)) / mu_norm,
        "precision_relative_deviation": float(
            tf.norm(precision(P_avg) - precision(P_full)) / tf.norm(precision(P_full))
        ),
        "num_batches": num_batches,
        "passes": int(passes),
        "mu_norm": mu_norm,
        "mu_full": tf.transpose(mu_full).numpy(),
    }
