"""Encoder and decoder of the SPRITES SVGP-VAE (Jazbec et al., AISTATS 2021, section 5.3).

Six conv layers of 16 filters each; the decoder upsamples with stride-2
``Conv2DTranspose`` (no ``UpSampling2D``, whose gradient XLA cannot compile on CPU).
"""
from typing import Optional, Sequence, Tuple

import numpy as np
from gpflow.keras import tf_keras

from .heads import GaussianSiteHead

__all__ = ["sprites_encoder", "sprites_decoder"]


def sprites_encoder(
    num_latent: int = 64,
    image_shape: Tuple[int, int, int] = (64, 64, 3),
    filters: int = 16,
    strides: Sequence[int] = (2, 2, 1, 2, 1, 1),
    kernel_size: int = 3,
    activation: str = "elu",
    min_variance: float = 1e-4,
    name: str = "sprites_encoder",
) -> tf_keras.Model:
    """Frames ``[b, 64, 64, 3] -> (means [b, L], variances [b, L])``.

    One ``Conv2D`` of ``filters`` filters per entry of ``strides`` (default six
    layers of 16: 64 -> 32 -> 16 -> 16 -> 8 -> 8 -> 8), flatten, then a
    :class:`~gpflow_svgpvae.networks.GaussianSiteHead`. About 2.1 M
    multiply-adds per frame.
    """
    frames = tf_keras.Input(shape=tuple(int(d) for d in image_shape), name="frames")
    h = frames
    for i, s in enumerate(strides):
        h = tf_keras.layers.Conv2D(
            int(filters), int(kernel_size), strides=int(s), padding="same", activation=activation, name=f"conv{i}"
        )(h)
    h = tf_keras.layers.Flatten(name="flatten")(h)
    outputs = GaussianSiteHead(int(num_latent), min_variance=min_variance, name="site_head")(h)
    return tf_keras.Model(frames, outputs, name=name)


def sprites_decoder(
    num_latent: int = 64,
    image_shape: Tuple[int, int, int] = (64, 64, 3),
    filters: int = 16,
    strides: Sequence[int] = (1, 1, 2, 1, 2, 1),
    kernel_size: int = 3,
    activation: str = "elu",
    output_activation: Optional[str] = "sigmoid",
    latent_bias: bool = False,
    name: str = "sprites_decoder",
) -> tf_keras.Model:
    """Codes ``[b, L] -> frames [b, 64, 64, 3]`` (the Gaussian mean; sigmoid: in [0, 1]).

    A dense layer to an ``(H / f) x (W / f) x filters`` map (``f`` = product of
    ``strides`` times 2), one layer of ``filters`` filters per entry of
    ``strides`` (stride 1: ``Conv2D``; stride 2: ``Conv2DTranspose``), and a
    stride-2 ``Conv2DTranspose`` output layer with ``C`` channels. Default: six
    layers of 16 filters, 8 -> 8 -> 8 -> 16 -> 16 -> 32 -> 32 -> 64, about 4.4 M
    multiply-adds per frame. No ``UpSampling2D``: the gradient compiles under XLA.

    :param latent_bias: also feed the code to every layer as a per-channel bias
        (a FiLM shift, :math:`h \leftarrow \mathrm{act}(\mathrm{conv}(h) + W_k z)`), so that
        attributes that hold for the whole frame, such as a character's colours,
        reach the output without passing through the 8 x 8 spatial bottleneck
        (about 0.1% more multiply-adds).
    """
    H, W, C = (int(d) for d in image_shape)
    factor = 2 * int(np.prod([int(s) for s in strides]))
    if H % factor or W % factor:
        raise ValueError(f"image size {H}x{W} must be divisible by {factor} (2 x product of strides)")
    h0, w0 = H // factor, W // factor
    z = tf_keras.Input(shape=(int(num_latent),), name="latents")
    h = tf_keras.layers.Dense(h0 * w0 * int(filters), activation=activation, name="dense")(z)
    h = tf_keras.layers.Reshape((h0, w0, int(filters)))(h)
    def shifted(h, width, act, layer_name):
        if not latent_bias:
            return h if act is None else tf_keras.layers.Activation(act, name=f"{layer_name}_act")(h)
        shift = tf_keras.layers.Dense(width, name=f"{layer_name}_latent_bias")(z)
        shift = tf_keras.layers.Reshape((1, 1, width), name=f"{layer_name}_latent_bias_map")(shift)
        h = tf_keras.layers.Add(name=f"{layer_name}_shifted")([h, shift])
        return h if act is None else tf_keras.layers.Activation(act, name=f"{layer_name}_act")(h)

    for i, s in enumerate(strides):
        if int(s) == 1:
            layer_name = f"conv{i}"
            h = tf_keras.layers.Conv2D(int(filters), kernel_size, padding="same", name=layer_name)(h)
        else:
            layer_name = f"deconv{i}"
            h = tf_keras.layers.Conv2DTranspose(
                int(filters), kernel_size, strides=int(s), padding="same", name=layer_name
            )(h)
        h = shifted(h, int(filters), activation, layer_name)
    h = tf_keras.layers.Conv2DTranspose(C, kernel_size, strides=2, padding="same", name="output")(h)
    out = shifted(h, C, output_activation, "output")
    return tf_keras.Model(z, out, name=name)
