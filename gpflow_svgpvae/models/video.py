r"""Autoencoders for many independent short latent datasets (videos).

Data come as ``(X, Y)`` with ``X [V, T, D]`` (the auxiliary inputs of each
frame, e.g. its time) and ``Y [V, T, ...]`` (the frames). Every video has its
own latent dataset: per channel :math:`l` the encoder's Gaussian sites
:math:`\tilde q(z_{vtl}\mid y_{vt}) = \mathcal N(\tilde y_{vtl}, \tilde v_{vtl})`
at the inputs :math:`x_{vt}`, and every video has its own GP draw
:math:`f_v^l \sim \mathcal{GP}(0, k)` (kernel hyperparameters and, for the
sparse models, inducing inputs are shared by all videos). The GP dataset size
of a video is its number of frames :math:`N` (``sequence_length``); the ELBO of a
batch of videos is the *sum* of the per-video ELBOs

.. math::

    \mathcal L = \sum_v \Big(\tfrac{N}{b}\sum_{t\in b}
        E_{q}[\log p(y_{vt}\mid z_{vt})] - \mathrm{KL}_v\Big),

with :math:`b = N = T` unless ``sequence_length`` is given and batches hold a random
subset of :math:`b < N` frames per video (models with ``whole_sequences_only`` refuse
that), times ``num_data / V`` when ``num_data`` (the number of training videos) is given. Everything is batched over
videos with a leading dimension (no Python loop over videos).

Each model implements :meth:`VideoAutoencoder.latent_posterior`, which maps
the encoder's sites to the marginals :math:`q(z_{vt})` used by the
reconstruction term and to :math:`\mathrm{KL}_v`; ``objective_terms`` returns
the :class:`~gpflow_svgpvae.models.base.ELBOTerms` of the batch.

Missing data
------------

Data may carry a mask, ``data = (X, Y, mask)``, with the rules of
:class:`~gpflow_svgpvae.SVGPVAE`: ``mask`` of ``Y``'s shape (1 = observed,
0 = missing) or one flag per frame ``[V, T]`` (e.g. marking the real frames of
padded videos); ``missing_values="nan"`` makes NaN entries missing. Missing
entries are set to 0 before the encoder (with ``encoder_sees_mask=True`` the
encoder sees ``concat([Y zero-filled, mask], -1)``) and contribute nothing to
the decoder's log density. A frame with no observed entry (fully missing or
padded) carries no information: its site weight is :math:`w_{vt} = 0`
(:meth:`~gpflow_svgpvae.models.base.LatentVariableAutoencoder.point_weights`),
so it drops out of the posterior and of :math:`\mathrm{KL}_v` exactly; the
KL and the posterior at the other frames are those of the video without that
frame, and the posterior at the frame itself is the model's prediction there
(the GP prediction from the other frames; the prior :math:`\mathcal N(0, I)`
for the :class:`~gpflow_svgpvae.VAE`). It still counts in :math:`b` (a frame
whose observations are all missing). A mask of ones gives exactly the numbers
of unmasked data. Padded videos (frame mask ``[V, T]``)
give the ELBO, KL and predictions of the unpadded videos one by one.

The kernel helpers below evaluate GPflow kernels on batched inputs: a plain
kernel is shared by all :math:`L` channels (one "channel kernel", ``C = 1``);
a ``SeparateIndependent`` kernel has one per channel (``C = L``).
"""

import abc
from typing import List, NamedTuple, Optional, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.inducing_variables import InducingPoints
from gpflow.kernels import Kernel, MultioutputKernel, SeparateIndependent, SharedIndependent

from .. import amortized, distribute
from ..amortized import inducing_inputs, prior_variance_diag
from ..likelihoods import DecoderLikelihood
from .base import ELBOTerms, LatentVariableAutoencoder

__all__ = [
    "LatentPosterior",
    "VideoAutoencoder",
    "VideoGPAutoencoder",
    "InducingVideoAutoencoder",
    "channel_kernels",
    "batched_gram",
    "batched_cross_gram",
    "batched_prior_variance",
    "expected_log_site",
    "frame_sum",
]


class LatentPosterior(NamedTuple):
    """Marginals of the latent posterior at the frames and the per-video prior term.

    ``mean``, ``variance``: ``[V, T, L]``; ``kl``: ``[V]``, the term the ELBO
    subtracts for each video (summed over channels).
    """

    mean: tf.Tensor
    variance: tf.Tensor
    kl: tf.Tensor


