r"""The SVGP-VAE's amortised inducing-point posterior (Jazbec et al., 2021).

For each latent channel :math:`l` the encoder turns a minibatch of :math:`b`
points into a *latent dataset* :math:`(X_b, \tilde y_l, \tilde v_l)`: Gaussian
sites :math:`\tilde q(z_{il}\mid y_i) = \mathcal N(\tilde y_{il}, \tilde v_{il})`.
With :math:`s = N / b`, :math:`\Lambda_l = \mathrm{diag}(1/\tilde v_l)` the
inducing posterior :math:`q(u_l) = \mathcal N(\mu_l, A_l)` is

.. math::

    \Sigma_l = K_{mm} + s K_{mb}\Lambda_l K_{bm},\quad
    \mu_l = s K_{mm}\Sigma_l^{-1}K_{mb}\Lambda_l\tilde y_l,\quad
    A_l = K_{mm}\Sigma_l^{-1}K_{mm}.

Everything is computed in the whitened basis of :math:`L_m = \mathrm{chol}(K_{mm})`:
with :math:`W = L_m^{-1}K_{mb}` the data enter only through the *statistics*

.. math::

    P_l = W\Lambda_l W^\top,\qquad r_l = W\Lambda_l\tilde y_l,

which are sums over data points (so they can be accumulated over chunks, or
summed across devices, before anything is factorised). Then
:math:`B_l = I + sP_l = U_l U_l^\top` (:math:`U_l` *upper* triangular),
:math:`L_m^{-1}\mu_l = sB_l^{-1}r_l`, :math:`A_l = L_m B_l^{-1} L_m^\top` and
the lower-triangular square root is :math:`L_m U_l^{-\top}`.

Only Cholesky factors and triangular solves are used; no matrix inverse. The
prior covariances come from GPflow's ``Kuu``/``Kuf`` dispatch (kernels of this
package register their own there, :mod:`gpflow_svgpvae.covariances`).

Shapes: every function accepts leading batch dimensions ``...`` (one latent
dataset each, e.g. one per sequence: ``means [V, b, L]``); the channel axis of
the prior factors is ``1`` for a kernel shared by all :math:`L` channels and
``L`` for one kernel per channel (``SeparateIndependent``). The training step and the
cached posterior both run these functions.
"""

from typing import Callable, NamedTuple, Optional, Tuple, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import covariances
from gpflow.inducing_variables import (
    InducingPoints,
    InducingVariables,
    MultioutputInducingVariables,
    SharedIndependentInducingVariables,
)
from gpflow.kernels import Kernel, MultioutputKernel

from .numerics import cholesky

__all__ = [
    "as_inducing_variable",
    "inducing_inputs",
    "prior_cholesky",
    "cross_covariance",
    "prior_variance_diag",
    "with_batch_rank",
    "WhitenedPosterior",
    "whiten",
    "whitened_statistics",
    "statistics_from_whitened",
    "posterior_from_statistics",
    "inducing_distribution",
    "amortized_inducing_posterior",
    "prior_kl",
    "predict_marginals",
    "latent_marginals",
    "BatchPosterior",
    "minibatch_posterior",
]


# ------------------------------------------------------------------ prior covariances
@check_shapes("return: [M, D]")
def inducing_inputs(Z) -> np.ndarray:
    """An array of inducing inputs ``[M, D]`` checked (numbers, two axes, finite) and cast to
    ``gpflow.default_float()``.

    :raises ValueError: naming the inducing inputs and the first row with NaN or inf.
    """
    Z = np.asarray(Z)
    if not np.issubdtype(Z.dtype, np.number):
        raise ValueError(f"The inducing inputs (inducing_variable) must be numbers; got dtype {Z.dtype}.")
    Z = Z.astype(gpflow.default_float())
    if Z.ndim != 2:
        raise ValueError(f"The inducing inputs (inducing_variable) must have shape [M, input_dim]; got {Z.shape}.")
    bad = ~np.isfinite(Z).all(axis=1)
    if bad.any():
        raise ValueError(
            f"The inducing inputs (inducing_variable) contain NaN or inf in {int(bad.sum())} of {len(Z)} rows, first "
            f"at row {int(np.argmax(bad))}: start them at finite inputs, e.g. a grid over the range of X or a "
            "random subset of the training inputs."
        )
    return Z


