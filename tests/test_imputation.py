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


# --------------------------------------------------------------------------- validation split


def _sequences(rng, V=6, T=9, D=3, p_nan=0.2):
    """Padded sequences with NaN: X [V, T, 1], Y [V, T, D] and frames [V, T] (the last frames padding)."""
    X = np.tile(np.linspace(0.0, 4.0, T)[None, :, None], (V, 1, 1))
    Y = rng.normal(size=(V, T, D)).astype(np.float32)
    Y[rng.random(Y.shape) < p_nan] = np.nan
    frames = np.ones((V, T), np.float32)
    frames[:, T - 2 :] = 0.0
    Y[:, T - 2 :] = np.nan  # padding (never read)
    return X, Y, frames


def _observed(data):
    Y = np.asarray(data[1])
    observed = ~np.isnan(Y)
    if len(data) == 3:
        mask = np.asarray(data[2]).astype(bool)
        observed &= mask if mask.shape == Y.shape else mask[..., None]
    return observed


def _layouts(rng):
    X, Y, frames = _sequences(rng)
    points_X, points_Y = rng.normal(size=(40, 2)), rng.normal(size=(40, 5))
    entry_mask = (rng.random(points_Y.shape) < 0.7).astype(np.float32)
    return {
        "nan": (X, Y),
        "nan_frames": (X, Y, frames),
        "entry_mask": (X, np.nan_to_num(Y), ~np.isnan(Y)),
        "no_nan": (points_X, points_Y),
        "points_mask": (points_X, points_Y, entry_mask),
    }


@pytest.mark.parametrize("layout", ["nan", "nan_frames", "entry_mask", "no_nan", "points_mask"])
def test_hold_out_entries_hides_round_fraction_of_the_observed_entries(rng, layout):
    from gpflow_svgpvae.imputation import hold_out_entries

    data = _layouts(rng)[layout]
    observed = _observed(data)
    train_data, validation = hold_out_entries(data, fraction=0.15, seed=3)
    kept = _observed(train_data)
    held = validation.held_out
    assert held.sum() == round(0.15 * observed.sum()) == validation.num_held_out
    assert not np.any(held & ~observed)  # never a missing or padded entry
    assert not np.any(held & kept)  # hidden from the training data
    np.testing.assert_array_equal(held | kept, observed)  # together: exactly the original observed entries
    np.testing.assert_array_equal(validation.targets, np.asarray(data[1], np.float64)[held])
    assert len(train_data) == (2 if layout == "nan" else 3) and train_data[0] is data[0]
    if layout in ("nan", "nan_frames"):  # hidden the way the data mark missing entries: NaN
        assert np.all(np.isnan(train_data[1][held]))
        if layout == "nan_frames":
            assert train_data[2] is data[2]
    else:  # by a 0 in an entry mask of Y's shape, Y itself unchanged
        assert np.shape(train_data[2]) == np.shape(data[1])
        np.testing.assert_array_equal(train_data[1], data[1])
    assert validation.data is not None and validation.data[1] is train_data[1]


def test_hold_out_entries_is_seeded_and_keeps_each_sequence_observed(rng):
    from gpflow_svgpvae.imputation import hold_out_entries

    X, Y, frames = _sequences(rng, V=20, T=6, D=2, p_nan=0.5)
    data = (X, Y, frames)
    first = hold_out_entries(data, 0.5, seed=0)[1].held_out
    np.testing.assert_array_equal(first, hold_out_entries(data, 0.5, seed=0)[1].held_out)
    assert np.any(first != hold_out_entries(data, 0.5, seed=1)[1].held_out)
    for seed in range(5):
        train_data, validation = hold_out_entries(data, 0.4, seed=seed)
        per_sequence = _observed(train_data).reshape(len(X), -1).sum(1)
        had = _observed(data).reshape(len(X), -1).sum(1)
        assert np.all(per_sequence[had > 0] >= 1)


