"""The SPRITES networks: the decoder's latent modulation (FiLM by the code) and palette output."""

import numpy as np
import pytest

from svgpvae_paper.networks import sprites_decoder
from svgpvae_paper.networks.sprites import LatentMixing, PaletteOutput


def _copy_plain_weights(plain, modulated):
    for layer in plain.layers:
        if layer.weights:
            modulated.get_layer(layer.name).set_weights(layer.get_weights())


@pytest.mark.parametrize("modulation", ["shift", "scale_shift"])
def test_modulated_decoder_starts_as_the_plain_decoder(modulation):
    plain = sprites_decoder(4, (16, 16, 3), filters=4)
    modulated = sprites_decoder(4, (16, 16, 3), filters=4, latent_modulation=modulation)
    extra = {w.name.split("/")[0] for w in modulated.weights} - {w.name.split("/")[0] for w in plain.weights}
    assert extra and all(n.endswith("_modulation") for n in extra)
    _copy_plain_weights(plain, modulated)
    z = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(modulated(z), plain(z), atol=1e-6)


def test_output_shift_is_a_shift_of_the_logits():
    plain = sprites_decoder(4, (16, 16, 3), filters=4)
    modulated = sprites_decoder(4, (16, 16, 3), filters=4, latent_modulation="shift")
    _copy_plain_weights(plain, modulated)
    z = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    W = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    c = np.array([0.5, -0.5, 0.0], np.float32)
    modulated.get_layer("output_modulation").set_weights([W, c])
    p = plain(z).numpy()
    logits = np.log(p) - np.log1p(-p)
    expected = 1 / (1 + np.exp(-(logits + (z @ W + c)[:, None, None, :])))
    np.testing.assert_allclose(modulated(z), expected, atol=1e-4)


def test_unknown_modulation_is_an_error():
    with pytest.raises(ValueError, match="latent_modulation must be one of"):
        sprites_decoder(4, (16, 16, 3), filters=4, latent_modulation="film")


def test_palette_output_matches_numpy():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(3, 5, 6, 4)).astype(np.float32)
    z = rng.normal(size=(3, 2)).astype(np.float32)
    layer = PaletteOutput(channels=3)
    layer([logits, z])
    W, a = rng.normal(size=(2, 12)).astype(np.float32), rng.normal(size=12).astype(np.float32)
    layer.set_weights([W, a])
    colours = (1 / (1 + np.exp(-(z @ W + a)))).reshape(3, 4, 3)  # [b, K, C]
    weights = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    expected = np.einsum("bhwk,bkc->bhwc", weights, colours)
    np.testing.assert_allclose(layer([logits, z]), expected, rtol=1e-5, atol=1e-6)


def test_palette_output_paints_a_label_map_exactly():
    """With confident logits each pixel takes exactly its label's colour: a label map and a
    palette, as the SPRITES frames are made."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, size=(2, 5, 5))
    logits = (40.0 * np.eye(4)[labels]).astype(np.float32)
    z = rng.normal(size=(2, 3)).astype(np.float32)
    layer = PaletteOutput(channels=3)
    layer([logits, z])
    colours = 1 / (1 + np.exp(-(z @ layer.colour_kernel.numpy() + layer.colour_bias.numpy())))
    colours = colours.reshape(2, 4, 3)
    expected = np.take_along_axis(colours[:, None, None], labels[..., None, None], axis=3)[:, :, :, 0]
    np.testing.assert_allclose(layer([logits, z]), expected, atol=1e-6)


def test_palette_decoder_shapes_range_and_bad_input():
    decoder = sprites_decoder(4, (16, 16, 3), filters=4, palette_colours=5)
    assert decoder.get_layer("output_logits").filters == 5
    out = decoder(np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32) * 10).numpy()
    assert out.shape == (7, 16, 16, 3) and out.min() >= 0.0 and out.max() <= 1.0
    with pytest.raises(ValueError, match="palette_colours must be a positive integer"):
        sprites_decoder(4, (16, 16, 3), filters=4, palette_colours=0)


@pytest.mark.parametrize("modulation", ["mix", "mix_demodulated"])
def test_mixed_decoder_starts_as_the_plain_decoder_and_mixes_every_hidden_layer(modulation):
    plain = sprites_decoder(4, (16, 16, 3), filters=4)
    mixed = sprites_decoder(4, (16, 16, 3), filters=4, latent_modulation=modulation)
    mixing = [layer for layer in mixed.layers if isinstance(layer, LatentMixing)]
    assert len(mixing) == 6  # the six hidden conv layers; the output layer is not modulated
    assert all(layer.demodulate == (modulation == "mix_demodulated") for layer in mixing)
    _copy_plain_weights(plain, mixed)
    z = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(mixed(z), plain(z), atol=1e-6)
    # The code's gradient reaches the mixing weights.
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(mixed(z) ** 2)
    grads = tape.gradient(loss, [layer.mix_kernel for layer in mixing])
    assert all(g is not None and float(tf.reduce_max(tf.abs(g))) > 0 for g in grads)
