"""Fully connected encoders and decoders (the moving-ball networks of the paper)."""
from typing import Sequence

from gpflow.keras import tf_keras

from .heads import GaussianSiteHead

__all__ = ["mlp_encoder", "mlp_decoder"]


def mlp_encoder(
    input_dim: int,
    num_latent: int,
    hidden_units: Sequence[int] = (500, 500),
    activation: str = "tanh",
    min_variance: float = 1e-4,
    name: str = "encoder",
) -> tf_keras.Model:
    """``Y [b, input_dim] -> (means [b, L], variances [b, L])``."""
    inputs = tf_keras.Input(shape=(input_dim,))
    h = inputs
    for units in hidden_units:
        h = tf_keras.layers.Dense(units, activation=activation)(h)
    outputs = GaussianSiteHead(num_latent, min_variance=min_variance)(h)
    return tf_keras.Model(inputs, outputs, name=name)


def mlp_decoder(
    num_latent: int,
    output_dim: int,
    hidden_units: Sequence[int] = (500, 500),
    activation: str = "tanh",
    name: str = "decoder",
) -> tf_keras.Model:
    """``Z [b, L] -> params [b, output_dim]`` (a mean or logits; no output activation)."""
    inputs = tf_keras.Input(shape=(num_latent,))
    h = inputs
    for units in hidden_units:
        h = tf_keras.layers.Dense(units, activation=activation)(h)
    outputs = tf_keras.layers.Dense(output_dim)(h)
    return tf_keras.Model(inputs, outputs, name=name)
