r"""Non-learned imputation baselines (pure numpy).

Data are sequences ``Y [V, T, *F]`` (e.g. ``F = (H, W, C)`` for image
sequences) with an observation ``mask`` of the same shape (1 = observed, 0 =
missing). Every baseline returns a float32 array of ``Y``'s shape in which the
observed entries are ``Y``'s own values (exactly, for float32-representable
data such as binary images) and only the missing entries are filled; the
values of ``Y`` at missing entries are never read (they may be NaN).

* :func:`zero_fill` -- missing entries set to 0.
* :func:`mean_fill` -- missing entries set to the mean of the observed training
  entries at the same position of the frame (:func:`observed_position_means`).
* :func:`forward_fill` -- missing entries set to the last earlier observation
  of the same entry in the same sequence (last observation carried forward),
  or to a ``fallback`` where there is none.

These are the simple baselines of the GP-VAE paper (Fortuin et al. 2020).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "zero_fill",
    "observed_position_means",
    "mean_fill",
    "forward_fill",
]


def _check_data(Y, mask, *, name: str = "Y", mask_name: str = "mask", min_rank: int = 1):
    """``Y`` as an array and ``mask`` as a bool array (True = observed) of its shape."""
    Y = np.asarray(Y)
    if Y.ndim < min_rank:
        raise ValueError(f"{name} must have rank >= {min_rank} ([V, T, ...]); got shape {Y.shape}")
    if (not np.issubdtype(Y.dtype, np.number) and Y.dtype != np.bool_) or np.issubdtype(Y.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real numbers; got dtype {Y.dtype}")
    mask = np.asarray(mask)
    if mask.shape != Y.shape:
        raise ValueError(f"{mask_name} must have the shape of {name} {Y.shape}; got {mask.shape}")
    if mask.dtype != np.bool_:
        if not np.issubdtype(mask.dtype, np.number) or np.issubdtype(mask.dtype, np.complexfloating):
            raise ValueError(f"{mask_name} must be boolean or hold 0/1 numbers; got dtype {mask.dtype}")
        if mask.size and not np.all((mask == 0) | (mask == 1)):
            raise ValueError(f"{mask_name} must hold only 0 (missing) and 1 (observed)")
        mask = mask != 0
    if np.issubdtype(Y.dtype, np.floating) and not np.all(np.isfinite(Y[mask])):
        raise ValueError(f"the observed entries of {name} must be finite")
    return Y, mask


def zero_fill(Y, mask) -> np.ndarray:
    """Fill the missing entries with 0.

    :param Y: ``[V, T, ...]`` (any shape) data; missing entries are ignored.
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :returns: float32 array of ``Y``'s shape: ``Y`` where observed, 0 where missing.
    :raises ValueError: on mismatched shapes, a non-0/1 mask or non-finite
        observed values.
    """
    Y, mask = _check_data(Y, mask)
    return np.where(mask, Y, 0).astype(np.float32)


def observed_position_means(Y, mask) -> np.ndarray:
    """Mean of the observed entries at each position of the frame.

    For every position in the frame (the trailing axes after ``[V, T]``), the
    mean over all sequences and frames of the entries observed there; positions
    never observed get the mean of all observed entries.

    :param Y: ``[V, T, *F]`` data (rank >= 2); missing entries are ignored.
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :returns: float64 array of shape ``F`` (``()`` for rank-2 data).
    :raises ValueError: on mismatched shapes, a non-0/1 mask, non-finite
        observed values, or no observed entry at all.
    """
    Y, mask = _check_data(Y, mask, min_rank=2)
    counts = np.sum(mask, axis=(0, 1))
    total = int(np.sum(counts))
    if total == 0:
        raise ValueError("no entry is observed (mask is all 0); the observed means are undefined")
    sums = np.sum(np.where(mask, Y, 0), axis=(0, 1), dtype=np.float64)
    overall = float(np.sum(sums)) / total
    return np.where(counts > 0, sums / np.maximum(counts, 1), overall)


def mean_fill(Y, mask, train_Y, train_mask) -> np.ndarray:
    """Fill the missing entries with the per-position mean of the observed training entries.

    The fill value of each position in the frame is
    :func:`observed_position_means` ``(train_Y, train_mask)``: the mean of the
    training entries observed at that position over all training sequences and
    frames (the overall observed training mean for positions never observed).

    :param Y: ``[V, T, *F]`` data to fill (rank >= 2).
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :param train_Y: ``[V', T', *F]`` training data (same frame shape ``F``).
    :param train_mask: ``train_Y``-shaped training observation mask.
    :returns: float32 array of ``Y``'s shape: ``Y`` where observed, the
        position mean where missing.
    :raises ValueError: on mismatched shapes (including different frame
        shapes), non-0/1 masks, non-finite observed values, or no observed
        training entry.
    """
    Y, mask = _check_data(Y, mask, min_rank=2)
    train_Y, train_mask = _check_data(train_Y, train_mask, name="train_Y", mask_name="train_mask", min_rank=2)
    if train_Y.shape[2:] != Y.shape[2:]:
        raise ValueError(f"train_Y must have Y's frame shape {Y.shape[2:]} after [V, T]; got {train_Y.shape[2:]}")
    means = observed_position_means(train_Y, train_mask)
    return np.where(mask, Y, means).astype(np.float32)


def forward_fill(Y, mask, fallback=None) -> np.ndarray:
    """Fill each missing entry with its last earlier observation in the same sequence.

    Along the time axis (axis 1 of ``[V, T, *F]``), a missing entry
    ``Y[v, t, f]`` gets ``Y[v, t', f]`` for the latest ``t' < t`` where that
    entry is observed; entries with no earlier observation get ``fallback[f]``.
    Vectorised over sequences and positions (a loop over the ``T`` frames).

    :param Y: ``[V, T, *F]`` data (rank >= 3); missing entries are ignored.
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :param fallback: finite values broadcastable to one frame ``F``, e.g.
        :func:`observed_position_means` of the training data or a scalar;
        ``None`` means 0.
    :returns: float32 array of ``Y``'s shape.
    :raises ValueError: on mismatched shapes, rank < 3, a non-0/1 mask,
        non-finite observed values, or a bad ``fallback``.
    """
    Y, mask = _check_data(Y, mask, min_rank=3)
    frame_shape = Y.shape[2:]
    if fallback is None:
        fallback = 0.0
    fallback = np.asarray(fallback)
    if (not np.issubdtype(fallback.dtype, np.number) and fallback.dtype != np.bool_) or np.issubdtype(
        fallback.dtype, np.complexfloating
    ):
        raise ValueError(f"fallback must be real numbers; got dtype {fallback.dtype}")
    try:
        fallback = np.broadcast_to(fallback, frame_shape)
    except ValueError:
        raise ValueError(
            f"fallback must be broadcastable to one frame {frame_shape}; got shape {fallback.shape}"
        ) from None
    if not np.all(np.isfinite(fallback)):
        raise ValueError("fallback must be finite")
    out = np.empty(Y.shape, dtype=np.float32)
    last = np.broadcast_to(fallback.astype(np.float32), (Y.shape[0],) + frame_shape)  # [V, *F]
    for t in range(Y.shape[1]):
        last = np.where(mask[:, t], Y[:, t], last).astype(np.float32, copy=False)
        out[:, t] = last
    return out
