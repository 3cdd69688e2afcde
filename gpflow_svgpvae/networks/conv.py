r"""Convolutional encoder/decoder of the rotated-MNIST experiment (Jazbec et al. 2021).

Encoder: three ``Conv2D`` layers (8 filters, 3x3, ELU, stride 2, "same"
padding: 28 -> 14 -> 7 -> 4), flatten, then a dense
:class:`~gpflow_svgpvae.networks.GaussianSiteHead` giving ``(means, variances)``.

Decoder: a dense layer to a ``7 x 7 x 8`` map, then two x2 upsamplings each
followed by a 3x3 ``Conv2D`` with 8 filters and ELU (7 -> 14 -> 28), and a final
3x3 ``Conv2D`` with one channel (sigmoid by default, so the Gaussian mean lies
in ``[0, 1]`` like the pixels).

Upsampling and XLA. ``UpSampling2D``'s gradient cannot be compiled by XLA on CPU
(TF 2.21): :class:`RepeatUpsampling2D` computes the same nearest-neighbour upsampling
with a broadcast and a reshape, and ``upsampling="transpose"`` uses a learned stride-2
``Conv2DTranspose`` instead.

Speed. By default the decoder computes the same function, with the same parameters and
(for a given seed) the same initial weights, as ``RepeatUpsampling2D`` + ``Conv2D`` layers,
in two faster forms: :class:`UpsamplingConv2D` (``upsampling="fused"``, the upsampled map
is never formed) and, for the one-channel output layer, :class:`DepthwiseSumConv2D`
(``output_layer="depthwise_sum"``). ``upsampling="repeat", output_layer="conv"`` builds the
plain Keras layers. Timings are in ``benchmarks/README.md``.
"""

from typing import Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from .heads import GaussianSiteHead

__all__ = [
    "RepeatUpsampling2D",
    "UpsamplingConv2D",
    "DepthwiseSumConv2D",
    "phase_taps",
    "phase_windows",
    "conv_encoder",
    "conv_decoder",
]

