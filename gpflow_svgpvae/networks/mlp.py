"""Fully connected encoders and decoders (the moving-ball networks of the paper)."""

from typing import Sequence

from gpflow.keras import tf_keras

from .heads import GaussianSiteHead

__all__ = ["mlp_encoder", "mlp_decoder", "fan_in_truncated_normal"]


def fan_in_truncated_normal(seed=None) -> tf_keras.initializers.Initializer:
    r"""Weights from a normal with standard deviation :math:`1/\sqrt{\text{fan\_in}}`, truncated at
    two standard deviations (the moving-ball networks of Pearce 2019 and Jazbec et al. 2021).

    The standard deviation is the one *before* truncation, as in TF1's
    ``truncated_normal(stddev=1/sqrt(fan_in))``; the truncated weights' own standard deviation is
    :math:`0.8796/\sqrt{\text{fan\_in}}`. Keras' ``VarianceScaling`` divides by that factor,
    so the scale passed to it is :math:`0.8796^2`.
    """
    return tf_keras.initializers.VarianceScaling(
        scale=0.87962566103423978**2, mode="fan_in", distribution="truncated_normal", seed=seed
    )


def _layer_initializers(initializer, count: int) -> list:
    """One initialiser per layer: Keras initialiser objects repeat their draws when called twice,
    so an object is cloned per layer (a seeded one with seeds ``seed, seed + 1, ...``)."""
    if isinstance(initializer, (str, dict)) or initializer is None:
        return [initializer or "glorot_uniform"] * count
    config = initializer.get_config()
    clones = []
    for index in range(count):
        layer_config = dict(config)
        if layer_config.get("seed") is not None:
            layer_config["seed"] = int(layer_config["seed"]) + index
        clones.append(initializer.__class__.from_config(layer_config))
    return clones


def mlp_encoder(
    input_dim: int,
    num_latent_gps: int,
    hidden_units: Sequence[int] = (500, 500),
    activation: str = "tanh",
    min_variance: float = 1e-4,
    name: str = "encoder",
    kernel_initializer="glorot_uniform",
    site_parametrization: str = "variance",
) -> tf_keras.Model:
    """``Y [b, input_dim] -> (means [b, L], variances [b, L])``.

    :param kernel_initializer: initialiser of every weight matrix (Keras name or object), e.g.
        :func:`fan_in_truncated_normal` for the paper's moving-ball networks.
    :param site_parametrization: ``"variance"`` or ``"natural"`` (see :class:`GaussianSiteHead`).
    """
    inits = _layer_initializers(kernel_initializer, len(hidden_units) + 1)
    inputs = tf_keras.Input(shape=(input_dim,))
    h = inputs
    for units, init in zip(hidden_units, inits):
        h = tf_keras.layers.Dense(units, activation=activation, kernel_initializer=init)(h)
    outputs = GaussianSiteHead(
        num_latent_gps, min_variance=min_variance, kernel_initializer=inits[-1], parametrization=site_parametrization
    )(h)
    return tf_keras.Model(inputs, outputs, name=name)


def mlp_decoder(
    num_latent_gps: int,
    output_dim: int,
    hidden_units: Sequence[int] = (500, 500),
    activation: str = "tanh",
    name: str = "decoder",
    kernel_initializer="glorot_uniform",
) -> tf_keras.Model:
    """``Z [b, L] -> params [b, output_dim]`` (a mean or logits; no output activation).

    :param kernel_initializer: initialiser of every weight matrix (see :func:`mlp_encoder`).
    """
    inits = _layer_initializers(kernel_initializer, len(hidden_units) + 1)
    inputs = tf_keras.Input(shape=(num_latent_gps,))
    h = inputs
    for units, init in zip(hidden_units, inits):
        h = tf_keras.layers.Dense(units, activation=activation, kernel_initializer=init)(h)
    outputs = tf_keras.layers.Dense(output_dim, kernel_initializer=inits[-1])(h)
    return tf_keras.Model(inputs, outputs, name=name)
