r"""A *representation network* with per-group aggregation: observations of a group -> one vector.

A network :math:`h_\phi` maps every observation to :math:`\mathbb R^{d}` and a group's
(an object's, a SPRITES character's) vector is the sum over its observations,

.. math::

    s_c = \sum_{i:\,c_i = c} h_\phi(y_i),

(or the mean). Used as an input transform
(:class:`~gpflow_svgpvae.transforms.GroupRepresentation`), an *unseen* group is placed
by its own observations. The paper's SPRITES network and its pretraining are in the
research package (:mod:`svgpvae_paper.networks.representation`).

* :func:`aggregate_by_group` -- per-row aggregation over the rows of the same group, a
  product with the membership matrix :math:`G_{ij} = [c_i = c_j]` (static shapes, XLA);
* :class:`StyleRepresentation` -- the network plus the aggregation.

Sum or mean: they differ only for kernels that see the vector's norm (a
cosine-normalised kernel, :class:`~gpflow_svgpvae.kernels.CosineLinear`, does not).
"""

from typing import Optional

import gpflow
import tensorflow as tf
from gpflow.keras import tf_keras

from .validation import check_network

__all__ = ["aggregate_by_group", "StyleRepresentation"]

_REDUCTIONS = ("sum", "mean")


def _check_reduction(reduction: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}; got {reduction!r}")
    return reduction


def aggregate_by_group(features: tf.Tensor, group_ids: tf.Tensor, reduction: str = "sum") -> tf.Tensor:
    r"""Aggregate rows over the rows of the same group, returned per row.

    .. math::

        a_i = \sum_{j:\, g_j = g_i} f_j \quad(\text{sum}),\qquad
        a_i = \frac{1}{|\{j: g_j = g_i\}|}\sum_{j:\, g_j = g_i} f_j \quad(\text{mean}),

    computed as :math:`a = G f` with :math:`G_{ij} = [g_i = g_j]` in
    ``gpflow.default_float()``. Permuting the rows permutes the output the same
    way (and leaves each group's value unchanged). :math:`O(b^2 d)`: 4 M
    multiply-adds for ``b = 500``, ``d = 16``.

    :param features: ``[b, d]`` per-row features (any float dtype).
    :param group_ids: ``[b]`` group labels (integer or integral float).
    :param reduction: ``"sum"`` or ``"mean"``.
    :return: ``[b, d]`` in ``gpflow.default_float()``.
    """
    _check_reduction(reduction)
    dtype = gpflow.default_float()
    features = tf.cast(features, dtype)
    group_ids = tf.convert_to_tensor(group_ids)
    if group_ids.shape.rank != 1:
        raise ValueError(f"group_ids must have shape [b]; got {group_ids.shape}")
    same = tf.cast(tf.equal(group_ids[:, None], group_ids[None, :]), dtype)  # [b, b]
    aggregated = tf.linalg.matmul(same, features)  # [b, d]
    if reduction == "mean":
        aggregated = aggregated / tf.reduce_sum(same, axis=1, keepdims=True)
    return aggregated


class StyleRepresentation(gpflow.Module):
    """:math:`h_\\phi` and the per-group aggregation of its outputs.

    Calling it with a batch of frames and their group ids returns, for every
    frame, the vector of its group computed from *the frames of that group
    present in the batch*; batches must therefore hold whole groups.

    :param network: a ``tf_keras`` network ``frames -> [b, d]``.
    :param reduction: ``"sum"`` (the SVGP-VAE paper's) or ``"mean"``.
    """

    def __init__(self, network, reduction: str = "sum", name: Optional[str] = None):
        super().__init__(name=name)
        self.network = check_network(network, "representation")
        self.reduction = _check_reduction(reduction)

    @property
    def output_dim(self) -> Optional[int]:
        """:math:`d`, the width of a style vector (``None`` before the network is built)."""
        shape = getattr(self.network, "output_shape", None)
        return None if shape is None else int(shape[-1])

    def frame_features(self, frames: tf.Tensor, training: Optional[bool] = None) -> tf.Tensor:
        """:math:`h_\\phi(y_i)` per frame, ``[b, d]`` float32."""
        frames = tf.cast(frames, getattr(self.network, "compute_dtype", None) or tf.float32)
        if isinstance(self.network, tf_keras.layers.Layer):
            return self.network(frames, training=training)
        return self.network(frames)

    def __call__(self, frames: tf.Tensor, group_ids: tf.Tensor, training: Optional[bool] = None) -> tf.Tensor:
        """Per-frame vector of the frame's group, ``[b, d]`` in ``gpflow.default_float()``."""
        return aggregate_by_group(self.frame_features(frames, training=training), group_ids, self.reduction)
