r"""Metrics (pure numpy): latent paths and the style of generated frames.

Latent paths
------------
A GP-VAE's latent space is identified only up to an invertible transform, so
predicted latent paths are compared with the true paths after the best
affine map. For predicted posterior means :math:`M \in \mathbb{R}^{T \times L}`
and true paths :math:`Y \in \mathbb{R}^{T \times D}` (``D = 2`` for the
moving ball), with :math:`X = [M,\ \mathbf{1}] \in \mathbb{R}^{T \times (L+1)}`,

.. math::

    \hat W = \arg\min_W \lVert X W - Y \rVert_F^2, \qquad
    \hat Y = X \hat W,

solved by least squares (:func:`numpy.linalg.lstsq`, minimum-norm solution if
:math:`X` is rank deficient). With ``per_video=True`` (default; the per-video
alignment of Pearce 2019 and the SVGP-VAE paper) one map :math:`\hat W_v` is
fitted per video; with ``per_video=False`` a single map is fitted to all
videos' frames stacked together.

The RMSE is taken over all videos, frames *and* coordinates, in the units of
``true`` (GP path units for the moving ball):

.. math::

    \text{RMSE} = \sqrt{\frac{1}{V T D} \sum_{v,t,d} (\hat Y_{vtd} - Y_{vtd})^2}.

This is a per-coordinate RMSE; the root-mean-square *Euclidean* distance
between aligned and true positions is :math:`\sqrt{D}` times larger.

Style of generated frames
-------------------------
MSE rewards a generic, blurry "average character"; these metrics ask whether
a generated frame carries the *right* discrete style attribute, given what a
generator knows about the true frame (its label map and palette options).
Each scores one attribute per frame as a choice among ``K`` options and is
correct when the true option is the nearest one (chance ``1 / K`` for a frame
that ignores the attribute):

* :func:`palette_colour_accuracy` -- a colour attribute drawn through one or
  more palette slots (e.g. a light and a shaded slot). For frame :math:`n`
  with true label map :math:`\ell_n`, let :math:`A_n = \{p : \ell_n(p) \in
  \text{slots}\}` be the attribute's pixels and :math:`n_{s}` the number of
  them with slot :math:`s`. The generated colour is the mean
  :math:`g_n = |A_n|^{-1} \sum_{p \in A_n} y_n(p)`; option :math:`k` (colour
  :math:`c_{k,s}` in slot :math:`s`) would have rendered these pixels with the
  mean :math:`m_{n,k} = |A_n|^{-1} \sum_s n_s c_{k,s}`; the predicted option
  is :math:`\arg\min_k \lVert g_n - m_{n,k} \rVert_2` (Euclidean in RGB).
  Comparing with the candidates' *rendered* means, not with their base
  colours, handles shaded slots exactly: an exact frame has :math:`g_n =
  m_{n,\text{true}}`. Frames with :math:`A_n = \emptyset` are skipped and
  counted.
* :func:`nearest_rendering_accuracy` -- a shape attribute (or anything else):
  the frame is classified as the nearest (sum of squared differences over all
  pixels and channels) of ``K`` candidate renderings, e.g. the true frame
  re-drawn with each of the ``K`` options and everything else true. Only the
  pixels where the candidates are not all equal can decide (the others add
  the same amount to every distance); they are the pixels compared and counted.

Ties (equal distances to two options) are resolved towards the lower option
index, and a frame is correct only when that option is the true one. A frame
that ignores the attribute is still assigned its nearest option (a uniform
grey frame: the option whose rendered mean is nearest to grey), so its score
is the share of frames whose true option that is: deterministic, and 1/K only
when the true options are balanced.

Missing-data imputation
-----------------------
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

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np

__all__ = [
    "affine_align",
    "affine_path_rmse",
    "ChoiceAccuracy",
    "palette_colour_accuracy",
    "nearest_rendering_accuracy",
    "missing_bernoulli_nll",
    "imputation_mse",
    "classification_auroc",
]


def _check_paths(predicted, true, per_video: bool):
    predicted = np.asarray(predicted, dtype=np.float64)
    true = np.asarray(true, dtype=np.float64)
    if predicted.ndim != 3:
        raise ValueError(
            f"predicted must have shape [num_videos, num_frames, num_latents], got {predicted.shape}"
        )
    if true.ndim != 3:
        raise ValueError(f"true must have shape [num_videos, num_frames, 2], got {true.shape}")
    if predicted.shape[:2] != true.shape[:2]:
        raise ValueError(
            "predicted and true must agree in [num_videos, num_frames], got "
            f"{predicted.shape[:2]} and {true.shape[:2]}"
        )
    num_videos, num_frames, num_latents = predicted.shape
    if num_videos == 0 or num_frames == 0 or num_latents == 0 or true.shape[2] == 0:
        raise ValueError(f"empty input: predicted {predicted.shape}, true {true.shape}")
    # With no more rows than parameters the affine fit is exact whatever the
    # predictions are, so the metric would be meaningless.
    num_rows = num_frames if per_video else num_videos * num_frames
    if num_rows <= num_latents + 1:
        raise ValueError(
            f"an affine fit from {num_latents} latents has {num_latents + 1} parameters per output "
            f"and needs more than that many frames per fit, got {num_rows}"
        )
    if not (np.all(np.isfinite(predicted)) and np.all(np.isfinite(true))):
        raise ValueError("predicted and true must be finite")
    return predicted, true


def _design(predicted: np.ndarray) -> np.ndarray:
    ones = np.ones(predicted.shape[:-1] + (1,), dtype=predicted.dtype)
    return np.concatenate([predicted, ones], axis=-1)


def affine_align(predicted, true, *, per_video: bool = True) -> np.ndarray:
    r"""Best affine (least-squares) image of ``predicted`` onto ``true``.

    :param predicted: ``[V, T, L]`` predicted latent paths (posterior means), L >= 1.
    :param true: ``[V, T, D]`` true paths (D = 2 for the moving ball).
    :param per_video: fit one affine map per video (default) or one for all.
    :returns: ``[V, T, D]`` float64 aligned predictions :math:`\hat Y = [M, 1]\hat W`.
    :raises ValueError: on mismatched or malformed shapes, too few frames per
        fit (``<= L + 1``), or non-finite values.
    """
    predicted, true = _check_paths(predicted, true, per_video)
    X = _design(predicted)  # [V, T, L + 1]
    if per_video:
        aligned = np.empty_like(true)
        for v in range(X.shape[0]):
            W, *_ = np.linalg.lstsq(X[v], true[v], rcond=None)
            aligned[v] = X[v] @ W
        return aligned
    num_videos, num_frames, _ = X.shape
    X_flat = X.reshape(num_videos * num_frames, -1)
    Y_flat = true.reshape(num_videos * num_frames, -1)
    W, *_ = np.linalg.lstsq(X_flat, Y_flat, rcond=None)
    return (X_flat @ W).reshape(true.shape)


def affine_path_rmse(predicted, true, *, per_video: bool = True) -> float:
    r"""RMSE between ``true`` and the affinely aligned ``predicted`` paths.

    :math:`\sqrt{\operatorname{mean}_{v,t,d}(\hat Y_{vtd} - Y_{vtd})^2}` with
    :math:`\hat Y` = :func:`affine_align` ``(predicted, true, per_video=per_video)``;
    a per-coordinate RMSE in the units of ``true`` (GP path units for the
    moving ball). See the module docstring.

    :param predicted: ``[V, T, L]`` predicted latent paths (posterior means), L >= 1.
    :param true: ``[V, T, D]`` true paths.
    :param per_video: fit one affine map per video (default) or one for all.
    """
    aligned = affine_align(predicted, true, per_video=per_video)
    true = np.asarray(true, dtype=np.float64)
    return float(np.sqrt(np.mean((aligned - true) ** 2)))


# --------------------------------------------------------------------- style of generated frames
@dataclass(frozen=True)
class ChoiceAccuracy:
    """Per-frame outcome of a "nearest of ``K`` options" style score.

    All arrays have the leading shape of the scored frames (e.g. ``[V, T]``).

    :ivar predicted: int64, the nearest option (-1 where skipped).
    :ivar true: int64, the true option.
    :ivar correct: bool, ``predicted == true`` (False where skipped).
    :ivar scored: bool, False for skipped frames (the attribute covers no pixel).
    :ivar pixels: int64, pixels used per frame (0 where skipped).
    :ivar num_choices: ``K``.
    """

    predicted: np.ndarray
    true: np.ndarray
    correct: np.ndarray
    scored: np.ndarray
    pixels: np.ndarray
    num_choices: int

    @property
    def num_scored(self) -> int:
        return int(np.sum(self.scored))

    @property
    def num_correct(self) -> int:
        return int(np.sum(self.correct))

    @property
    def accuracy(self) -> float:
        """Fraction of scored frames that are correct (NaN if none was scored)."""
        return self.num_correct / self.num_scored if self.num_scored else float("nan")

    def confusion(self) -> np.ndarray:
        """``[K, K]`` int64 counts of scored frames: row the true option, column the predicted one
        (the diagonal sums to :attr:`num_correct`)."""
        K = self.num_choices
        pairs = self.true[self.scored] * K + self.predicted[self.scored]
        return np.bincount(pairs.ravel(), minlength=K * K).reshape(K, K).astype(np.int64)

    def summary(self) -> dict:
        """JSON-ready totals: accuracy, counts of correct/scored/skipped frames, pixels, chance, and the
        confusion matrix (rows: true option, columns: predicted) with each true option's accuracy."""
        scored = self.num_scored
        confusion = self.confusion()
        per_option = confusion.diagonal() / np.maximum(confusion.sum(axis=1), 1)
        return {
            "accuracy": self.accuracy if scored else None,
            "num_correct": self.num_correct,
            "num_scored": scored,
            "num_skipped": int(self.scored.size - scored),
            "num_pixels": int(np.sum(self.pixels)),
            "mean_pixels_per_scored_frame": float(np.sum(self.pixels) / scored) if scored else None,
            "chance": 1.0 / self.num_choices,
            "confusion": confusion.tolist(),
            "accuracy_per_true_option": [float(a) if n else None
                                         for a, n in zip(per_option, confusion.sum(axis=1))],
        }


