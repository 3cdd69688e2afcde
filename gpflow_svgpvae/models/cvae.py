r"""Conditional VAE baseline (Sohn et al. 2015) for view-conditioned generation.

The view (a rotation angle :math:`a`) is given to both networks as
:math:`c = (\cos a, \sin a)` (periodic, so 0 and :math:`2\pi` coincide):

.. math::

    q(z_i \mid y_i, c_i) = \mathcal N(m_i, \mathrm{diag}\, v_i), \quad
    p(z_i) = \mathcal N(0, I), \quad p(y_i \mid z_i, c_i) \text{ via the decoder on } [z_i, c_i].

Minibatch ELBO in GPflow's units:
:math:`\tfrac{N}{b}\sum_{i\in b}\big(E_q\log p(y_i\mid z_i,c_i) - \mathrm{KL}(q_i\,\|\,p)\big)`.

Generating an object at an unseen view (the rotated-MNIST task): the CVAE has
no notion of objects, so an object's code is the average of the encoder means
and variances of its *context* images (at the other, seen views),
:math:`\bar m_j = \operatorname{mean}_{i: o(i)=j} m_i` and :math:`\bar v_j`, decoded
with the new view's :math:`c` (``predict_f(Xnew, data)``, ``predict_y``).

Other conditions come from an input transform (``condition=``, a
:class:`~gpflow_svgpvae.transforms.InputTransform`, the same modules that map an
:class:`~gpflow_svgpvae.SVGPVAE`'s raw inputs to GP inputs). SPRITES: ``X =
[character id, pose id]`` and a :class:`~gpflow_svgpvae.transforms.GroupRepresentation`
beside a pose table give :math:`c = [\text{style of the character's frames}, \text{pose vector}]`; at
prediction the style is computed from the context frames
(:meth:`~gpflow_svgpvae.transforms.InputTransform.context`).
"""

from typing import Optional, Tuple, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes

from ..likelihoods import DecoderLikelihood
from ..numerics import assert_finite, assert_positive
from ..transforms import InputTransform
from .base import LatentVariableAutoencoder
from .data import positive_count
from .prediction import CONTEXT_PREDICT_F_SHAPES, CONTEXT_PREDICT_Y_SHAPES, checked_predictions

__all__ = ["CVAE", "angle_condition"]


def angle_condition(angles) -> tf.Tensor:
    """``[b]`` angles (radians) -> ``[b, 2]`` float32 ``(cos, sin)``."""
    angles = tf.cast(tf.convert_to_tensor(angles), tf.float64)
    return tf.cast(tf.stack([tf.cos(angles), tf.sin(angles)], axis=-1), tf.float32)


