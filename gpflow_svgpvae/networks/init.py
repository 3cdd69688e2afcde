"""Data-dependent initialisation of a decoder's output bias."""

import numpy as np
from gpflow.keras import tf_keras

__all__ = ["set_output_bias"]


def _output_layer(decoder):
    """The last layer of ``decoder`` that has a bias (Dense, Conv2D, Conv2DTranspose)."""
    layers = (
        decoder._flatten_layers(include_self=False, recursive=True)
        if isinstance(decoder, tf_keras.layers.Layer)
        else []
    )
    with_bias = [layer for layer in layers if getattr(layer, "bias", None) is not None]
    if not with_bias:
        raise ValueError(
            "set_output_bias needs a tf_keras decoder whose last layer has a bias (Dense or a convolution)."
        )
    return with_bias[-1]


def set_output_bias(decoder, Y, likelihood: str, clip: float = 1e-3) -> np.ndarray:
    r"""Set the bias of the decoder's output layer so that, before training, it predicts the data's mean.

    For a ``"gaussian"`` decoder the bias is the mean of ``Y``; for ``"bernoulli"`` the logit of
    the mean, :math:`\log\bar y - \log(1 - \bar y)` with :math:`\bar y` clipped to
    ``[clip, 1 - clip]``. A dense output layer gets one value per output unit (the mean of that
    entry over the data); a convolutional one one value per channel. Its kernel is untouched.

    Why: with a zero bias a Bernoulli decoder starts at probability 1/2 for every pixel, and the
    first steps spend the reconstruction gradient (through the codes too) on the background.
    With the kernel held early (:class:`~gpflow_svgpvae.training.schedules.DelayedStart`) this
    lets GP-prior VAEs on the moving ball train from random networks.

    :param Y: observations ``[N, ...]`` (a sample of the training data is enough).
    :return: the bias that was set.
    :raises ValueError: for an unknown likelihood, or a bias whose width fits neither layout.
    """
    if likelihood not in ("gaussian", "bernoulli"):
        raise ValueError(f"likelihood must be 'gaussian' or 'bernoulli', got {likelihood!r}")
    layer = _output_layer(decoder)
    Y = np.asarray(Y, dtype=np.float64)
    width = int(layer.bias.shape[0])
    flat = Y.reshape(len(Y), -1)
    if flat.shape[1] == width:
        mean = flat.mean(axis=0)  # one value per output unit
    elif Y.shape[-1] == width:
        mean = Y.reshape(-1, width).mean(axis=0)  # one value per channel
    else:
        raise ValueError(
            f"The decoder's output layer has {width} biases, which fit neither the {flat.shape[1]} values per "
            f"observation nor the {Y.shape[-1]} channels of Y."
        )
    if likelihood == "bernoulli":
        p = np.clip(mean, clip, 1.0 - clip)
        mean = np.log(p) - np.log1p(-p)
    layer.bias.assign(mean.astype(layer.bias.dtype.as_numpy_dtype))
    return mean
