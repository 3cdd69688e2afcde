r"""The SPRITES *representation network*: frames of a character -> one style vector.

Jazbec et al. (2021, section 5.3) give each SPRITES character a style vector
computed from its frames: a small conv net :math:`h_\phi` maps every frame to
:math:`\mathbb R^{16}` and the character's style is the sum over its frames,

.. math::

    s_c = \sum_{i:\,c_i = c} h_\phi(y_i),

pretrained as a 1000-way character classifier and then trained jointly with the
SVGP-VAE. The style enters the GP prior as the object part of the auxiliary input
``x_i = [s_{c_i}, p_{\text{pose}_i}]``.

Pieces:

* :func:`representation_network` -- the conv net :math:`h_\phi` (3 conv layers
  of 16 filters 2x2, one pooling layer, a dense 16-dim output), ``tf_keras``,
  float32;
* :func:`aggregate_by_group` -- per-row aggregation over rows of the same group
  (character), written as a matrix product with the group-membership matrix
  :math:`G_{ij} = [c_i = c_j]`, so it has static shapes, is invariant to the order
  of the rows, compiles under XLA and is differentiable; computed in
  ``gpflow.default_float()`` (float64), the boundary to the GP;
* :func:`group_styles` -- the distinct groups of a batch and their styles (eager);
* :class:`StyleRepresentation` -- the network plus the aggregation, as stored
  on :class:`~gpflow_svgpvae.SVGPVAE` through :class:`~gpflow_svgpvae.transforms.GroupRepresentation`;
* :func:`pretrain_representation` -- per-frame character classification
  (softmax over the training characters) with a temporary dense head.

Sum or mean. The default is the paper's sum. The SPRITES kernel is a
*cosine-normalised* linear kernel on the style, so the style's norm is
irrelevant there and sum and mean give the same GP prior; they differ only
for kernels that see the norm. (A training character contributes its 50
training frames to its style, a test character its 36 context frames.)
"""

from typing import Dict, List, Optional, Sequence, Tuple

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from tqdm.auto import tqdm

from ..tracing import not_autographed
from .validation import check_network

__all__ = [
    "REDUCTIONS",
    "representation_network",
    "aggregate_by_group",
    "group_styles",
    "StyleRepresentation",
    "pretrain_representation",
]

REDUCTIONS = ("sum", "mean")


def representation_network(
    output_dim: int = 16,
    image_shape: Tuple[int, int, int] = (64, 64, 3),
    filters: Sequence[int] = (16, 16, 16),
    kernel_size: int = 2,
    strides: int = 2,
    pool_size: int = 2,
    activation: str = "elu",
    name: str = "representation",
) -> tf_keras.Model:
    """The per-frame network :math:`h_\\phi`, ``frames [b, H, W, C] -> [b, output_dim]``.

    ``len(filters)`` conv layers (paper: three of 16 filters, 2x2), each with
    stride ``strides`` and "same" padding, one max-pooling layer, flatten and a
    linear dense layer of ``output_dim`` (paper: 16) units. With the defaults a
    64 x 64 frame becomes 32 -> 16 -> 8 -> (pool) 4 x 4 x 16 -> 16.
    The strides keep it cheap (about 0.5 M multiply-adds per frame).
    """
    if int(output_dim) < 1:
        raise ValueError(f"output_dim must be a positive integer, got {output_dim}")
    frames = tf_keras.Input(shape=tuple(int(d) for d in image_shape), name="frames")
    h = frames
    for i, f in enumerate(filters):
        h = tf_keras.layers.Conv2D(
            int(f), int(kernel_size), strides=int(strides), padding="same", activation=activation, name=f"conv{i}"
        )(h)
    h = tf_keras.layers.MaxPooling2D(int(pool_size), name="pool")(h)
    h = tf_keras.layers.Flatten(name="flatten")(h)
    out = tf_keras.layers.Dense(int(output_dim), name="style")(h)
    return tf_keras.Model(frames, out, name=name)


def _check_reduction(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}; got {reduction!r}")
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


def group_styles(features: tf.Tensor, group_ids: tf.Tensor, reduction: str = "sum") -> Tuple[np.ndarray, np.ndarray]:
    """The distinct groups of a batch (in order of first appearance) and their aggregates.

    :return: ``(ids [g], styles [g, d])`` as numpy arrays (styles in float64).
    """
    _check_reduction(reduction)
    features = tf.cast(features, gpflow.default_float())
    ids, index = tf.unique(tf.convert_to_tensor(group_ids))
    n = tf.shape(ids)[0]
    styles = tf.math.unsorted_segment_sum(features, index, n)
    if reduction == "mean":
        counts = tf.math.unsorted_segment_sum(tf.ones_like(features[:, :1]), index, n)
        styles = styles / counts
    return ids.numpy(), styles.numpy()


