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