# --------------------------------------------------------------------- kernels
def channel_kernels(kernel: Kernel) -> List[Kernel]:
    """The kernels of the channels: ``[kernel]`` for a shared kernel, one per channel for
    ``SeparateIndependent``."""
    if isinstance(kernel, SeparateIndependent):
        return list(kernel.kernels)
    if isinstance(kernel, SharedIndependent):
        return [kernel.kernel]
    if isinstance(kernel, MultioutputKernel):
        raise TypeError(
            f"Unsupported multi-output kernel {type(kernel).__name__}: pass a plain kernel (shared by "
            "all channels), SharedIndependent or SeparateIndependent."
        )
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a gpflow.kernels.Kernel; got {type(kernel).__name__}")
    return [kernel]


def batched_gram(kernel: Kernel, X: tf.Tensor) -> tf.Tensor:
    """Per-video Gram matrices :math:`k(X_v, X_v)`: ``X [V, T, D] -> [V, C, T, T]``.

    Uses ``k(X)`` with a leading batch dimension (supported by GPflow's
    stationary, linear and polynomial kernels and their sums/products); the
    kernel's ``active_dims`` are honoured, as in GPflow's ``Kuu``/``Kuf``.
    """
    grams = [k(X) for k in channel_kernels(kernel)]
    for gram in grams:
        if gram.shape.rank is not None and gram.shape.rank != 3:
            raise ValueError(
                f"The kernel returned a Gram matrix of shape {gram.shape} for inputs {X.shape}; it does "
                "not support a leading batch dimension."
            )
    return tf.stack(grams, axis=-3)


def batched_cross_gram(kernel: Kernel, X: tf.Tensor, Xnew: tf.Tensor) -> tf.Tensor:
    """Per-video cross-covariances :math:`k(X_v, X^{new}_v)`: ``[V, C, T, R]``.

    GPflow's ``K(X, X2)`` pairs every batch element with every other one, so we
    evaluate the Gram matrix of the concatenated inputs per video and slice.
    """
    T = tf.shape(X)[-2]
    joint = batched_gram(kernel, tf.concat([X, Xnew], axis=-2))  # [V, C, T+R, T+R]
    return joint[..., :T, T:]


def batched_prior_variance(kernel: Kernel, X: tf.Tensor) -> tf.Tensor:
    """Prior marginal variances :math:`k(x, x)`: ``X [V, T, D] -> [V, T, C]``, one column per
    kernel of :func:`channel_kernels` (``SharedIndependent`` gives one column, not L)."""
    kernels = channel_kernels(kernel)
    return prior_variance_diag(kernel if len(kernels) > 1 else kernels[0], X)


def expected_log_site(mean: tf.Tensor, variance: tf.Tensor, site_mean: tf.Tensor, site_variance: tf.Tensor):
    r""":math:`E_{z\sim\mathcal N(m, s)}[\log\mathcal N(z;\tilde y, \tilde v)]`, elementwise:

    .. math::

        -\tfrac12\log(2\pi\tilde v) - \frac{(m - \tilde y)^2 + s}{2\tilde v}.

    It is both the encoder's expected log site :math:`E_q[\log\tilde q(z\mid y)]`
    and Hensman's expected log likelihood of the latent dataset
    :math:`E_q[\log\mathcal N(\tilde y; z, \tilde v)]`.
    """
    return -0.5 * (
        np.log(2.0 * np.pi) + tf.math.log(site_variance) + (tf.square(mean - site_mean) + variance) / site_variance
    )


def frame_sum(values: tf.Tensor, weights: Optional[tf.Tensor] = None, axis=-2) -> tf.Tensor:
    """Sum of per-frame values ``[V, T, L]`` over ``axis`` (frames, or ``[-2, -1]``), the frames
    of weight 0 left out (their values are never read: no NaN or inf can leak in)."""
    if weights is not None:
        used = tf.broadcast_to(tf.cast(weights, values.dtype)[..., None] > 0, tf.shape(values))
        values = tf.where(used, values, tf.zeros_like(values))
    return tf.reduce_sum(values, axis=axis)


def _channels_first(tensor: tf.Tensor) -> tf.Tensor:
    """``[V, T, L] -> [V, L, T]``."""
    return tf.linalg.matrix_transpose(tensor)


