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

Missing frames. A frame with nothing observed has site weight :math:`w_t = 0`
(precision 0): with :math:`O` the other frames, :math:`q(z) \propto p(z)\prod_{t\in O}\tilde q_t`,
so :math:`\log Z = \log\mathcal N(\tilde y_O\mid 0, K_{OO} + \tilde D_O)`, the cross term
sums over :math:`O` only, and the marginals are :math:`m = K_{\cdot O}(K_{OO} + \tilde D_O)^{-1}\tilde y_O`,
:math:`s = \mathrm{diag}(K - K_{\cdot O}(K_{OO} + \tilde D_O)^{-1}K_{O\cdot})`: the KL and the
posterior at the frames of :math:`O` are those of the video without the frame, and at the frame
itself the GP prediction from :math:`O`. Computed without dropping rows (batched, static
shapes) and without huge variances: with :math:`w \in \{0, 1\}^T`

.. math::

    K_n = (w w^\top)\odot K + \mathrm{diag}\big(w\,(\tilde v + \text{jitter}) + (1 - w)\big),\qquad
    \tilde y' = w\odot\tilde y,

whose Cholesky factor is that of :math:`K_{OO} + \tilde D_O` with the identity at the
missing frames (their rows and columns of :math:`K_n` are unit vectors); then
:math:`L_n^{-1}\tilde y'` is 0 there, :math:`\log|K_n| = \log|K_{OO} + \tilde D_O|`, the
:math:`2\pi` term counts :math:`\sum_t w_t` frames, and the marginals use
:math:`L_n^{-1}\,\mathrm{diag}(w)K`. With :math:`w = 1` these are exactly the unweighted numbers.
"""

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
    frame_sum,
)

__all__ = ["GPVAE"]


def _frame_flags(weights, dtype) -> tf.Tensor:
    r"""Frame weights ``[V, T]`` -> :math:`w \in \{0, 1\}` ``[V, 1, T]`` (any positive weight is 1)."""
    return tf.cast(tf.convert_to_tensor(weights) > 0, dtype)[..., None, :]


def _exact_gp_factors(K: tf.Tensor, means: tf.Tensor, variances: tf.Tensor, jitter: float = 0.0, weights=None):
    r"""Cholesky factor and whitened targets of the exact GP regression on latent datasets.

    :param K: prior covariances ``[V, C, T, T]`` (``C`` = 1 or L).
    :param means: site means ``[V, T, L]``; :param variances: site variances ``[V, T, L]``.
    :param weights: optional frame weights ``[V, T]``; frames of weight 0 are left out of the
        regression (see the module docstring: their rows/columns of :math:`K_n` become unit
        vectors, their site means and variances are never used).
    :return: ``L_n [V, L, T, T]`` with :math:`L_nL_n^\top = K + \tilde D + \text{jitter}\,I`
        (:math:`K_n` of the module docstring with weights),
        ``alpha = L_n^{-1}\tilde y`` ``[V, L, T]`` and ``log_marginal`` :math:`\log Z`, ``[V, L]``.
    """
    ytil, vtil = _channels_first(means), _channels_first(variances)  # [V, L, T]
    if weights is None:
        num_frames = tf.cast(tf.shape(ytil)[-1], K.dtype)
        Kn = K + tf.linalg.diag(vtil + jitter)  # [V, L, T, T]
    else:
        w = _frame_flags(weights, K.dtype)  # [V, 1, T]
        used = tf.broadcast_to(w > 0, tf.shape(ytil))
        ytil = tf.where(used, ytil, tf.zeros_like(ytil))
        site = tf.where(used, vtil + jitter, tf.ones_like(vtil))
        Kn = K * (w[..., :, None] * w[..., None, :]) + tf.linalg.diag(site)  # [V, L, T, T]
        num_frames = tf.reduce_sum(w, axis=-1)  # [V, 1]
    Ln = cholesky(Kn, "K + diag(site variances) (the exact GP-VAE's marginal covariance)")
    alpha = tf.linalg.triangular_solve(Ln, ytil[..., None], lower=True)[..., 0]  # [V, L, T]
    log_marginal = (
        -0.5 * num_frames * np.log(2.0 * np.pi)
        - tf.reduce_sum(tf.math.log(tf.linalg.diag_part(Ln)), axis=-1)
        - 0.5 * tf.reduce_sum(tf.square(alpha), axis=-1)
    )
    return Ln, alpha, log_marginal


class GPVAE(VideoGPAutoencoder):
    r"""Exact GP-VAE: one exact GP posterior per video and channel (:math:`O(T^3)`; small T only).

    Arguments as :class:`~gpflow_svgpvae.models.video.VideoGPAutoencoder` (``encoder``,
    ``decoder``, ``kernel``, ``likelihood``, ``num_data``, ``num_latent_gps``, ...), except:

    :param sequence_length: the number of frames :math:`N` of every video, if fixed: every training
        batch must then hold whole videos (:math:`T = N` frames each).
    :param jitter: added to :math:`K + \tilde D` before the Cholesky (default 0: the
        site variances, bounded below by the encoder head, regularise it).

    ``data = (X [V, T, D], Y [V, T, ...])`` or ``(X, Y, mask)``; the ELBO is summed over
    videos. Padded videos: pad to a common ``T`` and pass the frame mask ``[V, T]``;
    each video's KL and posterior are then those of its real frames alone.

    Training from random networks can settle in a poor local optimum (on the moving ball:
    a short lengthscale, latents not an affine image of the paths). Starting from the networks
    of a :class:`~gpflow_svgpvae.SVGPVAE` with few inducing points reaches a higher bound and
    recovers the paths (``docs/results.md``).
    """

    whole_sequences_only = True

    def __init__(self, encoder, decoder, kernel, likelihood="gaussian", *, jitter: float = 0.0, **kwargs):
        # VideoGPAutoencoder's arguments; only the default jitter differs.
        super().__init__(encoder, decoder, kernel, likelihood, jitter=jitter, **kwargs)

    def latent_posterior(self, X, means, variances, num_data=None, weights=None) -> LatentPosterior:
        K = batched_gram(self.kernel, X)  # [V, C, T, T]
        Ln, alpha, log_marginal = _exact_gp_factors(K, means, variances, self.jitter, weights)
        Kw = K if weights is None else K * _frame_flags(weights, K.dtype)[..., None]  # diag(w) K (rows)
        A = tf.linalg.triangular_solve(Ln, tf.broadcast_to(Kw, tf.shape(Ln)), lower=True)  # Ln^-1 K
        mean = tf.linalg.matvec(A, alpha, transpose_a=True)  # K (K + D)^-1 ytil, [V, L, T]
        var = tf.linalg.diag_part(K) - tf.reduce_sum(tf.square(A), axis=-2)  # [V, L, T]
        mean, var = tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)  # [V, T, L]
        cross = frame_sum(expected_log_site(mean, var, means, variances), weights)  # [V, L]
        kl = tf.reduce_sum(cross - log_marginal, axis=-1)  # [V]
        return LatentPosterior(mean, var, kl)

    def log_marginal_likelihood(self, data) -> tf.Tensor:
        r""":math:`\log Z_{vl}` of every video's latent dataset, ``[V, L]`` (``data = (X, Y)`` or
        ``(X, Y, mask)``: frames with nothing observed are left out)."""
        X, _, _, weights, means, variances = self._videos(data, conditioning=True, training=False)
        K = batched_gram(self.kernel, X)
        return _exact_gp_factors(K, means, variances, self.jitter, weights)[2]

    def _predict_at(self, X, means, variances, Xnew, weights=None):
        K = batched_gram(self.kernel, X)
        Ln, alpha, _ = _exact_gp_factors(K, means, variances, self.jitter, weights)
        Kxr = batched_cross_gram(self.kernel, X, Xnew)  # [V, C, T, R]
        if weights is not None:  # rows of the left-out frames: 0
            Kxr = Kxr * _frame_flags(weights, Kxr.dtype)[..., None]
        shape = tf.concat([tf.shape(Ln)[:-1], tf.shape(Kxr)[-1:]], 0)
        A = tf.linalg.triangular_solve(Ln, tf.broadcast_to(Kxr, shape), lower=True)  # [V, L, T, R]
        mean = tf.linalg.matvec(A, alpha, transpose_a=True)  # [V, L, R]
        prior_var = tf.linalg.matrix_transpose(batched_prior_variance(self.kernel, Xnew))  # [V, C, R]
        var = prior_var - tf.reduce_sum(tf.square(A), axis=-2)
        return tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)
