"""The SPRITES kernel of the paper's experiments (Jazbec et al. 2021, section 5.3)."""

from typing import Optional

import gpflow
import numpy as np
from gpflow.kernels.base import ActiveDims

from gpflow_svgpvae.kernels import CosineLinear

__all__ = ["sprites_kernel"]


def _as_active_dims(dims: ActiveDims) -> ActiveDims:
    """Accept a slice, a list, a tuple or an array of column indices."""
    if isinstance(dims, slice):
        return dims
    return [int(d) for d in np.atleast_1d(np.asarray(dims))]


def sprites_kernel(
    style_dims: ActiveDims,
    pose_dims: ActiveDims,
    noise_variance: float = 1e-3,
    variance: float = 1.0,
    epsilon: float = 1e-12,
    pose_bias: Optional[float] = None,
) -> gpflow.kernels.Sum:
    r"""
    The SPRITES kernel of Jazbec et al. (2021): a product of two cosine-normalised
    linear kernels, one on the character *style* vector and one on the *pose*
    vector, plus white noise,

    .. math::
        k(\mathbf{x}, \mathbf{x}') = \sigma^2
            \cos\angle(\mathbf{s}, \mathbf{s}')\,\cos\angle(\mathbf{p}, \mathbf{p}')
            + \sigma_n^2\,\delta(\mathbf{x}, \mathbf{x}'),

    where :math:`\mathbf{s}` = ``x[style_dims]`` and :math:`\mathbf{p}` =
    ``x[pose_dims]``.

    Parameters. The two factors' variances only enter as a product, so the
    style factor carries the trainable :math:`\sigma^2` and the pose factor's
    variance is fixed at 1 (non-trainable). The noise variance
    :math:`\sigma_n^2` is trainable (use :func:`gpflow.set_trainable` to fix it).

    What the white-noise term means here. :class:`gpflow.kernels.White` is a
    delta on the *argument set*, not on input values: ``k(X)`` (``X2=None``)
    gets :math:`\sigma_n^2 I` added, while ``k(X, X2)`` gets nothing, even when
    ``X2`` is numerically equal to ``X``; ``K_diag`` includes :math:`\sigma_n^2`.
    With GPflow's inducing-point covariances this gives

    * ``Kuu(Z, kernel)`` = :math:`K_{\mathrm{cos}}(Z, Z) + \sigma_n^2 I` (plus
      GPflow's jitter): the inducing values are the latent function *plus*
      independent noise at the inducing inputs, and :math:`\sigma_n^2` also acts
      as a (trainable) jitter that keeps the rank-deficient cosine Gram matrix
      invertible (its rank is at most ``len(style) * len(pose)``);
    * ``Kuf(Z, X, kernel)`` = :math:`K_{\mathrm{cos}}(Z, X)`: no noise term;
    * the predictive marginal variance at data points (from ``K_diag``) includes
      :math:`\sigma_n^2`, i.e. the latent function at a data point is a smooth
      part plus an independent per-point "nugget".

    :param style_dims: columns (slice or list) of X that hold the style vector.
    :param pose_dims: columns (slice or list) of X that hold the pose vector.
    :param noise_variance: initial value of :math:`\sigma_n^2` (positive).
    :param variance: initial value of :math:`\sigma^2` (positive).
    :param epsilon: norm regulariser of the :class:`CosineLinear` factors.
    :param pose_bias: initial value of a trainable constant :math:`\beta` added to the
        pose factor, :math:`\sigma^2 \cos\angle(\mathbf{s}, \mathbf{s}')
        (\cos\angle(\mathbf{p}, \mathbf{p}') + \beta)` (not in the paper). Without it the
        latent functions are bilinear in the unit style and pose vectors, so a function
        that is the same at every pose (a character's colours) is representable only if
        all unit pose vectors share a component; PCA-initialised pose vectors are
        centred and share none. ``None``: the paper's kernel.
    :return: ``CosineLinear(style) * CosineLinear(pose) + White`` (with ``pose_bias``:
        ``CosineLinear(style) * (CosineLinear(pose) + Constant) + White``), a
        :class:`gpflow.kernels.Sum` whose first term is the
        :class:`gpflow.kernels.Product`.
    """
    style_dims = _as_active_dims(style_dims)
    pose_dims = _as_active_dims(pose_dims)
    style = CosineLinear(variance=variance, active_dims=style_dims, epsilon=epsilon)
    pose = CosineLinear(variance=1.0, active_dims=pose_dims, epsilon=epsilon)
    gpflow.set_trainable(pose.variance, False)
    if pose_bias is not None:
        if not float(pose_bias) > 0.0:
            raise ValueError(f"pose_bias must be a positive number or None; got {pose_bias!r}")
        pose = pose + gpflow.kernels.Constant(variance=float(pose_bias), active_dims=pose_dims)
    white = gpflow.kernels.White(variance=noise_variance)
    return style * pose + white
