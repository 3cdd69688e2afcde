r"""Every model's predictions from its latent means and variances ``[..., n, L]``: decoded
(:func:`decode_latent_predictions`), filled into the missing entries of ``Y``
(:func:`fill_missing`), or bound to the data they condition on (:class:`ConditionedModel`); and
the ``check_shapes`` contract of ``predict_y`` that every model declares.
"""

from typing import TYPE_CHECKING, Optional

import gpflow
import tensorflow as tf
from check_shapes import check_shape

from .data import positive_count

if TYPE_CHECKING:  # the models import this module
    from .base import LatentVariableAutoencoder

__all__ = [
    "PREDICT_Y_SHAPES",
    "CONTEXT_PREDICT_F_SHAPES",
    "CONTEXT_PREDICT_Y_SHAPES",
    "checked_predictions",
    "decode_latent_predictions",
    "fill_missing",
    "ConditionedModel",
]

#: ``check_shapes`` specification of the return of ``predict_y(Xnew, ..., num_samples, ...)``: decoded
#: means ``[..., R, ...]`` at ``R`` queries. With ``num_samples`` the return is a pair, checked in the
#: method's body by :func:`checked_predictions` (``check_shapes`` resolves ``return[1]`` before it reads
#: the condition, so a declared ``return[1]`` would index a single ``[1, ...]`` tensor and fail).
PREDICT_Y_SHAPES = ("return: [batch..., R, ...] if num_samples is None",)

_CONTEXT_INPUTS = (
    "Xnew: [N, D]",
    "data[0]: [N_ctx, D] if data is not None",
    "data[1]: [N_ctx, ...] if data is not None",
)

#: ``check_shapes`` specification of ``predict_f(Xnew, data)`` (latent means and variances) for
#: models that condition on context data ``(X [N_ctx, D], Y [N_ctx, ...])``.
CONTEXT_PREDICT_F_SHAPES = (*_CONTEXT_INPUTS, "return[0]: [N, L]", "return[1]: [N, L]")
#: ``check_shapes`` specification of ``predict_y(Xnew, data, num_samples, seed)`` for those models.
CONTEXT_PREDICT_Y_SHAPES = (*_CONTEXT_INPUTS, "return: [N, ...] if num_samples is None")


def checked_predictions(predictions, num_samples: Optional[int], batch: str = "batch..., R"):
    """``predictions`` of ``predict_y(..., num_samples)`` checked in the caller's ``check_shapes``
    context: the pair ``(mean [batch, ...], samples [S, batch, ...])`` when ``num_samples`` is given
    (the single tensor of ``num_samples=None`` is declared on the method)."""
    if num_samples is not None:
        mean, samples = predictions
        check_shape(mean, f"[{batch}, ...]")
        check_shape(samples, f"[S, {batch}, ...]")
    return predictions


