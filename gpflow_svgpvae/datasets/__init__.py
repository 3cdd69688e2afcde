"""Generated data: :func:`gp_bump_images`, a tiny problem with a known latent GP path.

The paper's data (moving-ball videos, rotated and Healing MNIST, SPRITES) are generated
by the research package, :mod:`svgpvae_paper.datasets`.
"""

from .synthetic import BumpData, gp_bump_images

__all__ = ["gp_bump_images", "BumpData"]
