r"""Latent paths (metrics, pure numpy).

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
"""

from __future__ import annotations

import numpy as np

__all__ = ["affine_align", "affine_path_rmse"]


def _check_paths(predicted, true, per_video: bool):
    predicted = np.asarray(predicted, dtype=np.float64)
    true = np.asarray(true, dtype=np.float64)
    if predicted.ndim != 3:
        raise ValueError(f"predicted must have shape [num_videos, num_frames, num_latents], got {predicted.shape}")
    if true.ndim != 3:
        raise ValueError(f"true must have shape [num_videos, num_frames, 2], got {true.shape}")
    if predicted.shape[:2] != true.shape[:2]:
        raise ValueError(
            f"predicted and true must agree in [num_videos, num_frames], got {predicted.shape[:2]} and {true.shape[:2]}"
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