# ---------------------------------------------------------------------- models
class VideoAutoencoder(LatentVariableAutoencoder):
    """Base class for autoencoders on batches of videos ``(X [V, T, D], Y [V, T, ...])``
    or ``(X, Y, mask)`` (missing entries; see the module docstring).

    :param encoder: ``tf_keras`` network on single frames, ``Y [n, ...] -> (means [n, L],
        variances [n, L])`` (end it with :class:`~gpflow_svgpvae.networks.GaussianSiteHead`).
    :param decoder: ``tf_keras`` network, ``Z [n, L] -> likelihood parameters [n, ...]``.
    :param likelihood: ``"gaussian"``, ``"bernoulli"`` or a
        :class:`~gpflow_svgpvae.likelihoods.DecoderLikelihood`.
    :param num_data: the number of training videos, for GPflow's minibatch scaling
        (``None``: each batch is the training set).
    :param sequence_length: the number of frames :math:`N` of every video when batches may
        hold fewer (``None``: videos are given whole).
    :param num_samples: Monte Carlo samples of :math:`z` per frame.
    :param seed: seed of the model's random generator.
    :param missing_values: ``None`` (default): NaN in ``Y`` is an error (missing entries
        need a mask, ``data = (X, Y, mask)``); ``"nan"``: NaN entries of ``Y`` are missing.
    :param encoder_sees_mask: feed the encoder ``concat([Y zero-filled, mask], -1)``
        (last axis twice as wide) instead of the zero-filled ``Y`` alone.
    :param encoder_dropout: in ``[0, 1)``: in training steps each observed entry is hidden from the
        encoder with this probability and still scored by the likelihood, which trains the model
        to predict entries it does not see, as imputation asks
        (:meth:`~gpflow_svgpvae.models.LatentVariableAutoencoder.encoder_view`).

    Subclasses set ``whole_sequences_only = True`` when their bound has no minibatch
    estimator; such models reject training batches whose number of frames per video
    differs from ``sequence_length`` (when that is given).
    """

    supports_missing = True

    def data_batch(self, data, conditioning: bool = False):
        batch = super().data_batch(data, conditioning=conditioning)
        if batch.X.shape.rank != 3:
            raise ValueError(
                "X must have shape [num_videos, num_frames, input_dim] (one row of inputs per frame); "
                f"got {batch.X.shape}"
            )
        return batch

    # ------------------------------------------------------------ networks
    def encode_videos(self, Y: tf.Tensor, training: Optional[bool] = None, mask: Optional[tf.Tensor] = None):
        """Site means and variances ``[V, T, L]`` (float64) of all frames, encoded in one call.

        :param Y: frames (zero-filled at missing entries).
        :param mask: optional entry mask (``Y``'s shape) shown to the encoder when
            ``encoder_sees_mask`` (see :meth:`encoder_inputs`)."""
        means, variances = self.encode(self.encoder_inputs(Y, mask), training=training, num_leading=2)
        self._check_num_latent(means)
        return means, variances

    def _videos(self, data, conditioning: bool = False, training: Optional[bool] = None):
        """``data = (X, Y)`` or ``(X, Y, mask)`` -> ``(X, Y zero-filled, mask or None, frame
        weights [V, T] or None, site means, site variances)``."""
        batch = self.data_batch(data, conditioning=conditioning)
        seen = self.encoder_view(batch, training=training)  # the frames' weights are those of what it sees
        means, variances = self.encode_videos(seen.Y, training=training, mask=seen.mask)
        return batch.X, batch.Y, batch.mask, seen.weights, means, variances

    # ------------------------------------------------------- latent model
    @property
    def _expected_num_latent_gps(self) -> Optional[int]:
        """:math:`L` as fixed by the prior (None: taken from the encoder)."""
        return None

    def _check_num_latent(self, means: tf.Tensor):
        L, expected = means.shape[-1], self._expected_num_latent_gps
        if expected is not None and L is not None and int(L) != expected:
            raise ValueError(f"The encoder returned {L} latent channels but the model expects {expected}.")

    @abc.abstractmethod
    def latent_posterior(self, X, means, variances, num_data=None, weights=None) -> LatentPosterior:
        """Posterior marginals of the codes at the frames and the per-video KL term.

        :param X: ``[V, b, D]`` inputs of the given frames.
        :param means: site means ``[V, b, L]`` (float64).
        :param variances: site variances ``[V, b, L]`` (float64).
        :param num_data: :math:`N` frames per video for the scale :math:`N/b`
            (``None``: condition on exactly the given frames, :math:`N = b`).
        :param weights: optional frame weights ``[V, b]`` in {0, 1} (0: the frame carries
            no information, e.g. nothing observed or a padded frame: its site is dropped
            and its means/variances are never used); ``None``: all ones.
        """

    @inherit_check_shapes
    def objective_terms(self, data, training: Optional[bool] = True) -> ELBOTerms:
        """The bound of a batch ``(X, Y)`` or ``(X, Y, mask)`` (see the module docstring)."""
        X, Y, mask, weights, means, variances = self._videos(data, training=training)
        T = tf.cast(tf.shape(X)[1], gpflow.default_float())
        N = T if self.sequence_length is None else tf.constant(self.sequence_length, T.dtype)
        posterior = self.latent_posterior(X, means, variances, num_data=N, weights=weights)
        reconstruction, decoded = self.reconstruct(Y, posterior.mean, posterior.variance, training=training, mask=mask)
        # Videos are independent GP datasets: under tf.distribute each replica holds
        # whole videos, and the KL of the global batch is the sum over replicas.
        num_videos = tf.cast(tf.shape(X)[0], T.dtype)
        kl, num_videos = distribute.sum_across_replicas([tf.reduce_sum(posterior.kl), num_videos])
        scale = N / T
        if self.num_data is not None:  # GPflow's scaling from the batch's videos to the training set's
            data_scale = tf.cast(self.num_data, T.dtype) / num_videos
            scale, kl = data_scale * scale, data_scale * kl
        return self._elbo_terms(reconstruction, kl, scale, decoded, mask)

    # ---------------------------------------------------------- prediction
    @check_shapes("return[0]: [V, R, L]", "return[1]: [V, R, L]")
    def predict_f(self, Xnew, data=None):
        """Posterior means and variances of the latent codes given the videos.

        :param Xnew: ``[V, R, D]`` (or ``[R, D]``, shared by all videos) inputs to
            predict at, or ``None`` for the frames' own inputs.
        :param data: ``(X [V, T, D], Y [V, T, ...])`` or ``(X, Y, mask)``; the posterior of
            each video is conditioned on exactly its given frames (on their observed entries;
            frames with nothing observed do not inform it).
        :return: ``mean, variance``, each ``[V, T or R, L]``.
        """
        if data is None:
            raise ValueError(
                f"{type(self).__name__}.predict_f(Xnew, data) needs the videos to condition on: "
                "data = (X [V, T, D], Y [V, T, ...]) or (X, Y, mask)."
            )
        X, _, _, weights, means, variances = self._videos(data, conditioning=True, training=False)
        if Xnew is None:
            posterior = self.latent_posterior(X, means, variances, num_data=None, weights=weights)
            return posterior.mean, posterior.variance
        Xnew = tf.cast(tf.convert_to_tensor(Xnew), gpflow.default_float())
        if Xnew.shape.rank == 2:
            Xnew = tf.broadcast_to(Xnew[None], tf.concat([tf.shape(X)[:1], tf.shape(Xnew)], 0))
        if Xnew.shape.rank != 3:
            raise ValueError(f"Xnew must have shape [num_videos, R, input_dim] or [R, input_dim]; got {Xnew.shape}")
        V, V_new = X.shape[0], Xnew.shape[0]
        if V is not None and V_new is not None and V != V_new:
            raise ValueError(
                f"Xnew has {V_new} sequences but data has {V}: each query sequence is predicted from its own data "
                f"sequence. Pass Xnew [V={V}, R, input_dim] (one row per data sequence), or [R, input_dim] to query "
                "every sequence at the same inputs, or data with only the sequences you query."
            )
        D, D_new = X.shape[-1], Xnew.shape[-1]
        if D is not None and D_new is not None and D != D_new:
            raise ValueError(f"Xnew has {D_new} input dimensions but the data's X has {D}.")
        return self._predict_at(X, means, variances, Xnew, weights=weights)

    def _predict_at(self, X, means, variances, Xnew, weights=None):
        raise NotImplementedError(f"{type(self).__name__} cannot predict at new inputs.")

    def _imputation_queries(self, X):
        return None  # the posterior at the videos' own frames


