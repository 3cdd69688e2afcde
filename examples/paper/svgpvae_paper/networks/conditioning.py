r"""Layers that condition a convolutional feature map on a code: ``[a [b, H, W, C], z [b, L]] -> [b, H, W, C]``.

* :class:`LatentModulation` -- FiLM (Perez et al. 2018) by the code: per-channel scale and shift,
  linear in :math:`z`;
* :class:`LatentMixing` -- a 1x1 convolution whose kernel :math:`I + M(z)` the code generates
  (the scale is its diagonal), from the code standardised per example.

Both start as the identity (zero weights), so a decoder built with them starts as the plain one.
Used by :func:`~gpflow_svgpvae.networks.sprites_decoder` (``latent_modulation``); any decoder can
call them on its feature maps.
"""

import tensorflow as tf
from gpflow.keras import tf_keras

__all__ = ["LatentModulation", "LatentMixing"]


def _add_linear(layer, name: str, latent: int, width: int):
    """Zero-initialised weights ``name_kernel [L, width]`` and ``name_bias [width]`` of a map ``z W + c``."""
    zeros = tf_keras.initializers.Zeros()
    return (
        layer.add_weight(name=f"{name}_kernel", shape=(latent, width), initializer=zeros),
        layer.add_weight(name=f"{name}_bias", shape=(width,), initializer=zeros),
    )


def _linear(z, kernel, bias):
    """``z W + c`` in ``z``'s dtype (the weights may be float32 under a mixed-precision policy)."""
    return tf.matmul(z, tf.cast(kernel, z.dtype)) + tf.cast(bias, z.dtype)


class LatentModulation(tf_keras.layers.Layer):
    r"""FiLM by a code: ``[a [b, H, W, C], z [b, L]] -> a * (1 + z W_g + c_g) + z W_b + c_b``
    (per channel, broadcast over the map; without ``scale`` only the shift).

    The weights start at zero, so the layer starts as the identity.
    """

    def __init__(self, scale: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.scale = bool(scale)

    def build(self, input_shape):
        channels, latent = int(input_shape[0][-1]), int(input_shape[1][-1])
        self.shift_kernel, self.shift_bias = _add_linear(self, "shift", latent, channels)
        if self.scale:
            self.scale_kernel, self.scale_bias = _add_linear(self, "scale", latent, channels)
        super().build(input_shape)

    def call(self, inputs):
        a, z = inputs
        z = tf.cast(z, a.dtype)
        shift = _linear(z, self.shift_kernel, self.shift_bias)  # [b, C]
        if self.scale:
            gain = 1.0 + _linear(z, self.scale_kernel, self.scale_bias)  # [b, C]
            a = a * gain[:, None, None, :]
        return a + shift[:, None, None, :]

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


class LatentMixing(tf_keras.layers.Layer):
    r"""Channel mixing by a code: a 1x1 convolution whose kernel the code generates,

    .. math::

        [a\ [b, H, W, C],\ z\ [b, L]] \mapsto a\,(I + M(z)) + z W_b + c_b,\qquad
        M(z) = \mathrm{reshape}(z W_M + c_M,\ [C, C]),

    per example (broadcast over the map). :class:`LatentModulation`'s scale is the
    diagonal of :math:`M`; the full matrix can also *rotate* a channel's direction,
    so a channel that marks a region (the top, the hair) can be painted in a colour
    that the code chooses, not only brightened or dimmed. The weights start at zero,
    so the layer starts as the identity. Cost: :math:`C^2` multiply-adds per pixel
    (a 3x3 convolution: :math:`9 C^2`) and :math:`L C^2` per example for :math:`M`.

    :param normalize: with ``True`` (default) :math:`M` and the shift are computed from
        the code standardised per example, :math:`(z - \bar z) / \sqrt{\mathrm{var}(z) + 10^{-3}}`
        over its :math:`L` entries, so the layer's gain does not grow with the code's
        scale. A VAE's codes have no fixed scale (SPRITES' decoder inputs, codes and
        style vectors, reach standard deviations of 10-50), and a multiplicative layer
        fed them raw stalled the SVGP-VAE's training in a small SPRITES trial during
        development (the training MSE stayed far above the plain decoder's).
    :param demodulate: with ``True`` each column of the kernel is scaled to unit length,

        .. math::

            K(z) = I + M(z),\qquad K_{:, j} \leftarrow K_{:, j} / \sqrt{\textstyle\sum_i K_{ij}^2 + 10^{-8}},

        so an output channel is a unit-length combination of the input channels (for inputs
        uncorrelated across channels with unit variance, unit variance out: the weight
        demodulation of StyleGAN2, Karras et al. 2020). The layer still starts as the identity
        (the columns of ``I`` have unit length), but the mixing can no longer amplify: a stack
        of undemodulated layers multiplies the activations' scale by each layer's
        :math:`\|I + M(z)\|`, and in the SPRITES SVGP-VAE at 32 filters (the code, style and pose
        vector in) that grew about 15-fold per layer within the first epoch, until the output
        sigmoid saturated at exactly 1 and no gradient was left (``docs/results.md``). The
        brightness of a channel then comes from the shift and the next layer's weights.
    """

    def __init__(self, normalize: bool = True, demodulate: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.normalize = bool(normalize)
        self.demodulate = bool(demodulate)

    def build(self, input_shape):
        channels, latent = int(input_shape[0][-1]), int(input_shape[1][-1])
        self.channels = channels
        self.mix_kernel, self.mix_bias = _add_linear(self, "mix", latent, channels * channels)
        self.shift_kernel, self.shift_bias = _add_linear(self, "shift", latent, channels)
        super().build(input_shape)

    def call(self, inputs):
        a, z = inputs
        z = tf.cast(z, a.dtype)
        if self.normalize:
            mean, variance = tf.nn.moments(z, axes=[-1], keepdims=True)
            z = (z - mean) * tf.math.rsqrt(variance + 1e-3)
        C = self.channels
        mix = tf.reshape(_linear(z, self.mix_kernel, self.mix_bias), [-1, C, C])  # [b, C, C]
        shape = tf.shape(a)
        flat = tf.reshape(a, [shape[0], -1, C])  # [b, H W, C]
        shift = _linear(z, self.shift_kernel, self.shift_bias)  # [b, C]
        if self.demodulate:
            kernel = tf.eye(C, dtype=mix.dtype) + mix  # [b, C, C]
            # Float32 for the norms: a sum of C squares loses too much in bfloat16.
            squares = tf.reduce_sum(tf.square(tf.cast(kernel, tf.float32)), axis=1, keepdims=True)  # [b, 1, C]
            kernel = kernel * tf.cast(tf.math.rsqrt(squares + 1e-8), kernel.dtype)
            out = tf.reshape(tf.matmul(flat, kernel), shape) + shift[:, None, None, :]
        else:  # a + a M(z): exact identity at zero weights
            out = a + tf.reshape(tf.matmul(flat, mix), shape) + shift[:, None, None, :]
        out.set_shape(a.shape)
        return out

    def get_config(self):
        return {**super().get_config(), "normalize": self.normalize, "demodulate": self.demodulate}
