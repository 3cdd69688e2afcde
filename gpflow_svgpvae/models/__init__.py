"""Models: the SVGP-VAE and the baselines it is compared with.

- :class:`SVGPVAE`: the scalable GP-prior VAE, for every kind of auxiliary input
  (an input transform maps raw inputs to GP inputs) and for one latent dataset
  (``X [N, D]``, minibatched) or many (sequences, videos: ``X [V, T, D]``).
- Sequence baselines: :class:`GPVAE` (exact, Pearce 2019), :class:`SparseGPVAE`
  (Titsias), :class:`HensmanGPVAE` (free q(u); the encoder gets no gradient) and :class:`VAE`.
- Rotated-MNIST baselines: :class:`CVAE`, :class:`GPPVAE` (Casale 2018),
  :class:`DeepSVIGP` (Hensman 2013 with a decoder likelihood).

Every model predicts with ``predict_f(Xnew, data=None)`` and
``predict_y(Xnew, data=None, num_samples=None, seed=0)``, ``data`` being what the
prediction conditions on.
"""

from .base import LatentVariableAutoencoder
from .cvae import CVAE
from .deep_svigp import DeepSVIGP
from .gppvae import GPPVAE
from .gpvae import GPVAE
from .hensman_gpvae import HensmanGPVAE
from .sparse_gpvae import SparseGPVAE
from .svgpvae import SVGPVAE
from .vae import VAE
from .video import InducingVideoAutoencoder, LatentPosterior, VideoAutoencoder, VideoGPAutoencoder

__all__ = [
    "LatentVariableAutoencoder",
    "SVGPVAE",
    "VideoAutoencoder",
    "VideoGPAutoencoder",
    "InducingVideoAutoencoder",
    "LatentPosterior",
    "GPVAE",
    "SparseGPVAE",
    "HensmanGPVAE",
    "VAE",
    "CVAE",
    "GPPVAE",
    "DeepSVIGP",
]