class VideoGPAutoencoder(VideoAutoencoder):
    """A :class:`VideoAutoencoder` with a GP prior over the inputs of each video.

    :param kernel: a GPflow kernel shared by all channels, or ``SharedIndependent`` /
        ``SeparateIndependent`` (one kernel per channel). It must accept inputs with a
        leading batch dimension (GPflow's stationary kernels do).
    :param num_latent_gps: :math:`L`; checked against the encoder output when given.
    :param jitter: added to the diagonal of the prior covariance before Cholesky.
    """

    _builds_networks_after_init = True

    def __init__(
        self,
        encoder,
        decoder,
        kernel: Kernel,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_data: Optional[int] = None,
        sequence_length: Optional[int] = None,
        num_latent_gps: Optional[int] = None,
        jitter: float = 1e-6,
        num_samples: int = 1,
        seed: int = 0,
        missing_values: Optional[str] = None,
        encoder_sees_mask: bool = False,
        encoder_dropout: float = 0.0,
        name: Optional[str] = None,
    ):
        super().__init__(
            encoder,
            decoder,
            likelihood,
            num_data=num_data,
            sequence_length=sequence_length,
            num_samples=num_samples,
            seed=seed,
            missing_values=missing_values,
            encoder_sees_mask=encoder_sees_mask,
            encoder_dropout=encoder_dropout,
            name=name,
        )
        kernels = channel_kernels(kernel)
        self.kernel = kernel
        if not jitter >= 0:
            raise ValueError(f"jitter must be >= 0, got {jitter}")
        self.jitter = float(jitter)
        self.num_latent_gps = None if num_latent_gps is None else int(num_latent_gps)
        if len(kernels) > 1 and self.num_latent_gps is not None and len(kernels) != self.num_latent_gps:
            raise ValueError(
                f"The kernel has {len(kernels)} channel kernels but num_latent_gps is {self.num_latent_gps}."
            )
        self.build_networks()  # L is known now

    @property
    def _expected_num_latent_gps(self) -> Optional[int]:
        kernels = channel_kernels(self.kernel)
        return len(kernels) if len(kernels) > 1 else self.num_latent_gps


