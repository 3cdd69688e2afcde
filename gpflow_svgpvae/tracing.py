"""Tracing the package's compiled functions without AutoGraph's source rewriting."""
import tensorflow as tf

__all__ = ["not_autographed"]

# The conversion status outside any tf.function: "unspecified".
_UNSPECIFIED = tf.__internal__.autograph.control_status_ctx()


def not_autographed(function):
    """``function`` as AutoGraph leaves it: called as written when a ``tf.function`` traces it.

    AutoGraph rewrites the source of every Python function a traced function calls,
    recursively (here: this package, GPflow, ``check_shapes``, TensorFlow Probability). For
    a training step that rewriting took most of the tracing time (the first step of a small
    video model: 3.6 s without it, 24 s with it, on a loaded 2-core machine). The package's
    code has no Python control flow on tensors and does not need it. Keras layers called
    inside (the user's networks) are still converted, by Keras, as in any Keras model: the
    conversion status inside is "unspecified", not "disabled" as under
    ``tf.autograph.experimental.do_not_convert``.
    """
    return tf.__internal__.autograph.tf_convert(function, _UNSPECIFIED, convert_by_default=False)
