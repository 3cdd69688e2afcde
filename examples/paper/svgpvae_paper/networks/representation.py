r"""The SPRITES *representation network*: frames of a character -> one style vector.

Jazbec et al. (2021, section 5.3) give each SPRITES character a style vector
computed from its frames: a small conv net :math:`h_\phi` maps every frame to
:math:`\mathbb R^{16}` and the character's style is the sum over its frames
(:class:`~gpflow_svgpvae.networks.representation.StyleRepresentation`),
pretrained as a 1000-way character classifier and then trained jointly with the
SVGP-VAE. The style enters the GP prior as the object part of the auxiliary input
``x_i = [s_{c_i}, p_{\text{pose}_i}]``.

* :func:`representation_network` -- the conv net :math:`h_\phi` (3 conv layers
  of 16 filters 2x2, one pooling layer, a dense 16-dim output), ``tf_keras``,
  float32;
* :func:`representation_and_table` -- the input transform ``[character id, pose id] ->
  [style, pose vector]``;
* :func:`group_styles`, :func:`character_styles` -- the distinct characters of a set of
  frames and their styles (eager);
* :func:`pretrain_representation` -- per-frame character classification
  (softmax over the training characters) with a temporary dense head.

The SPRITES kernel is cosine-normalised on the style, so sum and mean give the
same GP prior there. (A training character contributes its 50 training frames to
its style, a test character its 36 context frames.)
"""

import time
from typing import Dict, List, Sequence, Tuple

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from tqdm.auto import tqdm

from gpflow_svgpvae.networks.representation import StyleRepresentation
from gpflow_svgpvae.tracing import not_autographed
from gpflow_svgpvae.transforms import Chain, Concatenate, GroupRepresentation, InputTransform, SelectColumns

__all__ = [
    "representation_network",
    "representation_and_table",
    "group_styles",
    "character_styles",
    "pretrain_representation",
]


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


def representation_and_table(
    representation: StyleRepresentation, table: InputTransform, group_column: int = 0, id_column: int = 1
) -> Concatenate:
    """Raw ``[group id, view id]`` rows (and their observations) -> ``[group vector, view vector]``.

    The group's vector comes from its observations (:class:`~gpflow_svgpvae.transforms.GroupRepresentation`),
    the view's from a learned table (an :class:`~gpflow_svgpvae.auxiliary.ObjectVectors`
    reading one id column): SPRITES' ``[style, pose vector]``.
    """
    if getattr(table, "num_view_features", None) not in (None, 0):
        raise ValueError("the table must map a single id column (num_view_features=0).")
    return Concatenate(
        [GroupRepresentation(representation, group_column=group_column), Chain([SelectColumns([id_column]), table])]
    )


def group_styles(features: tf.Tensor, group_ids: tf.Tensor, reduction: str = "sum") -> Tuple[np.ndarray, np.ndarray]:
    """The distinct groups of a batch (in order of first appearance) and their aggregates.

    :return: ``(ids [g], styles [g, d])`` as numpy arrays (styles in float64).
    """
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be sum or mean; got {reduction!r}")
    features = tf.cast(features, gpflow.default_float())
    ids, index = tf.unique(tf.convert_to_tensor(group_ids))
    n = tf.shape(ids)[0]
    styles = tf.math.unsorted_segment_sum(features, index, n)
    if reduction == "mean":
        counts = tf.math.unsorted_segment_sum(tf.ones_like(features[:, :1]), index, n)
        styles = styles / counts
    return ids.numpy(), styles.numpy()


def character_styles(
    representation: StyleRepresentation, frames, group_ids, batch_size: int = 1000
) -> Tuple[np.ndarray, np.ndarray]:
    """The styles of all characters in arrays of any size (the network run in chunks).

    :return: ``(ids [g], styles [g, d])``, ids in order of first appearance.
    """
    frames = np.asarray(frames)
    features = np.concatenate(
        [
            representation.frame_features(_as_float_frames(frames[i : i + batch_size]), training=False).numpy()
            for i in range(0, len(frames), int(batch_size))
        ]
    )
    return group_styles(features, np.asarray(group_ids), representation.reduction)


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