class InducingVideoAutoencoder(VideoGPAutoencoder):
    """A :class:`VideoGPAutoencoder` with :math:`M` inducing inputs shared by all videos and
    channels (trainable unless made otherwise with ``gpflow.set_trainable``).

    :param inducing_variable: an ``[M, D]`` array of inducing inputs or
        ``gpflow.inducing_variables.InducingPoints``.

    Other arguments as :class:`VideoGPAutoencoder`.
    """

    def __init__(
        self,
        encoder,
        decoder,
        kernel: Kernel,
        inducing_variable: Union[InducingPoints, tf.Tensor, np.ndarray],
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        **kwargs,
    ):
        super().__init__(encoder, decoder, kernel, likelihood, **kwargs)
        if not isinstance(inducing_variable, InducingPoints):
            inducing_variable = InducingPoints(inducing_inputs(inducing_variable))
        elif type(inducing_variable) is not InducingPoints:
            raise TypeError("inducing_variable must be InducingPoints (shared by all videos and channels) or an array.")
        self.inducing_variable = inducing_variable

    @property
    def input_dim(self) -> Optional[int]:
        return int(self.inducing_variable.Z.shape[-1])

    @property
    def num_inducing(self) -> int:
        """:math:`M`, the number of inducing inputs (shared by all videos and channels)."""
        return int(self.inducing_variable.Z.shape[0])

    def _gp_inducing_variable(self):
        # GPflow's Kuu/Kuf dispatch wants a multi-output inducing variable for a multi-output kernel.
        return amortized.as_inducing_variable(self.inducing_variable, self.kernel)

    def prior_cholesky(self) -> tf.Tensor:
        r""":math:`L_m = \mathrm{chol}(K_{mm} + \text{jitter}\,I)`, ``[1, C, M, M]`` (broadcasts over videos)."""
        return amortized.prior_cholesky(self.kernel, self._gp_inducing_variable(), self.jitter)[None]

    def cross_covariance(self, X: tf.Tensor) -> tf.Tensor:
        """:math:`K_{mb}` for every video, ``[V, C, M, T]`` (inducing inputs shared by all videos)."""
        return amortized.cross_covariance(self.kernel, self._gp_inducing_variable(), X)
