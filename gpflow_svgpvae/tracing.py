"""Tracing the package's compiled functions without AutoGraph's source rewriting."""

import tensorflow as tf

__all__ = ["not_autographed", "per_model_function"]

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


def per_model_function(python_function, **tf_function_kwargs):
    """``tf.function(python_function, **tf_function_kwargs)`` for a function built once per model.

    TensorFlow counts the traces of every ``tf.function`` made from the same code together and
    warns of "frequent retracing" after five in a short run of calls: aimed at a ``tf.function``
    created in a loop by mistake. A function kept per model (a closure over the model, cached
    with it) is traced a few times by each model by design (one trace per data layout), so a
    process that trains a sweep of models would get the warning for nothing. This turns it off
    for that function only; its own retraces are unchanged.
    """
    function = tf.function(python_function, **tf_function_kwargs)
    # Private flag read by TensorFlow's frequent-tracing detector (TF 2.x); absent, nothing changes.
    if hasattr(function, "_omit_frequent_tracing_warning"):
        function._omit_frequent_tracing_warning = True
    return function
