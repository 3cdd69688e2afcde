import itertools

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.models import GPVAE, SVGPVAE, VAE, HensmanGPVAE, SparseGPVAE
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.training import train
from svgpvae_paper.datasets.moving_ball import (
    MovingBallData,
    moving_ball,
    moving_ball_stream,
    moving_ball_test_set,
    render_balls,
    sample_rbf_paths,
)

SIZE, RADIUS, PPU = 32, 3.0, 6.4


@pytest.fixture(scope="module")
def data():
    # Enough videos that many frames get clipped (about 8% at the defaults).
    return moving_ball(200, seed=3)


def test_shapes_and_dtypes(data):
    assert isinstance(data, MovingBallData)
    assert data.videos.shape == (200, 30, SIZE * SIZE)
    assert data.videos.dtype == np.float32
    assert data.times.dtype == np.float64
    np.testing.assert_array_equal(data.times, np.arange(30.0))
    assert data.paths.shape == (200, 30, 2)
    assert data.paths.dtype == np.float64
    assert data.clipped.shape == (200, 30) and data.clipped.dtype == bool
    assert data.frames.shape == (200, 30, SIZE, SIZE)
    assert np.shares_memory(data.frames, data.videos)
    assert data.num_videos == 200 and data.num_frames == 30
    assert data.config.lengthscale == 2.0 and data.config.pixels_per_unit == PPU


def test_pixels_are_binary(data):
    assert set(np.unique(data.videos).tolist()) == {0.0, 1.0}


def test_other_sizes():
    d = moving_ball(3, num_frames=7, image_size=20, radius=2.0, seed=1)
    assert d.videos.shape == (3, 7, 400) and d.frames.shape == (3, 7, 20, 20)
    assert d.paths.shape == (3, 7, 2)


def test_same_seed_identical_different_seed_differs():
    a, b, c = moving_ball(5, seed=11), moving_ball(5, seed=11), moving_ball(5, seed=12)
    np.testing.assert_array_equal(a.videos, b.videos)
    np.testing.assert_array_equal(a.paths, b.paths)
    assert not np.array_equal(a.paths, c.paths)
    assert not np.array_equal(a.videos, c.videos)


def test_paths_are_clipped_gp_draws(data):
    # Documented contract: paths = clip of sample_rbf_paths from default_rng(seed).
    rng = np.random.default_rng(3)
    drawn = sample_rbf_paths(200, np.arange(30.0), 2.0, rng)
    lim = (SIZE / 2 - RADIUS) / PPU
    np.testing.assert_allclose(data.paths, np.clip(drawn, -lim, lim), rtol=0, atol=1e-12)
    unclipped = ~data.clipped
    np.testing.assert_array_equal(data.paths[unclipped], drawn[unclipped])
    np.testing.assert_array_equal(data.clipped, np.any(np.abs(drawn) > lim, axis=-1))
    # The test must actually exercise clipping.
    assert 0.03 < data.clipped.mean() < 0.15


def _expected_disc(centre_xy, radius):
    """Pixel centres within radius of centre on an unbounded grid, as a set of (row, col)."""
    x, y = centre_xy
    rows = range(int(np.floor(y - radius)) - 1, int(np.ceil(y + radius)) + 2)
    cols = range(int(np.floor(x - radius)) - 1, int(np.ceil(x + radius)) + 2)
    return {(r, c) for r, c in itertools.product(rows, cols) if (c + 0.5 - x) ** 2 + (r + 0.5 - y) ** 2 <= radius**2}


def test_ball_is_entirely_inside_every_frame(data):
    centres = SIZE / 2 + PPU * data.paths
    frames = data.frames
    for v in range(0, 200, 7):  # a spread of videos, including clipped frames
        for t in range(30):
            expected = _expected_disc(centres[v, t], RADIUS)
            # Every pixel of the unbounded disc lies inside the frame ...
            assert all(0 <= r < SIZE and 0 <= c < SIZE for r, c in expected)
            # ... and the rendered frame lights exactly those pixels.
            lit = set(zip(*np.nonzero(frames[v, t])))
            assert lit == expected


