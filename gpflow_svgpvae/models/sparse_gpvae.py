r"""The sparse GP-VAE with Titsias' collapsed bound (full batch only).

Per video :math:`v` and channel :math:`l`, the latent dataset
:math:`(X_v, \tilde y_{vl}, \tilde v_{vl})` is fitted with Titsias' (2009)
collapsed bound for heteroscedastic noise :math:`\tilde D = \mathrm{diag}(\tilde v_{vl})`,
with :math:`Q = K_{nm}K_{mm}^{-1}K_{mn}`:

.. math::

    \mathcal L_T^{vl} = \log\mathcal N(\tilde y_{vl}\mid 0, Q + \tilde D)
        - \tfrac12\mathrm{tr}\big(\tilde D^{-1}(K_{nn} - Q)\big).

The ELBO of a video replaces :math:`\log Z` of the exact GP-VAE by it:

.. math::

    \sum_t E_{q_S}[\log p(y_{vt}\mid z_{vt})] - \sum_{t,l}E_{q_S}[\log\tilde q(z_{vtl}\mid y_{vt})]
        + \sum_l \mathcal L_T^{vl},

where :math:`q_S` is the sparse predictive with Titsias' optimal :math:`q(u)`.
The bound couples all frames of a video through :math:`\log|Q + \tilde D|`;
it is not a sum over frames and has no unbiased minibatch estimate, so the
model only accepts whole videos (``T == sequence_length`` when that is given; anything else raises).
At :math:`b = N` it equals the SVGP-VAE bound exactly (tested).

Missing frames (``data = (X, Y, mask)``): a frame with nothing observed has site
precision 0, i.e. its column of :math:`W\tilde D^{-1/2}` is 0 and it is left out of the
sums over frames (also of the :math:`2\pi` count), so the bound, :math:`q(u)` and the KL
are those of the video without it; its marginal is the sparse GP prediction.

The computation uses :math:`W = L_m^{-1}K_{mn}`,
:math:`B = I + W\tilde D^{-1}W^\top = L_BL_B^\top` and :math:`c = L_B^{-1}W\tilde D^{-1}\tilde y`
(as in GPflow's SGPR), independently of :mod:`gpflow_svgpvae.amortized`.
"""

import numpy as np
import tensorflow as tf

from ..numerics import cholesky
from .video import (
    InducingVideoAutoencoder,
    LatentPosterior,
    _channels_first,
    batched_prior_variance,
    expected_log_site,
    frame_sum,
)

__all__ = ["SparseGPVAE"]


