"""The rotated-MNIST conv networks: shapes, dtypes, upsampling, XLA-compilable gradients."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks.conv import (
    DepthwiseSumConv2D,
    RepeatUpsampling2D,
    UpsamplingConv2D,
    conv_decoder,
    conv_encoder,
    phase_taps,
    phase_windows,
)


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


@pytest.mark.parametrize("upsampling", ["repeat", "fused", "transpose"])
def test_decoder_shapes(upsampling):
    decoder = conv_decoder(16, upsampling=upsampling)
    out = decoder(tf.random.stateless_normal([7, 16], [3, 4]))
    assert out.shape == (7, 28, 28, 1) and out.dtype == tf.float32
    assert np.all((out.numpy() >= 0) & (out.numpy() <= 1))  # sigmoid mean
    convs = [
        layer
        for layer in decoder.layers
        if isinstance(layer, (tf_keras.layers.Conv2D, UpsamplingConv2D, DepthwiseSumConv2D))
    ]
    assert len(convs) == 3  # Conv2DTranspose subclasses Conv2D


def test_repeat_upsampling_equals_upsampling2d():
    x = tf.random.stateless_normal([2, 7, 5, 3], [5, 6])
    ours = RepeatUpsampling2D(2)(x)
    keras = tf_keras.layers.UpSampling2D(2, interpolation="nearest")(x)
    np.testing.assert_array_equal(ours.numpy(), keras.numpy())
    assert RepeatUpsampling2D(3).compute_output_shape([None, 7, 5, 3]).as_list() == [None, 21, 15, 3]


@pytest.mark.parametrize("upsampling", ["repeat", "fused", "transpose"])
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


def _upsample_conv_numpy(x, kernel, bias, factor):
    """Reference: nearest upsampling by ``factor``, then a "same" k x k correlation, in numpy."""
    up = np.repeat(np.repeat(x, factor, axis=1), factor, axis=2)
    k = kernel.shape[0]
    h = k // 2
    padded = np.pad(up, [(0, 0), (h, h), (h, h), (0, 0)])
    b, H, W, _ = up.shape
    out = np.zeros((b, H, W, kernel.shape[-1]))
    for a in range(k):
        for c in range(k):
            out += np.einsum("bhwc,cf->bhwf", padded[:, a : a + H, c : c + W, :], kernel[a, c])
    return out + bias


@pytest.mark.parametrize("kernel_size, factor", [(3, 2), (5, 2), (3, 3), (1, 2), (7, 4), (5, 3)])
@pytest.mark.parametrize("activation", [None, "elu"])
def test_upsampling_conv_equals_upsampling_then_conv_numpy(kernel_size, factor, activation):
    layer = UpsamplingConv2D(4, kernel_size, factor, activation=activation)
    x = tf.random.stateless_normal([2, 5, 6, 3], [1, 1])
    out = layer(x)
    layer.bias.assign(tf.random.stateless_normal([4], [2, 2]))
    out = layer(x).numpy()
    expected = _upsample_conv_numpy(
        x.numpy().astype(np.float64), layer.kernel.numpy().astype(np.float64), layer.bias.numpy(), factor
    )
    if activation == "elu":
        expected = np.where(expected > 0, expected, np.expm1(expected))
    assert out.shape == (2, 5 * factor, 6 * factor, 4)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert layer.compute_output_shape([None, 5, 6, 3]).as_list() == [None, 5 * factor, 6 * factor, 4]


def test_upsampling_conv_takes_maps_of_unknown_size():
    """Traced with unknown height and width (one trace for every size), the layer gives the
    eagerly computed maps."""
    layer = UpsamplingConv2D(4, 3, 2, activation="elu")
    traced = tf.function(lambda x: layer(x), input_signature=[tf.TensorSpec([None, None, None, 3])])
    for shape in ([2, 5, 6, 3], [1, 4, 7, 3]):
        x = tf.random.stateless_normal(shape, [3, 3])
        out = traced(x)
        assert out.shape == (shape[0], 2 * shape[1], 2 * shape[2], 4)
        np.testing.assert_allclose(out.numpy(), layer(x).numpy(), rtol=1e-6, atol=1e-6)


def test_phase_taps_cover_every_tap_once():
    for k, f in [(3, 2), (5, 2), (3, 3), (7, 4)]:
        A, r_min, r_max = phase_taps(k, f)
        assert A.shape == (f, r_max - r_min + 1, k)
        np.testing.assert_array_equal(A.sum(axis=1), np.ones((f, k)))  # each tap of each phase reads one offset
    np.testing.assert_array_equal(
        phase_taps(3, 2)[0], [[[1, 0, 0], [0, 1, 1], [0, 0, 0]], [[0, 0, 0], [1, 1, 0], [0, 0, 1]]]
    )
    with pytest.raises(ValueError, match="odd"):
        phase_taps(4, 2)


def test_phase_windows_hold_every_phase_and_shift_the_phases_alike():
    """Slot (p + c) % f holds phase p's taps, read from the window starting at row (p + c) // f:
    placed there, the window's taps are exactly phase p's row of ``phase_taps``."""
    for k, f in [(3, 2), (5, 2), (3, 3), (1, 2), (7, 4), (5, 3)]:
        A, _, _ = phase_taps(k, f)
        S, c = phase_windows(k, f)
        width = S.shape[1]
        assert S.shape == (f, width, k) and width <= A.shape[1]
        for p in range(f):
            start = (p + c) // f
            placed = np.zeros_like(A[p])
            placed[start : start + width] = S[(p + c) % f]
            np.testing.assert_array_equal(placed, A[p])
    S, c = phase_windows(3, 2)  # the decoder's layers: 2x2 windows (4 of the 9 taps per phase)
    assert S.shape == (2, 2, 3) and c == 1


def test_default_decoder_equals_the_keras_layers_decoder_with_the_same_seed():
    """The default (fused upsampling, depthwise-sum output) against RepeatUpsampling2D + Conv2D:
    same seed -> same initial weights; same weights -> same outputs and gradients."""
    tf_keras.utils.set_random_seed(3)
    repeat = conv_decoder(16, upsampling="repeat", output_layer="conv")
    assert [type(layer) for layer in repeat.layers].count(tf_keras.layers.Conv2D) == 3
    tf_keras.utils.set_random_seed(3)
    fused = conv_decoder(16)
    assert {type(layer) for layer in fused.layers} >= {UpsamplingConv2D, DepthwiseSumConv2D}
    assert len(repeat.trainable_variables) == len(fused.trainable_variables)
    for a, b in zip(repeat.trainable_variables, fused.trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    z = tf.random.stateless_normal([6, 16], [4, 4])
    target = tf.random.stateless_uniform([6, 28, 28, 1], [5, 5])

    def value_and_grads(decoder):
        with tf.GradientTape() as tape:
            out = decoder(z)
            loss = tf.reduce_sum(tf.square(out - target))
        return out, tape.gradient(loss, decoder.trainable_variables)

    (out_r, g_r), (out_f, g_f) = value_and_grads(repeat), value_and_grads(fused)
    np.testing.assert_allclose(out_f.numpy(), out_r.numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(g_f, g_r):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5 * float(np.abs(b.numpy()).max()))


def test_upsampling_conv_follows_the_keras_policy():
    from gpflow_svgpvae.networks import network_precision

    with network_precision("mixed_bfloat16"):
        layer = UpsamplingConv2D(2)
        out = layer(tf.random.stateless_normal([1, 3, 3, 2], [6, 6]))
    assert out.dtype == tf.bfloat16 and layer.kernel.dtype == tf.float32


@pytest.mark.parametrize("filters, kernel_size", [(1, 3), (3, 3), (2, 5)])
def test_depthwise_sum_conv_equals_conv2d(filters, kernel_size):
    x = tf.random.stateless_normal([2, 9, 7, 4], [7, 7])
    tf_keras.utils.set_random_seed(1)
    ours = DepthwiseSumConv2D(filters, kernel_size, activation="sigmoid")
    ours(x)  # weights are drawn when the layer is built
    tf_keras.utils.set_random_seed(1)
    keras = tf_keras.layers.Conv2D(filters, kernel_size, padding="same", activation="sigmoid")
    keras(x)
    np.testing.assert_array_equal(ours.kernel.numpy(), keras.kernel.numpy())  # same initial values
    for layer in (ours, keras):
        layer.bias.assign(tf.linspace(-1.0, 1.0, filters))
    np.testing.assert_allclose(ours(x).numpy(), keras(x).numpy(), rtol=1e-5, atol=1e-6)
    assert ours.compute_output_shape([None, 9, 7, 4]).as_list() == [None, 9, 7, filters]
    with pytest.raises(ValueError, match="same"):
        DepthwiseSumConv2D(1, 3, padding="valid")


def test_conv_decoder_rejects_unknown_layer_choices():
    with pytest.raises(ValueError, match="upsampling"):
        conv_decoder(4, upsampling="bilinear")
    with pytest.raises(ValueError, match="output_layer"):
        conv_decoder(4, output_layer="dense")


@pytest.mark.parametrize(
    "make",
    [lambda: UpsamplingConv2D(3, 3, 2, activation="elu"), lambda: DepthwiseSumConv2D(2, 3, activation="sigmoid")],
)
def test_fast_conv_layers_round_trip_through_their_config(make):
    layer = make()
    x = tf.random.stateless_normal([2, 4, 4, 3], [8, 8])
    layer(x)
    copy = type(layer).from_config(layer.get_config())
    copy(x)
    copy.set_weights(layer.get_weights())
    np.testing.assert_array_equal(copy(x).numpy(), layer(x).numpy())
