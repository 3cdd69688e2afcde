r"""The exact GP-VAE (Pearce, 2019) for many short videos.

Per video :math:`v` and channel :math:`l` the encoder's sites define a GP
regression problem with heteroscedastic noise, solved exactly. With
:math:`K = k(X_v, X_v)` (:math:`T\times T`), :math:`\tilde D = \mathrm{diag}(\tilde v_{vl})`
and :math:`L_n L_n^\top = K + \tilde D`:

.. math::

    q(z_{vl}) &\propto p(z_{vl})\prod_t \tilde q(z_{vtl}\mid y_{vt}),\qquad
    m = K (K + \tilde D)^{-1}\tilde y,\quad
    s = \mathrm{diag}\big(K - K (K + \tilde D)^{-1} K\big),\\
    \log Z_{vl} &= \log\mathcal N(\tilde y_{vl}\mid 0, K + \tilde D),

and the ELBO of a video is

.. math::

    \sum_t E_q[\log p(y_{vt}\mid z_{vt})] - \sum_{t,l} E_q[\log\tilde q(z_{vtl}\mid y_{vt})]
        + \sum_l \log Z_{vl},

i.e. :math:`E_q[\log p(y\mid z)] - \mathrm{KL}(q(z_v)\,\|\,p(z_v))`, since
:math:`q = p\,\tilde q / Z`. The cost is :math:`O(T^3)` per video and channel:
use it for short videos only (the moving ball has :math:`T = 30`).
"""
from typing import Optional

import numpy as np
import tensorflow as tf

from ..numerics import cholesky
from .video import (
    LatentPosterior,
    VideoGPAutoencoder,
    _channels_first,
    batched_cross_gram,
    batched_gram,
    batched_prior_variance,
    expected_log_site,
)

__all__ = ["GPVAE", "exact_gp_factors"]


def exact_gp_factors(K: tf.Tensor, means: tf.Tensor, variances: tf.Tensor, jitter: float = 0.0):
    r"""Cholesky factor and whitened targets of the exact GP regression on latent datasets.

    :param K: prior covariances ``[V, C, T, T]`` (``C`` = 1 or L).
    :param means: site means ``[V, T, L]``; :param variances: site variances ``[V, T, L]``.
    :return: ``L_n [V, L, T, T]`` with :math:`L_nL_n^\top = K + \tilde D + \text{jitter}\,I`,
        ``alpha = L_n^{-1}\tilde y`` ``[V, L, T]`` and ``log_marginal`` :math:`\log Z`, ``[V, L]``.
    """
    ytil, vtil = _channels_first(means), _channels_first(variances)  # [V, L, T]
    T = tf.shape(ytil)[-1]
    Kn = K + tf.linalg.diag(vtil + jitter)  # [V, L, T, T]
    Ln = cholesky(Kn, "K + diag(site variances) (the exact GP-VAE's marginal covariance)")
    alpha = tf.linalg.triangular_solve(Ln, ytil[..., None], lower=True)[..., 0]  # [V, L, T]
    log_marginal = (
        -0.5 * tf.cast(T, K.dtype) * np.log(2.0 * np.pi)
        - tf.reduce_sum(tf.math.log(tf.linalg.diag_part(Ln)), axis=-1)
        - 0.5 * tf.reduce_sum(tf.square(alpha), axis=-1)
    )
    return Ln, alpha, log_marginal


class GPVAE(VideoGPAutoencoder):
    r"""Exact GP-VAE: one exact GP posterior per video and channel (:math:`O(T^3)`; small T only).

    :param encoder: ``tf_keras`` frame encoder ``Y [n, ...] -> (means [n, L], variances [n, L])``.
    :param decoder: ``tf_keras`` decoder ``Z [n, L] -> likelihood parameters``.
    :param kernel: GPflow kernel over the frame inputs (shared by the channels, or
        ``SeparateIndependent``).
    :param likelihood: decoder likelihood.
    :param num_data: frames per video :math:`T`; every batch must contain whole videos.
    :param num_latent_gps: :math:`L` (checked against the encoder when given).
    :param jitter: added to :math:`K + \tilde D` before the Cholesky (default 0: the
        site variances, bounded below by the encoder head, regularise it).

    ``data = (X [V, T, D], Y [V, T, ...])``; the ELBO is summed over videos.

    Training from random networks can settle in a poor local optimum: on the moving
    ball it ends with a short lengthscale and latents that are not an affine image of
    the paths, and training longer does not leave it. Starting from the networks of a
    :class:`~gpflow_svgpvae.SVGPVAE` with few inducing points
    (pass the same ``encoder``/``decoder`` objects, or copy their weights) reaches a
    higher bound and recovers the paths; see ``docs/results.md``.
    """

    full_videos_only = True

    def __init__(self, encoder, decoder, kernel, likelihood="gaussian", *, num_data: int, num_latent_gps=None,
                 jitter: float = 0.0, num_samples: int = 1, seed: int = 0, name: Optional[str] = None):
        super().__init__(
            encoder, decoder, kernel, likelihood, num_data=num_data, num_latent_gps=num_latent_gps,
            jitter=jitter, num_samples=num_samples, seed=seed, name=name,
        )

    def latent_posterior(self, X, means, variances, num_data=None) -> LatentPosterior:
        K = batched_gram(self.kernel, X)  # [V, C, T, T]
        Ln, alpha, log_marginal = exact_gp_factors(K, means, variances, self.jitter)
        A = tf.linalg.triangular_solve(Ln, tf.broadcast_to(K, tf.shape(Ln)), lower=True)  # Ln^-1 K
        mean = tf.linalg.matvec(A, alpha, transpose_a=True)  # K (K + D)^-1 ytil, [V, L, T]
        var = tf.linalg.diag_part(K) - tf.reduce_sum(tf.square(A), axis=-2)  # [V, L, T]
        mean, var = tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)  # [V, T, L]
        cross = tf.reduce_sum(expected_log_site(mean, var, means, variances), axis=-2)  # [V, L]
        kl = tf.reduce_sum(cross - log_marginal, axis=-1)  # [V]
        return LatentPosterior(mean, var, kl)

    def log_marginal_likelihood(self, data) -> tf.Tensor:
        r""":math:`\log Z_{vl}` of every video's latent dataset, ``[V, L]``."""
        X, Y = data
        X, Y = self._check_videos(X, Y, full_videos=False)
        means, variances = self.encode_videos(Y, training=False)
        K = batched_gram(self.kernel, X)
        return exact_gp_factors(K, means, variances, self.jitter)[2]

    def _predict_at(self, X, means, variances, Xnew):
        K = batched_gram(self.kernel, X)
        Ln, alpha, _ = exact_gp_factors(K, means, variances, self.jitter)
        Kxr = batched_cross_gram(self.kernel, X, Xnew)  # [V, C, T, R]
        shape = tf.concat([tf.shape(Ln)[:-1], tf.shape(Kxr)[-1:]], 0)
        A = tf.linalg.triangular_solve(Ln, tf.broadcast_to(Kxr, shape), lower=True)  # [V, L, T, R]
        mean = tf.linalg.matvec(A, alpha, transpose_a=True)  # [V, L, R]
        prior_var = tf.linalg.matrix_transpose(batched_prior_variance(self.kernel, Xnew))  # [V, C, R]
        var = prior_var - tf.reduce_sum(tf.square(A), axis=-2)
        return tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)

