"""Models: the SVGP-VAE and the baselines it is compared with.

- :class:`SVGPVAE`: the scalable GP-prior VAE (one latent dataset, minibatched).
- :class:`AuxiliarySVGPVAE`: SVGP-VAE whose inputs include learned object vectors (GP-LVM).
- :class:`SpritesSVGPVAE`: SVGP-VAE with a style representation network (SPRITES).
- Many short latent datasets at once (videos): :class:`GPVAE` (exact, Pearce 2019),
  :class:`VideoSVGPVAE`, :class:`SparseGPVAE` (Titsias), :class:`HensmanGPVAE`
  (free q(u); the encoder gets no gradient) and :class:`VAE`.
- Rotated-MNIST baselines: :class:`CVAE`, :class:`GPPVAE` (Casale 2018),
  :class:`DeepSVIGP` (Hensman 2013 with a decoder likelihood).
"""
from .auxiliary_svgpvae import AuxiliarySVGPVAE
from .base import LatentVariableAutoencoder
from .cvae import CVAE
from .deep_svigp import DeepSVIGP
from .gppvae import GPPVAE
from .gpvae import GPVAE
from .hensman_gpvae import HensmanGPVAE
from .sparse_gpvae import SparseGPVAE
from .sprites_svgpvae import SpritesSVGPVAE
from .svgpvae import SVGPVAE
from .vae import VAE
from .video import InducingVideoAutoencoder, LatentPosterior, VideoAutoencoder, VideoGPAutoencoder
from .video_svgpvae import VideoSVGPVAE

__all__ = [
    "LatentVariableAutoencoder",
    "SVGPVAE",
    "AuxiliarySVGPVAE",
    "SpritesSVGPVAE",
    "VideoAutoencoder",
    "VideoGPAutoencoder",
    "InducingVideoAutoencoder",
    "LatentPosterior",
    "GPVAE",
    "VideoSVGPVAE",
    "SparseGPVAE",
    "HensmanGPVAE",
    "VAE",
    "CVAE",
    "GPPVAE",
    "DeepSVIGP",
]