def as_inducing_variable(inducing_variable: Union[InducingVariables, tf.Tensor], kernel: Kernel) -> InducingVariables:
    """Accept an array of inducing inputs ``[M, D]`` or a GPflow inducing variable.

    A multi-output kernel needs a multi-output inducing variable; plain
    ``InducingPoints`` are wrapped as ``SharedIndependentInducingVariables``.
    """
    if not isinstance(inducing_variable, InducingVariables):
        inducing_variable = InducingPoints(inducing_inputs(inducing_variable))
    if isinstance(kernel, MultioutputKernel) and not isinstance(inducing_variable, MultioutputInducingVariables):
        inducing_variable = SharedIndependentInducingVariables(inducing_variable)
    return inducing_variable


@check_shapes("return: [C, M, M]")
def prior_cholesky(kernel: Kernel, inducing_variable: InducingVariables, jitter: float) -> tf.Tensor:
    r""":math:`L_m = \mathrm{chol}(K_{mm} + \text{jitter}\,I)`, ``[C, M, M]`` (``C`` = 1 or L)."""
    Kmm = covariances.Kuu(inducing_variable, kernel, jitter=jitter)
    Kmm = Kmm[None] if Kmm.shape.rank == 2 else Kmm  # GPflow: [M, M] for shared kernels, [L, M, M] for separate
    return cholesky(Kmm, "Kuu (the prior covariance of the inducing variables)")


@check_shapes("X: [batch..., N, D]", "return: [batch..., C, M, N]")
def cross_covariance(kernel: Kernel, inducing_variable: InducingVariables, X: tf.Tensor) -> tf.Tensor:
    """:math:`K_{mb}` of inputs ``X [..., N, D]``: ``[..., C, M, N]``.

    Leading dimensions (one latent dataset each) share the inducing inputs: the inputs
    are flattened for GPflow's ``Kuf`` and the result reshaped.
    """
    X = tf.convert_to_tensor(X)
    D = X.shape[-1] if X.shape[-1] is not None else tf.shape(X)[-1]
    flat = X if X.shape.rank == 2 else tf.reshape(X, [-1, D])  # GPflow's Kuf takes [n, D]
    Kmn = covariances.Kuf(inducing_variable, kernel, flat)
    Kmn = Kmn[None] if Kmn.shape.rank == 2 else Kmn  # [C, M, n]: GPflow gives [M, n] for a shared kernel
    if X.shape.rank == 2:
        return Kmn
    k = X.shape.rank - 2
    Kmn = tf.reshape(Kmn, tf.concat([tf.shape(Kmn)[:2], tf.shape(X)[:-1]], 0))  # [C, M, ..., N]
    return tf.transpose(Kmn, list(range(2, 2 + k)) + [0, 1, 2 + k])  # [..., C, M, N]


@check_shapes("X: [batch..., N, D]", "return: [batch..., N, C]")
def prior_variance_diag(kernel: Kernel, X: tf.Tensor) -> tf.Tensor:
    """Prior marginal variances :math:`k(x_i, x_i)` of inputs ``X [..., N, D]``: ``[..., N, C]``."""
    X = tf.convert_to_tensor(X)
    D = X.shape[-1] if X.shape[-1] is not None else tf.shape(X)[-1]
    flat = X if X.shape.rank == 2 else tf.reshape(X, [-1, D])  # GPflow's kernel diagonals take [n, D]
    if isinstance(kernel, MultioutputKernel):
        diag = kernel(flat, full_cov=False, full_output_cov=False)  # [n, L]
    else:
        diag = kernel(flat, full_cov=False)[:, None]  # [n, 1]
    return tf.reshape(diag, tf.concat([tf.shape(X)[:-1], tf.shape(diag)[-1:]], 0))


