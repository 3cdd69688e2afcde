r"""The "Hensman GP-VAE": a free (non-amortised) :math:`q(u)` per channel.

Replacing the SVGP-VAE's amortised :math:`q(u)` by free variational
parameters (Hensman et al., 2013) gives, per video,

.. math::

    \sum_t E_{q_S}[\log p(y_{vt}\mid z_{vt})]
    - \underbrace{\sum_{t,l} E_{q_S}[\log\tilde q(z_{vtl}\mid y_{vt})]}_{\text{encoder cross-entropy}}
    + \underbrace{\sum_{t,l} E_{q_S}[\log\mathcal N(\tilde y_{vtl}\mid z_{vtl}, \tilde v_{vtl})]
        - \sum_l\mathrm{KL}(q(u_l)\,\|\,p(u_l))}_{\text{Hensman's bound on the latent dataset}},

where :math:`q_S` is the SVGP predictive of the free :math:`q(u)`, which does
not depend on the encoder. The second and third sums are the same number
(:math:`\log\mathcal N(z;\tilde y,\tilde v) = \log\mathcal N(\tilde y; z, \tilde v)`),
so the encoder drops out of the ELBO and its gradient is exactly zero
(Jazbec et al. 2021, appendix B.1). :meth:`HensmanGPVAE.objective_terms`
computes the long form above, term by term, so this cancellation happens in
the computation and can be checked; the remaining objective is
:math:`\sum_t E_{q_S}[\log p(y\mid z)] - \mathrm{KL}`, a decoder trained on a
GP whose posterior never sees the frames.

Each video has its own GP draw, so a useful free posterior needs one :math:`q(u_v)` per
video of a fixed set (``num_videos=V``, as in a GP-LVM); ``num_videos=None`` explains every
video by the same latent path. Neither can use a stream of fresh videos: the class is the
baseline that shows *why* the SVGP-VAE amortises :math:`q(u)`.

Missing frames (``data = (X, Y, mask)``): a frame with nothing observed has site weight 0;
it is left out of both the encoder cross-entropy and Hensman's data term (which still
cancel exactly), so the objective is again the masked reconstruction minus
:math:`\mathrm{KL}(q(u)\,\|\,p(u))`. The free :math:`q(u)` never sees the frames, so
masks change neither it nor the predictions.

Parameterisation: whitened, :math:`u = L_m v`, :math:`q(v) = \mathcal N(m, SS^\top)`
with ``q_mu [Q, M, L]`` and lower-triangular ``q_sqrt [Q, L, M, M]``
(GPflow ``Parameter`` with the ``triangular()`` transform), ``Q = 1`` or ``num_videos``.
"""

from typing import Optional

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.utilities import triangular

from .video import InducingVideoAutoencoder, LatentPosterior, batched_prior_variance, expected_log_site, frame_sum

__all__ = ["HensmanGPVAE", "whitened_gauss_kl"]


def whitened_gauss_kl(q_mu: tf.Tensor, q_sqrt: tf.Tensor) -> tf.Tensor:
    r""":math:`\mathrm{KL}(\mathcal N(m, SS^\top)\,\|\,\mathcal N(0, I))` per set and channel.

    :param q_mu: ``[Q, M, L]``; :param q_sqrt: lower-triangular ``[Q, L, M, M]``.
    :return: ``[Q, L]``.
    """
    M = tf.cast(tf.shape(q_sqrt)[-1], q_sqrt.dtype)
    trace = tf.reduce_sum(tf.square(q_sqrt), axis=[-2, -1])
    mahalanobis = tf.linalg.matrix_transpose(tf.reduce_sum(tf.square(q_mu), axis=-2, keepdims=True))[..., 0]
    log_det = 2.0 * tf.reduce_sum(tf.math.log(tf.abs(tf.linalg.diag_part(q_sqrt))), axis=-1)
    return 0.5 * (trace + mahalanobis - M - log_det)


