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

Only Cholesky factors and triangular solves are used; no matrix inverse.
The prior covariances :math:`K_{mm}`, :math:`K_{mb}` and :math:`k(x_i, x_i)` come
from :mod:`gpflow_svgpvae.prior_covariances` (re-exported here).
All functions below accept leading batch dimensions (e.g. one latent dataset
per video: ``means [V, b, L]``, ``Kmb [V, 1 or L, M, b]``).
"""

from typing import NamedTuple, Tuple, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel

from .numerics import cholesky
from .prior_covariances import (  # re-exported: the posterior's inputs, under their long-standing names
    as_inducing_variable,
    batch_covariances,
    cross_covariance,
    prior_cholesky,
    prior_variance_diag,
    with_batch_rank,
)

__all__ = [
    "WhitenedPosterior",
    "as_inducing_variable",
    "prior_cholesky",
    "cross_covariance",
    "prior_variance_diag",
    "batch_covariances",
    "whitened_statistics",
    "whiten",
    "statistics_from_whitened",
    "posterior_from_statistics",
    "upper_cholesky",
    "amortized_inducing_posterior",
    "amortized_whitened_posterior",
    "inducing_distribution",
    "prior_kl",
    "BatchPosterior",
    "minibatch_posterior",
    "predict_marginals",
    "predict_from_whitened",
    "latent_marginals",
]


class WhitenedPosterior(NamedTuple):
    r"""The factors that define :math:`q(u)` in the whitened basis.

    ``prior_chol`` is :math:`L_m` (shape ``[1, M, M]`` when one kernel is shared
    by all channels, ``[L, M, M]`` otherwise), ``upper_chol`` is :math:`U`
    with :math:`B = UU^\top` (``[L, M, M]``) and ``whitened_mean`` is
    :math:`L_m^{-1}\mu` (``[L, M]``).
    """

    prior_chol: tf.Tensor
    upper_chol: tf.Tensor
    whitened_mean: tf.Tensor


@check_shapes(
    "prior_chol: [broadcast batch..., broadcast L, M, M]",
    "Kmb: [broadcast batch..., broadcast L, M, N]",
    "means: [batch..., N, L]",
    "variances: [batch..., N, L]",
    "return[0]: [batch..., L, M, M]",
    "return[1]: [batch..., L, M]",
)
def whitened_statistics(
    prior_chol: tf.Tensor, Kmb: tf.Tensor, means: tf.Tensor, variances: tf.Tensor, weights=None
) -> Tuple[tf.Tensor, tf.Tensor]:
    r"""Sufficient statistics :math:`P_l = W\Lambda_l W^\top`, :math:`r_l = W\Lambda_l\tilde y_l`.

    :math:`W = L_m^{-1}K_{mb}`. Both are sums over the data points, so the
    statistics of a union of batches are the sums of their statistics.

    :param weights: optional per-point weights ``[..., N]`` (see :func:`statistics_from_whitened`).
    """
    return statistics_from_whitened(whiten(prior_chol, Kmb), means, variances, weights=weights)


def whiten(prior_chol: tf.Tensor, Kmb: tf.Tensor) -> tf.Tensor:
    """:math:`W = L_m^{-1}K_{mb}` (``[..., 1 or L, M, N]``), shared by the statistics
    and the predictive of the same batch."""
    return tf.linalg.triangular_solve(prior_chol, Kmb, lower=True)


def statistics_from_whitened(
    W: tf.Tensor, means: tf.Tensor, variances: tf.Tensor, weights=None
) -> Tuple[tf.Tensor, tf.Tensor]:
    r""":func:`whitened_statistics` given :math:`W = L_m^{-1}K_{mb}`.

    :param weights: optional per-point weights :math:`w_i \ge 0`, ``[..., N]``: the site
        precisions become :math:`w_i/\tilde v_{il}` (all channels). Weight 0 removes a point
        from the statistics exactly (its mean and variance are never used, so no inf or
        NaN arises): how points with no observed entry and padded frames carry no
        information. Weights of ones give exactly the unweighted numbers.
    """
    W = tf.convert_to_tensor(W)
    precisions, means = _site_precisions(means, variances, weights)
    if _pairs_apply(W, precisions.shape[-1]):
        return _statistics_from_pairs(_pair_products(W), W[0], means, precisions)
    if W.shape[-3] == 1:  # one kernel shared by all channels (with leading dimensions)
        Ws = W[..., 0, :, :]  # [..., M, N]
        weighted = Ws[..., None, :, :] * tf.linalg.matrix_transpose(precisions)[..., :, None, :]  # [..., L, M, N]
        P = tf.einsum("...lmn,...kn->...lmk", weighted, Ws)  # [..., L, M, M]
        r = tf.linalg.matrix_transpose(tf.linalg.matmul(Ws, precisions * means))  # [..., L, M]
        return P, r
    precisions = tf.linalg.matrix_transpose(precisions)[..., None, :]  # [..., L, 1, N]
    weighted = W * precisions  # [L, M, N]
    P = tf.linalg.matmul(weighted, W, transpose_b=True)  # [L, M, M]
    r = tf.linalg.matvec(weighted, tf.linalg.matrix_transpose(means))  # [L, M]
    return P, r


def _site_precisions(means, variances, weights):
    """``(precisions, means)`` ``[..., N, L]`` of the sites, with the weights of
    :func:`statistics_from_whitened` applied."""
    if weights is None:
        return 1.0 / variances, means
    weights = tf.cast(weights, variances.dtype)[..., None]  # [..., N, 1]
    used = tf.broadcast_to(weights > 0, tf.shape(variances))
    precisions = weights / tf.where(used, variances, tf.ones_like(variances))  # no 0/0, also in gradients
    return precisions, tf.where(used, means, tf.zeros_like(means))


# One kernel shared by the channels and one latent dataset (W: [1, M, N]): the products
# w_n w_n^T of the columns of W serve both the statistics P_l = sum_n lam_nl w_n w_n^T and
# the predictive variances w_n^T B_l^-1 w_n. Both are symmetric in (m, k), so only the
# M (M + 1) / 2 pairs m <= k are formed: two products [L, pairs] x [pairs, N] instead of
# the L per-channel products [M, N] x [N, M] and [M, M] x [M, N] (half the FLOPs, and no
# broadcast of W to the channels; forward and backward).
class _Pairs(NamedTuple):
    products: tf.Tensor  # [pairs, N]: W[i] * W[j] for the pairs i <= j
    upper: np.ndarray  # [pairs]: flat index i * M + j of each pair in an [M, M] matrix
    full: np.ndarray  # [M * M]: the pair of each entry (m, k) of a symmetric [M, M] matrix
    weights: np.ndarray  # [pairs]: 1 on the diagonal, 2 off it (a quadratic form counts (m, k) and (k, m))


def _pairs_apply(W: tf.Tensor, num_channels) -> bool:
    """Pairs for one latent dataset and a shared kernel, when they are not more than the
    per-channel ``[L, M]`` rows they replace (``M (M + 1) / 2 <= L (M + 1)``, i.e. ``M <= 2L``;
    for many inducing points and few channels the per-channel products are cheaper)."""
    M = W.shape[-2]
    return (
        W.shape.rank == 3
        and W.shape[0] == 1
        and M is not None
        and num_channels is not None
        and int(M) <= 2 * int(num_channels)
    )


def _pair_products(W: tf.Tensor) -> _Pairs:
    M = int(W.shape[-2])
    i, j = np.triu_indices(M)
    full = np.zeros((M, M), np.int64)
    full[i, j] = np.arange(len(i))
    full[j, i] = np.arange(len(i))
    Ws = W[0]  # [M, N]
    products = tf.gather(Ws, i) * tf.gather(Ws, j)  # [pairs, N]
    return _Pairs(products, i * M + j, full.reshape(-1), np.where(i == j, 1.0, 2.0))


def _statistics_from_pairs(pairs: _Pairs, Ws: tf.Tensor, means: tf.Tensor, precisions: tf.Tensor):
    M = Ws.shape[0]
    P_pairs = tf.linalg.matmul(tf.transpose(precisions), pairs.products, transpose_b=True)  # [L, pairs]
    P = tf.reshape(tf.gather(P_pairs, pairs.full, axis=1), [-1, M, M])  # [L, M, M]
    r = tf.linalg.matmul(precisions * means, Ws, transpose_a=True, transpose_b=True)  # [L, M]
    return P, r


def _predict_from_pairs(pairs: _Pairs, Ws: tf.Tensor, whitened_mean: tf.Tensor, B_inv: tf.Tensor, prior_var):
    M = Ws.shape[0]
    B_pairs = tf.gather(tf.reshape(B_inv, [-1, M * M]), pairs.upper, axis=1) * pairs.weights  # [L, pairs]
    quad = tf.transpose(tf.linalg.matmul(B_pairs, pairs.products))  # [N, L]: w_n^T B_l^-1 w_n
    mean = tf.linalg.matmul(Ws, whitened_mean, transpose_a=True, transpose_b=True)  # [N, L]
    var = prior_var - tf.reduce_sum(tf.square(Ws), axis=0)[:, None] + quad  # [N, L]
    return mean, var


def upper_cholesky(matrix: tf.Tensor, name: str) -> tf.Tensor:
    r"""Upper-triangular :math:`U` with :math:`B = UU^\top` (a "reversed" Cholesky).

    With :math:`J` the exchange matrix, :math:`JBJ = LL^\top` gives
    :math:`B = (JLJ)(JLJ)^\top` and :math:`JLJ` is upper triangular. We use it
    so that :math:`L_m U^{-\top}` (the square root of :math:`A`) is *lower*
    triangular, as GPflow's ``q_sqrt`` convention requires.
    """
    flipped = tf.reverse(matrix, axis=[-2, -1])
    return tf.reverse(cholesky(flipped, name), axis=[-2, -1])


@check_shapes(
    "prior_chol: [broadcast batch..., broadcast L, M, M]",
    "P: [batch..., L, M, M]",
    "r: [batch..., L, M]",
    "return.prior_chol: [broadcast batch..., broadcast L, M, M]",
    "return.upper_chol: [batch..., L, M, M]",
    "return.whitened_mean: [batch..., L, M]",
)
def posterior_from_statistics(prior_chol: tf.Tensor, P: tf.Tensor, r: tf.Tensor, scale: tf.Tensor) -> WhitenedPosterior:
    r"""Factorise :math:`B = I + sP` and return the whitened posterior.

    :param scale: :math:`s = N/b` (1 to condition on exactly the given data).
    """
    U, _, whitened_mean = _factorise(P, r, scale)
    return WhitenedPosterior(prior_chol, U, whitened_mean)


def _factorise(P: tf.Tensor, r: tf.Tensor, scale) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    r"""``(U, U^{-1}, L_m^{-1}\mu)`` of :math:`B = I + sP = UU^\top`.

    :math:`U^{-1}` (one triangular solve against the identity, ``[..., L, M, M]``) is
    formed once and serves the whitened mean :math:`sU^{-\top}U^{-1}r`, the KL's
    :math:`\mathrm{tr}(B^{-1}) = \|U^{-1}\|_F^2` and the predictive (:math:`U^{-1}W`
    or :math:`B^{-1} = U^{-\top}U^{-1}`) instead of a triangular solve (and its
    gradient) for each.
    """
    scale = tf.cast(scale, P.dtype)
    M = tf.shape(P)[-1]
    B = tf.eye(M, dtype=P.dtype) + scale * P  # [L, M, M]
    U = upper_cholesky(B, "B = I + s Lm^-1 Kmb Lambda Kbm Lm^-T (the whitened posterior precision)")
    U_inv = tf.linalg.triangular_solve(U, tf.eye(M, batch_shape=tf.shape(U)[:-2], dtype=U.dtype), lower=False)
    # L_m^{-1} mu = s B^{-1} r = s U^{-T} U^{-1} r
    # (products with [L, M, M] as broadcast multiplications and sums: on CPU, batched
    # matrix-vector products of this size cost more than the arithmetic)
    U_inv_r = tf.reduce_sum(U_inv * r[..., None, :], axis=-1)  # U^-1 r
    whitened_mean = scale * tf.reduce_sum(U_inv * U_inv_r[..., :, None], axis=-2)  # [L, M]
    return U, U_inv, whitened_mean


def amortized_whitened_posterior(
    kernel: Kernel,
    inducing_variable: InducingVariables,
    X: tf.Tensor,
    means: tf.Tensor,
    variances: tf.Tensor,
    num_data,
    jitter: float = 1e-6,
) -> WhitenedPosterior:
    """Whitened factors of :math:`q(u)` for a batch; see :func:`amortized_inducing_posterior`."""
    prior_chol = prior_cholesky(kernel, inducing_variable, jitter)
    Kmb = cross_covariance(kernel, inducing_variable, X)
    P, r = whitened_statistics(prior_chol, Kmb, means, variances)
    batch_size = tf.cast(tf.shape(X)[0], P.dtype)
    scale = tf.cast(num_data, P.dtype) / batch_size
    return posterior_from_statistics(prior_chol, P, r, scale)


@check_shapes(
    "return[0]: [batch..., M, L]",
    "return[1]: [batch..., L, M, M]",
)
def inducing_distribution(posterior: WhitenedPosterior) -> Tuple[tf.Tensor, tf.Tensor]:
    r"""``(q_mu, q_sqrt)`` in GPflow's non-whitened SVGP convention.

    :math:`\mu = L_m (L_m^{-1}\mu)` and :math:`A^{1/2} = L_m U^{-\top}` (lower triangular).
    """
    Lm, U, whitened_mean = posterior
    q_mu = tf.linalg.matvec(Lm, whitened_mean)  # [L, M]
    # X = Lm U^{-T}  <=>  U X^T = Lm^T; U^{-1} (upper) Lm^T (upper) is upper.
    Lm = tf.broadcast_to(Lm, tf.shape(U))
    q_sqrt_T = tf.linalg.triangular_solve(U, tf.linalg.matrix_transpose(Lm), lower=False)
    q_sqrt = tf.linalg.band_part(tf.linalg.matrix_transpose(q_sqrt_T), -1, 0)  # [L, M, M]
    return tf.linalg.matrix_transpose(q_mu), q_sqrt


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

    :param kernel: a GPflow kernel shared by all channels, or a multi-output
        kernel (``SharedIndependent``, ``SeparateIndependent`` with one kernel
        per channel).
    :param inducing_variable: GPflow inducing variable (or an ``[M, D]`` array).
    :param X: auxiliary inputs of the batch, ``[b, D]``.
    :param means: site means :math:`\tilde y`, ``[b, L]``.
    :param variances: site variances :math:`\tilde v > 0`, ``[b, L]``.
    :param num_data: :math:`N`, the size of the dataset the batch is drawn from
        (``N = b`` conditions on exactly this batch).
    :param jitter: added to the diagonal of :math:`K_{mm}`.
    :return: ``q_mu [M, L]`` and lower-triangular ``q_sqrt [L, M, M]``,
        non-whitened, as in :class:`gpflow.models.SVGP`.
    """
    inducing_variable = as_inducing_variable(inducing_variable, kernel)
    dtype = gpflow.default_float()
    X, means, variances = (tf.cast(t, dtype) for t in (X, means, variances))
    posterior = amortized_whitened_posterior(kernel, inducing_variable, X, means, variances, num_data, jitter)
    return inducing_distribution(posterior)


