r"""The downstream-classification score of the GP-VAE paper's HMNIST protocol (Fortuin et al. 2020):
a multinomial logistic regression on the (flattened) imputed sequences of the first half of
the sequences, scored on the second half by macro one-vs-rest AUROC."""

from __future__ import annotations

import numpy as np

__all__ = ["classification_auroc"]


def classification_auroc(features, labels, *, seed: int = 0, max_iter: int = 1000) -> float:
    r"""Downstream classification score: macro one-vs-rest AUROC of a logistic regression.

    The features of each sequence (e.g. its imputed frames ``[T, H, W, C]``)
    are flattened; a multinomial logistic regression
    (:class:`sklearn.linear_model.LogisticRegression`, lbfgs, default
    regularisation) is fitted to the first ``V // 2`` sequences in the given
    order and its predicted class probabilities for the remaining ones are
    scored by :func:`sklearn.metrics.roc_auc_score` (``multi_class="ovr"``,
    ``average="macro"``): the mean over classes of the AUROC of "this class vs
    the rest". With two classes this is the plain binary AUROC. If a training
    class does not occur in the test half, the average runs over the classes
    that do (its one-vs-rest AUROC is undefined).

    :param features: ``[V, ...]`` finite features per sequence.
    :param labels: ``[V]`` class labels (integers or strings).
    :param seed: ``random_state`` of the logistic regression.
    :param max_iter: maximum lbfgs iterations.
    :returns: the macro AUROC in [0, 1] (0.5 = chance).
    :raises ValueError: on mismatched or malformed shapes, non-finite features,
        fewer than two classes in either half, or a test class that does not
        occur in the training half.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    features = np.asarray(features)
    labels = np.asarray(labels)
    if features.ndim < 1 or features.shape[0] < 4:
        raise ValueError(f"features must have shape [V, ...] with V >= 4 sequences; got {features.shape}")
    if labels.shape != features.shape[:1]:
        raise ValueError(f"labels must have shape [V] = {features.shape[:1]}; got {labels.shape}")
    if not np.issubdtype(features.dtype, np.number) or np.issubdtype(features.dtype, np.complexfloating):
        if features.dtype != np.bool_:
            raise ValueError(f"features must be real numbers; got dtype {features.dtype}")
    X = features.reshape(features.shape[0], -1).astype(np.float64)
    if X.shape[1] == 0:
        raise ValueError(f"features have no entries per sequence: {features.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("features must be finite")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}")

    num_train = X.shape[0] // 2
    y_train, y_test = labels[:num_train], labels[num_train:]
    train_classes, test_classes = np.unique(y_train), np.unique(y_test)
    if train_classes.size < 2:
        raise ValueError(
            f"the training half (first {num_train} sequences) needs at least 2 classes; got {train_classes.tolist()}"
        )
    unseen = np.setdiff1d(test_classes, train_classes)
    if unseen.size:
        raise ValueError(
            f"classes {unseen.tolist()} occur in the test half but not in the training half "
            f"(first {num_train} sequences); reorder the sequences"
        )
    if test_classes.size < 2:
        raise ValueError(
            f"the test half (last {X.shape[0] - num_train} sequences) needs at least 2 classes "
            f"for an AUROC; got {test_classes.tolist()}"
        )

    model = LogisticRegression(solver="lbfgs", max_iter=int(max_iter), random_state=seed)
    model.fit(X[:num_train], y_train)
    proba = model.predict_proba(X[num_train:])  # [V - num_train, K], columns = model.classes_
    classes = model.classes_
    if classes.size == 2:
        return float(roc_auc_score(y_test == classes[1], proba[:, 1]))
    if test_classes.size == classes.size:
        return float(roc_auc_score(y_test, proba, multi_class="ovr", average="macro", labels=classes))
    # Some training classes are absent from the test half: average over those present.
    scores = [roc_auc_score(y_test == c, proba[:, k]) for k, c in enumerate(classes) if c in test_classes]
    return float(np.mean(scores))