@check_shapes("prior_chol: [C, M, M]", "return: [broadcast batch..., C, M, M]")
def with_batch_rank(prior_chol: tf.Tensor, batch_rank: int) -> tf.Tensor:
    """``[C, M, M] -> [1, ..., 1, C, M, M]`` with ``batch_rank`` leading ones."""
    for _ in range(int(batch_rank)):
        prior_chol = prior_chol[None]
    return prior_chol


# ------------------------------------------------------------------ statistics and posterior
class WhitenedPosterior(NamedTuple):
    r"""The factors that define :math:`q(u)` in the whitened basis.

    ``prior_chol``: :math:`L_m`, ``[..., C, M, M]`` (``C`` = 1 when one kernel is shared
    by all channels, ``L`` otherwise); ``upper_chol``: :math:`U` with :math:`B = UU^\top`,
    ``[..., L, M, M]``; ``whitened_mean``: :math:`L_m^{-1}\mu`, ``[..., L, M]``.
    """

    prior_chol: tf.Tensor
    upper_chol: tf.Tensor
    whitened_mean: tf.Tensor


@check_shapes(
    "prior_chol: [broadcast batch..., C, M, M]", "Kmb: [broadcast batch..., C, M, N]", "return: [batch..., C, M, N]"
)
def whiten(prior_chol: tf.Tensor, Kmb: tf.Tensor) -> tf.Tensor:
    """:math:`W = L_m^{-1}K_{mb}`, shared by the statistics and the predictive of the same batch."""
    return tf.linalg.triangular_solve(prior_chol, Kmb, lower=True)


@check_shapes(
    "W: [broadcast batch..., broadcast L, M, N]",
    "means: [batch..., N, L]",
    "variances: [batch..., N, L]",
    "weights: [batch..., N] if weights is not None",
    "return[0]: [batch..., L, M, M]",
    "return[1]: [batch..., L, M]",
)
def statistics_from_whitened(
    W: tf.Tensor, means: tf.Tensor, variances: tf.Tensor, weights: Optional[tf.Tensor] = None
) -> Tuple[tf.Tensor, tf.Tensor]:
    r"""The statistics :math:`P_l = W\Lambda_l W^\top` and :math:`r_l = W\Lambda_l\tilde y_l`.

    Both are sums over the data points :math:`i` (columns :math:`w_i` of :math:`W`):
    :math:`P_l = \sum_i w_i w_i^\top / \tilde v_{il}`, :math:`r_l = \sum_i w_i \tilde y_{il} / \tilde v_{il}`,
    so the statistics of a union of batches are the sums of theirs. Cost :math:`O(L M^2 N)`.

    :param W: :math:`L_m^{-1}K_{mb}`, ``[..., 1 or L, M, N]``.
    :param weights: optional per-point weights :math:`w_i \ge 0`, ``[..., N]``: the site
        precisions become :math:`w_i/\tilde v_{il}` (all channels). Weight 0 removes a point
        exactly (its mean and variance are never read, so no inf or NaN arises): how points
        with no observed entry and padded frames carry no information. Weights of ones give
        exactly the unweighted numbers.
    """
    W, means, variances = map(tf.convert_to_tensor, (W, means, variances))
    if weights is None:
        precisions = 1.0 / variances  # [..., N, L]
    else:
        weights = tf.cast(weights, variances.dtype)[..., None]  # [..., N, 1]
        used = tf.broadcast_to(weights > 0, tf.shape(variances))
        precisions = weights / tf.where(used, variances, tf.ones_like(variances))  # no 0/0, also in gradients
        means = tf.where(used, means, tf.zeros_like(means))
    weighted = W * tf.linalg.matrix_transpose(precisions)[..., :, None, :]  # [..., L, M, N]
    P = tf.linalg.matmul(weighted, W, transpose_b=True)  # [..., L, M, M]
    r = tf.linalg.matvec(weighted, tf.linalg.matrix_transpose(means))  # [..., L, M]
    return P, r