def test_hold_out_entries_refuses_bad_input(rng):
    import tensorflow as tf

    from gpflow_svgpvae.imputation import hold_out_entries

    X, Y, frames = _sequences(rng)
    for fraction in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"fraction .* must lie in \(0, 1\)"):
            hold_out_entries((X, Y), fraction)
    for fraction in (True, "0.1", None):
        with pytest.raises(ValueError, match=r"fraction .* must be a number in \(0, 1\)"):
            hold_out_entries((X, Y), fraction)
    with pytest.raises(TypeError, match="not a tf.data.Dataset"):
        hold_out_entries(tf.data.Dataset.from_tensor_slices((X, Y)))
    with pytest.raises(TypeError, match=r"\(X, Y\) with NaN for missing entries, \(X, Y, mask\)"):
        hold_out_entries((X, Y, frames, frames))
    with pytest.raises(TypeError, match="must be the training arrays"):
        hold_out_entries(Y)
    with pytest.raises(ValueError, match=r"mask must have Y's shape \[6, 9, 3\] .* or \[6, 9\]"):
        hold_out_entries((X, Y, frames[:, :4]))
    with pytest.raises(ValueError, match="mask must hold only 0"):
        hold_out_entries((X, Y, frames * 2))
    with pytest.raises(ValueError, match=r"Y must have shape \[V, T, ...\]"):
        hold_out_entries((X, Y[:3]))
    with pytest.raises(ValueError, match=r"X must have shape \[N, Q\]"):
        hold_out_entries((X[..., 0, None, None], Y))
    with pytest.raises(ValueError, match="rounds to no held-out entry: raise fraction"):
        hold_out_entries((X, Y), 1e-4)
    # One observed entry per sequence: none can be hidden without emptying a sequence.
    single = np.full_like(Y, np.nan)
    single[:, 0, 0] = 1.0
    with pytest.raises(ValueError, match="leaving some sequence with nothing observed .* lower fraction"):
        hold_out_entries((X, single), 0.5)


def _tiny_sequence_model(likelihood=None, D=3, seed=0):
    import gpflow
    from gpflow.keras import tf_keras

    import gpflow_svgpvae as gv
    from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder

    tf_keras.utils.set_random_seed(seed)
    return gv.SVGPVAE(
        mlp_encoder(2 * D, 2, hidden_units=(8,)),
        mlp_decoder(2, D, hidden_units=(8,)),
        gpflow.kernels.Matern52(),
        np.linspace(0.0, 4.0, 4)[:, None],
        likelihood if likelihood is not None else gv.Gaussian(0.1),
        missing_values="nan",
        encoder_sees_mask=True,
    )


def test_validation_scores_match_numpy_from_impute(rng):
    from scipy.special import logsumexp

    from gpflow_svgpvae.imputation import hold_out_entries

    data = _sequences(rng)
    train_data, validation = hold_out_entries(data, 0.2, seed=0, num_samples=7)
    model = _tiny_sequence_model()
    scores = validation(model)
    assert scores == validation.score(model)  # the same draws at every call
    imputed, samples = model.impute(train_data, num_samples=7, seed=0)
    held, truth = validation.held_out, np.asarray(data[1], np.float64)[validation.held_out]
    mean = np.asarray(imputed, np.float64)[held]
    draws = np.asarray(samples, np.float64)[:, held]
    np.testing.assert_allclose(scores["mse"], np.mean((mean - truth) ** 2), rtol=1e-12)
    variance = float(model.likelihood.variance.numpy())
    log_density = -0.5 * np.log(2 * np.pi * variance) - 0.5 * (truth - draws) ** 2 / variance
    np.testing.assert_allclose(scores["nll"], -np.mean(logsumexp(log_density, axis=0) - np.log(7)), rtol=1e-10)


def test_validation_bernoulli_nll_matches_numpy(rng):
    import gpflow_svgpvae as gv
    from gpflow_svgpvae.imputation import hold_out_entries

    X, Y, frames = _sequences(rng)
    Y = np.where(np.isnan(Y), np.nan, (Y > 0).astype(np.float32))
    train_data, validation = hold_out_entries((X, Y, frames), 0.2, seed=1, num_samples=5)
    model = _tiny_sequence_model(gv.Bernoulli())
    scores = validation(model)
    _, samples = model.impute(train_data, num_samples=5, seed=validation.seed)
    p = np.clip(np.asarray(samples, np.float64)[:, validation.held_out], 1e-6, 1 - 1e-6)
    y = validation.targets
    expected = -np.mean(np.log(np.mean(np.where(y == 1, p, 1 - p), axis=0)))
    np.testing.assert_allclose(scores["nll"], expected, rtol=1e-10)
    assert set(scores) == {"mse", "nll"}
