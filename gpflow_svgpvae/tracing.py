"""Tracing the package's compiled functions without AutoGraph's source rewriting."""

import tensorflow as tf

__all__ = ["not_autographed", "per_model_function"]

# The conversion status outside any tf.function: "unspecified".
_UNSPECIFIED = tf.__internal__.autograph.control_status_ctx()


def not_autographed(function):
    """``function`` as AutoGraph leaves it: called as written when a ``tf.function`` traces it.

    AutoGraph rewrites the source of every Python function a traced function calls,
    recursively; for a training step that took most of the tracing time (a small video model's
    first step: 3.6 s without, 24 s with it). The package's code has no Python control flow on
    tensors. Keras layers called inside (the user's networks) are still converted by Keras: the
    status inside is "unspecified", not "disabled" as under ``do_not_convert``.
    """
    return tf.__internal__.autograph.tf_convert(function, _UNSPECIFIED, convert_by_default=False)


def per_model_function(python_function, **tf_function_kwargs):
    """``tf.function(python_function, **tf_function_kwargs)`` for a function built once per model.

    TensorFlow warns of "frequent retracing" when the ``tf.function`` objects made from the same
    code trace five times in a short run (aimed at one created in a loop by mistake). A function
    kept per model is traced by each model by design, so a sweep of models would get the warning
    for nothing; this turns it off for that function only.
    """
    function = tf.function(python_function, **tf_function_kwargs)
    # Private flag read by TensorFlow's frequent-tracing detector (TF 2.x); absent, nothing changes.
    if hasattr(function, "_omit_frequent_tracing_warning"):
        function._omit_frequent_tracing_warning = True
    return function