@check_shapes(
    "prior_chol: [broadcast batch..., C, M, M]",
    "Kmb: [broadcast batch..., C, M, N]",
    "means: [batch..., N, L]",
    "variances: [batch..., N, L]",
    "return[0]: [batch..., L, M, M]",
    "return[1]: [batch..., L, M]",
)
def whitened_statistics(
    prior_chol: tf.Tensor,
    Kmb: tf.Tensor,
    means: tf.Tensor,
    variances: tf.Tensor,
    weights: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, tf.Tensor]:
    r""":func:`statistics_from_whitened` of :math:`W = L_m^{-1}K_{mb}`."""
    return statistics_from_whitened(whiten(prior_chol, Kmb), means, variances, weights=weights)


def _factorise(P: tf.Tensor, r: tf.Tensor, scale) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    r"""``(U, U^{-1}, L_m^{-1}\mu)`` of :math:`B = I + sP = UU^\top`, ``[..., L, M, M]`` and ``[..., L, M]``.

    :math:`U^{-1}` (one triangular solve against the identity) is formed once: it serves
    the whitened mean :math:`sU^{-\top}U^{-1}r`, the KL's :math:`\mathrm{tr}(B^{-1}) = \|U^{-1}\|_F^2`
    and the predictive :math:`U^{-1}W`.

    :math:`U` is a "reversed" Cholesky factor: with :math:`J` the exchange matrix,
    :math:`JBJ = LL^\top` gives :math:`B = (JLJ)(JLJ)^\top` with :math:`JLJ` upper triangular,
    so that :math:`L_m U^{-\top}`, the square root of :math:`A`, is *lower* triangular, as
    GPflow's ``q_sqrt`` convention requires.
    """
    scale = tf.cast(scale, P.dtype)
    M = tf.shape(P)[-1]
    B = tf.eye(M, dtype=P.dtype) + scale * P
    name = "B = I + s Lm^-1 Kmb Lambda Kbm Lm^-T (the whitened posterior precision)"
    U = tf.reverse(cholesky(tf.reverse(B, axis=[-2, -1]), name), axis=[-2, -1])
    U_inv = tf.linalg.triangular_solve(U, tf.eye(M, batch_shape=tf.shape(U)[:-2], dtype=U.dtype), lower=False)
    whitened_mean = scale * tf.linalg.matvec(U_inv, tf.linalg.matvec(U_inv, r), transpose_a=True)
    return U, U_inv, whitened_mean


@check_shapes(
    "prior_chol: [broadcast batch..., C, M, M]",
    "P: [batch..., L, M, M]",
    "r: [batch..., L, M]",
    "return.upper_chol: [batch..., L, M, M]",
    "return.whitened_mean: [batch..., L, M]",
)
def posterior_from_statistics(prior_chol: tf.Tensor, P: tf.Tensor, r: tf.Tensor, scale) -> WhitenedPosterior:
    r"""Factorise :math:`B = I + sP = UU^\top`; :math:`L_m^{-1}\mu = sB^{-1}r`. Cost :math:`O(L M^3)`.

    :param scale: :math:`s = N/b` (1 conditions on exactly the data of the statistics).
    """
    U, _, whitened_mean = _factorise(P, r, scale)
    return WhitenedPosterior(prior_chol, U, whitened_mean)


