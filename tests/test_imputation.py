import numpy as np
import pytest

from gpflow_svgpvae.imputation import forward_fill, mean_fill, observed_position_means, zero_fill


def _data(rng, shape=(3, 5, 2, 3, 2), p_missing=0.5, binary=True):
    Y = (rng.random(shape) < 0.5).astype(np.float32) if binary else rng.random(shape).astype(np.float32)
    mask = (rng.random(shape) >= p_missing).astype(np.float32)
    return Y, mask


def _loop_position_means(Y, mask):
    frame_shape = Y.shape[2:]
    all_sum, all_count = 0.0, 0
    sums, counts = {}, {}
    for idx in np.ndindex(Y.shape):
        if mask[idx]:
            pos = idx[2:]
            sums[pos] = sums.get(pos, 0.0) + float(Y[idx])
            counts[pos] = counts.get(pos, 0) + 1
            all_sum += float(Y[idx])
            all_count += 1
    out = np.empty(frame_shape)
    for pos in np.ndindex(frame_shape):
        out[pos] = sums[pos] / counts[pos] if counts.get(pos) else all_sum / all_count
    return out


def _loop_forward_fill(Y, mask, fallback):
    fallback = np.broadcast_to(np.asarray(fallback, dtype=np.float64), Y.shape[2:])
    out = np.empty(Y.shape)
    for v in range(Y.shape[0]):
        for pos in np.ndindex(Y.shape[2:]):
            last = fallback[pos]
            for t in range(Y.shape[1]):
                idx = (v, t) + pos
                if mask[idx]:
                    last = float(Y[idx])
                out[idx] = last
    return out


# ------------------------------------------------------------------------------------------ zero fill
def test_zero_fill_matches_loop(rng):
    Y, mask = _data(rng, binary=False)
    Y_nan = np.where(mask == 1, Y, np.nan)  # missing values must never be read
    out = zero_fill(Y_nan, mask)
    assert out.dtype == np.float32 and out.shape == Y.shape
    for idx in np.ndindex(Y.shape):
        assert out[idx] == (Y[idx] if mask[idx] else 0.0)


# ------------------------------------------------------------------------------------------ mean fill
def test_observed_position_means_match_loop(rng):
    Y, mask = _data(rng, p_missing=0.7)
    mask[:, :, 0, 0, 0] = 0  # one position never observed -> overall mean
    means = observed_position_means(Y, mask)
    reference = _loop_position_means(Y, mask)
    assert means.shape == Y.shape[2:]
    np.testing.assert_allclose(means, reference, rtol=1e-12)
    assert means[0, 0, 0] == pytest.approx(Y[mask == 1].mean(), rel=1e-6)


def test_mean_fill_matches_loop(rng):
    train_Y, train_mask = _data(rng, shape=(6, 4, 2, 3, 2), p_missing=0.6)
    train_mask[:, :, 1, 2, 1] = 0
    Y, mask = _data(rng, binary=False)
    out = mean_fill(np.where(mask == 1, Y, np.nan), mask, train_Y, train_mask)
    position_means = _loop_position_means(train_Y, train_mask)
    assert out.dtype == np.float32 and out.shape == Y.shape
    for idx in np.ndindex(Y.shape):
        expected = Y[idx] if mask[idx] else np.float32(position_means[idx[2:]])
        assert out[idx] == expected
    # The test data's own values never enter the means.
    out2 = mean_fill(1.0 - Y, mask, train_Y, train_mask)
    np.testing.assert_array_equal(out2[mask == 0], out[mask == 0])


def test_mean_fill_rank2_and_different_sequence_counts(rng):
    train_Y = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    train_mask = np.array([[1, 1, 0], [1, 0, 1]])  # observed: 1, 0, 1, 0 -> mean 0.5
    Y = np.array([[0.0, 1.0]])
    mask = np.array([[1, 0]])
    np.testing.assert_array_equal(mean_fill(Y, mask, train_Y, train_mask), [[0.0, 0.5]])


def test_mean_fill_errors(rng):
    Y, mask = _data(rng)
    with pytest.raises(ValueError, match="frame shape"):
        mean_fill(Y, mask, Y[:, :, :1], mask[:, :, :1])
    with pytest.raises(ValueError, match="train_mask must have the shape"):
        mean_fill(Y, mask, Y, mask[:2])
    with pytest.raises(ValueError, match="no entry is observed"):
        mean_fill(Y, mask, Y, np.zeros_like(mask))
    with pytest.raises(ValueError, match="rank >= 2"):
        mean_fill(Y[0, 0, 0, 0], mask[0, 0, 0, 0], Y, mask)


