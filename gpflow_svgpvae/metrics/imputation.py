r"""Missing-data imputation (metrics, pure numpy).

The protocol of the GP-VAE paper (Fortuin et al. 2020, HMNIST): data are binary
sequences ``truth [V, T, H, W, C]`` with an observation ``mask`` of the same
shape (1 = observed, 0 = missing), and the imputation metrics are computed on
the *missing* entries only (:math:`\mathcal M = \{i : \text{mask}_i = 0\}`):
the negative log likelihood under sampled Bernoulli probabilities
(:func:`missing_bernoulli_nll`) and the squared error (:func:`imputation_mse`).
"""

from __future__ import annotations

import numpy as np

from ..imputation import _check_data

__all__ = ["missing_bernoulli_nll", "imputation_mse"]


def _check_unit_interval(values: np.ndarray, name: str) -> None:
    real = np.issubdtype(values.dtype, np.number) or values.dtype == np.bool_
    if not real or np.issubdtype(values.dtype, np.complexfloating):
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
    missing = ~_check_data(truth, mask, name="truth", min_rank=0)[1]
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