@check_shapes(
    "posterior.upper_chol: [batch..., L, M, M]",
    "return[0]: [batch..., M, L]",
    "return[1]: [batch..., L, M, M]",
)
def inducing_distribution(posterior: WhitenedPosterior) -> Tuple[tf.Tensor, tf.Tensor]:
    r"""``(q_mu, q_sqrt)`` in GPflow's non-whitened SVGP convention.

    :math:`\mu = L_m (L_m^{-1}\mu)` and :math:`A^{1/2} = L_m U^{-\top}` (lower triangular).
    """
    Lm, U, whitened_mean = posterior
    q_mu = tf.linalg.matvec(Lm, whitened_mean)  # [..., L, M]
    # X = Lm U^{-T}  <=>  U X^T = Lm^T; U^{-1} (upper) Lm^T (upper) is upper.
    q_sqrt_T = tf.linalg.triangular_solve(U, tf.linalg.matrix_transpose(tf.broadcast_to(Lm, tf.shape(U))), lower=False)
    q_sqrt = tf.linalg.band_part(tf.linalg.matrix_transpose(q_sqrt_T), -1, 0)  # [..., L, M, M]
    return tf.linalg.matrix_transpose(q_mu), q_sqrt


@check_shapes(
    "X: [N, D]",
    "means: [N, L]",
    "variances: [N, L]",
    "return[0]: [M, L]",
    "return[1]: [L, M, M]",
)
def amortized_inducing_posterior(
    kernel: Kernel,
    inducing_variable: Union[InducingVariables, tf.Tensor],
    X: tf.Tensor,
    means: tf.Tensor,
    variances: tf.Tensor,
    num_data,
    jitter: float = 1e-6,
) -> Tuple[tf.Tensor, tf.Tensor]:
    r"""The SVGP-VAE inducing posterior :math:`q(u_l)=\mathcal N(\mu_l, A_l)` of a minibatch.

    .. math::

        \Sigma_l = K_{mm} + \tfrac{N}{b} K_{mb}\Lambda_l K_{bm},\quad
        \mu_l = \tfrac{N}{b} K_{mm}\Sigma_l^{-1}K_{mb}\Lambda_l\tilde y_l,\quad
        A_l = K_{mm}\Sigma_l^{-1}K_{mm}

    :param kernel: a GPflow kernel shared by all channels, or a multi-output kernel
        (``SharedIndependent``, ``SeparateIndependent`` with one kernel per channel).
    :param inducing_variable: GPflow inducing variable (or an ``[M, D]`` array).
    :param X: GP inputs of the batch; :param means: site means :math:`\tilde y`;
        :param variances: site variances :math:`\tilde v > 0`.
    :param num_data: :math:`N`, the size of the dataset the batch is drawn from
        (``N = b`` conditions on exactly this batch).
    :return: ``q_mu`` and lower-triangular ``q_sqrt``, non-whitened, as in :class:`gpflow.models.SVGP`.
    """
    inducing_variable = as_inducing_variable(inducing_variable, kernel)
    dtype = gpflow.default_float()
    X, means, variances = (tf.cast(t, dtype) for t in (X, means, variances))
    prior_chol = prior_cholesky(kernel, inducing_variable, jitter)
    P, r = whitened_statistics(prior_chol, cross_covariance(kernel, inducing_variable, X), means, variances)
    scale = tf.cast(num_data, dtype) / tf.cast(tf.shape(X)[0], dtype)
    return inducing_distribution(posterior_from_statistics(prior_chol, P, r, scale))


def _upper_inverse(U: tf.Tensor) -> tf.Tensor:
    return tf.linalg.triangular_solve(
        U, tf.eye(tf.shape(U)[-1], batch_shape=tf.shape(U)[:-2], dtype=U.dtype), lower=False
    )


def _kl(U: tf.Tensor, U_inv: tf.Tensor, whitened_mean: tf.Tensor) -> tf.Tensor:
    """:func:`prior_kl` given :math:`U^{-1}`."""
    M = tf.cast(tf.shape(U)[-1], U.dtype)
    trace = tf.reduce_sum(tf.square(U_inv), axis=[-2, -1])  # tr(U^-T U^-1) = tr(B^-1)
    mahalanobis = tf.reduce_sum(tf.square(whitened_mean), axis=-1)
    log_det = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(U)), axis=-1)
    return 0.5 * (trace + mahalanobis - M + log_det)