class SparseGPVAE(InducingVideoAutoencoder):
    r"""Sparse GP-VAE trained with Titsias' collapsed bound; whole videos only.

    Same arguments as :class:`~gpflow_svgpvae.SVGPVAE` on video data (also ``missing_values``
    and ``encoder_sees_mask``). ``predict_f(Xnew, data)`` predicts with Titsias' optimal
    :math:`q(u)` of each video (at its frames for ``Xnew=None``, or at new inputs).
    ``sequence_length``, if given, must be the number of frames of every video: a
    "minibatch" of frames raises ``ValueError`` (or ``InvalidArgumentError``, dynamic shapes).
    """

    whole_sequences_only = True

    def _titsias(self, X, means, variances, weights=None):
        Lm = self.prior_cholesky()  # [1, C, M, M]
        Kmn = self.cross_covariance(X)  # [V, C, M, T]
        W = tf.linalg.triangular_solve(Lm, Kmn, lower=True)  # [V, C, M, T]
        ytil, vtil = _channels_first(means), _channels_first(variances)  # [V, L, T]
        if weights is None:
            used = None
            T = tf.cast(tf.shape(ytil)[-1], W.dtype)
        else:  # frames of weight 0: precision 0, left out of every sum over frames
            used = tf.broadcast_to(tf.cast(weights, W.dtype)[..., None, :] > 0, tf.shape(ytil))
            ytil, vtil = tf.where(used, ytil, tf.zeros_like(ytil)), tf.where(used, vtil, tf.ones_like(vtil))
            T = tf.reduce_sum(tf.cast(used, W.dtype), axis=-1)  # [V, L]

        def frames(values):  # [V, L, T] -> [V, L], the used frames only
            return tf.reduce_sum(values if used is None else tf.where(used, values, tf.zeros_like(values)), axis=-1)

        rsqrt = tf.math.rsqrt(vtil)
        if used is not None:
            rsqrt = tf.where(used, rsqrt, tf.zeros_like(rsqrt))
        sqrt_prec = rsqrt[..., None, :]  # [V, L, 1, T]
        Wd = W * sqrt_prec  # [V, L, M, T]
        M = tf.shape(Wd)[-2]
        B = tf.eye(M, dtype=Wd.dtype) + tf.linalg.matmul(Wd, Wd, transpose_b=True)
        LB = cholesky(B, "I + Lm^-1 Kmn D^-1 Knm Lm^-T (Titsias' whitened posterior precision)")
        c = tf.linalg.triangular_solve(LB, tf.linalg.matvec(Wd, ytil * sqrt_prec[..., 0, :])[..., None], lower=True)
        c = c[..., 0]  # [V, L, M]
        kdiag = _channels_first(batched_prior_variance(self.kernel, X))  # [V, C, T]
        qdiag = tf.reduce_sum(tf.square(W), axis=-2)  # [V, C, T]
        bound = (
            -0.5 * T * np.log(2.0 * np.pi)
            - tf.reduce_sum(tf.math.log(tf.linalg.diag_part(LB)), axis=-1)
            - 0.5 * frames(tf.math.log(vtil))
            - 0.5 * frames(tf.square(ytil) / vtil)
            + 0.5 * tf.reduce_sum(tf.square(c), axis=-1)
            - 0.5 * frames((kdiag - qdiag) / vtil)
        )  # [V, L]
        return W, LB, c, kdiag, qdiag, bound

    @staticmethod
    def _marginals(W, LB, c, kdiag, qdiag):
        r"""Sparse predictive marginals of the optimal :math:`q(v)` (:math:`v = L_m^{-1}u`, mean
        :math:`L_B^{-\top}c`, covariance :math:`B^{-1}`) at the inputs of :math:`W = L_m^{-1}K_{m\cdot}`:
        mean and variance ``[V, T or R, L]``."""
        v_mean = tf.linalg.triangular_solve(LB, c[..., None], lower=True, adjoint=True)[..., 0]  # [V, L, M]
        mean = tf.linalg.matvec(W, v_mean, transpose_a=True)  # [V, L, T]
        shape = tf.concat([tf.shape(LB)[:-1], tf.shape(W)[-1:]], 0)
        V_ = tf.linalg.triangular_solve(LB, tf.broadcast_to(W, shape), lower=True)  # [V, L, M, T]
        var = kdiag - qdiag + tf.reduce_sum(tf.square(V_), axis=-2)  # [V, L, T]
        return tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)  # [V, T, L]

    def latent_posterior(self, X, means, variances, num_data=None, weights=None) -> LatentPosterior:
        W, LB, c, kdiag, qdiag, bound = self._titsias(X, means, variances, weights)
        mean, var = self._marginals(W, LB, c, kdiag, qdiag)
        cross = frame_sum(expected_log_site(mean, var, means, variances), weights)  # [V, L]
        return LatentPosterior(mean, var, tf.reduce_sum(cross - bound, axis=-1))

    def _predict_at(self, X, means, variances, Xnew, weights=None):
        _, LB, c, _, _, _ = self._titsias(X, means, variances, weights)
        W = tf.linalg.triangular_solve(self.prior_cholesky(), self.cross_covariance(Xnew), lower=True)  # [V, C, M, R]
        kdiag = _channels_first(batched_prior_variance(self.kernel, Xnew))  # [V, C, R]
        return self._marginals(W, LB, c, kdiag, tf.reduce_sum(tf.square(W), axis=-2))
