"""``tracing.not_autographed``: the package's functions are traced as written, Keras layers
called inside them are still converted by Keras."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.tracing import not_autographed


class _SignLayer(tf_keras.layers.Layer):
    def call(self, inputs):
        if tf.reduce_sum(inputs) > 0:  # Python control flow on a tensor: needs AutoGraph
            return inputs
        return -inputs


def _python_if(x):
    if tf.reduce_sum(x) > 0:
        return x
    return -x


def test_a_plain_function_is_converted_and_the_wrapped_one_is_not():
    x = tf.constant([-1.0, -2.0])
    np.testing.assert_array_equal(tf.function(_python_if)(x), [1.0, 2.0])  # AutoGraph made it a tf.cond
    with pytest.raises(TypeError, match="not allowed|Python bool"):
        tf.function(not_autographed(_python_if))(x)  # traced as written


def test_keras_layers_inside_are_still_converted():
    layer = _SignLayer()
    outer = tf.function(not_autographed(lambda x: 2.0 * layer(x)))
    np.testing.assert_array_equal(outer(tf.constant([-1.0, -2.0])), [2.0, 4.0])
    np.testing.assert_array_equal(outer(tf.constant([1.0, 3.0])), [2.0, 6.0])
    # Under TensorFlow's own do_not_convert the layer is not converted and fails.
    disabled = tf.function(tf.autograph.experimental.do_not_convert(lambda x: layer(x)))
    with pytest.raises(TypeError, match="not allowed|Python bool"):
        disabled(tf.constant([-1.0]))


def test_eager_calls_and_metadata_are_unchanged():
    wrapped = not_autographed(_python_if)
    np.testing.assert_array_equal(wrapped(tf.constant([-1.0])), [1.0])  # eager: a plain call
    assert wrapped.__name__ == "_python_if" and wrapped.__wrapped__ is _python_if


def test_per_model_functions_do_not_warn_of_frequent_retracing(caplog):
    """Posteriors of several models in one process (a sweep): each model's statistics function
    traces per data layout by design; TensorFlow's frequent-retracing warning, which counts
    the traces of all functions made from the same code, must not fire. The warning itself
    still fires for a plain ``tf.function`` made the same way (the check could fail)."""
    import logging

    from gpflow_svgpvae.tracing import per_model_function
    from tests.conftest import make_tiny_model, tiny_data

    X, Y = tiny_data()
    caplog.set_level(logging.WARNING, logger="tensorflow")
    for seed in range(4):
        model = make_tiny_model(seed=seed)
        for n in (60, 37, 11):  # three data sizes: retraces with reduce_retracing
            model.posterior((X[:n], Y[:n]), batch_size=n)
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]

    def make(wrap):
        for shift in range(8):
            f = wrap(lambda x, shift=shift: x + shift)
            f(tf.constant([1.0]))
            f(tf.constant([1.0, 2.0]))  # a new shape: a retrace

    make(per_model_function)
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
    make(tf.function)
    assert [r for r in caplog.records if "retracing" in r.getMessage()]