@check_shapes("posterior.upper_chol: [batch..., L, M, M]", "return: [batch..., L]")
def prior_kl(posterior: WhitenedPosterior) -> tf.Tensor:
    r""":math:`\mathrm{KL}(\mathcal N(\mu_l, A_l)\,\|\,\mathcal N(0, K_{mm}))` per channel.

    In the whitened basis :math:`K_{mm}^{-1}A = L_m^{-\top}B^{-1}L_m^\top` and
    :math:`|A| = |K_{mm}|/|B|`, so

    .. math::

        \mathrm{KL}_l = \tfrac12\left[\mathrm{tr}(B_l^{-1})
            + \|L_m^{-1}\mu_l\|^2 - M + \log|B_l|\right].
    """
    _, U, whitened_mean = posterior
    return _kl(U, _upper_inverse(U), whitened_mean)


def _marginals(
    W: tf.Tensor, whitened_mean: tf.Tensor, U_inv: tf.Tensor, prior_var: tf.Tensor
) -> Tuple[tf.Tensor, tf.Tensor]:
    """:func:`predict_marginals` given :math:`W = L_m^{-1}K_{mr}` and :math:`U^{-1}`: ``[..., R, L]`` each."""
    mean = tf.linalg.matvec(W, whitened_mean, transpose_a=True)  # [..., L, R]
    V = tf.linalg.matmul(U_inv, W)  # U^-1 W: [..., L, M, R]
    var = (
        tf.linalg.matrix_transpose(prior_var)
        - tf.reduce_sum(tf.square(W), axis=-2)
        + tf.reduce_sum(tf.square(V), axis=-2)
    )  # [..., L, R]
    return tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)


@check_shapes(
    "posterior.upper_chol: [batch..., L, M, M]",
    "Kmr: [broadcast batch..., C, M, R]",
    "prior_var: [broadcast batch..., R, C]",
    "return[0]: [batch..., R, L]",
    "return[1]: [batch..., R, L]",
)
def predict_marginals(
    posterior: WhitenedPosterior, Kmr: tf.Tensor, prior_var: tf.Tensor
) -> Tuple[tf.Tensor, tf.Tensor]:
    r"""Sparse predictive marginals at inputs :math:`X_r`.

    .. math::

        m_r = K_{rm}K_{mm}^{-1}\mu,\qquad
        v_r = k_{rr} - \|L_m^{-1}K_{mr}\|^2 + \|U^{-1}L_m^{-1}K_{mr}\|^2

    (column-wise norms), i.e. GPflow's conditional with ``q_mu``/``q_sqrt``. Cost :math:`O(L M^2 R)`.
    """
    Lm, U, whitened_mean = posterior
    return _marginals(whiten(Lm, Kmr), whitened_mean, _upper_inverse(U), prior_var)


@check_shapes("X: [batch..., R, D]", "return[0]: [batch..., R, L]", "return[1]: [batch..., R, L]")
def latent_marginals(kernel: Kernel, inducing_variable, posterior: WhitenedPosterior, X: tf.Tensor):
    """:func:`predict_marginals` at GP inputs ``X [..., R, D]`` (after any input transform).

    ``posterior.prior_chol`` may carry leading axes of size 1 (``[1, ..., 1, C, M, M]``); they
    are reshaped to the rank of ``X``.
    """
    prior_chol = posterior.prior_chol
    while prior_chol.shape.rank > 3:  # [1, ..., 1, C, M, M] -> [C, M, M]
        prior_chol = prior_chol[0]
    posterior = WhitenedPosterior(
        with_batch_rank(prior_chol, X.shape.rank - 2), posterior.upper_chol, posterior.whitened_mean
    )
    return predict_marginals(posterior, cross_covariance(kernel, inducing_variable, X), prior_variance_diag(kernel, X))