def test_centre_of_mass_follows_path_with_convention(data):
    # x = column (right is positive), y = row (down is positive).
    frames = data.frames.astype(np.float64)
    mass = frames.sum(axis=(2, 3))
    assert mass.min() >= 25  # a radius-3 disc covers at least 25 pixel centres
    pix = np.arange(SIZE) + 0.5
    com_x = (frames.sum(axis=2) * pix).sum(-1) / mass
    com_y = (frames.sum(axis=3) * pix).sum(-1) / mass
    centres = data.centres
    assert np.max(np.abs(com_x - centres[..., 0])) < 0.5
    assert np.max(np.abs(com_y - centres[..., 1])) < 0.5
    # Near-perfect linear dependence on the path, with slope PPU.
    slope_x = np.polyfit(data.paths[..., 0].ravel(), com_x.ravel(), 1)[0]
    slope_y = np.polyfit(data.paths[..., 1].ravel(), com_y.ravel(), 1)[0]
    assert abs(slope_x - PPU) < 0.1 and abs(slope_y - PPU) < 0.1


def test_clipped_frames_touch_the_boundary(data):
    c = data.centres[data.clipped]
    at_edge = np.isclose(c, RADIUS) | np.isclose(c, SIZE - RADIUS)
    assert np.all(at_edge.any(axis=-1))
    assert np.all((c >= RADIUS - 1e-9) & (c <= SIZE - RADIUS + 1e-9))


def test_render_balls_does_not_clip():
    # The renderer itself draws only the visible part of a ball off the edge.
    frame = render_balls(np.array([0.0, 16.0]), image_size=SIZE, radius=RADIUS).reshape(SIZE, SIZE)
    assert frame[:, 0].sum() > 0 and frame.sum() < len(_expected_disc((0.0, 16.0), RADIUS))


def test_rbf_path_covariance_matches_kernel():
    times = np.arange(30.0)
    lengthscale = 2.0
    paths = sample_rbf_paths(4000, times, lengthscale, np.random.default_rng(0))
    assert paths.shape == (4000, 30, 2) and paths.dtype == np.float64
    # Pool x and y (independent draws of the same GP): n = 8000 samples.
    samples = np.concatenate([paths[..., 0], paths[..., 1]], axis=0)
    n = samples.shape[0]
    emp = samples.T @ samples / n  # the mean is known to be 0
    K = np.exp(-((times[:, None] - times[None, :]) ** 2) / (2 * lengthscale**2))
    # sd of a sample covariance of unit Gaussians is sqrt((1 + k^2) / n) <= sqrt(2 / n)
    # ~ 0.016; 5 sd bounds the max over the 465 distinct entries.
    tol = 5 * np.sqrt(2 / n)
    assert np.max(np.abs(emp - K)) < tol
    # Mean 0: sd of a sample mean is 1 / sqrt(n) ~ 0.011.
    assert np.max(np.abs(samples.mean(axis=0))) < 5 / np.sqrt(n)
    # x and y independent: cross-covariance sd is 1 / sqrt(4000) ~ 0.016.
    cross = paths[..., 0].T @ paths[..., 1] / paths.shape[0]
    assert np.max(np.abs(cross)) < 5 / np.sqrt(paths.shape[0])
    # Smoothness sanity at this lengthscale: corr at lag 1 is exp(-1/8) = 0.88.
    assert abs(np.mean(emp.diagonal(1)) - np.exp(-1 / 8)) < 0.02


