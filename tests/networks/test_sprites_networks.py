"""The SPRITES networks: the decoder's latent modulation (FiLM by the code) and palette output."""
import numpy as np
import pytest

from gpflow_svgpvae.networks import sprites_decoder
from gpflow_svgpvae.networks.sprites import LatentMixing, LatentModulation, PaletteOutput


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


def test_modulation_layer_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 5, 5, 4)).astype(np.float32)
    z = rng.normal(size=(3, 2)).astype(np.float32)
    layer = LatentModulation(scale=True)
    layer([a, z])
    Wb, cb, Wg, cg = (rng.normal(size=w.shape).astype(np.float32) for w in
                      (layer.shift_kernel, layer.shift_bias, layer.scale_kernel, layer.scale_bias))
    layer.set_weights([Wb, cb, Wg, cg])
    expected = a * (1 + z @ Wg + cg)[:, None, None, :] + (z @ Wb + cb)[:, None, None, :]
    np.testing.assert_allclose(layer([a, z]), expected, rtol=1e-5, atol=1e-5)
    shift_only = LatentModulation(scale=False)
    shift_only([a, z])
    shift_only.set_weights([Wb, cb])
    np.testing.assert_allclose(shift_only([a, z]), a + (z @ Wb + cb)[:, None, None, :], rtol=1e-5, atol=1e-5)


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


def test_mixing_layer_matches_numpy():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 5, 4, 6)).astype(np.float32)
    z = rng.normal(size=(3, 2)).astype(np.float32)
    layer = LatentMixing(normalize=False)
    np.testing.assert_array_equal(layer([a, z]), a)  # zero weights: the identity
    Wm, cm, Wb, cb = (rng.normal(size=w.shape).astype(np.float32) for w in
                      (layer.mix_kernel, layer.mix_bias, layer.shift_kernel, layer.shift_bias))
    layer.set_weights([Wm, cm, Wb, cb])
    M = (z @ Wm + cm).reshape(3, 6, 6)
    expected = np.einsum("bhwf,bfg->bhwg", a, np.eye(6) + M) + (z @ Wb + cb)[:, None, None, :]
    np.testing.assert_allclose(layer([a, z]), expected, rtol=1e-4, atol=1e-4)


def test_mixing_with_a_diagonal_matrix_is_the_scale_and_shift_modulation():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3, 3, 4)).astype(np.float32)
    z = rng.normal(size=(2, 5)).astype(np.float32)
    film, mixing = LatentModulation(scale=True), LatentMixing(normalize=False)
    film([a, z]), mixing([a, z])
    Wb, cb, Wg, cg = (rng.normal(size=w.shape).astype(np.float32) for w in
                      (film.shift_kernel, film.shift_bias, film.scale_kernel, film.scale_bias))
    film.set_weights([Wb, cb, Wg, cg])
    diagonal = np.zeros((5, 4, 4), np.float32)
    diagonal[:, np.arange(4), np.arange(4)] = Wg
    diagonal_bias = np.diag(cg).astype(np.float32)
    mixing.set_weights([diagonal.reshape(5, 16), diagonal_bias.reshape(16), Wb, cb])
    np.testing.assert_allclose(mixing([a, z]), film([a, z]), rtol=1e-5, atol=1e-5)


def test_normalized_mixing_reads_the_standardised_code_and_ignores_its_scale():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 4, 4, 5)).astype(np.float32)
    z = rng.normal(size=(3, 7)).astype(np.float32)
    layer = LatentMixing()  # normalize=True by default
    layer([a, z])
    weights = [rng.normal(size=w.shape).astype(np.float32) for w in layer.get_weights()]
    layer.set_weights(weights)
    Wm, cm, Wb, cb = weights
    zs = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-3)
    M = (zs @ Wm + cm).reshape(3, 5, 5)
    expected = np.einsum("bhwf,bfg->bhwg", a, np.eye(5) + M) + (zs @ Wb + cb)[:, None, None, :]
    np.testing.assert_allclose(layer([a, z]), expected, rtol=1e-4, atol=1e-4)
    # A code 30 times larger and shifted (SPRITES' decoder inputs reach sd 10-50) mixes the same
    # (up to the 1e-3 added to the variance, negligible against 10^2).
    np.testing.assert_allclose(layer([a, 300 * z + 5]), layer([a, 10 * z]), rtol=1e-4, atol=1e-4)
    assert LatentMixing.from_config(layer.get_config()).normalize is True


def test_mixed_decoder_starts_as_the_plain_decoder_and_mixes_every_hidden_layer():
    plain = sprites_decoder(4, (16, 16, 3), filters=4)
    mixed = sprites_decoder(4, (16, 16, 3), filters=4, latent_modulation="mix")
    mixing = [layer for layer in mixed.layers if isinstance(layer, LatentMixing)]
    assert len(mixing) == 6  # the six hidden conv layers; the output layer is not modulated
    _copy_plain_weights(plain, mixed)
    z = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(mixed(z), plain(z), atol=1e-6)
    # The code's gradient reaches the mixing weights.
    import tensorflow as tf
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(mixed(z) ** 2)
    grads = tape.gradient(loss, [layer.mix_kernel for layer in mixing])
    assert all(g is not None and float(tf.reduce_max(tf.abs(g))) > 0 for g in grads)
