r"""The SVGP-VAE for many short videos (Jazbec et al., 2021, moving-ball setting).

:math:`M` inducing inputs :math:`U` are shared by all videos (and channels);
each video :math:`v` gets its own amortised inducing posterior
:math:`q(u_{vl}) = \mathcal N(\mu_{vl}, A_{vl})` built from its frames'
sites (:mod:`gpflow_svgpvae.amortized`, batched over videos). With :math:`b`
frames of a video given and :math:`s = N/b`,

.. math::

    \mathcal L = \sum_v\Big(s\sum_{t\in b} E_{q_S}[\log p(y_{vt}\mid z_{vt})]
        - \sum_l \mathrm{KL}\big(\mathcal N(\mu_{vl}, A_{vl})\,\|\,\mathcal N(0, K_{mm})\big)\Big).

The paper uses whole videos (:math:`b = N = T = 30`). Identities (tested):
with :math:`U` = the frame times and :math:`b = N` this equals the exact
GP-VAE (:class:`~gpflow_svgpvae.models.gpvae.GPVAE`) up to the jitter, and
for any :math:`U` at :math:`b = N` it equals Titsias' collapsed bound
(:class:`~gpflow_svgpvae.models.sparse_gpvae.SparseGPVAE`).
"""
from typing import Optional

import tensorflow as tf

from .. import amortized
from .video import InducingVideoAutoencoder, LatentPosterior, batched_prior_variance

__all__ = ["VideoSVGPVAE"]


class VideoSVGPVAE(InducingVideoAutoencoder):
    r"""SVGP-VAE with inducing inputs shared across videos and one amortised :math:`q(u)` per video.

    :param encoder: ``tf_keras`` frame encoder ``Y [n, ...] -> (means [n, L], variances [n, L])``.
    :param decoder: ``tf_keras`` decoder ``Z [n, L] -> likelihood parameters``.
    :param kernel: GPflow kernel over frame inputs (shared by the channels, or ``SeparateIndependent``).
    :param inducing_variable: ``[M, D]`` inducing inputs (trainable) or ``InducingPoints``.
    :param likelihood: decoder likelihood.
    :param num_data: :math:`N`, frames per video. Batches may hold :math:`b \le N` frames of
        each video (the minibatch estimator, scale :math:`N/b`); the paper uses :math:`b = N`.
    :param num_latent_gps: :math:`L` (checked against the encoder when given).
    :param jitter: added to the diagonal of :math:`K_{mm}`.

    ``data = (X [V, b, D], Y [V, b, ...])``; the ELBO is summed over videos.
    """

    def whitened_posterior(self, X, means, variances, num_data=None) -> amortized.WhitenedPosterior:
        r"""Whitened factors of every video's :math:`q(u)`: ``upper_chol [V, L, M, M]``,
        ``whitened_mean [V, L, M]``, ``prior_chol [1, C, M, M]``.

        :param num_data: :math:`N` for the scale :math:`N/b` (``None``: :math:`s = 1`).
        """
        prior_chol = self.prior_cholesky()
        Kmb = self.cross_covariance(X)  # [V, C, M, b]
        P, r = amortized.whitened_statistics(prior_chol, Kmb, means, variances)
        b = tf.cast(tf.shape(X)[1], P.dtype)
        scale = tf.ones([], P.dtype) if num_data is None else tf.cast(num_data, P.dtype) / b
        return amortized.posterior_from_statistics(prior_chol, P, r, scale)

    def latent_posterior(self, X, means, variances, num_data=None) -> LatentPosterior:
        posterior = self.whitened_posterior(X, means, variances, num_data)
        kl = tf.reduce_sum(amortized.prior_kl(posterior), axis=-1)  # [V]
        mean, var = self._predict_with(posterior, X)
        return LatentPosterior(mean, var, kl)

    def _predict_with(self, posterior, Xnew):
        Kmr = self.cross_covariance(Xnew)  # [V, C, M, R]
        prior_var = batched_prior_variance(self.kernel, Xnew)  # [V, R, C]
        return amortized.predict_marginals(posterior, Kmr, prior_var)

    def _predict_at(self, X, means, variances, Xnew):
        return self._predict_with(self.whitened_posterior(X, means, variances, None), Xnew)

    def inducing_posterior(self, data, num_data: Optional[int] = None):
        r"""Every video's :math:`q(u)` in GPflow's non-whitened convention:
        ``q_mu [V, M, L]``, lower-triangular ``q_sqrt [V, L, M, M]``.

        :param num_data: :math:`N` for the scale :math:`N/b` (``None``: condition on exactly
            the given frames).
        """
        X, Y = data
        X, Y = self._check_videos(X, Y, full_videos=False)
        means, variances = self.encode_videos(Y, training=False)
        return amortized.inducing_distribution(self.whitened_posterior(X, means, variances, num_data))
