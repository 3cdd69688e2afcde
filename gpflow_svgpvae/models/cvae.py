r"""Conditional VAE baseline (Sohn et al. 2015) for view-conditioned generation.

The view (a rotation angle :math:`a`) is given to both networks as
:math:`c = (\cos a, \sin a)` (periodic, so 0 and :math:`2\pi` coincide):

.. math::

    q(z_i \mid y_i, c_i) = \mathcal N(m_i, \mathrm{diag}\, v_i), \quad
    p(z_i) = \mathcal N(0, I), \quad p(y_i \mid z_i, c_i) \text{ via the decoder on } [z_i, c_i].

Minibatch ELBO in GPflow's units:
:math:`\tfrac{N}{b}\sum_{i\in b}\big(E_q\log p(y_i\mid z_i,c_i) - \mathrm{KL}(q_i\,\|\,p)\big)`.

Generating an object at an unseen view (the rotated-MNIST task): the CVAE has
no notion of objects, so an object's code is taken as the average of the
encoder means of that object's *context* images (its images at the other,
seen views), :math:`\bar m_j = \operatorname{mean}_{i: o(i)=j} m_i`, and decoded
with the new view's :math:`c`. A "decoded sample" draws
:math:`z = \bar m_j + \sqrt{\bar v_j}\,\epsilon` with :math:`\bar v_j` the
average encoder variance of those images. ``predict_f(Xnew, data)`` returns
:math:`(\bar m_j, \bar v_j)` of each row's object and ``predict_y`` decodes
them; both require the context ``data = (X, Y)``.
"""
from typing import Optional, Tuple, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

from ..likelihoods import DecoderLikelihood
from ..numerics import assert_finite, assert_positive
from .base import CONTEXT_PREDICT_Y_SHAPES, LatentVariableAutoencoder

__all__ = ["CVAE", "angle_condition"]


def angle_condition(angles) -> tf.Tensor:
    """``[b]`` angles (radians) -> ``[b, 2]`` float32 ``(cos, sin)``."""
    angles = tf.cast(tf.convert_to_tensor(angles), tf.float64)
    return tf.cast(tf.stack([tf.cos(angles), tf.sin(angles)], axis=-1), tf.float32)


class CVAE(LatentVariableAutoencoder):
    """Conditional VAE with data ``(X, Y)``, ``X = [angle, object id]``.

    :param encoder: ``tf_keras`` model ``[images, c [b, 2]] -> (means, variances)``
        (e.g. ``conv_encoder(L, condition_dim=2)``).
    :param decoder: ``tf_keras`` model ``[b, L + 2] -> likelihood parameters``.
    :param angle_column, id_column: columns of ``X``.
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
        name: Optional[str] = None,
    ):
        super().__init__(encoder, decoder, likelihood, num_data=num_data, num_samples=num_samples, seed=seed, name=name)
        self.angle_column = int(angle_column)
        self.id_column = int(id_column)

    @property
    def input_dim(self) -> Optional[int]:
        return 2

    def _decoder_input_width(self, num_latent: int) -> int:
        return num_latent + 2  # codes and the angle condition [cos, sin]

    def _encode_zeros(self, shape):
        return self.encode_conditional(tf.zeros([shape[0], 2], tf.float64), tf.zeros(shape, tf.float32), training=False)

    def _condition(self, X) -> tf.Tensor:
        return angle_condition(tf.convert_to_tensor(X)[:, self.angle_column])

    def encode_conditional(self, X, Y, training=None) -> Tuple[tf.Tensor, tf.Tensor]:
        """Encoder means and variances ``[b, L]`` (float64) of images ``Y`` at views ``X``."""
        Y = tf.cast(Y, tf.float32)
        means, variances = self.encoder([Y, self._condition(X)], training=training)
        dtype = gpflow.default_float()
        means, variances = tf.cast(means, dtype), tf.cast(variances, dtype)
        means = assert_finite(means, "The encoder returned non-finite means.")
        variances = assert_positive(variances, "The encoder returned non-positive variances.")
        return means, variances

    def decode_conditional(self, Z, condition, training=None) -> tf.Tensor:
        """Decoder output for codes ``Z [n, L]`` and conditions ``[n, 2]``."""
        inputs = tf.concat([tf.cast(Z, tf.float32), tf.cast(condition, tf.float32)], axis=-1)
        return self.decoder(inputs, training=training)

    def objective_terms(self, data, training: Optional[bool] = True):
        X, Y = data
        X, Y = self._check_batch(X, Y)
        means, variances = self.encode_conditional(X, Y, training=training)
        kl_points = 0.5 * tf.reduce_sum(variances + tf.square(means) - 1.0 - tf.math.log(variances), axis=-1)
        Z = self._sample_normal(means, variances)  # [S, b, L]
        S = self.num_samples
        Z_flat = tf.reshape(Z, [-1, tf.shape(Z)[-1]])
        condition = tf.tile(self._condition(X), [S, 1])
        params = self.decode_conditional(Z_flat, condition, training=training)
        Y_rep = tf.tile(Y, tf.concat([[S], tf.ones([tf.rank(Y) - 1], tf.int32)], 0))
        reconstruction = tf.reduce_sum(self.likelihood.log_prob(Y_rep, params)) / S
        decoded = self.likelihood.mean(tf.cast(params, gpflow.default_float()))[: tf.shape(Y)[0]]
        batch_size = tf.shape(Y)[0]
        scale = tf.cast(self.num_data, gpflow.default_float()) / tf.cast(batch_size, gpflow.default_float())
        return self._terms(reconstruction, scale * tf.reduce_sum(kl_points), batch_size, self.num_data, decoded)

    # ------------------------------------------------------------ prediction
    def object_codes(self, X_context, Y_context, num_objects: int, batch_size: int = 1024):
        """Per-object average encoder means and variances ``[num_objects, L]`` (rows of
        objects without context images are NaN) and the counts ``[num_objects]``."""
        X_context = np.asarray(X_context)
        sums_m = sums_v = None
        for start in range(0, len(X_context), batch_size):
            Xb = X_context[start : start + batch_size]
            m, v = self.encode_conditional(Xb, Y_context[start : start + batch_size], training=False)
            ids = tf.cast(tf.round(Xb[:, self.id_column]), tf.int32)
            sm = tf.math.unsorted_segment_sum(m, ids, num_objects)
            sv = tf.math.unsorted_segment_sum(v, ids, num_objects)
            sums_m = sm if sums_m is None else sums_m + sm
            sums_v = sv if sums_v is None else sums_v + sv
        ids_all = np.round(X_context[:, self.id_column]).astype(int)
        counts = np.bincount(ids_all, minlength=num_objects).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums_m.numpy() / counts[:, None]
            variances = sums_v.numpy() / counts[:, None]
        return means, variances, counts

    @check_shapes(
        "Xnew: [N, D]",
        "data[0]: [N_ctx, D] if data is not None",
        "data[1]: [N_ctx, ...] if data is not None",
        "return[0]: [N, L]",
        "return[1]: [N, L]",
    )
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
        condition = self._condition(Xnew)  # [N, 2]

        def decode(Z):  # Z [k N, L]: k copies of the N rows
            copies = tf.shape(Z)[0] // tf.shape(condition)[0]
            return self.decode_conditional(Z, tf.tile(condition, [copies, 1]), training=False)

        return self.decode_predictions(mean, var, num_samples=num_samples, seed=seed, stream=1, decode=decode)
