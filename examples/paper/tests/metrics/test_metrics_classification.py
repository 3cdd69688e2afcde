"""The downstream-classification AUROC of the HMNIST protocol, against scikit-learn."""

import warnings

import numpy as np
import pytest

from svgpvae_paper.metrics import classification_auroc


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
