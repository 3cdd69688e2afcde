r"""Style of generated frames (metrics, pure numpy).

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np

__all__ = ["ChoiceAccuracy", "palette_colour_accuracy", "nearest_rendering_accuracy"]


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
            "accuracy_per_true_option": [float(a) if n else None for a, n in zip(per_option, confusion.sum(axis=1))],
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
        raise ValueError(
            f"label_maps must have shape {generated.shape[:-1]} (generated without channels); got {label_maps.shape}"
        )
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
        if (
            cand.shape[: len(lead_shape)] != lead_shape
            or cand.shape[len(lead_shape) + 1 :] != image_shape
            or cand.ndim != generated.ndim + 1
        ):
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
            raise ValueError(
                f"candidates for {len(rows)} frames must have shape {(len(rows), 'K') + image_shape}; got {block.shape}"
            )
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