def decode_latent_predictions(
    model: "LatentVariableAutoencoder",
    mean: tf.Tensor,
    var: tf.Tensor,
    num_samples: Optional[int] = None,
    seed: int = 0,
    stream: int = 0,
    condition: Optional[tf.Tensor] = None,
):
    r"""The likelihood mean at the latent mean, and optionally at ``S`` latent samples
    :math:`z = m + \sqrt{v}\,\epsilon`, :math:`\epsilon \sim N(0, I)` (stateless draws).

    Every model has it as its method ``decode_predictions(mean, var, ...)``.

    :param model: whose ``decode`` and likelihood's ``mean`` map codes to observations.
    :param mean: latent means ``[..., n, L]``; :param var: latent variances, same shape.
    :param num_samples: ``S`` (``None``: only the decoded mean).
    :param seed: seed of the stateless draws (same seed, same samples).
    :param stream: second seed word, so that models draw distinct streams.
    :param condition: optional ``[..., n, C]`` read by the decoder beside each code (the same for
        every sample of a point).
    :return: decoded mean ``[..., n, ...]`` (in the decoder's dtype), or the pair
        ``(mean, samples [S, ..., n, ...])`` when ``num_samples`` is given.
    """
    dtype = gpflow.default_float()
    lead = tf.shape(mean)[:-1]
    L = mean.shape[-1] if mean.shape[-1] is not None else tf.shape(mean)[-1]
    if condition is not None:
        condition = tf.convert_to_tensor(condition)
        C = condition.shape[-1] if condition.shape[-1] is not None else tf.shape(condition)[-1]

    def decoded_means(Z):  # [..., L] -> [..., ...]
        rows = None
        if condition is not None:  # samples [S, ..., n, L] share their point's condition [..., n, C]
            rows = tf.reshape(tf.broadcast_to(condition, tf.concat([tf.shape(Z)[:-1], [C]], 0)), [-1, C])
        params = model.decode(tf.reshape(Z, [-1, L]), training=False, condition=rows)
        out = tf.cast(model.likelihood.mean(tf.cast(params, dtype)), params.dtype)
        return tf.reshape(out, tf.concat([tf.shape(Z)[:-1], tf.shape(out)[1:]], 0))

    decoded = decoded_means(mean)
    if num_samples is None:
        return decoded
    S = positive_count(num_samples, "num_samples", "latent samples to decode")
    eps = tf.random.stateless_normal(
        tf.concat([[S], lead, [L]], 0), tf.constant([int(seed), int(stream)], tf.int64), dtype=mean.dtype
    )
    return decoded, decoded_means(mean + tf.sqrt(var) * eps)


def fill_missing(Y: tf.Tensor, mask: Optional[tf.Tensor], predictions, num_samples: Optional[int]):
    """``Y`` with its missing entries (``mask`` 0) replaced by the decoded ``predictions`` of
    ``predict_y`` at ``Y``'s points; observed entries are returned exactly as given.

    :param predictions: the decoded mean (any shape with ``Y``'s number of entries), or with
        ``num_samples`` the pair ``(mean, samples [S, ...])``.
    :return: the imputed ``Y`` in ``Y``'s dtype, or the pair ``(imputed, samples [S, *Y.shape])``.
    """
    decoded, samples = (predictions, None) if num_samples is None else predictions
    observed = tf.ones_like(Y, dtype=tf.bool) if mask is None else mask > 0
    imputed = tf.where(observed, Y, tf.cast(tf.reshape(decoded, tf.shape(Y)), Y.dtype))
    if num_samples is None:
        return imputed
    samples = tf.reshape(tf.cast(samples, Y.dtype), tf.concat([[int(num_samples)], tf.shape(Y)], 0))
    return imputed, tf.where(observed[None], Y[None], samples)


class ConditionedModel:
    """A model bound to the data it conditions on (the default :meth:`LatentVariableAutoencoder.posterior`):
    ``predict_f(Xnew)`` and ``predict_y(Xnew, num_samples=None, seed=0)`` call the model's
    methods with that data, so every model offers ``posterior(data)``. More ``data`` given to
    a prediction is refused: the bound data are all it conditions on."""

    def __init__(self, model: "LatentVariableAutoencoder", data):
        self.model = model
        self.data = data

    def _only_bound(self, data):
        if data is not None:
            raise ValueError(
                f"This posterior of {type(self.model).__name__} is bound to its data; call "
                "model.predict_f(Xnew, data) with the data you want instead."
            )

    def predict_f(self, Xnew, data=None):
        """The model's ``predict_f(Xnew, data)`` with the bound data: latent mean and variance at ``Xnew``.

        :raises ValueError: if ``data`` is given (the bound data are all it conditions on).
        """
        self._only_bound(data)
        return self.model.predict_f(Xnew, self.data)

    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0):
        """The model's ``predict_y(Xnew, data, num_samples, seed)`` with the bound data: decoded
        predictions at ``Xnew`` (and ``[S, ...]`` decoded samples with ``num_samples``).

        :raises ValueError: if ``data`` is given.
        """
        self._only_bound(data)
        return self.model.predict_y(Xnew, self.data, num_samples=num_samples, seed=seed)