# ------------------------------------------------------------------------------------------ forward fill
@pytest.mark.parametrize("shape", [(4, 7, 3), (3, 6, 2, 3, 2)])
def test_forward_fill_matches_loop_default_fallback(rng, shape):
    Y, mask = _data(rng, shape=shape, binary=False)
    out = forward_fill(np.where(mask == 1, Y, np.nan), mask)
    assert out.dtype == np.float32 and out.shape == Y.shape
    np.testing.assert_array_equal(out, _loop_forward_fill(Y, mask, 0.0).astype(np.float32))
    np.testing.assert_array_equal(out[mask == 1], Y[mask == 1])


def test_forward_fill_with_position_mean_fallback(rng):
    train_Y, train_mask = _data(rng, shape=(5, 4, 2, 3, 2))
    fallback = observed_position_means(train_Y, train_mask)
    Y, mask = _data(rng, p_missing=0.6)
    mask[0, 0] = 0  # a whole first frame missing: all from the fallback
    out = forward_fill(Y, mask, fallback)
    np.testing.assert_array_equal(out, _loop_forward_fill(Y, mask, fallback).astype(np.float32))
    np.testing.assert_array_equal(out[0, 0], fallback.astype(np.float32))


@pytest.mark.parametrize("fallback", [0.25, np.array([0.1, 0.9]), np.array([[0.3], [0.6]])])
def test_forward_fill_broadcast_fallbacks(rng, fallback):
    Y, mask = _data(rng, shape=(3, 5, 2, 2))
    out = forward_fill(Y, mask, fallback)
    np.testing.assert_array_equal(out, _loop_forward_fill(Y, mask, fallback).astype(np.float32))


def test_forward_fill_explicit_sequence():
    # one sequence, one pixel, T = 6
    Y = np.array([9.0, 0.0, 1.0, 7.0, 0.0, 5.0]).reshape(1, 6, 1)
    mask = np.array([0, 1, 1, 0, 1, 0]).reshape(1, 6, 1)
    out = forward_fill(Y, mask, fallback=0.5)
    np.testing.assert_array_equal(out.ravel(), [0.5, 0.0, 1.0, 1.0, 0.0, 0.0])


def test_forward_fill_does_not_leak_across_sequences():
    Y = np.array([[1.0, 1.0], [0.0, 0.0]]).reshape(2, 2, 1)
    mask = np.array([[1, 1], [0, 0]]).reshape(2, 2, 1)
    np.testing.assert_array_equal(forward_fill(Y, mask, 0.3).ravel(), np.float32([1.0, 1.0, 0.3, 0.3]))


def test_forward_fill_errors(rng):
    Y, mask = _data(rng, shape=(2, 3, 4))
    with pytest.raises(ValueError, match="rank >= 3"):
        forward_fill(Y[0], mask[0])
    with pytest.raises(ValueError, match="mask must have the shape"):
        forward_fill(Y, mask[:, :2])
    with pytest.raises(ValueError, match="broadcastable to one frame"):
        forward_fill(Y, mask, np.zeros(3))
    with pytest.raises(ValueError, match="fallback must be finite"):
        forward_fill(Y, mask, np.nan)


# ------------------------------------------------------------------------------------------ shared validation
@pytest.mark.parametrize("fill", ["zero", "mean", "forward"])
def test_common_errors_and_bool_masks(rng, fill):
    Y, mask = _data(rng, shape=(2, 3, 4))

    def call(Y_, mask_):
        if fill == "zero":
            return zero_fill(Y_, mask_)
        if fill == "mean":
            return mean_fill(Y_, mask_, Y, mask)
        return forward_fill(Y_, mask_)

    np.testing.assert_array_equal(call(Y, mask.astype(bool)), call(Y, mask))
    with pytest.raises(ValueError, match="mask must have the shape"):
        call(Y, mask[..., :2])
    with pytest.raises(ValueError, match="0 \\(missing\\) and 1"):
        call(Y, mask * 2)
    bad = Y.copy()
    bad[mask == 1] = np.inf
    with pytest.raises(ValueError, match="observed entries of Y must be finite"):
        call(bad, mask)
    with pytest.raises(ValueError, match="real numbers"):
        call(Y.astype(str), mask)
