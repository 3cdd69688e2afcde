import math
import warnings

import numpy as np
import pytest

from gpflow_svgpvae.metrics import classification_auroc, imputation_mse, missing_bernoulli_nll


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


# ------------------------------------------------------------------------------------------ AUROC
def _direct_sklearn_auroc(features, labels, max_iter=1000):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    X = np.asarray(features).reshape(len(features), -1)
    half = len(X) // 2
    clf = LogisticRegression(max_iter=max_iter).fit(X[:half], labels[:half])
    proba = clf.predict_proba(X[half:])
    if proba.shape[1] == 2:
        return roc_auc_score(labels[half:], proba[:, 1])
    return roc_auc_score(labels[half:], proba, multi_class="ovr", average="macro")


def test_auroc_perfectly_separable(rng):
    labels = np.tile(np.arange(4), 30)
    centres = 10.0 * np.eye(4)[:, None, :].repeat(2, axis=1)  # [4, 2, 4] (sequences of 2 frames)
    features = centres[labels] + 0.1 * rng.normal(size=(len(labels), 2, 4))
    assert classification_auroc(features, labels) == 1.0


def test_auroc_binary_perfectly_separable(rng):
    labels = np.tile([3, 7], 20)
    features = np.where(labels == 7, 1.0, -1.0)[:, None] + 0.05 * rng.normal(size=(40, 3))
    assert classification_auroc(features, labels) == 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_random_features_near_chance(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=3000)
    features = rng.normal(size=(3000, 2, 2))
    value = classification_auroc(features, labels, seed=seed)
    # 1500 test sequences, ~500 per class: sd of a one-vs-rest AUROC ~ 0.015.
    assert abs(value - 0.5) < 0.06


@pytest.mark.parametrize("num_classes", [2, 3, 5])
def test_auroc_equals_direct_sklearn(rng, num_classes):
    num = 201  # odd: the first 100 sequences train
    labels = np.concatenate([np.arange(num_classes), rng.integers(0, num_classes, size=num - num_classes)])
    labels[100 : 100 + num_classes] = np.arange(num_classes)
    features = rng.normal(size=(num, 3, 2)) + 0.7 * labels[:, None, None] * rng.normal(size=(1, 3, 2))
    value = classification_auroc(features, labels)
    expected = _direct_sklearn_auroc(features, labels)
    assert 0.5 < value < 1.0  # informative but not separable: a non-trivial check
    assert value == pytest.approx(expected, abs=1e-9)


def test_auroc_trains_on_one_half_and_scores_the_other(rng):
    # The label is [f0 > 0] in the first half and [f0 < 0] in the second: a model
    # fitted to one half and scored on the other ranks the test half backwards
    # (AUROC ~ 0); shuffling or scoring the training data would give >= 0.5.
    # (Which half trains, exactly the first n // 2, is pinned by the odd-n
    # comparison with sklearn above.)
    n = 400
    features = rng.normal(size=(n, 2))
    labels = (features[:, 0] > 0).astype(int)
    labels[n // 2 :] = 1 - labels[n // 2 :]
    assert classification_auroc(features, labels) < 0.02


def test_auroc_string_labels(rng):
    labels = np.array(["cat", "dog", "emu"] * 20)
    features = (labels[:, None] == np.array(["cat", "dog", "emu"])).astype(float) + 0.1 * rng.normal(size=(60, 3))
    assert classification_auroc(features, labels) == 1.0


def test_auroc_training_class_absent_from_test_half(rng):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    train_labels = np.tile([0, 1, 2], 20)
    test_labels = np.tile([0, 1], 30)
    labels = np.concatenate([train_labels, test_labels])
    features = rng.normal(size=(120, 4)) + labels[:, None] * rng.normal(size=(1, 4))
    proba = LogisticRegression(max_iter=1000).fit(features[:60], train_labels).predict_proba(features[60:])
    expected = np.mean([roc_auc_score(test_labels == c, proba[:, c]) for c in (0, 1)])
    assert classification_auroc(features, labels) == pytest.approx(expected, abs=1e-12)


def test_auroc_errors(rng):
    features = rng.normal(size=(20, 3))
    with pytest.raises(ValueError, match="in the test half but not in the training half"):
        classification_auroc(features, np.array([0, 1] * 5 + [2] * 10))
    with pytest.raises(ValueError, match="training half .* at least 2 classes"):
        classification_auroc(features, np.array([0] * 10 + [0, 1] * 5))
    with pytest.raises(ValueError, match="test half .* at least 2 classes"):
        classification_auroc(features, np.array([0, 1] * 5 + [1] * 10))
    with pytest.raises(ValueError, match="labels must have shape"):
        classification_auroc(features, np.zeros(19))
    with pytest.raises(ValueError, match="V >= 4"):
        classification_auroc(features[:3], np.array([0, 1, 0]))
    bad = features.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="finite"):
        classification_auroc(bad, np.array([0, 1] * 10))
    with pytest.raises(ValueError, match="max_iter"):
        classification_auroc(features, np.array([0, 1] * 10), max_iter=0)


def test_auroc_deterministic(rng):
    labels = rng.integers(0, 3, size=100)
    labels[:3] = labels[50:53] = [0, 1, 2]
    features = rng.normal(size=(100, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert classification_auroc(features, labels, seed=1) == classification_auroc(features, labels, seed=1)
