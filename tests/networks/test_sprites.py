"""The SPRITES networks."""
import numpy as np

from gpflow_svgpvae.networks import sprites_decoder


def test_sprites_decoder_latent_bias_adds_a_per_channel_shift_of_the_code():
    plain = sprites_decoder(4, (16, 16, 3), filters=4)
    shifted = sprites_decoder(4, (16, 16, 3), filters=4, latent_bias=True)
    # same convolution weights; extra weights are the per-layer dense shifts
    names = {w.name.split("/")[0] for w in shifted.weights} - {w.name.split("/")[0] for w in plain.weights}
    assert names and all(n.endswith("_latent_bias") for n in names)
    for layer in plain.layers:
        if layer.weights:
            shifted.get_layer(layer.name).set_weights(layer.get_weights())
    z = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    for name in names:  # zero shifts: exactly the plain decoder
        shifted.get_layer(name).set_weights([np.zeros_like(w) for w in shifted.get_layer(name).get_weights()])
    np.testing.assert_allclose(shifted(z), plain(z), atol=1e-6)
    # a shift of the output layer's pre-activation only: sigmoid(a + b) with b = z @ W + c
    W = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    c = np.array([0.5, -0.5, 0.0], np.float32)
    shifted.get_layer("output_latent_bias").set_weights([W, c])
    logits = np.log(plain(z).numpy()) - np.log1p(-plain(z).numpy())
    expected = 1 / (1 + np.exp(-(logits + (z @ W + c)[:, None, None, :])))
    np.testing.assert_allclose(shifted(z), expected, atol=1e-4)