# ------------------------------------------------------------------ one training step's posterior
class BatchPosterior(NamedTuple):
    r"""What one training step needs from the amortised posterior of a batch.

    ``posterior``: the whitened :math:`q(u)`; ``mean``, ``variance``: the sparse predictive
    marginals at the batch's own inputs ``[..., b, L]``; ``kl``:
    :math:`\mathrm{KL}(q(u_l)\,\|\,p(u_l))`, ``[..., L]``; ``batch_size``: :math:`b`
    (summed over replicas when the statistics are).
    """

    posterior: WhitenedPosterior
    mean: tf.Tensor
    variance: tf.Tensor
    kl: tf.Tensor
    batch_size: tf.Tensor


@check_shapes(
    "X: [batch..., N, D]",
    "means: [batch..., N, L]",
    "variances: [batch..., N, L]",
    "weights: [batch..., N] if weights is not None",
    "return.mean: [batch..., N, L]",
    "return.variance: [batch..., N, L]",
    "return.kl: [batch..., L]",
)
def minibatch_posterior(
    kernel: Kernel,
    inducing_variable: InducingVariables,
    X: tf.Tensor,
    means: tf.Tensor,
    variances: tf.Tensor,
    num_data,
    jitter: float,
    reduce_statistics: Optional[Callable] = None,
    weights: Optional[tf.Tensor] = None,
) -> BatchPosterior:
    r"""Statistics, posterior, KL and predictive of a batch of one or many latent datasets.

    :math:`W = L_m^{-1}K_{mb}` gives the statistics :math:`P, r`
    (:func:`statistics_from_whitened`), :math:`B = I + sP = UU^\top` with :math:`s = N/b`
    gives :math:`q(u)` (:func:`posterior_from_statistics`), its KL (:func:`prior_kl`) and the
    predictive at the batch's own inputs (:func:`predict_marginals`, reusing :math:`W`).
    Cost :math:`O(L M^2 b + L M^3)` per latent dataset.

    :param X: GP inputs; every leading index is its own latent dataset (sharing the kernel
        and the inducing inputs).
    :param num_data: :math:`N` of each latent dataset, for the scale :math:`s = N/b`.
    :param reduce_statistics: optional ``[P, r, b] -> [P, r, b]`` applied before the
        factorisation (a sum across replicas: the posterior is then the global batch's).
    :param weights: optional per-point weights (0: the point carries no information, e.g.
        nothing observed or a padded frame; see :func:`statistics_from_whitened`). :math:`b`
        still counts every point: a fully missing point is a point of the dataset whose
        observations are all missing.
    """
    X, means, variances = map(tf.convert_to_tensor, (X, means, variances))
    prior_chol = prior_cholesky(kernel, inducing_variable, jitter)  # [C, M, M]
    for _ in range(X.shape.rank - 2):  # a leading axis of size 1 per axis of latent datasets
        prior_chol = prior_chol[None]
    Kmb = cross_covariance(kernel, inducing_variable, X)
    W = tf.linalg.triangular_solve(prior_chol, Kmb, lower=True)  # whiten: L_m^{-1} K_mb, [..., C, M, b]
    P, r = statistics_from_whitened(W, means, variances, weights=weights)  # [..., L, M, M], [..., L, M]
    batch_size = tf.cast(tf.shape(X)[-2], P.dtype)
    if reduce_statistics is not None:
        P, r, batch_size = reduce_statistics([P, r, batch_size])
    U, U_inv, whitened_mean = _factorise(P, r, tf.cast(num_data, P.dtype) / batch_size)
    mean, variance = _marginals(W, whitened_mean, U_inv, prior_variance_diag(kernel, X))
    posterior = WhitenedPosterior(prior_chol, U, whitened_mean)
    return BatchPosterior(posterior, mean, variance, _kl(U, U_inv, whitened_mean), batch_size)
