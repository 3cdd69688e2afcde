"""Models: the SVGP-VAE and the baselines it is compared with."""
from .base import LatentVariableAutoencoder
from .svgpvae import SVGPVAE

__all__ = ["LatentVariableAutoencoder", "SVGPVAE"]
