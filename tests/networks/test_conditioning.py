"""The conditioning layers: FiLM by the code (LatentModulation) and code-generated channel mixing
(LatentMixing), against numpy."""
import numpy as np

from gpflow_svgpvae.networks import LatentMixing, LatentModulation



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
