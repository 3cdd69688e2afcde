"""The rotated-MNIST conv networks: shapes, dtypes, upsampling, XLA-compilable gradients."""
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks.conv import RepeatUpsampling2D, conv_decoder, conv_encoder


def test_encoder_shapes_and_positive_variances():
    encoder = conv_encoder(16)
    means, variances = encoder(tf.random.stateless_uniform([5, 28, 28, 1], [1, 2]))
    assert means.shape == (5, 16) and variances.shape == (5, 16)
    assert means.dtype == tf.float32 and variances.dtype == tf.float32
    assert np.all(variances.numpy() > 0)
    # three conv layers of 8 filters 3x3, stride 2: 28 -> 14 -> 7 -> 4
    convs = [layer for layer in encoder.layers if isinstance(layer, tf_keras.layers.Conv2D)]
    assert [c.filters for c in convs] == [8, 8, 8]
    assert [c.kernel_size for c in convs] == [(3, 3)] * 3
    assert encoder.get_layer("conv2").output_shape == (None, 4, 4, 8)


def test_conditional_encoder_takes_two_inputs():
    encoder = conv_encoder(4, condition_dim=2)
    images = tf.zeros([3, 28, 28, 1])
    m1, _ = encoder([images, tf.constant([[1.0, 0.0]] * 3)])
    m2, _ = encoder([images, tf.constant([[0.0, 1.0]] * 3)])
    assert m1.shape == (3, 4)
    assert not np.allclose(m1.numpy(), m2.numpy())  # the condition is used


@pytest.mark.parametrize("upsampling", ["repeat", "transpose"])
def test_decoder_shapes(upsampling):
    decoder = conv_decoder(16, upsampling=upsampling)
    out = decoder(tf.random.stateless_normal([7, 16], [3, 4]))
    assert out.shape == (7, 28, 28, 1) and out.dtype == tf.float32
    assert np.all((out.numpy() >= 0) & (out.numpy() <= 1))  # sigmoid mean
    convs = [l for l in decoder.layers if isinstance(l, tf_keras.layers.Conv2D)]  # Conv2DTranspose subclasses Conv2D
    assert len(convs) == 3


def test_repeat_upsampling_equals_upsampling2d():
    x = tf.random.stateless_normal([2, 7, 5, 3], [5, 6])
    ours = RepeatUpsampling2D(2)(x)
    keras = tf_keras.layers.UpSampling2D(2, interpolation="nearest")(x)
    np.testing.assert_array_equal(ours.numpy(), keras.numpy())
    assert RepeatUpsampling2D(3).compute_output_shape([None, 7, 5, 3]).as_list() == [None, 21, 15, 3]


@pytest.mark.parametrize("upsampling", ["repeat", "transpose"])
def test_decoder_gradient_compiles_with_xla(upsampling):
    tf_keras.utils.set_random_seed(0)
    decoder = conv_decoder(16, upsampling=upsampling)
    z = tf.random.stateless_normal([8, 16], [7, 8])
    target = tf.random.stateless_uniform([8, 28, 28, 1], [9, 10])

    def grads(z):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(decoder(z) - target))
        return tape.gradient(loss, decoder.trainable_variables)

    compiled = tf.function(grads, jit_compile=True)(z)  # raises if XLA cannot compile
    eager = grads(z)
    assert len(compiled) == len(decoder.trainable_variables) > 0
    for a, b in zip(compiled, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-4, atol=1e-6)