_CHUNK = 1024


def _check_true_choice(true_choice, lead_shape, num_choices: Optional[int]) -> np.ndarray:
    true = np.asarray(true_choice)
    if true.shape != tuple(lead_shape):
        raise ValueError(f"true_choice must have the frames' leading shape {tuple(lead_shape)}; got {true.shape}")
    if true.size and not np.issubdtype(true.dtype, np.integer):
        raise ValueError(f"true_choice must hold integer option indices; got dtype {true.dtype}")
    true = true.astype(np.int64)
    if num_choices is not None and np.any((true < 0) | (true >= num_choices)):
        raise ValueError(f"true_choice must be in [0, {num_choices}); got values in [{true.min()}, {true.max()}]")
    return true


def _check_frames(generated, name: str = "generated") -> np.ndarray:
    generated = np.asarray(generated)
    if generated.ndim < 3:
        raise ValueError(f"{name} must have shape [..., H, W, C]; got {generated.shape}")
    if not np.issubdtype(generated.dtype, np.number) or np.issubdtype(generated.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real numbers; got dtype {generated.dtype}")
    if generated.size == 0:
        raise ValueError(f"{name} is empty: {generated.shape}")
    if np.issubdtype(generated.dtype, np.floating) and not np.all(np.isfinite(generated)):
        raise ValueError(f"{name} must be finite")
    return generated


def _result(predicted, true, scored, pixels, lead_shape, num_choices) -> ChoiceAccuracy:
    predicted = np.where(scored, predicted, -1).astype(np.int64)
    return ChoiceAccuracy(
        predicted=predicted.reshape(lead_shape),
        true=np.broadcast_to(true, scored.shape).astype(np.int64).reshape(lead_shape),
        correct=(scored & (predicted == true)).reshape(lead_shape),
        scored=scored.reshape(lead_shape),
        pixels=np.where(scored, pixels, 0).astype(np.int64).reshape(lead_shape),
        num_choices=int(num_choices),
    )


def palette_colour_accuracy(generated, label_maps, slots, choices, true_choice) -> ChoiceAccuracy:
    r"""Is a colour attribute of each generated frame the true one? (see the module docstring)

    For every frame, the mean generated colour over the pixels that the *true*
    label map assigns to the attribute's ``slots`` is compared (Euclidean, RGB)
    with the mean colour each of the ``K`` options would have rendered on those
    same pixels, :math:`m_k = \sum_s n_s c_{k,s} / \sum_s n_s` (``n_s`` pixels
    of slot ``s``); the nearest option is the prediction (ties: lowest index).
    Frames where the attribute covers no pixel are skipped (``scored`` False).

    :param generated: ``[..., H, W, C]`` frames, in the units of ``choices``
        (e.g. floats in [0, 1]).
    :param label_maps: ``[..., H, W]`` integer palette slots of the *true* frames.
    :param slots: ``[S]`` distinct slot values that draw the attribute (e.g. its
        light and shaded slot).
    :param choices: ``[K, S, C]`` colour of slot ``s`` under option ``k`` (K >= 2).
    :param true_choice: ``[...]`` integer true option per frame.
    :returns: a :class:`ChoiceAccuracy` (``pixels``: ``|A_n|``).
    :raises ValueError: on mismatched shapes, non-integer labels or choices out
        of range, duplicate slots, fewer than two options, non-finite values.
    """
    generated = _check_frames(generated)
    label_maps = np.asarray(label_maps)
    lead_shape = generated.shape[:-3]
    if label_maps.shape != generated.shape[:-1]:
        raise ValueError(f"label_maps must have shape {generated.shape[:-1]} (generated without channels); "
                         f"got {label_maps.shape}")
    if not np.issubdtype(label_maps.dtype, np.integer):
        raise ValueError(f"label_maps must be integer palette slots; got dtype {label_maps.dtype}")
    slots = np.asarray(slots)
    if slots.ndim != 1 or slots.size == 0 or not np.issubdtype(slots.dtype, np.integer):
        raise ValueError(f"slots must be a non-empty 1-D integer array; got {slots!r}")
    if len(np.unique(slots)) != slots.size:
        raise ValueError(f"slots must be distinct; got {slots.tolist()}")
    choices = np.asarray(choices, dtype=np.float64)
    C = generated.shape[-1]
    if choices.ndim != 3 or choices.shape[1:] != (slots.size, C):
        raise ValueError(f"choices must have shape [K, S={slots.size}, C={C}]; got {choices.shape}")
    K = choices.shape[0]
    if K < 2:
        raise ValueError(f"need at least 2 options to choose from; got {K}")
    if not np.all(np.isfinite(choices)):
        raise ValueError("choices must be finite")
    true = _check_true_choice(true_choice, lead_shape, K).reshape(-1)

    n = int(np.prod(lead_shape))
    frames = generated.reshape(n, -1, C)
    labels = label_maps.reshape(n, -1)
    predicted = np.zeros(n, np.int64)
    pixels = np.zeros(n, np.int64)
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(n, start + _CHUNK))
        lab = labels[sl]
        per_slot = np.stack([lab == s for s in slots], axis=1)  # [b, S, P]
        counts = per_slot.sum(axis=2).astype(np.float64)  # [b, S]
        total = counts.sum(axis=1)  # [b]
        safe = np.maximum(total, 1.0)
        sums = np.einsum("bp,bpc->bc", per_slot.any(axis=1).astype(np.float64), frames[sl].astype(np.float64))
        mean_generated = sums / safe[:, None]  # [b, C]
        candidate_means = np.einsum("bs,ksc->bkc", counts, choices) / safe[:, None, None]  # [b, K, C]
        distances = np.sum((candidate_means - mean_generated[:, None, :]) ** 2, axis=-1)  # [b, K]
        predicted[sl] = np.argmin(distances, axis=1)
        pixels[sl] = total.astype(np.int64)
    return _result(predicted, true, pixels > 0, pixels, lead_shape, K)