class StyleRepresentation(gpflow.Module):
    """:math:`h_\\phi` and the per-character aggregation of its outputs.

    Calling it with a batch of frames and their character ids returns, for
    every frame, the style of its character computed from *the frames of that
    character present in the batch*; batches must therefore hold whole
    characters (see :func:`~svgpvae_paper.datasets.sprites.character_batches`).

    :param network: a ``tf_keras`` network ``frames -> [b, d]`` (default:
        :func:`representation_network`).
    :param reduction: ``"sum"`` (paper) or ``"mean"``.
    """

    def __init__(self, network=None, reduction: str = "sum", name: Optional[str] = None):
        super().__init__(name=name)
        self.network = check_network(network if network is not None else representation_network(), "representation")
        self.reduction = _check_reduction(reduction)

    @property
    def output_dim(self) -> Optional[int]:
        shape = getattr(self.network, "output_shape", None)
        return None if shape is None else int(shape[-1])

    def frame_features(self, frames: tf.Tensor, training: Optional[bool] = None) -> tf.Tensor:
        """:math:`h_\\phi(y_i)` per frame, ``[b, d]`` float32."""
        frames = tf.cast(frames, getattr(self.network, "compute_dtype", None) or tf.float32)
        if isinstance(self.network, tf_keras.layers.Layer):
            return self.network(frames, training=training)
        return self.network(frames)

    def __call__(self, frames: tf.Tensor, group_ids: tf.Tensor, training: Optional[bool] = None) -> tf.Tensor:
        """Per-frame style of the frame's character, ``[b, d]`` in ``gpflow.default_float()``."""
        return aggregate_by_group(self.frame_features(frames, training=training), group_ids, self.reduction)

    def styles(self, frames, group_ids, batch_size: int = 1000) -> Tuple[np.ndarray, np.ndarray]:
        """Styles of all groups in arrays of any size (network run in chunks).

        :return: ``(ids [g], styles [g, d])``, ids in order of first appearance.
        """
        frames = np.asarray(frames)
        features = np.concatenate(
            [
                self.frame_features(_as_float_frames(frames[i : i + batch_size]), training=False).numpy()
                for i in range(0, len(frames), int(batch_size))
            ]
        )
        return group_styles(features, np.asarray(group_ids), self.reduction)


def _as_float_frames(frames: np.ndarray) -> np.ndarray:
    if frames.dtype == np.uint8:
        return frames.astype(np.float32) / 255.0
    return frames.astype(np.float32)


def pretrain_representation(
    representation: StyleRepresentation,
    dataset: tf.data.Dataset,
    class_ids: np.ndarray,
    *,
    epochs: int,
    learning_rate: float = 1e-3,
    seed: int = 0,
    id_column: int = 0,
    jit_compile: bool = False,
    progress: bool = True,
) -> Dict[str, list]:
    r"""Pretrain :math:`h_\phi` as a character classifier.

    A temporary linear head maps each frame's :math:`h_\phi(y_i)` to logits over
    the ``len(class_ids)`` training characters (paper: 1000) and the softmax
    cross-entropy of the frame's character is minimised with Adam. Only the
    representation network is kept (the head is discarded).

    :param dataset: batches ``(X_raw, Y)``, character id in column ``id_column``
        of ``X_raw``; every id must be in ``class_ids``. Frame-shuffled batches
        (``character_batches(..., group=False)``) mix more classes per step.
    :param class_ids: the training characters' ids; class ``k`` is ``class_ids[k]``.
    :return: per-epoch mean ``loss`` and ``accuracy`` (and ``seconds``).
    """
    import time

    class_ids = np.asarray(class_ids, dtype=np.int64)
    order = np.argsort(class_ids)
    sorted_ids = tf.constant(class_ids[order])
    position_to_class = tf.constant(order.astype(np.int64))
    num_classes = len(class_ids)
    tf_keras.utils.set_random_seed(int(seed))
    head = tf_keras.layers.Dense(num_classes, name="character_logits")
    optimizer = tf_keras.optimizers.Adam(learning_rate)

    def labels_of(X):
        ids = tf.cast(tf.round(tf.cast(X[:, id_column], tf.float64)), tf.int64)
        pos = tf.searchsorted(sorted_ids, ids)
        return tf.gather(position_to_class, tf.minimum(pos, num_classes - 1))

    @tf.function(jit_compile=jit_compile)
    @not_autographed
    def step(X, Y):
        labels = labels_of(X)
        with tf.GradientTape() as tape:
            logits = head(representation.frame_features(Y, training=True))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        variables = representation.network.trainable_variables + head.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, axis=-1), labels), tf.float32))
        return loss, accuracy

    history: Dict[str, List[float]] = {"loss": [], "accuracy": [], "seconds": []}
    bar = tqdm(range(int(epochs)), desc="pretraining representation", disable=not progress, unit="epoch")
    for _ in bar:
        start = time.perf_counter()
        losses, accs = [], []
        for X, Y in dataset:
            loss, acc = step(X, Y)
            losses.append(float(loss))
            accs.append(float(acc))
        if not losses:
            raise ValueError("The pretraining dataset produced no batches.")
        history["loss"].append(float(np.mean(losses)))
        history["accuracy"].append(float(np.mean(accs)))
        history["seconds"].append(time.perf_counter() - start)
        bar.set_postfix(loss=f"{history['loss'][-1]:.3g}", acc=f"{history['accuracy'][-1]:.3f}")
    return history
