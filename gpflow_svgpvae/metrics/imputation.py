r"""Missing-data imputation (metrics, pure numpy).

The protocol of the GP-VAE paper (Fortuin et al. 2020, HMNIST): data are binary
sequences ``truth [V, T, H, W, C]`` with an observation ``mask`` of the same
shape (1 = observed, 0 = missing), and the imputation metrics are computed on
the *missing* entries only (:math:`\mathcal M = \{i : \text{mask}_i = 0\}`):

* :func:`missing_bernoulli_nll` -- the negative log likelihood per missing
  entry of the truth under ``S`` sampled Bernoulli probability maps
  :math:`p_{s}` (clipped to :math:`[\epsilon, 1 - \epsilon]`), averaged over
  the samples *inside* the log (a Monte Carlo estimate of the predictive
  likelihood):
  :math:`|\mathcal M|^{-1} \sum_{i \in \mathcal M} -\log \big(S^{-1} \sum_s
  p_{s,i}^{y_i} (1 - p_{s,i})^{1 - y_i}\big)`.
* :func:`imputation_mse` -- :math:`|\mathcal M|^{-1} \sum_{i \in \mathcal M}
  (\hat y_i - y_i)^2`, optionally with :math:`\hat y` rounded to {0, 1}.
* :func:`classification_auroc` -- the downstream-classification score: a
  multinomial logistic regression on the (flattened) imputed sequences of the
  first half of the sequences, scored on the second half by macro one-vs-rest
  AUROC.
"""

from __future__ import annotations

import numpy as np

__all__ = ["missing_bernoulli_nll", "imputation_mse", "classification_auroc"]


def _as_mask(mask, shape) -> np.ndarray:
    """``mask`` (1 = observed, 0 = missing) as a bool array of ``shape``."""
    mask = np.asarray(mask)
    if mask.shape != tuple(shape):
        raise ValueError(f"mask must have the truth's shape {tuple(shape)}; got {mask.shape}")
    if mask.dtype != np.bool_:
        if not np.issubdtype(mask.dtype, np.number) or np.issubdtype(mask.dtype, np.complexfloating):
            raise ValueError(f"mask must be boolean or hold 0/1 numbers; got dtype {mask.dtype}")
        if mask.size and not np.all((mask == 0) | (mask == 1)):
            raise ValueError("mask must hold only 0 (missing) and 1 (observed)")
        mask = mask != 0
    return mask


