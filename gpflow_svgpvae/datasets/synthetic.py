r"""A tiny generated problem with a known latent GP path (quickstart and tests).

A latent path :math:`z(t)` is drawn from an RBF GP on :math:`t\in[0, T]`; each
observation is a 1-D "image" of ``num_pixels`` pixels showing a Gaussian bump
at position :math:`c(t) = \tfrac{K}{2}(1 + 0.6\tanh z(t))` plus pixel noise:

.. math::

    y_{ik} = \exp\!\big(-\tfrac{(k - c(t_i))^2}{2 w^2}\big) + \varepsilon_{ik},
    \quad \varepsilon_{ik}\sim\mathcal N(0, \sigma^2).

Encoders must recover :math:`z(t)` (up to an affine map) from the pixels, and
the GP prior over :math:`t` must smooth it.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["BumpData", "gp_bump_images"]


@dataclass(frozen=True)
class BumpData:
    """``times [N, 1]`` float64, ``images [N, K]`` float32, ``latent [N]`` the true path."""

    times: np.ndarray
    images: np.ndarray
    latent: np.ndarray
    config: dict


def gp_bump_images(
    num_data: int = 200,
    num_pixels: int = 32,
    lengthscale: float = 1.0,
    duration: float = 10.0,
    bump_width: float = 2.0,
    noise_std: float = 0.05,
    seed: int = 0,
) -> BumpData:
    """Generate the problem (deterministic given ``seed``)."""
    if num_data < 2 or num_pixels < 2:
        raise ValueError("need num_data >= 2 and num_pixels >= 2")
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, duration, size=num_data))
    K = np.exp(-0.5 * (t[:, None] - t[None, :]) ** 2 / lengthscale**2)
    chol = np.linalg.cholesky(K + 1e-8 * np.eye(num_data))
    z = chol @ rng.standard_normal(num_data)
    centre = 0.5 * num_pixels * (1.0 + 0.6 * np.tanh(z))
    pixels = np.arange(num_pixels)
    images = np.exp(-0.5 * (pixels[None, :] - centre[:, None]) ** 2 / bump_width**2)
    images = images + noise_std * rng.standard_normal(images.shape)
    config = dict(
        num_data=num_data,
        num_pixels=num_pixels,
        lengthscale=lengthscale,
        duration=duration,
        bump_width=bump_width,
        noise_std=noise_std,
        seed=seed,
    )
    return BumpData(t[:, None], images.astype(np.float32), z, config)