@check_shapes("return: [batch..., L]")
def prior_kl(posterior: WhitenedPosterior) -> tf.Tensor:
    r""":math:`\mathrm{KL}(\mathcal N(\mu_l, A_l)\,\|\,\mathcal N(0, K_{mm}))` per channel.

    In the whitened basis :math:`K_{mm}^{-1}A = L_m^{-\top}B^{-1}L_m^\top` and
    :math:`|A| = |K_{mm}|/|B|`, so

    .. math::

        \mathrm{KL}_l = \tfrac12\left[\mathrm{tr}(B_l^{-1})
            + \|L_m^{-1}\mu_l\|^2 - M + \log|B_l|\right].
    """
    _, U, whitened_mean = posterior
    eye = tf.eye(tf.shape(U)[-1], batch_shape=tf.shape(U)[:-2], dtype=U.dtype)
    return _kl(U, tf.linalg.triangular_solve(U, eye, lower=False), whitened_mean)


def _kl(U: tf.Tensor, U_inv: tf.Tensor, whitened_mean: tf.Tensor) -> tf.Tensor:
    """:func:`prior_kl` given :math:`U^{-1}`."""
    M = tf.cast(tf.shape(U)[-1], U.dtype)
    trace = tf.reduce_sum(tf.square(U_inv), axis=[-2, -1])  # tr(U^-T U^-1)
    mahalanobis = tf.reduce_sum(tf.square(whitened_mean), axis=-1)
    log_det = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(U)), axis=-1)
    return 0.5 * (trace + mahalanobis - M + log_det)


