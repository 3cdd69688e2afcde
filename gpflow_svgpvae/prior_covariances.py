r"""The GP prior's covariances that the amortised posterior needs.

:math:`K_{mm}` at the inducing inputs (and its Cholesky factor :math:`L_m`),
:math:`K_{mb}` between inducing and batch inputs, and the prior marginal
variances :math:`k(x_i, x_i)`, with GPflow's ``Kuu``/``Kuf`` dispatch (or the
package's one-evaluation fast path of :mod:`gpflow_svgpvae.covariances`).
Inputs may carry leading batch dimensions (one latent dataset each, e.g.
videos, ``X [..., b, D]``); the channel axis is ``1`` for a kernel shared by all
latent channels and ``L`` for one kernel per channel.
"""

from typing import Tuple, Union

import tensorflow as tf
from gpflow import covariances
from gpflow.inducing_variables import (
    InducingPoints,
    InducingVariables,
    MultioutputInducingVariables,
    SharedIndependentInducingVariables,
)
from gpflow.kernels import Kernel, MultioutputKernel

from . import covariances as fast_covariances
from .numerics import cholesky

__all__ = [
    "as_inducing_variable",
    "prior_cholesky",
    "cross_covariance",
    "prior_variance_diag",
    "flatten_inputs",
    "with_batch_rank",
    "batch_covariances",
]


def as_inducing_variable(inducing_variable: Union[InducingVariables, tf.Tensor], kernel: Kernel) -> InducingVariables:
    """Accept an array of inducing inputs or a GPflow inducing variable.

    A multi-output kernel needs a multi-output inducing variable; plain
    ``InducingPoints`` are wrapped as ``SharedIndependentInducingVariables``.
    """
    if not isinstance(inducing_variable, InducingVariables):
        inducing_variable = InducingPoints(inducing_variable)
    if isinstance(kernel, MultioutputKernel) and not isinstance(inducing_variable, MultioutputInducingVariables):
        inducing_variable = SharedIndependentInducingVariables(inducing_variable)
    return inducing_variable


def _with_channel_axis(tensor: tf.Tensor, rank_without: int) -> tf.Tensor:
    # GPflow returns [M, ...] for shared kernels and [L, M, ...] for separate ones.
    return tensor[None] if tensor.shape.rank == rank_without else tensor


def prior_cholesky(kernel: Kernel, inducing_variable: InducingVariables, jitter: float) -> tf.Tensor:
    """:math:`L_m = \\mathrm{chol}(K_{mm} + \\text{jitter}\\,I)`, shape ``[1 or L, M, M]``."""
    return cholesky(
        _prior_covariance(kernel, inducing_variable, jitter), "Kuu (the prior covariance of the inducing variables)"
    )


def _prior_covariance(kernel: Kernel, inducing_variable: InducingVariables, jitter: float) -> tf.Tensor:
    return _with_channel_axis(covariances.Kuu(inducing_variable, kernel, jitter=jitter), 2)  # [1 or L, M, M]


def _unflatten_cross(Kmn: tf.Tensor, X: tf.Tensor) -> tf.Tensor:
    """``Kmn [C, M, n]`` at the flattened inputs of ``X [..., b, D]`` -> ``[..., C, M, b]``."""
    if X.shape.rank == 2:
        return Kmn
    k = X.shape.rank - 2
    Kmn = tf.reshape(Kmn, tf.concat([tf.shape(Kmn)[:2], tf.shape(X)[:-1]], 0))  # [C, M, ..., b]
    return tf.transpose(Kmn, list(range(2, 2 + k)) + [0, 1, 2 + k])  # [..., C, M, b]


def cross_covariance(kernel: Kernel, inducing_variable: InducingVariables, X: tf.Tensor) -> tf.Tensor:
    """:math:`K_{mb}`, shape ``[..., 1 or L, M, b]`` for inputs ``X [..., b, D]``.

    Leading dimensions (one latent dataset each, e.g. videos) share the inducing
    inputs: the inputs are flattened for GPflow's ``Kuf`` and the result reshaped.
    """
    X = tf.convert_to_tensor(X)
    Kmn = _with_channel_axis(covariances.Kuf(inducing_variable, kernel, flatten_inputs(X)), 2)  # [C, M, n]
    return _unflatten_cross(Kmn, X)


def prior_variance_diag(kernel: Kernel, X: tf.Tensor) -> tf.Tensor:
    """Prior marginal variances :math:`k(x_i, x_i)`, shape ``[..., b, 1 or L]``."""
    X = tf.convert_to_tensor(X)
    flat = flatten_inputs(X)
    if isinstance(kernel, MultioutputKernel):
        diag = kernel(flat, full_cov=False, full_output_cov=False)  # [n, L]
    else:
        diag = kernel(flat, full_cov=False)[:, None]  # [n, 1]
    return tf.reshape(diag, tf.concat([tf.shape(X)[:-1], tf.shape(diag)[-1:]], 0))


def flatten_inputs(X) -> tf.Tensor:
    """``X [..., D] -> [n, D]`` (arrays are converted; rank-2 inputs returned as they are)."""
    X = tf.convert_to_tensor(X)
    if X.shape.rank == 2:
        return X
    D = X.shape[-1] if X.shape[-1] is not None else tf.shape(X)[-1]
    return tf.reshape(X, [-1, D])


def with_batch_rank(prior_chol: tf.Tensor, batch_rank: int) -> tf.Tensor:
    """``[1 or L, M, M] -> [1, ..., 1, 1 or L, M, M]`` with ``batch_rank`` leading ones."""
    for _ in range(int(batch_rank)):
        prior_chol = prior_chol[None]
    return prior_chol


def batch_covariances(
    kernel: Kernel, inducing_variable: InducingVariables, X: tf.Tensor, jitter: float
) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    r"""``(Kmm + jitter I [1 or L, M, M], Kmb [..., 1 or L, M, b], k(x_i, x_i) [..., b, 1 or L])``.

    :func:`prior_cholesky`'s matrix, :func:`cross_covariance` and :func:`prior_variance_diag`
    together: for the kernels of :mod:`gpflow_svgpvae.covariances` (e.g. the
    rotated-MNIST periodic x linear product) in one evaluation reading every
    parameter once, otherwise with GPflow's ``Kuu``/``Kuf`` and the kernel's diagonal.
    """
    X = tf.convert_to_tensor(X)
    joint = fast_covariances.prior_covariances(inducing_variable, kernel, flatten_inputs(X), jitter)
    if joint is None:
        return (
            _prior_covariance(kernel, inducing_variable, jitter),
            cross_covariance(kernel, inducing_variable, X),
            prior_variance_diag(kernel, X),
        )
    Kmm, Kmn, diag = joint  # [M, M], [M, n], [n]
    return Kmm[None], _unflatten_cross(Kmn[None], X), tf.reshape(diag, tf.shape(X)[:-1])[..., None]
