"""Deprecated: :class:`VideoSVGPVAE` is :class:`~gpflow_svgpvae.SVGPVAE` given data of many
latent datasets, ``X [V, b, D]``, ``Y [V, b, ...]`` (one amortised :math:`q(u)` per video).

Use ``SVGPVAE(encoder, decoder, kernel, inducing_inputs, likelihood, num_data=frames_per_video)``.
This alias will be removed in the next release.
"""
import warnings

from .svgpvae import SVGPVAE

__all__ = ["VideoSVGPVAE"]


class VideoSVGPVAE(SVGPVAE):
    """Deprecated alias of :class:`~gpflow_svgpvae.SVGPVAE` (same arguments)."""

    def __init__(self, *args, **kwargs):
        warnings.warn(
            "VideoSVGPVAE is deprecated: SVGPVAE takes videos/sequences X [V, T, D] directly.",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)
