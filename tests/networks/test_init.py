"""set_output_bias: the decoder starts at the data's mean (issue 13)."""

import numpy as np
import pytest
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks import conv_decoder, mlp_decoder, set_output_bias


def test_dense_output_bias_is_the_per_entry_mean_or_its_logit(rng):
    Y = (rng.uniform(size=(200, 12)) < np.linspace(0.05, 0.9, 12)).astype(np.float32)
    decoder = mlp_decoder(2, 12, hidden_units=(8,))
    p = np.clip(Y.mean(0), 1e-3, 1 - 1e-3)
    set_output_bias(decoder, Y, "bernoulli")
    np.testing.assert_allclose(decoder.layers[-1].bias.numpy(), np.log(p / (1 - p)), rtol=1e-5)
    # With a zero kernel the decoder now predicts exactly the data's mean probabilities.
    last = decoder.layers[-1]
    last.kernel.assign(np.zeros(last.kernel.shape, np.float32))
    probabilities = 1 / (1 + np.exp(-decoder(rng.normal(size=(3, 2)).astype(np.float32)).numpy()))
    np.testing.assert_allclose(probabilities, np.broadcast_to(p, (3, 12)), rtol=1e-5)
    set_output_bias(decoder, Y * 3.0, "gaussian")
    np.testing.assert_allclose(decoder.layers[-1].bias.numpy(), 3.0 * Y.mean(0), rtol=1e-6)


def test_convolutional_output_bias_is_the_channel_mean(rng):
    decoder = conv_decoder(4)
    shape = decoder.output_shape[1:]
    Y = rng.uniform(size=(10,) + tuple(shape)).astype(np.float32)
    mean = set_output_bias(decoder, Y, "gaussian")
    np.testing.assert_allclose(mean, Y.reshape(-1, shape[-1]).mean(0), rtol=1e-6)


def test_set_output_bias_rejects_what_it_cannot_do(rng):
    decoder = mlp_decoder(2, 12, hidden_units=(8,))
    with pytest.raises(ValueError, match="likelihood"):
        set_output_bias(decoder, np.zeros((4, 12)), "poisson")
    with pytest.raises(ValueError, match="12 biases"):
        set_output_bias(decoder, np.zeros((4, 7)), "gaussian")
    with pytest.raises(ValueError, match="bias"):
        set_output_bias(tf_keras.Sequential([tf_keras.layers.Dense(3, use_bias=False)]), np.zeros((4, 3)), "gaussian")


def test_fan_in_truncated_normal_has_the_papers_std_before_truncation():
    from scipy import stats

    from gpflow_svgpvae.networks import fan_in_truncated_normal, mlp_encoder

    tf_keras.utils.set_random_seed(0)
    encoder = mlp_encoder(1024, 2, hidden_units=(500,), kernel_initializer=fan_in_truncated_normal())
    first, head = encoder.layers[1].kernel.numpy(), encoder.layers[-1].dense.kernel.numpy()
    for W, fan_in in ((first, 1024), (head, 500)):
        sd = 1 / np.sqrt(fan_in)
        # A normal of std sd truncated at +-2 sd: std sd * sqrt(1 - 2*2*phi(2)/(Phi(2)-Phi(-2))).
        assert np.abs(W).max() <= 2 * sd * (1 + 1e-6)
        expected = stats.truncnorm(-2, 2, scale=sd).std()
        np.testing.assert_allclose(W.std(), expected, rtol=0.02 if W.size > 1e5 else 0.1)


def test_default_mlp_weights_are_glorot_uniform():
    tf_keras.utils.set_random_seed(0)
    W = mlp_decoder(2, 1024, hidden_units=(500,)).layers[-1].kernel.numpy()
    limit = np.sqrt(6 / (500 + 1024))
    assert np.abs(W).max() <= limit
    np.testing.assert_allclose(W.std(), limit / np.sqrt(3), rtol=0.02)


@pytest.mark.parametrize("seed", [None, 3])
def test_one_initializer_object_gives_each_layer_its_own_draw(seed):
    from gpflow_svgpvae.networks import fan_in_truncated_normal

    tf_keras.utils.set_random_seed(0)
    decoder = mlp_decoder(2, 64, hidden_units=(64, 64), kernel_initializer=fan_in_truncated_normal(seed))
    first, second = decoder.layers[2].kernel.numpy(), decoder.layers[3].kernel.numpy()  # both [64, 64]
    assert first.shape == second.shape and not np.allclose(first, second)
