"""The SPRITES networks: the decoder's latent modulation (FiLM by the code)."""
import numpy as np
import pytest

from gpflow_svgpvae.networks import sprites_decoder
from gpflow_svgpvae.networks.sprites import LatentModulation


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
