import math

import numpy as np
import pytest

from gpflow_svgpvae.metrics import imputation_mse, missing_bernoulli_nll


def _random_problem(rng, shape=(3, 4, 2, 3, 1), p_missing=0.4):
    truth = (rng.random(shape) < 0.5).astype(np.float32)
    mask = (rng.random(shape) >= p_missing).astype(np.float32)
    mask.flat[0] = 0.0  # at least one missing entry
    return truth, mask


def _loop_nll(probabilities, truth, mask, eps=1e-6):
    """Independent reference: plain Python loops, mean over samples in probability space."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if probabilities.shape == truth.shape:
        probabilities = probabilities[None]
    total, count = 0.0, 0
    for idx in np.ndindex(truth.shape):
        if mask[idx] != 0:
            continue
        y = float(truth[idx])
        likelihoods = []
        for s in range(probabilities.shape[0]):
            p = min(max(float(probabilities[(s,) + idx]), eps), 1.0 - eps)
            likelihoods.append(p if y == 1.0 else 1.0 - p)
        total += -math.log(sum(likelihoods) / len(likelihoods))
        count += 1
    return total / count


# ------------------------------------------------------------------------------------------ NLL
def test_nll_hand_computed_tiny_example():
    truth = np.array([[1.0, 0.0, 1.0, 0.0]])
    mask = np.array([[0, 0, 1, 0]])
    probs = np.array([[0.8, 0.3, 0.01, 0.5]])  # entry 2 is observed: ignored
    expected = -(math.log(0.8) + math.log(0.7) + math.log(0.5)) / 3
    assert missing_bernoulli_nll(probs, truth, mask) == pytest.approx(expected, rel=1e-12)
    # Two samples: -log of the mean *probability*, not the mean of the logs.
    probs2 = np.stack([probs, np.array([[0.4, 0.9, 0.5, 0.5]])])
    expected2 = -(math.log((0.8 + 0.4) / 2) + math.log((0.7 + 0.1) / 2) + math.log(0.5)) / 3
    assert missing_bernoulli_nll(probs2, truth, mask) == pytest.approx(expected2, rel=1e-12)
    mean_of_logs = -(math.log(0.8) + math.log(0.4) + math.log(0.7) + math.log(0.1)) / 6 - math.log(0.5) / 3
    assert abs(missing_bernoulli_nll(probs2, truth, mask) - mean_of_logs) > 0.05


@pytest.mark.parametrize("num_samples", [None, 1, 5])
def test_nll_matches_loop_reference(rng, num_samples):
    truth, mask = _random_problem(rng)
    shape = truth.shape if num_samples is None else (num_samples,) + truth.shape
    probs = rng.random(shape)
    assert missing_bernoulli_nll(probs, truth, mask) == pytest.approx(_loop_nll(probs, truth, mask), rel=1e-10)


def test_nll_single_sample_axis_equals_no_sample_axis(rng):
    truth, mask = _random_problem(rng)
    probs = rng.random(truth.shape)
    assert missing_bernoulli_nll(probs[None], truth, mask) == pytest.approx(
        missing_bernoulli_nll(probs, truth, mask), rel=1e-12
    )


def test_nll_identical_samples_equal_single_sample(rng):
    truth, mask = _random_problem(rng)
    probs = rng.random(truth.shape)
    stacked = np.stack([probs] * 4)
    assert missing_bernoulli_nll(stacked, truth, mask) == pytest.approx(
        missing_bernoulli_nll(probs, truth, mask), rel=1e-10
    )


def test_nll_clipping_at_zero_and_one():
    eps = 1e-6
    truth = np.array([1.0, 0.0, 1.0, 0.0])
    mask = np.zeros(4)
    probs = np.array([0.0, 1.0, 1.0, 0.0])  # two certain errors, two certain hits
    expected = -(2 * math.log(eps) + 2 * math.log(1 - eps)) / 4
    value = missing_bernoulli_nll(probs, truth, mask, eps=eps)
    assert np.isfinite(value)
    # (1 - (1 - eps) is eps only up to float rounding: relative 1e-9.)
    assert value == pytest.approx(expected, rel=1e-9)
    assert missing_bernoulli_nll(probs, truth, mask, eps=1e-3) == pytest.approx(
        -(2 * math.log(1e-3) + 2 * math.log(1 - 1e-3)) / 4, rel=1e-9
    )
    # With samples, an all-wrong sample does not dominate: log-mean-exp stays stable.
    probs2 = np.stack([probs, 1.0 - probs])
    expected2 = -math.log((eps + 1 - eps) / 2)
    assert missing_bernoulli_nll(probs2, truth, mask, eps=eps) == pytest.approx(expected2, rel=1e-9)


def test_nll_log_mean_exp_is_stable_for_tiny_likelihoods():
    # Likelihoods near the bottom of float64 (one subnormal): the log-mean-exp
    # must still give log(mean) to full relative accuracy.
    truth = np.array([1.0])
    mask = np.array([0])
    probs = np.array([[1e-300], [1e-310]])
    value = missing_bernoulli_nll(probs, truth, mask, eps=1e-320)
    expected = -(math.log(1e-300) + math.log((1.0 + 1e-10) / 2))
    assert value == pytest.approx(expected, rel=1e-6)


def test_nll_perfect_and_uninformative(rng):
    truth, mask = _random_problem(rng)
    assert missing_bernoulli_nll(truth, truth, mask) == pytest.approx(-math.log(1 - 1e-6), abs=1e-12)
    assert missing_bernoulli_nll(truth, truth, mask) < 1e-5
    assert missing_bernoulli_nll(np.full(truth.shape, 0.5), truth, mask) == pytest.approx(math.log(2), rel=1e-12)
    samples = np.full((3,) + truth.shape, 0.5)
    assert missing_bernoulli_nll(samples, truth, mask) == pytest.approx(math.log(2), rel=1e-12)


def test_nll_ignores_observed_entries(rng):
    truth, mask = _random_problem(rng)
    probs = rng.random((2,) + truth.shape)
    before = missing_bernoulli_nll(probs, truth, mask)
    changed = probs.copy()
    observed = mask.astype(bool)
    changed[:, observed] = rng.random((2, int(observed.sum())))
    assert missing_bernoulli_nll(changed, truth, mask) == pytest.approx(before, rel=1e-12)
    changed_missing = probs.copy()
    changed_missing[:, ~observed] = 1.0 - changed_missing[:, ~observed]
    assert missing_bernoulli_nll(changed_missing, truth, mask) != pytest.approx(before, rel=1e-3)


def test_nll_accepts_bool_mask_and_int_truth(rng):
    truth, mask = _random_problem(rng)
    probs = rng.random(truth.shape)
    assert missing_bernoulli_nll(probs, truth.astype(np.int64), mask.astype(bool)) == pytest.approx(
        missing_bernoulli_nll(probs, truth, mask), rel=1e-12
    )


# ------------------------------------------------------------------------------------------ MSE
def test_mse_explicit_numbers():
    truth = np.array([[1.0, 0.0, 1.0, 0.0, 1.0]])
    mask = np.array([[0, 0, 0, 1, 0]])
    imputed = np.array([[0.8, 0.6, 0.4, 0.9, 0.5]])
    # missing entries: errors 0.2, 0.6, 0.6, 0.5
    assert imputation_mse(imputed, truth, mask) == pytest.approx((0.04 + 0.36 + 0.36 + 0.25) / 4, rel=1e-12)
    # rounded: 1, 1, 0, 1 (0.5 -> 1) vs 1, 0, 1, 1 -> two errors
    assert imputation_mse(imputed, truth, mask, rounded=True) == pytest.approx(0.5, rel=1e-12)


def test_mse_matches_numpy_reference_and_ignores_observed(rng):
    truth, mask = _random_problem(rng)
    imputed = rng.random(truth.shape)
    missing = mask == 0
    expected = float(np.mean((imputed[missing] - truth[missing]) ** 2))
    assert imputation_mse(imputed, truth, mask) == pytest.approx(expected, rel=1e-12)
    expected_rounded = float(np.mean(np.round(imputed[missing] + 1e-12) != truth[missing]))
    assert imputation_mse(imputed, truth, mask, rounded=True) == pytest.approx(expected_rounded, rel=1e-12)
    changed = imputed.copy()
    changed[~missing] = 1.0 - changed[~missing]
    assert imputation_mse(changed, truth, mask) == pytest.approx(expected, rel=1e-12)
    assert imputation_mse(changed, truth, mask, rounded=True) == pytest.approx(expected_rounded, rel=1e-12)


def test_mse_perfect_is_zero(rng):
    truth, mask = _random_problem(rng)
    assert imputation_mse(truth, truth, mask) == 0.0
    assert imputation_mse(np.clip(truth * 0.9 + 0.05, 0, 1), truth, mask, rounded=True) == 0.0


# ------------------------------------------------------------------------------------------ input errors
@pytest.mark.parametrize("metric", ["nll", "mse"])
def test_metric_errors(metric):
    def call(values, truth, mask):
        if metric == "nll":
            return missing_bernoulli_nll(values, truth, mask)
        return imputation_mse(values, truth, mask)

    truth = np.array([[1.0, 0.0], [0.0, 1.0]])
    mask = np.array([[0, 1], [1, 0]])
    good = np.full((2, 2), 0.5)
    call(good, truth, mask)
    with pytest.raises(ValueError, match="mask must have"):
        call(good, truth, mask[:1])
    with pytest.raises(ValueError, match="0 \\(missing\\) and 1"):
        call(good, truth, mask * 2)
    with pytest.raises(ValueError, match="must have shape"):
        call(np.full((2, 3), 0.5), truth, mask)
    with pytest.raises(ValueError, match="must have shape"):
        call(np.full((2, 2, 2, 2), 0.5), truth, mask)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        call(good + 0.6, truth, mask)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        call(np.where(mask == 1, np.nan, 0.5), truth, mask)
    with pytest.raises(ValueError, match=r"truth must lie in \[0, 1\]"):
        call(good, truth * 2, mask)
    with pytest.raises(ValueError, match="no missing entries"):
        call(good, truth, np.ones_like(mask))
    with pytest.raises(ValueError, match="empty"):
        call(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)))


def test_mse_rejects_sample_axis_nll_accepts_it():
    truth = np.array([1.0, 0.0])
    mask = np.array([0, 0])
    samples = np.full((3, 2), 0.5)
    assert missing_bernoulli_nll(samples, truth, mask) == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="must have shape"):
        imputation_mse(samples, truth, mask)


def test_nll_bad_eps():
    with pytest.raises(ValueError, match="eps"):
        missing_bernoulli_nll([0.5], [1.0], [0], eps=0.0)
    with pytest.raises(ValueError, match="eps"):
        missing_bernoulli_nll([0.5], [1.0], [0], eps=0.5)
