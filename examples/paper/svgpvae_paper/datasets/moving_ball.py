r"""Moving-ball videos (Pearce 2019; the SVGP-VAE paper's first experiment).

Each video shows a ball of radius ``radius`` pixels moving over ``num_frames``
binary frames of ``image_size`` x ``image_size`` pixels. The ball's path is a
draw from a GP prior, independently for the two coordinates:

.. math::

    x(t),\ y(t) \sim \mathcal{GP}(0, k), \qquad
    k(t, t') = \exp\!\left(-\frac{(t - t')^2}{2 \ell^2}\right),
    \qquad t = 0, \dots, T - 1,

with variance 1 and lengthscale :math:`\ell` (``lengthscale``). A path in
*GP units* is mapped to pixels by

.. math::

    c = \frac{S}{2} + \rho\, p,

where :math:`S` is ``image_size`` and :math:`\rho` is ``pixels_per_unit``.

Coordinate convention
---------------------
Pixel coordinates are continuous: pixel ``(row, col)`` covers
``[row, row + 1) x [col, col + 1)`` and its centre is ``(row + 0.5, col + 0.5)``,
so the frame spans ``[0, S]`` in both directions and its centre is ``S / 2``.
``paths[..., 0]`` is the horizontal coordinate *x* (column; positive x moves
the ball right) and ``paths[..., 1]`` the vertical coordinate *y* (row;
positive y moves the ball *down*, as in image arrays). A pixel is lit (1.0)
iff its centre lies within ``radius`` of the ball centre (distance
``<= radius``); all other pixels are 0.0. The same renderer,
:func:`render_balls`, draws every video (training stream and test set).

Leaving the frame
-----------------
With the defaults (:math:`\rho = 6.4`, ``radius = 3``, ``S = 32``) the ball
stays inside the frame only while :math:`|p| \le (S/2 - r)/\rho = 2.03` in
both coordinates. A unit-variance GP exceeds that often: measured with
``moving_ball(20000, seed=123)`` at the defaults, **8.2% of frames** and 71%
of videos (at least one frame) would put part of the ball outside the frame;
the Gaussian marginal gives :math:`1 - (1 - 2\Phi(-2.03))^2 = 8.27\%` of
frames (4.2% per coordinate). We therefore *clip the
ball centre* to :math:`[r, S - r]` in each coordinate, so that the whole ball
is always rendered inside the frame, and record the clipped path,
:math:`p = (c_{\text{clipped}} - S/2) / \rho`, as the ground truth in
:attr:`MovingBallData.paths`. The ground truth is thus exactly what is shown
in the video; the price is that clipped paths are no longer exact GP draws
(:attr:`MovingBallData.clipped` marks the affected frames). Use
:func:`sample_rbf_paths` for unclipped GP draws.

Seeding
-------
:func:`moving_ball` draws everything from ``np.random.default_rng(seed)``:
first the paths, ``sample_rbf_paths(num_videos, times, lengthscale, rng)``,
then nothing else (rendering is deterministic). The training stream and the
held-out test set are children of one root ``np.random.SeedSequence(seed)``
with disjoint spawn keys: batch ``i`` of the training stream uses
``SeedSequence(seed, spawn_key=(0, i))`` and the test set uses
``SeedSequence(seed, spawn_key=(1,))``. Different spawn keys give different
inputs to the seed hash, so for a given ``seed`` the test set never repeats a
training batch (and neither equals ``moving_ball(..., seed=seed)``, whose
spawn key is empty). Use the same ``seed`` for the stream and the test set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union

import numpy as np

__all__ = [
    "MovingBallConfig",
    "MovingBallData",
    "sample_rbf_paths",
    "render_balls",
    "moving_ball",
    "moving_ball_stream",
    "moving_ball_test_set",
]

SeedLike = Union[int, np.random.SeedSequence]

#: Spawn-key prefixes that separate the training stream from the test set.
TRAIN_STREAM_KEY = 0
TEST_SET_KEY = 1

#: Jitter added to the kernel matrix before the Cholesky factorisation. The
#: RBF Gram matrix on a unit grid with lengthscale 2 is numerically singular.
PATH_JITTER = 1e-8


@dataclass(frozen=True)
class MovingBallConfig:
    """Generator settings (all lengths in pixels unless stated)."""

    num_frames: int = 30
    image_size: int = 32
    radius: float = 3.0
    lengthscale: float = 2.0  # in frames
    pixels_per_unit: float = 6.4  # pixels per GP path unit
    seed: SeedLike = 0

    def __post_init__(self) -> None:
        if int(self.num_frames) != self.num_frames or self.num_frames < 1:
            raise ValueError(f"num_frames must be a positive integer, got {self.num_frames!r}")
        if int(self.image_size) != self.image_size or self.image_size < 1:
            raise ValueError(f"image_size must be a positive integer, got {self.image_size!r}")
        if not self.radius > 0:
            raise ValueError(f"radius must be positive, got {self.radius!r}")
        if not 2 * self.radius <= self.image_size:
            raise ValueError(f"a ball of radius {self.radius} does not fit in a frame of size {self.image_size}")
        if not self.lengthscale > 0:
            raise ValueError(f"lengthscale must be positive, got {self.lengthscale!r}")
        if not self.pixels_per_unit > 0:
            raise ValueError(f"pixels_per_unit must be positive, got {self.pixels_per_unit!r}")


# eq=False: comparing numpy fields with == is ambiguous; compare arrays explicitly.
@dataclass(frozen=True, eq=False)
class MovingBallData:
    """A set of moving-ball videos.

    :param videos: ``[num_videos, num_frames, image_size**2]`` float32 in {0, 1};
        frames flattened row-major (see :attr:`frames` for the unflattened view).
    :param times: ``[num_frames]`` float64, ``t = 0, ..., num_frames - 1``.
    :param paths: ``[num_videos, num_frames, 2]`` float64 ball path (x, y) in GP
        units, after clipping (the ground truth shown in the video).
    :param clipped: ``[num_videos, num_frames]`` bool, True where the drawn GP
        path was clipped to keep the ball inside the frame.
    :param config: the settings used.
    """

    videos: np.ndarray
    times: np.ndarray
    paths: np.ndarray
    clipped: np.ndarray
    config: MovingBallConfig

    @property
    def num_videos(self) -> int:
        """:math:`V`, the number of videos."""
        return self.videos.shape[0]

    @property
    def num_frames(self) -> int:
        """:math:`T`, the number of frames per video."""
        return self.videos.shape[1]

    @property
    def frames(self) -> np.ndarray:
        """The videos as ``[num_videos, num_frames, image_size, image_size]`` (a view)."""
        size = self.config.image_size
        return self.videos.reshape(self.num_videos, self.num_frames, size, size)

    @property
    def centres(self) -> np.ndarray:
        """Ball centres in pixel coordinates (x = column, y = row), ``[V, T, 2]``."""
        return self.config.image_size / 2 + self.config.pixels_per_unit * self.paths


def sample_rbf_paths(
    num_paths: int,
    times: np.ndarray,
    lengthscale: float,
    rng: np.random.Generator,
    *,
    num_dims: int = 2,
    jitter: float = PATH_JITTER,
) -> np.ndarray:
    r"""Draw paths from a zero-mean RBF GP with unit variance (no clipping).

    .. math::

        P_{n,:,d} = L\,\varepsilon_{n,:,d}, \quad
        L L^\top = K + \text{jitter}\, I, \quad
        K_{ij} = \exp\!\left(-\frac{(t_i - t_j)^2}{2\ell^2}\right), \quad
        \varepsilon \sim \mathcal{N}(0, I),

    independently for every path ``n`` and dimension ``d``, in float64.

    :param num_paths: number of paths N.
    :param times: ``[T]`` input times.
    :param lengthscale: RBF lengthscale :math:`\ell` (same units as ``times``).
    :param rng: the generator; consumes ``num_paths * T * num_dims`` normals,
        drawn as one ``[N, T, num_dims]`` array.
    :returns: ``[num_paths, T, num_dims]`` float64.
    """
    times = np.asarray(times, dtype=np.float64)
    if times.ndim != 1:
        raise ValueError(f"times must be 1-D, got shape {times.shape}")
    if num_paths < 0:
        raise ValueError(f"num_paths must be non-negative, got {num_paths}")
    if not lengthscale > 0:
        raise ValueError(f"lengthscale must be positive, got {lengthscale!r}")
    sq_dist = (times[:, None] - times[None, :]) ** 2
    K = np.exp(-0.5 * sq_dist / lengthscale**2) + jitter * np.eye(times.size)
    L = np.linalg.cholesky(K)
    eps = rng.standard_normal((num_paths, times.size, num_dims))
    return np.einsum("ts,nsd->ntd", L, eps)


def render_balls(centres: np.ndarray, *, image_size: int, radius: float) -> np.ndarray:
    """Render binary frames with a ball at each centre.

    Pixel ``(row, col)`` is 1 iff
    ``(col + 0.5 - x)**2 + (row + 0.5 - y)**2 <= radius**2``, where
    ``(x, y) = centres[..., 0], centres[..., 1]`` are pixel coordinates.
    No clipping happens here: parts of a ball outside the frame are not drawn.

    :param centres: ``[..., 2]`` ball centres (x = column, y = row), pixels.
    :returns: ``[..., image_size * image_size]`` float32 (row-major frames).
    """
    centres = np.asarray(centres, dtype=np.float64)
    if centres.shape[-1:] != (2,):
        raise ValueError(f"centres must have a trailing dimension of 2, got shape {centres.shape}")
    batch_shape = centres.shape[:-1]
    flat = centres.reshape(-1, 2)
    pixel_centres = np.arange(image_size, dtype=np.float64) + 0.5
    out = np.empty((flat.shape[0], image_size, image_size), dtype=np.float32)
    # Chunked so the float64 distance array stays small for large batches.
    chunk = 4096
    for start in range(0, flat.shape[0], chunk):
        c = flat[start : start + chunk]
        dx2 = (pixel_centres[None, :] - c[:, 0:1]) ** 2  # [n, W]
        dy2 = (pixel_centres[None, :] - c[:, 1:2]) ** 2  # [n, H]
        out[start : start + chunk] = dy2[:, :, None] + dx2[:, None, :] <= radius**2
    return out.reshape(*batch_shape, image_size * image_size)


def moving_ball(
    num_videos: int,
    *,
    num_frames: int = 30,
    image_size: int = 32,
    radius: float = 3.0,
    lengthscale: float = 2.0,
    pixels_per_unit: float = 6.4,
    seed: SeedLike = 0,
) -> MovingBallData:
    r"""Generate ``num_videos`` moving-ball videos (see the module docstring).

    Paths are drawn with :func:`sample_rbf_paths` from
    ``np.random.default_rng(seed)``, mapped to pixel centres
    :math:`c = S/2 + \rho p`, clipped to :math:`[r, S - r]` per coordinate so
    the whole ball is inside the frame (about 8.2% of frames at the defaults), and
    the clipped centres are rendered with :func:`render_balls`. The returned
    ``paths`` are the clipped ones, :math:`(c_{\text{clipped}} - S/2)/\rho`.

    :param num_videos: number of videos V.
    :param num_frames: frames per video T; times are ``0, ..., T - 1``.
    :param image_size: frame side S in pixels.
    :param radius: ball radius r in pixels.
    :param lengthscale: GP lengthscale in frames.
    :param pixels_per_unit: :math:`\rho`, pixels per GP path unit.
    :param seed: int or ``np.random.SeedSequence``; same seed, same arrays.
    """
    if int(num_videos) != num_videos or num_videos < 0:
        raise ValueError(f"num_videos must be a non-negative integer, got {num_videos!r}")
    config = MovingBallConfig(
        num_frames=num_frames,
        image_size=image_size,
        radius=radius,
        lengthscale=lengthscale,
        pixels_per_unit=pixels_per_unit,
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    times = np.arange(num_frames, dtype=np.float64)
    drawn = sample_rbf_paths(int(num_videos), times, lengthscale, rng)

    centre = image_size / 2
    drawn_centres = centre + pixels_per_unit * drawn
    centres = np.clip(drawn_centres, radius, image_size - radius)
    clipped = np.any(centres != drawn_centres, axis=-1)
    # Unclipped coordinates are kept bit-identical to the GP draw rather than
    # round-tripped through pixel units.
    paths = np.where(centres != drawn_centres, (centres - centre) / pixels_per_unit, drawn)

    videos = render_balls(centres, image_size=image_size, radius=radius)
    return MovingBallData(videos=videos, times=times, paths=paths, clipped=clipped, config=config)


def moving_ball_stream(batch_size: int, *, seed: int, start_step: int = 0, **kwargs) -> Iterator[MovingBallData]:
    """Infinite, reproducible stream of fresh training batches.

    Batch ``i`` (counting from 0) is
    ``moving_ball(batch_size, seed=SeedSequence(seed, spawn_key=(0, i)), **kwargs)``,
    so the stream is identical on every call with the same ``seed``, and a run
    resumed with ``start_step=i`` continues with exactly batch ``i``. Never
    overlaps :func:`moving_ball_test_set` for the same ``seed`` (spawn key
    ``(1,)``).

    :param batch_size: videos per batch (the paper uses 35).
    :param seed: non-negative int, root entropy shared with the test set.
    :param start_step: index of the first batch to yield.
    :param kwargs: passed on to :func:`moving_ball`.
    """
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if start_step < 0:
        raise ValueError(f"start_step must be non-negative, got {start_step}")
    step = int(start_step)
    while True:
        ss = np.random.SeedSequence(seed, spawn_key=(TRAIN_STREAM_KEY, step))
        yield moving_ball(batch_size, seed=ss, **kwargs)
        step += 1


def moving_ball_test_set(num_videos: int = 350, *, seed: int = 0, **kwargs) -> MovingBallData:
    """The fixed held-out test set: ``moving_ball(num_videos, seed=SeedSequence(seed, spawn_key=(1,)))``.

    Disjoint by construction from :func:`moving_ball_stream` with the same
    ``seed`` (training spawn keys are ``(0, i)``).

    :param num_videos: number of test videos (the paper uses 350).
    :param seed: non-negative int, root entropy shared with the training stream.
    :param kwargs: passed on to :func:`moving_ball`.
    """
    ss = np.random.SeedSequence(seed, spawn_key=(TEST_SET_KEY,))
    return moving_ball(num_videos, seed=ss, **kwargs)
