"""The conditioning layers: FiLM by the code (LatentModulation) and code-generated channel mixing
(LatentMixing), against numpy."""

import numpy as np

from svgpvae_paper.networks import LatentMixing, LatentModulation


def test_modulation_layer_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 5, 5, 4)).astype(np.float32)
    z = rng.normal(size=(3, 2)).astype(np.float32)
    layer = LatentModulation(scale=True)
    layer([a, z])
    Wb, cb, Wg, cg = (
        rng.normal(size=w.shape).astype(np.float32)
        for w in (layer.shift_kernel, layer.shift_bias, layer.scale_kernel, layer.scale_bias)
    )
    layer.set_weights([Wb, cb, Wg, cg])
    expected = a * (1 + z @ Wg + cg)[:, None, None, :] + (z @ Wb + cb)[:, None, None, :]
    np.testing.assert_allclose(layer([a, z]), expected, rtol=1e-5, atol=1e-5)
    shift_only = LatentModulation(scale=False)
    shift_only([a, z])
    shift_only.set_weights([Wb, cb])
    np.testing.assert_allclose(shift_only([a, z]), a + (z @ Wb + cb)[:, None, None, :], rtol=1e-5, atol=1e-5)


def test_mixing_layer_matches_numpy():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 5, 4, 6)).astype(np.float32)
    z = rng.normal(size=(3, 2)).astype(np.float32)
    layer = LatentMixing(normalize=False)
    np.testing.assert_array_equal(layer([a, z]), a)  # zero weights: the identity
    Wm, cm, Wb, cb = (
        rng.normal(size=w.shape).astype(np.float32)
        for w in (layer.mix_kernel, layer.mix_bias, layer.shift_kernel, layer.shift_bias)
    )
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
    Wb, cb, Wg, cg = (
        rng.normal(size=w.shape).astype(np.float32)
        for w in (film.shift_kernel, film.shift_bias, film.scale_kernel, film.scale_bias)
    )
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


def _demodulated(a, z, Wm, cm, Wb, cb):
    C = a.shape[-1]
    K = np.eye(C) + (z.astype(np.float64) @ Wm + cm).reshape(len(z), C, C)
    K = K / np.sqrt((K**2).sum(axis=1, keepdims=True) + 1e-8)  # unit-length columns
    return np.einsum("bhwf,bfg->bhwg", a, K) + (z @ Wb + cb)[:, None, None, :]


def test_demodulated_mixing_matches_numpy_and_starts_as_the_identity():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 4, 5, 6)).astype(np.float32)
    z = rng.normal(size=(3, 2)).astype(np.float32)
    layer = LatentMixing(normalize=False, demodulate=True)
    np.testing.assert_allclose(layer([a, z]), a, rtol=1e-6, atol=1e-6)  # columns of I have unit length
    weights = [rng.normal(size=w.shape).astype(np.float32) for w in layer.get_weights()]
    layer.set_weights(weights)
    np.testing.assert_allclose(layer([a, z]), _demodulated(a, z, *weights), rtol=1e-4, atol=1e-4)
    config = LatentMixing.from_config(layer.get_config()).get_config()
    assert config["demodulate"] is True and config["normalize"] is False


def test_demodulated_mixing_cannot_amplify_however_large_its_weights():
    """Each output channel (less its shift) is a unit-length combination of the pixel's input channels,
    so by Cauchy-Schwarz its size is at most the pixel's input norm, whatever the weights; without
    demodulation the same weights multiply the activations by the kernel's norm."""
    rng = np.random.default_rng(6)
    C = 32
    a = rng.normal(size=(4, 8, 8, C)).astype(np.float32)
    z = rng.normal(size=(4, 10)).astype(np.float32)
    plain, demodulated = LatentMixing(normalize=False), LatentMixing(normalize=False, demodulate=True)
    plain([a, z]), demodulated([a, z])
    weights = [rng.normal(size=w.shape).astype(np.float32) for w in plain.get_weights()]
    weights[2:] = [np.zeros_like(w) for w in weights[2:]]  # no shift
    plain.set_weights(weights), demodulated.set_weights(weights)
    pixel_norms = np.linalg.norm(a, axis=-1, keepdims=True)  # [b, H, W, 1]
    out = demodulated([a, z]).numpy()
    assert np.all(np.abs(out) <= pixel_norms * (1 + 1e-5))
    # Unit-variance channels, uncorrelated: unit variance out (the demodulation's purpose).
    np.testing.assert_allclose(out.var(axis=(1, 2)).mean(), 1.0, atol=0.1)
    assert plain([a, z]).numpy().var() > 100  # the undemodulated kernel amplifies