class CVAE(LatentVariableAutoencoder):
    """Conditional VAE with data ``(X, Y)``, ``X = [angle, object id]`` (or any raw inputs
    that ``condition`` maps to condition vectors).

    :param encoder: ``tf_keras`` model ``[images, c [b, H]] -> (means, variances)``
        (e.g. ``conv_encoder(L, condition_dim=2)``), or ``images -> (means, variances)``
        with ``encoder_sees_condition=False``.
    :param decoder: ``tf_keras`` model ``[b, L + H] -> likelihood parameters``.
    :param angle_column: column of the angle in ``X`` (the default condition, ``H = 2``).
    :param id_column: column of the object id in ``X`` (prediction: an object's code is the
        average of its context encodings).
    :param condition: an :class:`~gpflow_svgpvae.transforms.InputTransform` from raw inputs
        (and, if it needs them, the batch's observations) to conditions ``[b, H]``; its
        variables train with the model. ``None``: :func:`angle_condition` of ``angle_column``.
    :param condition_dim: ``H`` when ``condition.mapped_dim`` cannot tell it.
    :param encoder_sees_condition: whether the encoder takes ``[images, c]`` (default) or
        the images alone.
    """

    def __init__(
        self,
        encoder,
        decoder,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_data: int,
        angle_column: int = 0,
        id_column: int = -1,
        num_samples: int = 1,
        seed: int = 0,
        condition: Optional[InputTransform] = None,
        condition_dim: Optional[int] = None,
        encoder_sees_condition: bool = True,
        name: Optional[str] = None,
    ):
        # Set before the base constructor, which builds the decoder from the condition's width.
        if condition is not None and not isinstance(condition, InputTransform):
            raise TypeError(f"condition must be an InputTransform or None; got {type(condition).__name__}")
        self.condition = condition
        if condition is None:
            self.condition_dim = 2
        else:
            width = condition_dim if condition_dim is not None else condition.mapped_dim(condition.input_dim)
            if width is None:
                raise ValueError(
                    f"The width of the condition of {type(condition).__name__} is unknown: pass condition_dim."
                )
            self.condition_dim = int(width)
        self.encoder_sees_condition = bool(encoder_sees_condition)
        self.angle_column = int(angle_column)
        self.id_column = int(id_column)
        num_data = positive_count(num_data, "num_data", "the number of training points")
        super().__init__(encoder, decoder, likelihood, num_data=num_data, num_samples=num_samples, seed=seed, name=name)

    @property
    def input_dim(self) -> Optional[int]:
        return 2 if self.condition is None else self.condition.input_dim

    def _decoder_input_width(self, num_latent_gps: int) -> int:
        return num_latent_gps + self.condition_dim  # codes and the condition

    def _encode_zeros(self, shape):
        if not self.encoder_sees_condition:
            return self.encode_conditional(None, tf.zeros(shape, tf.float32), training=False)
        condition = tf.zeros([shape[0], self.condition_dim], tf.float32)
        return self._encode_with(tf.zeros(shape, tf.float32), condition, training=False)

    def _condition(self, X, Y=None, training=None) -> tf.Tensor:
        """Conditions ``[b, H]`` (float32) of raw inputs ``X`` (and the batch's images ``Y``)."""
        if self.condition is None:
            return angle_condition(tf.convert_to_tensor(X)[:, self.angle_column])
        return tf.cast(self.condition(X, Y, training=training), tf.float32)

    def query_condition(self, Xnew, data=None) -> tf.Tensor:
        """Conditions ``[N, H]`` of query inputs; a condition that reads observations (a
        style from frames) summarises the context ``data = (X, Y)`` first."""
        if self.condition is None or not self.condition.needs_observations:
            return self._condition(Xnew)
        if data is None:
            raise ValueError(
                f"The condition {type(self.condition).__name__} of the queries is computed from "
                "the context: pass data = (X, Y)."
            )
        summary = self.condition.context([(np.asarray(data[0]), data[1])])
        return tf.cast(self.condition.map_queries(tf.convert_to_tensor(Xnew), summary), tf.float32)

    def _encode_with(self, Y, condition, training=None):
        Y = tf.cast(Y, tf.float32)
        inputs = [Y, condition] if self.encoder_sees_condition else Y
        means, variances = self.encoder(inputs, training=training)
        dtype = gpflow.default_float()
        means, variances = tf.cast(means, dtype), tf.cast(variances, dtype)
        means = assert_finite(means, "The encoder returned non-finite means.")
        variances = assert_positive(variances, "The encoder returned non-positive variances.")
        return means, variances

    def encode_conditional(self, X, Y, training=None, condition=None) -> Tuple[tf.Tensor, tf.Tensor]:
        """Encoder means and variances ``[b, L]`` (float64) of images ``Y`` at raw inputs ``X``
        (or with the given conditions ``[b, H]``)."""
        if self.encoder_sees_condition and condition is None:
            condition = self._condition(X, Y, training=training)
        return self._encode_with(Y, condition, training=training)

    def decode_conditional(self, Z, condition, training=None) -> tf.Tensor:
        """Decoder output for codes ``Z [n, L]`` and conditions ``[n, H]``."""
        return self.decode(Z, training=training, condition=condition)

    @inherit_check_shapes
    def objective_terms(self, data, training: Optional[bool] = True):
        X, Y, _, _ = self._points_batch(data)
        condition = self._condition(X, Y, training=training)  # [b, H]
        means, variances = self.encode_conditional(X, Y, training=training, condition=condition)
        kl_points = 0.5 * tf.reduce_sum(variances + tf.square(means) - 1.0 - tf.math.log(variances), axis=-1)
        Z = self._sample_normal(means, variances)  # [S, b, L]
        S = self.num_samples
        Z_flat = tf.reshape(Z, [-1, tf.shape(Z)[-1]])
        condition = tf.tile(condition, [S, 1])
        params = self.decode_conditional(Z_flat, condition, training=training)
        Y_rep = tf.tile(Y, tf.concat([[S], tf.ones([tf.rank(Y) - 1], tf.int32)], 0))
        reconstruction = tf.reduce_sum(self.likelihood.log_prob(Y_rep, params)) / S
        decoded = self.likelihood.mean(tf.cast(params, gpflow.default_float()))[: tf.shape(Y)[0]]
        batch_size = tf.shape(Y)[0]
        scale = tf.cast(self.num_data, gpflow.default_float()) / tf.cast(batch_size, gpflow.default_float())
        return self._elbo_terms(reconstruction, scale * tf.reduce_sum(kl_points), scale, decoded)

    # ------------------------------------------------------------ prediction
    def object_codes(self, X_context, Y_context, num_objects: int, batch_size: int = 1024):
        """Per-object average encoder means and variances ``[num_objects, L]`` (rows of
        objects without context images are NaN) and the counts ``[num_objects]``."""
        batch_size = positive_count(batch_size, "batch_size", "images per chunk")
        X_context = np.asarray(X_context)
        # A condition read from observations (a style) comes from the whole context, not a chunk.
        whole = self.encoder_sees_condition and self.condition is not None and self.condition.needs_observations
        conditions = self.query_condition(X_context, (X_context, Y_context)) if whole else None
        sums_m = sums_v = None
        for start in range(0, len(X_context), batch_size):
            Xb = X_context[start : start + batch_size]
            cb = None if conditions is None else conditions[start : start + batch_size]
            m, v = self.encode_conditional(Xb, Y_context[start : start + batch_size], training=False, condition=cb)
            ids = tf.cast(tf.round(Xb[:, self.id_column]), tf.int32)
            sm = tf.math.unsorted_segment_sum(m, ids, num_objects)
            sv = tf.math.unsorted_segment_sum(v, ids, num_objects)
            sums_m = sm if sums_m is None else sums_m + sm
            sums_v = sv if sums_v is None else sums_v + sv
        if sums_m is None or sums_v is None:
            raise ValueError("X_context is empty: object_codes needs at least one context image.")
        ids_all = np.round(X_context[:, self.id_column]).astype(int)
        counts = np.bincount(ids_all, minlength=num_objects).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums_m.numpy() / counts[:, None]
            variances = sums_v.numpy() / counts[:, None]
        return means, variances, counts

    @check_shapes(*CONTEXT_PREDICT_F_SHAPES)
    def predict_f(self, Xnew, data=None):
        """The code of each row's object: the average encoder means and variances ``[N, L]``
        of that object's images in the context ``data = (X, Y)`` (required).

        :raises ValueError: if ``data`` is missing or holds no image of an object in ``Xnew``.
        """
        if data is None:
            raise ValueError(
                "The CVAE encodes an object from its context images: pass data = (X, Y), images of the "
                "objects of Xnew at other views."
            )
        X_ctx, Y_ctx = data
        ids = np.round(np.asarray(Xnew)[:, self.id_column]).astype(int)
        num_objects = int(max(ids.max(), np.asarray(X_ctx)[:, self.id_column].max()) + 1)
        means, variances, counts = self.object_codes(X_ctx, Y_ctx, num_objects)
        if np.any(counts[ids] == 0):
            raise ValueError("Some objects in Xnew have no context images to encode.")
        return tf.constant(means[ids]), tf.constant(variances[ids])

    @check_shapes(*CONTEXT_PREDICT_Y_SHAPES)
    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0):
        """Generate objects at new views: the decoder on ``[code, c(view)]`` with the codes of
        :meth:`predict_f`.

        :param Xnew: ``[N, 2]`` raw inputs ``[angle, object id]``.
        :param data: ``(X, Y)`` images of the same objects at other views (required).
        :return: decoded means ``[N, ...]`` at the averaged codes; with
            ``num_samples = S`` the pair ``(mean, samples [S, N, ...])``
            (:meth:`~gpflow_svgpvae.models.LatentVariableAutoencoder.decode_predictions`, stream 1).
        """
        mean, var = self.predict_f(Xnew, data)
        condition = self.query_condition(Xnew, data)  # [N, H]
        predictions = self.decode_predictions(
            mean, var, num_samples=num_samples, seed=seed, stream=1, condition=condition
        )
        return checked_predictions(predictions, num_samples, batch="N")
