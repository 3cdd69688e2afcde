r"""Convolutional encoder/decoder of the rotated-MNIST experiment (Jazbec et al. 2021).

Encoder: three ``Conv2D`` layers (8 filters, 3x3, ELU, stride 2, "same"
padding: 28 -> 14 -> 7 -> 4), flatten, then a dense
:class:`~gpflow_svgpvae.networks.GaussianSiteHead` giving ``(means, variances)``.

Decoder: a dense layer to a ``7 x 7 x 8`` map, then two x2 upsamplings each
followed by a 3x3 ``Conv2D`` with 8 filters and ELU (7 -> 14 -> 28), and a final
3x3 ``Conv2D`` with one channel (sigmoid by default, so the Gaussian mean lies
in ``[0, 1]`` like the pixels).

Upsampling and XLA. ``UpSampling2D``'s gradient (``ResizeNearestNeighborGrad``)
cannot be compiled by XLA on CPU (TF 2.21), so a decoder that is trained with
``jit_compile=True`` must not use it. :class:`RepeatUpsampling2D` computes the
same nearest-neighbour upsampling with a broadcast and a reshape (its gradient
is a reshape and a sum, which XLA compiles); ``upsampling="transpose"``
uses a learned stride-2 ``Conv2DTranspose`` instead. Both are float32 and use
only ``tf_keras`` (Keras 2) layers.
"""
from typing import Optional, Sequence, Tuple

import tensorflow as tf
from gpflow.keras import tf_keras

from .heads import GaussianSiteHead

__all__ = ["RepeatUpsampling2D", "conv_encoder", "conv_decoder"]

_UPSAMPLINGS = ("repeat", "transpose")


class RepeatUpsampling2D(tf_keras.layers.Layer):
    """Nearest-neighbour upsampling by an integer factor, ``[b, h, w, c] -> [b, f h, f w, c]``.

    Equal to ``UpSampling2D(size=factor, interpolation="nearest")`` but built
    from a broadcast and a reshape, so that its gradient compiles under XLA on CPU.
    """

    def __init__(self, factor: int = 2, **kwargs):
        super().__init__(**kwargs)
        if int(factor) < 1:
            raise ValueError(f"factor must be a positive integer, got {factor}")
        self.factor = int(factor)

    def call(self, inputs):
        f = self.factor
        shape = tf.shape(inputs)
        b, h, w, c = shape[0], shape[1], shape[2], shape[3]
        x = inputs[:, :, None, :, None, :]  # [b, h, 1, w, 1, c]
        x = tf.broadcast_to(x, tf.stack([b, h, f, w, f, c]))
        out = tf.reshape(x, tf.stack([b, h * f, w * f, c]))
        static = inputs.shape
        if static.rank == 4:
            out.set_shape(
                [static[0], None if static[1] is None else static[1] * f, None if static[2] is None else static[2] * f, static[3]]
            )
        return out

    def compute_output_shape(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        f = self.factor
        return tf.TensorShape(
            [input_shape[0]]
            + [None if d is None else d * f for d in input_shape[1:3]]
            + [input_shape[3]]
        )

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def conv_encoder(
    num_latent: int,
    image_shape: Tuple[int, int, int] = (28, 28, 1),
    filters: Sequence[int] = (8, 8, 8),
    kernel_size: int = 3,
    activation: str = "elu",
    condition_dim: int = 0,
    min_variance: float = 1e-4,
    name: str = "conv_encoder",
) -> tf_keras.Model:
    """The paper's MNIST encoder, ``images [b, H, W, C] -> (means [b, L], variances [b, L])``.

    :param num_latent: :math:`L`.
    :param image_shape: ``(H, W, C)`` of one image.
    :param filters: filters of the stride-2 conv layers (paper: three of 8).
    :param condition_dim: if > 0 the model takes two inputs ``[images, c]`` and
        concatenates ``c [b, condition_dim]`` to the flattened conv features
        (the CVAE's angle encoding).
    :param min_variance: lower bound of the site variances.
    """
    images = tf_keras.Input(shape=tuple(image_shape), name="images")
    h = images
    for i, f in enumerate(filters):
        h = tf_keras.layers.Conv2D(
            int(f), kernel_size, strides=2, padding="same", activation=activation, name=f"conv{i}"
        )(h)
    h = tf_keras.layers.Flatten()(h)
    inputs = images
    if int(condition_dim) > 0:
        condition = tf_keras.Input(shape=(int(condition_dim),), name="condition")
        h = tf_keras.layers.Concatenate()([h, condition])
        inputs = [images, condition]
    outputs = GaussianSiteHead(num_latent, min_variance=min_variance, name="site_head")(h)
    return tf_keras.Model(inputs, outputs, name=name)


def conv_decoder(
    num_latent: int,
    image_shape: Tuple[int, int, int] = (28, 28, 1),
    filters: Sequence[int] = (8, 8),
    kernel_size: int = 3,
    activation: str = "elu",
    upsampling: str = "repeat",
    output_activation: Optional[str] = "sigmoid",
    name: str = "conv_decoder",
) -> tf_keras.Model:
    """The paper's MNIST decoder, ``Z [b, num_latent] -> images [b, H, W, C]``.

    Dense to ``(H / 2^k) x (W / 2^k) x filters[0]`` (``k = len(filters)``), then
    per entry of ``filters`` an x2 upsampling and a conv layer, then a final
    conv layer with ``C`` channels: 3 conv layers for the defaults.

    :param num_latent: input width (:math:`L`; :math:`L + 2` for the CVAE).
    :param upsampling: ``"repeat"`` (nearest neighbour, :class:`RepeatUpsampling2D`,
        then a 3x3 conv) or ``"transpose"`` (a stride-2 ``Conv2DTranspose``
        that upsamples and convolves in one layer). Both compile under XLA.
    :param output_activation: activation of the last layer (``"sigmoid"``: the
        Gaussian mean is in ``[0, 1]``; ``None`` for logits, e.g. Bernoulli).
    """
    if upsampling not in _UPSAMPLINGS:
        raise ValueError(f"upsampling must be one of {_UPSAMPLINGS}; got {upsampling!r}")
    H, W, C = (int(d) for d in image_shape)
    k = len(filters)
    if k < 1 or H % 2**k or W % 2**k:
        raise ValueError(f"image size {H}x{W} must be divisible by 2^{k} (one x2 upsampling per filter entry)")
    h0, w0 = H // 2**k, W // 2**k
    z = tf_keras.Input(shape=(int(num_latent),), name="latents")
    h = tf_keras.layers.Dense(h0 * w0 * int(filters[0]), activation=activation, name="dense")(z)
    h = tf_keras.layers.Reshape((h0, w0, int(filters[0])))(h)
    for i, f in enumerate(filters):
        if upsampling == "repeat":
            h = RepeatUpsampling2D(2, name=f"upsample{i}")(h)
            h = tf_keras.layers.Conv2D(int(f), kernel_size, padding="same", activation=activation, name=f"conv{i}")(h)
        else:
            h = tf_keras.layers.Conv2DTranspose(
                int(f), kernel_size, strides=2, padding="same", activation=activation, name=f"deconv{i}"
            )(h)
    out = tf_keras.layers.Conv2D(C, kernel_size, padding="same", activation=output_activation, name="output")(h)
    return tf_keras.Model(z, out, name=name)
