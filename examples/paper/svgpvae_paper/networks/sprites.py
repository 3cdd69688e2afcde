"""Encoder and decoder of the SPRITES SVGP-VAE (Jazbec et al., AISTATS 2021, section 5.3).

Six conv layers of 16 filters each; the decoder upsamples with stride-2
``Conv2DTranspose`` (no ``UpSampling2D``, whose gradient XLA cannot compile on CPU).
"""

from typing import Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks.heads import GaussianSiteHead

from .conditioning import LatentMixing, LatentModulation

__all__ = ["sprites_encoder", "sprites_decoder", "LatentModulation", "LatentMixing", "PaletteOutput", "MODULATIONS"]

MODULATIONS = (None, "shift", "scale_shift", "mix", "mix_demodulated")
_MIXING = ("mix", "mix_demodulated")  # LatentMixing after every hidden layer


class PaletteOutput(tf_keras.layers.Layer):
    r"""Frames as a per-pixel mixture of ``K`` colours that the code chooses:
    ``[logits [b, H, W, K], z [b, L]] -> sum_k softmax(logits)_k * c_k(z)``, with
    :math:`c_k(z) = \mathrm{sigmoid}(z W_k + a_k) \in [0, 1]^C`.

    Pixel-art frames are a label map (which pixel belongs to the hair, the top, ...)
    painted from a small palette. The convolutions then only need to draw the map;
    a character's colours go from the code to the frame through one dense layer
    instead of through the spatial bottleneck. Output in ``[0, 1]`` (a convex
    combination of colours in ``[0, 1]``).
    """

    def __init__(self, channels: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.channels = int(channels)

    def build(self, input_shape):
        self.num_colours, latent = int(input_shape[0][-1]), int(input_shape[1][-1])
        self.colour_kernel = self.add_weight(
            name="colour_kernel",
            shape=(latent, self.num_colours * self.channels),
            initializer=tf_keras.initializers.GlorotUniform(),
        )
        # Spread the initial colours over [0, 1] so that the K mixture components start apart.
        initial = np.linspace(-2.0, 2.0, self.num_colours * self.channels)
        initial = np.random.default_rng(0).permutation(initial)
        self.colour_bias = self.add_weight(
            name="colour_bias",
            shape=(self.num_colours * self.channels,),
            initializer=tf_keras.initializers.Constant(initial),
        )
        super().build(input_shape)

    def call(self, inputs):
        logits, z = inputs
        z = tf.cast(z, logits.dtype)
        colours = tf.sigmoid(
            tf.matmul(z, tf.cast(self.colour_kernel, logits.dtype)) + tf.cast(self.colour_bias, logits.dtype)
        )  # [b, K * C]
        colours = tf.reshape(colours, [-1, self.num_colours, self.channels])  # [b, K, C]
        weights = tf.nn.softmax(logits, axis=-1)  # [b, H, W, K]
        return tf.einsum("bhwk,bkc->bhwc", weights, colours)

    def get_config(self):
        return {**super().get_config(), "channels": self.channels}


def sprites_encoder(
    num_latent: int = 64,
    image_shape: Tuple[int, int, int] = (64, 64, 3),
    filters: int = 16,
    strides: Sequence[int] = (2, 2, 1, 2, 1, 1),
    kernel_size: int = 3,
    activation: str = "elu",
    min_variance: float = 1e-4,
    name: str = "sprites_encoder",
    site_parametrization: str = "variance",
) -> tf_keras.Model:
    """Frames ``[b, 64, 64, 3] -> (means [b, L], variances [b, L])``.

    One ``Conv2D`` of ``filters`` filters per entry of ``strides`` (default six
    layers of 16: 64 -> 32 -> 16 -> 16 -> 8 -> 8 -> 8), flatten, then a
    :class:`~gpflow_svgpvae.networks.GaussianSiteHead` (``site_parametrization``:
    ``"variance"`` or ``"natural"``). About 2.1 M multiply-adds per frame.
    """
    frames = tf_keras.Input(shape=tuple(int(d) for d in image_shape), name="frames")
    h = frames
    for i, s in enumerate(strides):
        h = tf_keras.layers.Conv2D(
            int(filters), int(kernel_size), strides=int(s), padding="same", activation=activation, name=f"conv{i}"
        )(h)
    h = tf_keras.layers.Flatten(name="flatten")(h)
    outputs = GaussianSiteHead(
        int(num_latent), min_variance=min_variance, name="site_head", parametrization=site_parametrization
    )(h)
    return tf_keras.Model(frames, outputs, name=name)


def sprites_decoder(
    num_latent: int = 64,
    image_shape: Tuple[int, int, int] = (64, 64, 3),
    filters: int = 16,
    strides: Sequence[int] = (1, 1, 2, 1, 2, 1),
    kernel_size: int = 3,
    activation: str = "elu",
    output_activation: Optional[str] = "sigmoid",
    latent_modulation: Optional[str] = None,
    palette_colours: Optional[int] = None,
    name: str = "sprites_decoder",
) -> tf_keras.Model:
    r"""Codes ``[b, L] -> frames [b, 64, 64, 3]`` (the Gaussian mean; sigmoid: in [0, 1]).

    A dense layer to an ``(H / f) x (W / f) x filters`` map (``f`` = product of
    ``strides`` times 2), one layer of ``filters`` filters per entry of
    ``strides`` (stride 1: ``Conv2D``; stride 2: ``Conv2DTranspose``), and a
    stride-2 ``Conv2DTranspose`` output layer with ``C`` channels. Default: six
    layers of 16 filters, 8 -> 8 -> 8 -> 16 -> 16 -> 32 -> 32 -> 64, about 4.4 M
    multiply-adds per frame. No ``UpSampling2D``: the gradient compiles under XLA.

    :param latent_modulation: also feed the code to every layer (:class:`LatentModulation`,
        FiLM): ``"shift"``, :math:`h \leftarrow \mathrm{act}(a + \beta(z))`, or
        ``"scale_shift"``, :math:`h \leftarrow \mathrm{act}(a \odot (1 + \gamma(z)) + \beta(z))`
        for each layer's pre-activation :math:`a` (the output layer: shift only),
        with :math:`\gamma, \beta` linear in :math:`z` and initialised at zero, so the
        decoder starts as the plain one. Attributes of the whole frame, such as a
        character's colours, then reach every layer without passing through the
        spatial bottleneck; with the scale, a channel that marks a region (the top,
        the hair) gets its brightness from the code. ``"mix"``: each hidden layer's
        pre-activation goes through :class:`LatentMixing`,
        :math:`h \leftarrow \mathrm{act}(a (I + M(z)) + \beta(z))` with a full
        code-generated channel matrix :math:`M(z)`, so a region channel can take any
        colour direction the code chooses (the output layer is not modulated);
        ``"mix_demodulated"``: the same with each column of :math:`I + M(z)` scaled to unit
        length (``LatentMixing(demodulate=True)``), so the mixing cannot amplify the activations.
        (Not in the paper.)
    :param palette_colours: ``K``: the output layer draws ``K`` logits per pixel instead of
        ``C`` values, and the frame is their softmax mixture of ``K`` colours computed from
        the code (:class:`PaletteOutput`); ``output_activation`` is then not used. ``None``:
        the paper's decoder. (Not in the paper.)
    """
    H, W, C = (int(d) for d in image_shape)
    factor = 2 * int(np.prod([int(s) for s in strides]))
    if H % factor or W % factor:
        raise ValueError(f"image size {H}x{W} must be divisible by {factor} (2 x product of strides)")
    h0, w0 = H // factor, W // factor
    z = tf_keras.Input(shape=(int(num_latent),), name="latents")
    h = tf_keras.layers.Dense(h0 * w0 * int(filters), activation=activation, name="dense")(z)
    h = tf_keras.layers.Reshape((h0, w0, int(filters)))(h)
    if latent_modulation not in MODULATIONS:
        raise ValueError(f"latent_modulation must be one of {MODULATIONS}; got {latent_modulation!r}")

    def modulated(h, act, layer_name, scale):
        if latent_modulation in _MIXING:
            if scale:  # hidden layers; the output layer is not modulated
                h = LatentMixing(demodulate=latent_modulation == "mix_demodulated", name=f"{layer_name}_modulation")(
                    [h, z]
                )
        elif latent_modulation is not None:
            h = LatentModulation(scale=scale, name=f"{layer_name}_modulation")([h, z])
        return h if act is None else tf_keras.layers.Activation(act, name=f"{layer_name}_act")(h)

    scale = latent_modulation == "scale_shift" or latent_modulation in _MIXING
    for i, s in enumerate(strides):
        if int(s) == 1:
            layer_name = f"conv{i}"
            h = tf_keras.layers.Conv2D(int(filters), kernel_size, padding="same", name=layer_name)(h)
        else:
            layer_name = f"deconv{i}"
            h = tf_keras.layers.Conv2DTranspose(
                int(filters), kernel_size, strides=int(s), padding="same", name=layer_name
            )(h)
        h = modulated(h, activation, layer_name, scale)
    if palette_colours is not None:
        if int(palette_colours) < 1:
            raise ValueError(f"palette_colours must be a positive integer or None; got {palette_colours!r}")
        logits = tf_keras.layers.Conv2DTranspose(
            int(palette_colours), kernel_size, strides=2, padding="same", name="output_logits"
        )(h)
        out = PaletteOutput(C, name="palette")([modulated(logits, None, "output_logits", False), z])
        return tf_keras.Model(z, out, name=name)
    h = tf_keras.layers.Conv2DTranspose(C, kernel_size, strides=2, padding="same", name="output")(h)
    out = modulated(h, output_activation, "output", False)
    return tf_keras.Model(z, out, name=name)