@check_shapes(
    "Kmr: [broadcast batch..., broadcast L, M, R]",
    "prior_var: [broadcast batch..., R, broadcast L]",
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

    (column-wise norms), i.e. GPflow's conditional with ``q_mu``/``q_sqrt``.
    """
    return predict_from_whitened(posterior, whiten(posterior.prior_chol, Kmr), prior_var)


def latent_marginals(kernel: Kernel, inducing_variable, posterior: WhitenedPosterior, X: tf.Tensor):
    """:func:`predict_marginals` at GP inputs ``X [..., n, D]`` (after any input transform):
    predictive means and variances ``[..., n, L]``.

    ``posterior.prior_chol`` may carry leading batch axes of size 1 (``[1, ..., 1 or L, M, M]``);
    they are re-shaped to the rank of ``X``.
    """
    prior_chol = posterior.prior_chol
    while prior_chol.shape.rank > 3:  # [1, ..., 1 or L, M, M] -> [1 or L, M, M]
        prior_chol = prior_chol[0]
    posterior = WhitenedPosterior(
        with_batch_rank(prior_chol, X.shape.rank - 2), posterior.upper_chol, posterior.whitened_mean
    )
    Kmr = cross_covariance(kernel, inducing_variable, X)  # [..., 1 or L, M, n]
    prior_var = prior_variance_diag(kernel, X)  # [..., n, 1 or L]
    return predict_marginals(posterior, Kmr, prior_var)


def predict_from_whitened(
    posterior: WhitenedPosterior, W: tf.Tensor, prior_var: tf.Tensor, upper_inverse=None
) -> Tuple[tf.Tensor, tf.Tensor]:
    """:func:`predict_marginals` given :math:`W = L_m^{-1}K_{mr}` (``[..., 1 or L, M, R]``).

    :param upper_inverse: optional :math:`U^{-1}` (``[..., L, M, M]``, as formed by
        :func:`minibatch_posterior`): :math:`U^{-1}W` is then a product instead of a solve.
    """
    _, U, whitened_mean = posterior
    W = tf.convert_to_tensor(W)
    if upper_inverse is not None and W.shape[-3] == 1:  # shared kernel: W is not broadcast to the channels
        Ws = W[..., 0, :, :]  # [..., M, R]
        mean = tf.linalg.matmul(Ws, whitened_mean, transpose_a=True, transpose_b=True)  # [..., R, L]
        if W.shape.rank == 3 and upper_inverse.shape.rank == 3 and None not in upper_inverse.shape:
            L, M = upper_inverse.shape[0], upper_inverse.shape[1]  # one 2-D product [L M, M] x [M, R]
            V = tf.reshape(tf.linalg.matmul(tf.reshape(upper_inverse, [L * M, M]), Ws), [L, M, -1])
        else:
            V = tf.einsum("...lmk,...kn->...lmn", upper_inverse, Ws)  # [..., L, M, R]
        var = (
            prior_var
            - tf.reduce_sum(tf.square(Ws), axis=-2)[..., None]
            + tf.linalg.matrix_transpose(tf.reduce_sum(tf.square(V), axis=-2))
        )  # [..., R, L]
        return mean, var
    mean = tf.linalg.matvec(W, whitened_mean, transpose_a=True)  # [L, R]
    if upper_inverse is not None:
        V = tf.linalg.matmul(upper_inverse, W)  # [L, M, R]
    else:
        # One triangular solve per channel (and per latent dataset), whichever side carries them.
        target = tf.broadcast_dynamic_shape(tf.concat([tf.shape(U)[:-1], tf.shape(W)[-1:]], 0), tf.shape(W))
        V = tf.linalg.triangular_solve(U, tf.broadcast_to(W, target), lower=False)  # [L, M, R]
    var = (
        tf.linalg.matrix_transpose(prior_var)
        - tf.reduce_sum(tf.square(W), axis=-2)
        + tf.reduce_sum(tf.square(V), axis=-2)
    )  # [L, R]
    return tf.linalg.matrix_transpose(mean), tf.linalg.matrix_transpose(var)


class BatchPosterior(NamedTuple):
    """What one training step needs from the amortised posterior of a batch.

    ``posterior``: the whitened :math:`q(u)` (``[..., L, M, M]``); ``mean``,
    ``variance``: the sparse predictive marginals at the batch's own inputs
    ``[..., b, L]``; ``kl``: :math:`\mathrm{KL}(q(u_l)\,\|\,p(u_l))`, ``[..., L]``;
    ``batch_size``: :math:`b` (summed over replicas when the statistics are).
    """

    posterior: WhitenedPosterior
    mean: tf.Tensor
    variance: tf.Tensor
    kl: tf.Tensor
    batch_size: tf.Tensor


def minibatch_posterior(
    kernel: Kernel,
    inducing_variable: InducingVariables,
    X: tf.Tensor,
    means: tf.Tensor,
    variances: tf.Tensor,
    num_data,
    jitter: float,
    reduce_statistics=None,
    weights=None,
) -> BatchPosterior:
    r"""Statistics -> posterior -> KL -> predictive for a batch of one or many latent datasets.

    :param X: GP inputs ``[..., b, D]``; every leading index is its own latent
        dataset (sharing kernel and inducing inputs).
    :param means: site means ``[..., b, L]``; :param variances: site variances.
    :param num_data: :math:`N` of each latent dataset, for the scale :math:`s = N/b`.
    :param reduce_statistics: optional ``[P, r, b] -> [P, r, b]`` applied to the
        statistics before factorisation (e.g. a sum across replicas, so that the
        posterior is that of the global batch).
    :param weights: optional per-point weights ``[..., b]`` of the sites (0: the point
        carries no information, e.g. nothing observed or a padded frame; see
        :func:`statistics_from_whitened`). The batch size :math:`b` (and so the scale)
        still counts every point: a fully missing point is a point of the dataset whose
        observations are all missing.

    :math:`W = L_m^{-1}K_{mb}` is formed once and shared by the statistics and the
    predictive at the batch's inputs.
    """
    batch_rank = X.shape.rank - 2
    Kmm, Kmb, prior_var = batch_covariances(kernel, inducing_variable, X, jitter)
    prior_chol = with_batch_rank(
        cholesky(Kmm, "Kuu (the prior covariance of the inducing variables)"), batch_rank
    )  # [..., 1 or L, M, M]
    W = whiten(prior_chol, Kmb)  # [..., 1 or L, M, b]
    pairs = _pair_products(W) if _pairs_apply(W, means.shape[-1]) else None  # statistics and predictive
    if pairs is not None:
        precisions, site_means = _site_precisions(means, variances, weights)
        P, r = _statistics_from_pairs(pairs, W[0], site_means, precisions)
    else:
        P, r = statistics_from_whitened(W, means, variances, weights=weights)  # [..., L, M, M], [..., L, M]
    batch_size = tf.cast(tf.shape(X)[-2], P.dtype)
    if reduce_statistics is not None:
        P, r, batch_size = reduce_statistics([P, r, batch_size])
    U, U_inv, whitened_mean = _factorise(P, r, tf.cast(num_data, P.dtype) / batch_size)
    posterior = WhitenedPosterior(prior_chol, U, whitened_mean)
    if pairs is not None:
        B_inv = tf.linalg.matmul(U_inv, U_inv, transpose_a=True)  # [L, M, M]
        mean, variance = _predict_from_pairs(pairs, W[0], whitened_mean, B_inv, prior_var)
    else:
        mean, variance = predict_from_whitened(posterior, W, prior_var, upper_inverse=U_inv)
    return BatchPosterior(posterior, mean, variance, _kl(U, U_inv, whitened_mean), batch_size)
