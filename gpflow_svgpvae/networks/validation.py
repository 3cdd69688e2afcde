"""Checks on user-supplied networks.

Keras 3 objects (TensorFlow's built-in Keras from version 2.16 on, and the
standalone Keras 3 package) are not ``tf.Module`` trackables: stored on a GPflow module their weights are
silently missing from ``trainable_variables`` and never train. We accept only
Keras 2 (``from gpflow.keras import tf_keras``) layers and models, or plain
``tf.Module`` callables.
"""

from typing import Callable, Optional

import tensorflow as tf
from gpflow.keras import tf_keras

__all__ = ["check_network", "is_built", "output_width", "build_or_explain"]


def _is_keras3(obj) -> bool:
    module = type(obj).__module__ or ""
    return module == "keras" or (module.startswith("keras.") and not module.startswith("tf_keras"))


def check_network(network, role: str):
    """Return ``network`` if it is a usable Keras-2 layer/model or ``tf.Module``.

    :param role: ``"encoder"`` or ``"decoder"``, used in the error message.
    :raises TypeError: for Keras-3 objects and for anything that is not callable.
    """
    if _is_keras3(network):
        raise TypeError(
            f"The {role} is a Keras 3 object ({type(network).__module__}.{type(network).__name__}). "
            "Keras 3 layers are not tracked by tf.Module, so their weights would silently never "
            "train. Build the network with Keras 2: `from gpflow.keras import tf_keras` and use "
            "`tf_keras.Sequential`, `tf_keras.layers.Dense`, ... instead of Keras 3 layers."
        )
    if isinstance(network, (tf_keras.layers.Layer, tf.Module)) and callable(network):
        return network
    raise TypeError(
        f"The {role} must be a tf_keras layer or model (from `gpflow.keras import tf_keras`) or a "
        f"callable tf.Module; got {type(network).__name__}."
    )


def is_built(network) -> bool:
    """Whether ``network``'s weights exist: Keras networks know; other modules are taken as built."""
    return network is None or not isinstance(network, tf_keras.layers.Layer) or bool(network.built)


def output_width(encoder) -> Optional[int]:
    """:math:`L`: the last axis shared by a built encoder's two outputs (means, variances ``[b, L]``),
    or ``None`` if the encoder is not built, not Keras, or its output shapes are not known."""
    try:
        shapes = getattr(encoder, "output_shape", None) if is_built(encoder) else None
        if shapes is None:
            return None
        widths = {int(shape[-1]) for shape in shapes}
    except (TypeError, IndexError, AttributeError, ValueError, RuntimeError):
        return None
    return widths.pop() if len(widths) == 1 else None


def build_or_explain(role: str, shape, build: Callable[[], object]) -> None:
    """Run ``build()`` (a first call that creates the ``role`` network's weights for inputs of
    ``[batch, *shape]``), turning Keras' shape errors into one that names the network.

    :raises ValueError: if the network cannot take inputs of that shape.
    """
    try:
        build()
    except (ValueError, TypeError, tf.errors.InvalidArgumentError) as error:
        raise ValueError(
            f"The {role} cannot take inputs of shape [batch, {', '.join(map(str, shape))}]: {error}"
        ) from error