def nearest_rendering_accuracy(
    generated,
    candidates: Union[np.ndarray, Callable[[np.ndarray], np.ndarray]],
    true_choice,
    *,
    chunk_size: int = 256,
) -> ChoiceAccuracy:
    r"""Is each generated frame nearest to the candidate rendering of its true option?

    Frame :math:`n` is classified as :math:`\arg\min_k \sum_{p,c} (y_n(p,c) -
    r_{n,k}(p,c))^2` over its ``K`` candidate renderings :math:`r_{n,k}` (ties:
    lowest index), e.g. the true frame re-drawn with each of ``K`` shapes and
    everything else (pose, palette, other shapes) true. The distances are summed
    over the pixels where the candidates are not all equal (the others add the
    same amount to every candidate); ``pixels`` counts them. No frame is skipped.

    :param generated: ``[..., H, W, C]`` frames.
    :param candidates: ``[..., K, H, W, C]`` candidate renderings, or a callable
        ``rows -> [len(rows), K, H, W, C]`` for rows of the flattened frames
        (evaluated in chunks of ``chunk_size``, so all candidates need never be
        in memory at once).
    :param true_choice: ``[...]`` integer true option per frame.
    :returns: a :class:`ChoiceAccuracy`.
    :raises ValueError: on mismatched shapes, fewer than two candidates, true
        options out of range, non-finite values.
    """
    generated = _check_frames(generated)
    lead_shape = generated.shape[:-3]
    image_shape = generated.shape[-3:]
    n = int(np.prod(lead_shape))
    frames = generated.reshape((n,) + image_shape)
    if callable(candidates):
        source = candidates
        K = None
    else:
        cand = _check_frames(candidates, "candidates")
        if cand.shape[:len(lead_shape)] != lead_shape or cand.shape[len(lead_shape) + 1:] != image_shape \
                or cand.ndim != generated.ndim + 1:
            raise ValueError(f"candidates must have shape {lead_shape + ('K',) + image_shape}; got {cand.shape}")
        cand = cand.reshape((n, cand.shape[len(lead_shape)]) + image_shape)
        K = cand.shape[1]

        def source(rows):
            return cand[rows]
    _check_true_choice(true_choice, lead_shape, K)  # shapes (and range, if K is known) before any work
    chunk_size = int(chunk_size)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    predicted = np.zeros(n, np.int64)
    pixels = np.zeros(n, np.int64)
    for start in range(0, n, chunk_size):
        rows = np.arange(start, min(n, start + chunk_size))
        block = np.asarray(source(rows))
        if block.ndim != 5 or block.shape[0] != len(rows) or block.shape[2:] != image_shape:
            raise ValueError(f"candidates for {len(rows)} frames must have shape "
                             f"{(len(rows), 'K') + image_shape}; got {block.shape}")
        if K is None:
            K = block.shape[1]
        elif block.shape[1] != K:
            raise ValueError(f"every frame needs the same number of candidates; got {K} and {block.shape[1]}")
        if K < 2:
            raise ValueError(f"need at least 2 candidates to choose from; got {K}")
        if np.issubdtype(block.dtype, np.floating) and not np.all(np.isfinite(block)):
            raise ValueError("candidates must be finite")
        # Pixels where all candidates agree add the same amount to every distance,
        # so only the pixels where they differ are compared.
        b_idx, h_idx, w_idx = np.nonzero(np.any(block != block[:, :1], axis=(1, 4)))  # [m] each
        differing = block[b_idx, :, h_idx, w_idx].astype(np.float64)  # [m, K, C]
        diff = differing - frames[rows][b_idx, h_idx, w_idx].astype(np.float64)[:, None]  # [m, K, C]
        squared = np.sum(diff * diff, axis=-1)  # [m, K]
        distances = np.stack([np.bincount(b_idx, weights=squared[:, k], minlength=len(rows)) for k in range(K)], 1)
        predicted[rows] = np.argmin(distances, axis=1)
        pixels[rows] = np.bincount(b_idx, minlength=len(rows))
    true = _check_true_choice(true_choice, lead_shape, K).reshape(-1)
    return _result(predicted, true, np.ones(n, bool), pixels, lead_shape, K)


# --------------------------------------------------------------------- missing-data imputation
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
    :returns: ``(values_missing, truth_missing)``, float64, of shapes ``[S, M]``
        (``S = 1`` without a sample axis) and ``[M]``, ``M`` the number of
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
    log_lik = y * np.log(p) + (1.0 - y) * np.log1p(-p)  # [S, M]
    num_samples = log_lik.shape[0]
    peak = np.max(log_lik, axis=0)  # [M], finite thanks to the clipping
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
        raise ValueError(f"the training half (first {num_train} sequences) needs at least 2 classes; "
                         f"got {train_classes.tolist()}")
    unseen = np.setdiff1d(test_classes, train_classes)
    if unseen.size:
        raise ValueError(f"classes {unseen.tolist()} occur in the test half but not in the training half "
                         f"(first {num_train} sequences); reorder the sequences")
    if test_classes.size < 2:
        raise ValueError(f"the test half (last {X.shape[0] - num_train} sequences) needs at least 2 classes "
                         f"for an AUROC; got {test_classes.tolist()}")

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
