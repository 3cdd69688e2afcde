"""The SPRITES kernel (:mod:`svgpvae_paper.kernels`) against numpy."""

import gpflow
import numpy as np
import pytest

from svgpvae_paper.kernels import sprites_kernel
from tests.test_kernels import np_cosine


def test_sprites_kernel_matches_numpy(rng):
    style, pose = [0, 1, 2, 3], [4, 5, 6]
    X = rng.standard_normal((8, 7))
    X2 = rng.standard_normal((3, 7))
    k = sprites_kernel(style, pose, noise_variance=0.05, variance=1.9)
    cos_xx = np_cosine(X[:, style], X[:, style], 1.9) * np_cosine(X[:, pose], X[:, pose])
    cos_xx2 = np_cosine(X[:, style], X2[:, style], 1.9) * np_cosine(X[:, pose], X2[:, pose])
    np.testing.assert_allclose(k(X).numpy(), cos_xx + 0.05 * np.eye(8), rtol=1e-12, atol=1e-14)
    # White contributes only to K(X) (X2 is None), not to K(X, X2) -- even for X2 == X
    np.testing.assert_allclose(k(X, X2).numpy(), cos_xx2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(X, X).numpy(), cos_xx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(X, full_cov=False).numpy(), (1.9 + 0.05) * np.ones(8), rtol=1e-12)
    assert len(k.trainable_parameters) == 2  # style variance and noise
    assert not k.kernels[0].kernels[1].variance.trainable  # pose variance fixed at 1


def test_sprites_kernel_kuu_has_noise_kuf_does_not(rng):
    Z = rng.standard_normal((6, 5))
    X = rng.standard_normal((10, 5))
    k = sprites_kernel([0, 1, 2], [3, 4], noise_variance=0.1)
    iv = gpflow.inducing_variables.InducingPoints(Z)
    Kuu = gpflow.covariances.Kuu(iv, k, jitter=0.0).numpy()
    Kuf = gpflow.covariances.Kuf(iv, k, X).numpy()
    cos_zz = np_cosine(Z[:, :3], Z[:, :3]) * np_cosine(Z[:, 3:], Z[:, 3:])
    cos_zx = np_cosine(Z[:, :3], X[:, :3]) * np_cosine(Z[:, 3:], X[:, 3:])
    np.testing.assert_allclose(Kuu, cos_zz + 0.1 * np.eye(6), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Kuf, cos_zx, rtol=1e-12, atol=1e-14)


def test_sprites_kernel_pose_bias_matches_numpy(rng):
    style, pose = [0, 1, 2], [3, 4, 5, 6]
    X, X2 = rng.standard_normal((7, 7)), rng.standard_normal((4, 7))
    k = sprites_kernel(style, pose, noise_variance=0.05, variance=1.3, pose_bias=0.4)
    expected = np_cosine(X[:, style], X2[:, style], 1.3) * (np_cosine(X[:, pose], X2[:, pose]) + 0.4)
    np.testing.assert_allclose(k(X, X2).numpy(), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(X, full_cov=False).numpy(), (1.3 * 1.4 + 0.05) * np.ones(7), rtol=1e-12)
    assert len(k.trainable_parameters) == 3  # style variance, bias and noise
    with pytest.raises(ValueError, match="pose_bias must be a positive number"):
        sprites_kernel(style, pose, pose_bias=0.0)


@pytest.mark.parametrize("pose_bias, expected", [(None, 0.0), (1.0, 1.0)])
def test_sprites_kernel_pose_invariant_function_needs_the_bias(rng, pose_bias, expected):
    """A character's colour is the same at every pose. From centred pose vectors (as PCA gives)
    the paper's kernel predicts it at new poses as ~0 (a pose-constant function is not in its
    span); with the bias the GP posterior mean recovers it."""
    poses = rng.standard_normal((40, 4))
    poses -= poses.mean(0)  # centred, like PCA scores
    style = np.tile(rng.standard_normal(3), (40, 1))  # one character
    X = np.concatenate([style, poses], 1)
    k = sprites_kernel([0, 1, 2], [3, 4, 5, 6], noise_variance=1e-6, pose_bias=pose_bias)
    context, query = X[:25], X[25:]
    K = k(context).numpy() + 1e-2 * np.eye(25)
    mean = k(query, context).numpy() @ np.linalg.solve(K, np.ones(25))
    np.testing.assert_allclose(mean.mean(), expected, atol=0.1)