def test_stream_is_reproducible_and_fresh():
    s1, s2 = moving_ball_stream(4, seed=5), moving_ball_stream(4, seed=5)
    batches1 = [next(s1) for _ in range(3)]
    batches2 = [next(s2) for _ in range(3)]
    for a, b in zip(batches1, batches2):
        np.testing.assert_array_equal(a.videos, b.videos)
        np.testing.assert_array_equal(a.paths, b.paths)
    assert not np.array_equal(batches1[0].paths, batches1[1].paths)
    other = next(moving_ball_stream(4, seed=6))
    assert not np.array_equal(other.paths, batches1[0].paths)
    # Resuming continues with the same batch.
    resumed = next(moving_ball_stream(4, seed=5, start_step=2))
    np.testing.assert_array_equal(resumed.paths, batches1[2].paths)
    # kwargs reach moving_ball.
    small = next(moving_ball_stream(2, seed=5, num_frames=10, image_size=16, radius=2.0))
    assert small.videos.shape == (2, 10, 256)


def test_test_set_is_fixed_and_disjoint_from_training():
    test = moving_ball_test_set(20, seed=0)
    again = moving_ball_test_set(20, seed=0)
    np.testing.assert_array_equal(test.videos, again.videos)
    assert moving_ball_test_set().num_videos == 350
    stream = moving_ball_stream(20, seed=0)
    train_first = [next(stream).paths[:, 0] for _ in range(50)]
    test_first = test.paths[:, 0]
    # No starting point of a test path appears in the first 50 training batches.
    for tr in train_first:
        assert not np.any(np.all(np.isclose(tr[:, None, :], test_first[None, :, :]), axis=-1))
    assert not np.array_equal(moving_ball(20, seed=0).paths, test.paths)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(radius=17.0),
        dict(radius=0.0),
        dict(lengthscale=0.0),
        dict(pixels_per_unit=-1.0),
        dict(num_frames=0),
        dict(image_size=0),
    ],
)
def test_invalid_config_raises(kwargs):
    with pytest.raises(ValueError):
        moving_ball(2, **kwargs)


def test_invalid_counts_raise():
    with pytest.raises(ValueError):
        moving_ball(-1)
    with pytest.raises(ValueError):
        next(moving_ball_stream(0, seed=0))


@pytest.mark.slow  # smoke only; make test-all (keeps the default suite under 10 minutes)
def test_smoke_training_all_models_on_moving_ball():
    """Every sequence model of the library on moving-ball videos, through its compiled loop:
    finite and improving ELBO."""

    def kernel():
        return gpflow.kernels.SquaredExponential(lengthscales=2.0)

    data = moving_ball(16, num_frames=10, image_size=8, radius=1.5, lengthscale=2.0, pixels_per_unit=1.5, seed=1)
    X = np.broadcast_to(data.times[None, :, None], (16, 10, 1)).copy()
    dataset = tf.data.Dataset.from_tensor_slices((X, data.videos)).batch(8)
    Z = np.linspace(0, 9, 4)[:, None]
    builders = {
        "vae": lambda e, d: VAE(e, d, "bernoulli", sequence_length=10),
        "gpvae": lambda e, d: GPVAE(e, d, kernel(), "bernoulli", sequence_length=10),
        "svgpvae": lambda e, d: SVGPVAE(e, d, kernel(), Z, "bernoulli", sequence_length=10),
        "sparse": lambda e, d: SparseGPVAE(e, d, kernel(), Z, "bernoulli", sequence_length=10),
        "hensman": lambda e, d: HensmanGPVAE(e, d, kernel(), Z, "bernoulli", sequence_length=10, num_latent_gps=2),
    }
    for name, build in builders.items():
        tf.random.set_seed(0)
        enc = mlp_encoder(64, 2, hidden_units=(32,))
        dec = mlp_decoder(2, 64, hidden_units=(32,))
        model = build(enc, dec)
        history = train(model, dataset, epochs=6, optimizer=tf_keras.optimizers.Adam(1e-2), progress=False)
        elbo = np.asarray(history["elbo"])
        assert np.all(np.isfinite(elbo)), name
        assert elbo[-2:].mean() > elbo[:2].mean(), name