def _check_unit_interval(values: np.ndarray, name: str) -> None:
    if not np.issubdtype(values.dtype, np.number) and values.dtype != np.bool_:
        raise ValueError(f"{name} must be real numbers; got dtype {values.dtype}")
    if np.issubdtype(values.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real numbers; got dtype {values.dtype}")
    lo, hi = np.min(values), np.max(values)
    if not (lo >= 0 and hi <= 1):  # also catches NaN
        raise ValueError(f"{name} must lie in [0, 1] (and be finite); got values in [{lo}, {hi}]")


def _missing_entries(values, truth, mask, *, name: str, allow_samples: bool):
    """Select the missing entries (``mask == 0``) of ``values`` and ``truth``.

    :param values: ``truth``-shaped array, or (``allow_samples``) ``[S, *truth.shape]``.
    :returns: ``(values_missing, truth_missing)``, float64, of shapes ``[S, n]``
        (``S = 1`` without a sample axis) and ``[n]``, ``n`` the number of
        missing entries.
    :raises ValueError: if ``truth`` is empty, ``mask`` does not have its shape
        or holds values other than 0/1, the trailing shape of ``values`` is not
        ``truth``'s, values or truth lie outside [0, 1], or no entry is missing.
    """
    truth = np.asarray(truth)
    values = np.asarray(values)
    if truth.size == 0:
        raise ValueError(f"truth is empty: {truth.shape}")
    missing = ~_as_mask(mask, truth.shape)
    if values.shape == truth.shape:
        values = values[None]
    elif not (allow_samples and values.ndim == truth.ndim + 1 and values.shape[1:] == truth.shape):
        expected = f"{truth.shape} or [S, *{truth.shape}]" if allow_samples else f"{truth.shape}"
        raise ValueError(f"{name} must have shape {expected} (the truth's); got {values.shape}")
    if values.shape[0] == 0:
        raise ValueError(f"{name} has no samples: {values.shape}")
    _check_unit_interval(truth, "truth")
    _check_unit_interval(values, name)
    num_missing = int(np.sum(missing))
    if num_missing == 0:
        raise ValueError("mask has no missing entries (mask == 0); the imputation metrics are undefined")
    return values[:, missing].astype(np.float64), truth[missing].astype(np.float64)


def missing_bernoulli_nll(probabilities, truth, mask, *, eps: float = 1e-6) -> float:
    r"""Negative log likelihood per missing entry under (sampled) Bernoulli probabilities.

    For the missing entries :math:`i` (``mask == 0``) with truth :math:`y_i`
    and the ``S`` probability maps :math:`p_{s}` clipped to
    :math:`[\epsilon, 1 - \epsilon]`,

    .. math::

        \text{NLL} = \frac{1}{|\mathcal M|} \sum_{i \in \mathcal M}
        -\log \frac{1}{S} \sum_{s=1}^{S} p_{s,i}^{y_i} (1 - p_{s,i})^{1 - y_i},

    the mean over samples taken inside the log (log-mean-exp, computed stably).
    With ``S = 1`` (or no sample axis) this is the binary cross-entropy. The
    truth is meant to be binary; for truth in (0, 1) the exponent form above is
    still evaluated (a cross-entropy, not a normalised likelihood).

    :param probabilities: ``[*truth.shape]`` or ``[S, *truth.shape]`` Bernoulli
        probabilities in [0, 1].
    :param truth: ``[V, T, H, W, C]`` (any shape) true values in {0, 1}.
    :param mask: truth-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :param eps: clipping of the probabilities, in (0, 0.5).
    :returns: the mean NLL per missing entry (nats).
    :raises ValueError: on mismatched shapes, values outside [0, 1], a non-0/1
        mask, no missing entry, or a bad ``eps``.
    """
    eps = float(eps)
    if not 0.0 < eps < 0.5:
        raise ValueError(f"eps must be in (0, 0.5); got {eps}")
    p, y = _missing_entries(probabilities, truth, mask, name="probabilities", allow_samples=True)
    p = np.clip(p, eps, 1.0 - eps)
    log_lik = y * np.log(p) + (1.0 - y) * np.log1p(-p)  # [S, n]
    num_samples = log_lik.shape[0]
    peak = np.max(log_lik, axis=0)  # [n], finite thanks to the clipping
    log_mean = peak + np.log(np.sum(np.exp(log_lik - peak), axis=0)) - np.log(num_samples)
    return float(-np.mean(log_mean))


def imputation_mse(imputed, truth, mask, *, rounded: bool = False) -> float:
    r"""Mean squared error of the imputation over the missing entries.

    :math:`|\mathcal M|^{-1} \sum_{i \in \mathcal M} (\hat y_i - y_i)^2` over the
    entries with ``mask == 0``; with ``rounded=True`` the imputation is first
    rounded to {0, 1} (:math:`\hat y \ge 0.5 \mapsto 1`, else 0), giving the
    error rate of the binarised imputation.

    :param imputed: truth-shaped imputation (e.g. Bernoulli probabilities or
        their mean over samples) in [0, 1].
    :param truth: ``[V, T, H, W, C]`` (any shape) true values in [0, 1].
    :param mask: truth-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :param rounded: round the imputation to {0, 1} first.
    :raises ValueError: on mismatched shapes (a sample axis is not accepted:
        average or pick the samples first), values outside [0, 1], a non-0/1
        mask, or no missing entry.
    """
    x, y = _missing_entries(imputed, truth, mask, name="imputed", allow_samples=False)
    x = x[0]
    if rounded:
        x = (x >= 0.5).astype(np.float64)
    return float(np.mean((x - y) ** 2))


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
