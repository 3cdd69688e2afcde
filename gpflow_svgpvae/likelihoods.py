r"""Decoder likelihoods :math:`p_\psi(y \mid z)` on the decoder's output.

GPflow's likelihoods model :math:`p(y \mid f)` for a GP value :math:`f`; here the
"function value" is the decoder output (a mean image or logits), one per
pixel, and the log density of an observation is summed over its pixels. The
Gaussian variance is a GPflow :class:`~gpflow.Parameter` (positive), so
``set_trainable`` and ``print_summary`` work as usual.
"""
import abc
from typing import Union

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.utilities import positive

__all__ = ["DecoderLikelihood", "Gaussian", "Bernoulli", "as_likelihood"]


def _flatten(tensor: tf.Tensor) -> tf.Tensor:
    return tf.reshape(tensor, [tf.shape(tensor)[0], -1])


class DecoderLikelihood(gpflow.Module, abc.ABC):
    """Base class: a factorised density over the pixels of one observation."""

    @abc.abstractmethod
    def _pixel_log_prob(self, Y: tf.Tensor, params: tf.Tensor) -> tf.Tensor:
        """Elementwise log density, ``[b, K]``."""

    @abc.abstractmethod
    def mean(self, params: tf.Tensor) -> tf.Tensor:
        """:math:`E[y \\mid z]` given the decoder output, same shape as ``params``."""

    @abc.abstractmethod
    def sample(self, params: tf.Tensor, seed) -> tf.Tensor:
        """One draw of ``y`` per decoder output (``seed``: a stateless seed ``[2]``)."""

    def log_prob(self, Y: tf.Tensor, params: tf.Tensor) -> tf.Tensor:
        r""":math:`\log p(y_i \mid z_i) = \sum_k \log p(y_{ik} \mid \text{params}_{ik})`, shape ``[b]``."""
        dtype = gpflow.default_float()
        Y = _flatten(tf.cast(Y, dtype))
        params = _flatten(tf.cast(params, dtype))
        return tf.reduce_sum(self._pixel_log_prob(Y, params), axis=-1)


class Gaussian(DecoderLikelihood):
    r""":math:`y_{ik} \sim \mathcal N(\hat y_{ik}, \sigma_y^2)`, decoder output = mean.

    :param variance: :math:`\sigma_y^2`.
    :param trainable: learn :math:`\sigma_y^2` (default: fixed, as in the paper).
    """

    def __init__(self, variance: float = 1.0, trainable: bool = False, variance_lower_bound=1e-6):
        super().__init__()
        if not variance > variance_lower_bound:
            raise ValueError(
                f"Gaussian decoder variance must be > {variance_lower_bound}, got {variance}"
            )
        self.variance = gpflow.Parameter(
            variance, transform=positive(lower=variance_lower_bound), trainable=trainable
        )

    def _pixel_log_prob(self, Y, params):
        variance = tf.cast(self.variance, Y.dtype)
        return -0.5 * (np.log(2 * np.pi) + tf.math.log(variance) + tf.square(Y - params) / variance)

    def mean(self, params):
        return params

    def sample(self, params, seed):
        noise = tf.random.stateless_normal(tf.shape(params), seed, dtype=params.dtype)
        return params + tf.sqrt(tf.cast(self.variance, params.dtype)) * noise


class Bernoulli(DecoderLikelihood):
    r""":math:`y_{ik} \sim \mathrm{Bernoulli}(\sigma(\ell_{ik}))`, decoder output = logits.

    The log density :math:`y\log\sigma(\ell) + (1-y)\log(1-\sigma(\ell))` is
    computed from the logits (stable for large :math:`|\ell|`). For targets in
    :math:`[0,1]` that are not binary (grey pixels) it is the usual
    cross-entropy reconstruction term, not a normalised density.
    """

    def _pixel_log_prob(self, Y, params):
        return -tf.nn.sigmoid_cross_entropy_with_logits(labels=Y, logits=params)

    def mean(self, params):
        return tf.sigmoid(params)

    def sample(self, params, seed):
        uniform = tf.random.stateless_uniform(tf.shape(params), seed, dtype=params.dtype)
        return tf.cast(uniform < tf.sigmoid(params), params.dtype)


def as_likelihood(likelihood: Union[str, DecoderLikelihood]) -> DecoderLikelihood:
    """Accept a :class:`DecoderLikelihood` or the names ``"gaussian"`` / ``"bernoulli"``."""
    if isinstance(likelihood, DecoderLikelihood):
        return likelihood
    if isinstance(likelihood, str):
        name = likelihood.lower()
        if name == "gaussian":
            return Gaussian()
        if name == "bernoulli":
            return Bernoulli()
    raise TypeError(
        "likelihood must be a gpflow_svgpvae.likelihoods.DecoderLikelihood "
        f"(Gaussian, Bernoulli) or one of 'gaussian', 'bernoulli'; got {likelihood!r}"
    )