_UPSAMPLINGS = ("repeat", "fused", "transpose")


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
        """``inputs [b, h, w, c]`` with each pixel repeated ``f x f`` times: ``[b, f h, f w, c]``."""
        f = self.factor
        shape = tf.shape(inputs)
        b, h, w, c = shape[0], shape[1], shape[2], shape[3]
        x = inputs[:, :, None, :, None, :]  # [b, h, 1, w, 1, c]
        x = tf.broadcast_to(x, tf.stack([b, h, f, w, f, c]))
        out = tf.reshape(x, tf.stack([b, h * f, w * f, c]))
        if inputs.shape.rank == 4:
            out.set_shape(self.compute_output_shape(inputs.shape))
        return out

    def compute_output_shape(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        f = self.factor
        return tf.TensorShape(
            [input_shape[0]] + [None if d is None else d * f for d in input_shape[1:3]] + [input_shape[3]]
        )

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def phase_taps(kernel_size: int, factor: int) -> Tuple[np.ndarray, int, int]:
    r"""How a ``kernel_size`` "same" convolution of a map upsampled by ``factor`` (nearest
    neighbour) reads the low-resolution map.

    Output row :math:`I = f i + p` (phase :math:`p`) takes tap :math:`a` (offset
    :math:`a - \lfloor k/2 \rfloor`) from low-resolution row :math:`i + r` with
    :math:`r = \lfloor (p + a - \lfloor k/2 \rfloor) / f \rfloor`; zero padding of the
    upsampled map is zero padding of the low-resolution one.

    :return: ``(A [f, R, k], r_min, r_max)`` with ``A[p, r - r_min, a] = 1`` where tap
        ``a`` of phase ``p`` reads offset ``r``, and ``R = r_max - r_min + 1``.
    """
    k, f = int(kernel_size), int(factor)
    if k < 1 or k % 2 == 0 or f < 1:
        raise ValueError(f"kernel_size must be a positive odd integer and factor positive; got {k}, {f}")
    half = k // 2
    r_min, r_max = (0 - half) // f, (f - 1 + half) // f
    A = np.zeros((f, r_max - r_min + 1, k), dtype=np.float32)
    for p in range(f):
        for a in range(k):
            A[p, (p + a - half) // f - r_min, a] = 1.0
    return A, r_min, r_max


class _ConvLikeLayer(tf_keras.layers.Layer):
    """A layer with ``Conv2D``'s parameters (``kernel [k, k, C, F]``, ``bias [F]``, activation),
    created in ``Conv2D``'s order so that the same seed gives ``Conv2D``'s initial values;
    subclasses compute the layer (convolution, bias, activation) their own way in ``call``."""

    def __init__(
        self,
        filters: int,
        kernel_size: int = 3,
        activation=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.filters, self.kernel_size = int(filters), int(kernel_size)
        self.activation = tf_keras.activations.get(activation)
        self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
        self.bias_initializer = tf_keras.initializers.get(bias_initializer)

    def build(self, input_shape):
        channels = tf.TensorShape(input_shape)[-1]
        if channels is None:
            raise ValueError(f"{type(self).__name__} needs the number of input channels at build time")
        k = self.kernel_size
        self.kernel = self.add_weight(
            "kernel", shape=(k, k, int(channels), self.filters), initializer=self.kernel_initializer, trainable=True
        )
        self.bias = self.add_weight("bias", shape=(self.filters,), initializer=self.bias_initializer, trainable=True)
        super().build(input_shape)

    def get_config(self):
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "activation": tf_keras.activations.serialize(self.activation),
            "kernel_initializer": tf_keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": tf_keras.initializers.serialize(self.bias_initializer),
        }


def phase_windows(kernel_size: int, factor: int) -> Tuple[np.ndarray, int]:
    r"""The smallest square windows of the low-resolution map that hold every phase's taps,
    placed so that one crop interleaves the phases (see :class:`UpsamplingConv2D`).

    Phase :math:`p` reads the rows of :func:`phase_taps`' ``A[p]`` that hold a tap; they
    span at most :math:`R_w \le R` rows. The phase is computed in output slot
    :math:`(p + c) \bmod f` from the window starting at row :math:`\lfloor (p + c) / f
    \rfloor` of the padded map: after ``depth_to_space`` its row :math:`fi + p` then sits at
    :math:`fi + p + c` for every phase, i.e. the wanted map shifted by :math:`c`.

    :return: ``(S [f, R_w, k], c)``: ``S[(p + c) % f, r, a] = 1`` where tap ``a`` of phase
        ``p`` reads row ``r`` of its window. For ``k = 3, f = 2``: ``R_w = 2`` of ``R = 3``,
        ``c = 1`` (each phase is a 2x2 convolution, 4/9 of the 3x3 one's arithmetic).
    """
    A, _, _ = phase_taps(kernel_size, factor)
    f, R, k = A.shape
    used = [np.flatnonzero(A[p].sum(axis=-1)) for p in range(f)]
    for width in range(max(u[-1] - u[0] + 1 for u in used), R + 1):
        for c in range(f * (R - width) + 1):
            starts = [(p + c) // f for p in range(f)]
            if all(max(0, u[-1] - width + 1) <= s <= min(u[0], R - width) for s, u in zip(starts, used)):
                S = np.zeros((f, width, k), dtype=np.float32)
                for p, s in enumerate(starts):
                    S[(p + c) % f] = A[p, s : s + width]
                return S, c
    raise AssertionError("unreachable: the full window (width R, c = 0) always fits")


class UpsamplingConv2D(_ConvLikeLayer):
    r"""Nearest-neighbour upsampling by ``factor`` followed by a ``kernel_size x kernel_size``
    "same" convolution (stride 1, bias, activation), computed on the low-resolution map.

    Equal to ``RepeatUpsampling2D(factor)`` then ``Conv2D(filters, kernel_size,
    padding="same")``, with the same ``kernel [k, k, C, F]`` and ``bias [F]`` (and, after
    the same seed, the same initial values). Each of the :math:`f^2` output phases
    :math:`(p, q)` is a convolution of the low-resolution map with
    :math:`K^{pq}_{rs} = \sum_{a, b} S_{p r a} S_{q s b} K_{ab}` over the smallest window
    that holds its taps (:func:`phase_windows`; 2x2 for a 3x3 kernel and factor 2). One
    convolution with :math:`f^2 F` outputs computes them all; bias and activation are
    applied to it (elementwise, so before the interleaving: the convolution, bias and
    activation can run as one fused kernel), then ``depth_to_space`` interleaves the phases
    and one crop removes the shift of :func:`phase_windows`. The upsampled map (and the sum
    over its broadcast in the gradient) is never formed.
    """

    def __init__(self, filters: int, kernel_size: int = 3, factor: int = 2, activation=None, **kwargs):
        super().__init__(filters, kernel_size, activation=activation, **kwargs)
        self.factor = int(factor)
        _, self._r_min, self._r_max = phase_taps(self.kernel_size, self.factor)
        self._windows, self._shift = phase_windows(self.kernel_size, self.factor)

    def call(self, inputs):
        """``inputs [b, H, W, C] -> [b, f H, f W, F]``: the activation of the convolution of the
        ``f``-fold nearest-neighbour upsampled map, plus bias (see the class docstring)."""
        f, F = self.factor, self.filters
        kernel = tf.cast(self.kernel, self.compute_dtype)
        windows = tf.constant(self._windows, dtype=kernel.dtype)  # [f, R_w, k]
        width, C = windows.shape[1], kernel.shape[2]
        phases = tf.einsum("pra,qsb,abcf->rscpqf", windows, windows, kernel)  # [R_w, R_w, C, f, f, F]
        phases = tf.reshape(phases, [width, width, C, f * f * F])
        lo, hi = -self._r_min, self._r_max
        padded = tf.pad(inputs, [[0, 0], [lo, hi], [lo, hi], [0, 0]])
        out = tf.nn.conv2d(padded, phases, strides=1, padding="VALID")  # [b, H + R - R_w, W + R - R_w, f f F]
        out = self.activation(tf.nn.bias_add(out, tf.tile(tf.cast(self.bias, out.dtype), [f * f])))
        out = tf.nn.depth_to_space(out, f)  # [b, f (H + R - R_w), f (W + R - R_w), F]
        H, W = inputs.shape[1], inputs.shape[2]
        if H is None or W is None:
            size = tf.stack([-1, f * tf.shape(inputs)[1], f * tf.shape(inputs)[2], -1])
        else:
            size = [-1, f * H, f * W, -1]
        # tf.slice, not indexing: the gradient of a strided slice of this size costs ~10x more on CPU
        return tf.slice(out, [0, self._shift, self._shift, 0], size)

    def compute_output_shape(self, input_shape):
        s = tf.TensorShape(input_shape)
        f = self.factor
        return tf.TensorShape([s[0]] + [None if d is None else d * f for d in s[1:3]] + [self.filters])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class DepthwiseSumConv2D(_ConvLikeLayer):
    r"""A stride-1 "same" ``kernel_size x kernel_size`` convolution (bias, activation) computed
    as a depthwise convolution followed by a sum over the input channels:
    :math:`y_f = \sum_c k_{cf} \star x_c`.

    Equal to ``Conv2D(filters, kernel_size, padding="same")`` with the same ``kernel [k, k, C, F]``
    and ``bias [F]`` (the same initial values after the same seed). For few output channels, such
    as a decoder's single grey-level output, oneDNN's convolution is slow on this project's CPU;
    this form takes about half its time, forward and backward (``benchmarks/README.md``).
    """

    def __init__(self, filters: int, kernel_size: int = 3, padding: str = "same", activation=None, **kwargs):
        if str(padding).lower() != "same":
            raise ValueError(f"DepthwiseSumConv2D computes 'same' convolutions only; got padding={padding!r}")
        super().__init__(filters, kernel_size, activation=activation, **kwargs)

    def call(self, inputs):
        r"""``inputs [b, H, W, C] -> [b, H, W, F]``: the activation of
        :math:`\sum_c k_{cf} \star x_c + \text{bias}_f`."""
        kernel = tf.cast(self.kernel, self.compute_dtype)
        C, F = kernel.shape[2], self.filters
        # kernel [k, k, C, F] read as a depthwise kernel with channel multiplier F
        per_channel = tf.nn.depthwise_conv2d(inputs, kernel, strides=[1, 1, 1, 1], padding="SAME")  # [b, H, W, C F]
        # The sum over c of channel c F + f, as a product with [C F, F] (cheaper than a
        # reshape and a sum, whose gradient is a tile), and the bias as a broadcast add
        # (BiasAddGrad with one channel is slow on CPU).
        summation = tf.constant(np.tile(np.eye(F, dtype=np.float32), (C, 1)), dtype=per_channel.dtype)
        out = tf.einsum("bhwk,kf->bhwf", per_channel, summation) + tf.cast(self.bias, per_channel.dtype)
        return self.activation(out)

    def compute_output_shape(self, input_shape):
        return tf.TensorShape(input_shape)[:-1].concatenate([self.filters])


_OUTPUT_LAYERS = {"depthwise_sum": DepthwiseSumConv2D, "conv": tf_keras.layers.Conv2D}


def conv_encoder(
    num_latent_gps: int,
    image_shape: Tuple[int, int, int] = (28, 28, 1),
    filters: Sequence[int] = (8, 8, 8),
    kernel_size: int = 3,
    activation: str = "elu",
    condition_dim: int = 0,
    min_variance: float = 1e-4,
    name: str = "conv_encoder",
) -> tf_keras.Model:
    """The paper's MNIST encoder, ``images [b, H, W, C] -> (means [b, L], variances [b, L])``.

    :param num_latent_gps: :math:`L`.
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
    outputs = GaussianSiteHead(num_latent_gps, min_variance=min_variance, name="site_head")(h)
    return tf_keras.Model(inputs, outputs, name=name)


def conv_decoder(
    num_latent_gps: int,
    image_shape: Tuple[int, int, int] = (28, 28, 1),
    filters: Sequence[int] = (8, 8),
    kernel_size: int = 3,
    activation: str = "elu",
    upsampling: str = "fused",
    output_activation: Optional[str] = "sigmoid",
    output_layer: str = "depthwise_sum",
    name: str = "conv_decoder",
) -> tf_keras.Model:
    """The paper's MNIST decoder, ``Z [b, num_latent_gps] -> images [b, H, W, C]``.

    Dense to ``(H / 2^k) x (W / 2^k) x filters[0]`` (``k = len(filters)``), then
    per entry of ``filters`` an x2 upsampling and a conv layer, then a final
    conv layer with ``C`` channels: 3 conv layers for the defaults.

    :param num_latent_gps: input width (:math:`L`; :math:`L + 2` for the CVAE).
    :param upsampling: ``"repeat"`` (nearest neighbour, :class:`RepeatUpsampling2D`,
        then a 3x3 conv), ``"fused"`` (the same function and parameters in one
        :class:`UpsamplingConv2D` layer, faster) or ``"transpose"`` (a stride-2
        ``Conv2DTranspose`` that upsamples and convolves in one layer). All compile under XLA.
    :param output_activation: activation of the last layer (``"sigmoid"``: the
        Gaussian mean is in ``[0, 1]``; ``None`` for logits, e.g. Bernoulli).
    :param output_layer: ``"depthwise_sum"`` (:class:`DepthwiseSumConv2D`, faster for few
        channels) or ``"conv"`` (``Conv2D``): the same function, parameters and initial values.
    """
    if upsampling not in _UPSAMPLINGS:
        raise ValueError(f"upsampling must be one of {_UPSAMPLINGS}; got {upsampling!r}")
    if output_layer not in _OUTPUT_LAYERS:
        raise ValueError(f"output_layer must be one of {tuple(_OUTPUT_LAYERS)}; got {output_layer!r}")
    H, W, C = (int(d) for d in image_shape)
    k = len(filters)
    if k < 1 or H % 2**k or W % 2**k:
        raise ValueError(f"image size {H}x{W} must be divisible by 2^{k} (one x2 upsampling per filter entry)")
    h0, w0 = H // 2**k, W // 2**k
    z = tf_keras.Input(shape=(int(num_latent_gps),), name="latents")
    h = tf_keras.layers.Dense(h0 * w0 * int(filters[0]), activation=activation, name="dense")(z)
    h = tf_keras.layers.Reshape((h0, w0, int(filters[0])))(h)
    for i, f in enumerate(filters):
        if upsampling == "repeat":
            h = RepeatUpsampling2D(2, name=f"upsample{i}")(h)
            h = tf_keras.layers.Conv2D(int(f), kernel_size, padding="same", activation=activation, name=f"conv{i}")(h)
        elif upsampling == "fused":
            h = UpsamplingConv2D(int(f), kernel_size, 2, activation=activation, name=f"conv{i}")(h)
        else:
            h = tf_keras.layers.Conv2DTranspose(
                int(f), kernel_size, strides=2, padding="same", activation=activation, name=f"deconv{i}"
            )(h)
    output_class = _OUTPUT_LAYERS[output_layer]
    out = output_class(C, kernel_size, padding="same", activation=output_activation, name="output")(h)
    return tf_keras.Model(z, out, name=name)