class HensmanGPVAE(InducingVideoAutoencoder):
    r"""GP-VAE with Hensman's free :math:`q(u)` (the encoder receives zero gradient).

    :param num_latent_gps: :math:`L` (required: it fixes the shape of ``q_mu``).
    :param num_videos: ``None`` (one :math:`q(u)` per channel shared by all videos) or
        :math:`V` (one per video; batches must hold exactly these videos, in order).
    :param q_mu: optional initial ``[Q, M, L]`` whitened means (default zeros).
    :param q_sqrt: optional initial lower-triangular ``[Q, L, M, M]`` (default identity).

    Other arguments (also ``missing_values``, ``encoder_sees_mask``, ``encoder_dropout``) as
    :class:`~gpflow_svgpvae.models.video.VideoGPAutoencoder`.
    """

    def __init__(
        self,
        encoder,
        decoder,
        kernel,
        inducing_variable,
        likelihood="gaussian",
        *,
        num_latent_gps: int,
        num_videos: Optional[int] = None,
        q_mu=None,
        q_sqrt=None,
        **kwargs,
    ):
        super().__init__(
            encoder, decoder, kernel, inducing_variable, likelihood, num_latent_gps=num_latent_gps, **kwargs
        )
        if num_latent_gps is None:
            raise ValueError("HensmanGPVAE needs num_latent_gps (the number of free q(u) per set).")
        self.num_videos = None if num_videos is None else int(num_videos)
        Q, M, L = (1 if self.num_videos is None else self.num_videos), self.num_inducing, int(num_latent_gps)
        dtype = gpflow.default_float()
        q_mu = np.zeros((Q, M, L)) if q_mu is None else np.asarray(q_mu)
        q_sqrt = np.tile(np.eye(M), (Q, L, 1, 1)) if q_sqrt is None else np.asarray(q_sqrt)
        if q_mu.shape != (Q, M, L) or q_sqrt.shape != (Q, L, M, M):
            raise ValueError(f"q_mu must be {(Q, M, L)} and q_sqrt {(Q, L, M, M)}; got {q_mu.shape}, {q_sqrt.shape}")
        self.q_mu = gpflow.Parameter(q_mu, dtype=dtype, name="q_mu")
        self.q_sqrt = gpflow.Parameter(np.tril(q_sqrt), transform=triangular(), dtype=dtype, name="q_sqrt")

    def data_batch(self, data, conditioning: bool = False):
        batch = super().data_batch(data, conditioning=conditioning)
        V = batch.X.shape[0]
        if self.num_videos is not None and V is not None and int(V) != self.num_videos:
            raise ValueError(f"This model has one q(u) per video for {self.num_videos} videos; got {V} videos.")
        return batch

    def free_marginals(self, X):
        r"""SVGP predictive marginals of the free :math:`q(u)` at ``X [V, T, D]``: mean, variance ``[V, T, L]``.

        :math:`W = L_m^{-1}K_{mb}`: mean :math:`W^\top m`, variance
        :math:`k_{bb} - \|W\|^2 + \|S^\top W\|^2` (column norms).
        """
        Lm = self.prior_cholesky()  # [1, C, M, M]
        W = tf.linalg.triangular_solve(Lm, self.cross_covariance(X), lower=True)  # [V, C, M, T]
        q_mu = tf.linalg.matrix_transpose(self.q_mu)  # [Q, L, M]
        mean = tf.linalg.matvec(W, q_mu, transpose_a=True)  # [V, L, T]
        SW = tf.linalg.matmul(self.q_sqrt, W, transpose_a=True)  # [V, L, M, T]
        kdiag = tf.linalg.matrix_transpose(batched_prior_variance(self.kernel, X))  # [V, C, T]
        var = kdiag - tf.reduce_sum(tf.square(W), axis=-2) + tf.reduce_sum(tf.square(SW), axis=-2)
        return tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)

    def latent_posterior(self, X, means, variances, num_data=None, weights=None) -> LatentPosterior:
        mean, var = self.free_marginals(X)
        V = tf.shape(X)[0]
        kl_u = tf.broadcast_to(tf.reduce_sum(whitened_gauss_kl(self.q_mu, self.q_sqrt), axis=-1), [V])  # [V]
        if num_data is None:  # prediction: conditioning on frames does not change a free q(u)
            return LatentPosterior(mean, var, kl_u)
        # Long form, per frame scaled by s = N/b like the reconstruction term (ELBO = s * reconstruction
        # - kl). The encoder's expected log site E_q[log q~(z|y)] and Hensman's expected log likelihood
        # of the latent dataset E_q[log N(ytil | z, vtil)] are computed separately; they cancel exactly.
        # Frames of weight 0 (nothing observed) are left out of both.
        encoder_term = frame_sum(expected_log_site(mean, var, means, variances), weights, axis=[-2, -1])  # [V]
        hensman_data = frame_sum(expected_log_site(mean, var, means, variances), weights, axis=[-2, -1])  # [V]
        scale = tf.cast(num_data, mean.dtype) / tf.cast(tf.shape(X)[1], mean.dtype)
        kl = kl_u + scale * encoder_term - scale * hensman_data
        return LatentPosterior(mean, var, kl)

    def _predict_at(self, X, means, variances, Xnew, weights=None):
        return self.free_marginals(Xnew)
