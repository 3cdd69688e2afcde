"""Low-rank Gaussian prior term of the GPPVAE baseline (Casale et al., NeurIPS 2018).

GPPVAE places an independent zero-mean Gaussian prior on each of the ``L``
latent channels ``Z[:, l]`` of ``N`` data points, with a low-rank-plus-noise
covariance

.. math::

    K = V V^\\top + \\alpha I_N, \\qquad V \\in \\mathbb{R}^{N \\times H},

where ``V`` is the row-wise Kronecker product of object vectors and rows of a
factor of the view kernel (:func:`gppvae_kronecker_features`). Everything here
costs :math:`O(N H^2 + H^3)` via the Woodbury identity and the matrix
determinant lemma, uses Cholesky factors and triangular solves only, and
expects inputs in :func:`gpflow.default_float` (float64).

Casale et al. train the GP parameters (``V``: object vectors and view kernel, and
``alpha``) on the exact NLL with the latents held fixed
(:func:`gp_term_for_hyperparameters`), and the networks through a first-order Taylor
expansion of it around the latent means (:func:`gppvae_taylor_surrogate`). With full
batches the two together have exactly the gradients of :func:`lowrank_gaussian_nll`
w.r.t. every argument. With minibatches, :math:`G = K^{-1} Z` is computed once from the
latent means of *all* ``N`` points (:func:`lowrank_nll_gradient`) and a minibatch's GP
term is :func:`taylor_linear_term` ``(Z_b, G_b)``: its gradient is the matching rows of
the exact full-data gradient at the expansion point.
"""

import math

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import TensorType

__all__ = [
    "lowrank_gaussian_nll",
    "lowrank_nll_gradient",
    "rowwise_kronecker",
    "gppvae_kronecker_features",
    "gppvae_taylor_surrogate",
    "taylor_linear_term",
    "gp_term_for_hyperparameters",
]


def _as_scalar_like(value: TensorType, like: tf.Tensor) -> tf.Tensor:
    return tf.convert_to_tensor(value, dtype=like.dtype)


def _woodbury(Z: TensorType, V: TensorType, noise_variance: TensorType):
    """``(Z, V, alpha, L_C, V^T Z)`` in ``Z``'s dtype: what the NLL and its gradient start from."""
    Z = tf.convert_to_tensor(Z)
    V = tf.convert_to_tensor(V, dtype=Z.dtype)
    alpha = _as_scalar_like(noise_variance, Z)
    return Z, V, alpha, _woodbury_cholesky(V, alpha), tf.linalg.matmul(V, Z, transpose_a=True)  # [H, H], [H, L]


@check_shapes(
    "V: [N, H]",
    "noise_variance: []",
    "return: [H, H]",
)
def _woodbury_cholesky(V: tf.Tensor, noise_variance: tf.Tensor) -> tf.Tensor:
    """Cholesky factor of :math:`C = I_H + V^\\top V / \\alpha`."""
    H = tf.shape(V)[1]
    C = tf.eye(H, dtype=V.dtype) + tf.linalg.matmul(V, V, transpose_a=True) / noise_variance
    return tf.linalg.cholesky(C)


@check_shapes(
    "Z: [N, L]",
    "V: [N, H]",
    "noise_variance: []",
    "return: []",
)
def lowrank_gaussian_nll(Z: TensorType, V: TensorType, noise_variance: TensorType) -> tf.Tensor:
    """Negative log density of ``L`` independent columns under a low-rank Gaussian::

        sum_l -log N(Z[:, l] | 0, K),    K = V V^T + alpha I_N

    computed in :math:`O(N H^2 + H^3)` (``H`` may exceed ``N``; the cost is then
    dominated by the ``H x H`` Cholesky). With

    .. math::

        C = I_H + V^\\top V / \\alpha = L_C L_C^\\top,

    the Woodbury identity
    :math:`K^{-1} = \\alpha^{-1} I - \\alpha^{-2} V C^{-1} V^\\top`
    and the matrix determinant lemma give, per column ``z``,

    .. math::

        z^\\top K^{-1} z
            = \\left(\\lVert z \\rVert^2
              - \\lVert L_C^{-1} V^\\top z \\rVert^2 / \\alpha\\right) / \\alpha,

        \\log\\lvert K \\rvert = N \\log\\alpha + 2 \\sum_h \\log (L_C)_{hh},

    and the result is
    :math:`\\tfrac12 \\sum_l \\left(N \\log 2\\pi + \\log\\lvert K\\rvert
    + z_l^\\top K^{-1} z_l\\right)`.

    :param Z: latent values, one GP draw per column, in default float.
    :param V: low-rank factor of the covariance.
    :param noise_variance: ``alpha > 0``, a scalar (tensor, variable or GPflow
        parameter).
    :return: the summed negative log density (a scalar).
    """
    Z, V, alpha, L_C, VtZ = _woodbury(Z, V, noise_variance)
    N = tf.cast(tf.shape(Z)[0], Z.dtype)
    num_columns = tf.cast(tf.shape(Z)[1], Z.dtype)
    A = tf.linalg.triangular_solve(L_C, VtZ, lower=True)  # [H, L]
    quad = (tf.reduce_sum(tf.square(Z)) - tf.reduce_sum(tf.square(A)) / alpha) / alpha
    logdet = N * tf.math.log(alpha) + 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L_C)))
    log_2pi = tf.constant(math.log(2.0 * math.pi), dtype=Z.dtype)
    return 0.5 * (num_columns * (N * log_2pi + logdet) + quad)


@check_shapes(
    "Z: [N, L]",
    "V: [N, H]",
    "noise_variance: []",
    "return: [N, L]",
)
def lowrank_nll_gradient(Z: TensorType, V: TensorType, noise_variance: TensorType) -> tf.Tensor:
    """Closed-form gradient of :func:`lowrank_gaussian_nll` w.r.t. ``Z``, i.e.
    :math:`K^{-1} Z`, by Woodbury in :math:`O(N H^2 + H^3)`:

    .. math::

        K^{-1} Z = \\left(Z - V\\, L_C^{-\\top} L_C^{-1} V^\\top Z / \\alpha\\right) / \\alpha.

    Differentiable in all arguments; :func:`gppvae_taylor_surrogate` wraps it in
    stop-gradients.
    """
    Z, V, alpha, L_C, VtZ = _woodbury(Z, V, noise_variance)
    CinvVtZ = tf.linalg.cholesky_solve(L_C, VtZ)  # [H, L]
    return (Z - tf.linalg.matmul(V, CinvVtZ) / alpha) / alpha


@check_shapes(
    "A: [N, a]",
    "B: [N, b]",
    "return: [N, ab]",
)
def rowwise_kronecker(A: TensorType, B: TensorType) -> tf.Tensor:
    """Row-wise Kronecker (face-splitting) product, ``out[n, i * b + j] = A[n, i] * B[n, j]``,
    so that ``out @ out.T == (A @ A.T) * (B @ B.T)`` (elementwise)."""
    A = tf.convert_to_tensor(A)
    B = tf.convert_to_tensor(B, dtype=A.dtype)
    outer = A[:, :, None] * B[:, None, :]  # [N, a, b]
    return tf.reshape(outer, [tf.shape(A)[0], tf.shape(A)[1] * tf.shape(B)[1]])


@check_shapes(
    "object_vectors: [P, Q]",
    "view_kernel_cholesky: [num_views, R]",
    "view_index: [N]",
    "object_index: [N]",
    "return: [N, H]",
)
def gppvae_kronecker_features(
    object_vectors: TensorType,
    view_kernel_cholesky: TensorType,
    view_index: TensorType,
    object_index: TensorType = None,
) -> tf.Tensor:
    """GPPVAE's low-rank factor ``V`` (``H = Q * R``)::

        V[i] = kron(x_{o(i)}, Lv[v(i), :])

    so that :math:`V V^\\top = (X X^\\top)_{o(i) o(j)} \\cdot K^{view}_{v(i) v(j)}`
    elementwise over pairs of data points: a linear kernel on object vectors
    times the view kernel.

    :param object_vectors: either one vector per object ``[P, Q]`` (then
        ``object_index`` maps each data point to its object) or already one
        vector per data point ``[N, Q]`` (then ``object_index`` is ``None``).
    :param view_kernel_cholesky: a factor ``Lv`` with ``Lv Lv^T = K_view``,
        ``[num_views, R]``; the Cholesky factor (``R = num_views``) is the
        usual choice, but any factor (e.g. a low-rank one) gives the same
        ``V V^T``.
    :param view_index: integer view ``v(i)`` of each data point, ``[N]``.
    :param object_index: integer object ``o(i)`` of each data point, ``[N]``,
        or ``None`` when ``object_vectors`` is already per data point.
    :return: ``V`` of shape ``[N, Q * R]``.
    """
    X = tf.convert_to_tensor(object_vectors)
    Lv = tf.convert_to_tensor(view_kernel_cholesky, dtype=X.dtype)
    if object_index is not None:
        X = tf.gather(X, object_index)  # [N, Q]
    view_rows = tf.gather(Lv, view_index)  # [N, R]
    tf.debugging.assert_equal(
        tf.shape(X)[0],
        tf.shape(view_rows)[0],
        message="per-point object vectors and view_index must have the same length N",
    )
    return rowwise_kronecker(X, view_rows)


@check_shapes(
    "Z: [N, L]",
    "V: [N, H]",
    "noise_variance: []",
    "return: []",
)
def gppvae_taylor_surrogate(Z: TensorType, V: TensorType, noise_variance: TensorType) -> tf.Tensor:
    """First-order Taylor surrogate of the GP NLL around the current latents, used
    by GPPVAE (Casale et al. 2018) to train the encoder/decoder:

    .. math::

        S(Z) = \\mathrm{sg}[\\mathrm{nll}(Z)]
             + \\sum_{n,l} \\mathrm{sg}[(K^{-1} Z)_{nl}]\\,
               (Z_{nl} - \\mathrm{sg}[Z_{nl}]),

    with ``sg`` = ``tf.stop_gradient`` and :math:`K^{-1} Z` from
    :func:`lowrank_nll_gradient`. Hence its value equals the exact NLL, its
    gradient w.r.t. ``Z`` equals the exact gradient :math:`+K^{-1} Z` (sign
    matters: minimising the surrogate must improve the GP fit), and its
    gradient w.r.t. ``V`` and ``noise_variance`` is zero (see the module docstring).
    """
    Z = tf.convert_to_tensor(Z)
    Z_fixed = tf.stop_gradient(Z)
    V_fixed = tf.stop_gradient(tf.convert_to_tensor(V, dtype=Z.dtype))
    alpha_fixed = tf.stop_gradient(_as_scalar_like(noise_variance, Z))
    value = lowrank_gaussian_nll(Z_fixed, V_fixed, alpha_fixed)
    coefficients = lowrank_nll_gradient(Z_fixed, V_fixed, alpha_fixed)
    return tf.stop_gradient(value) + taylor_linear_term(Z - Z_fixed, coefficients)


@check_shapes(
    "Z: [B, L]",
    "coefficients: [B, L]",
    "return: []",
)
def taylor_linear_term(Z: TensorType, coefficients: TensorType) -> tf.Tensor:
    """``sum(stop_gradient(coefficients) * Z)``, the linear Taylor term of a minibatch: with the
    minibatch's rows of :func:`lowrank_nll_gradient` at the expansion point, its gradient
    w.r.t. ``Z`` is exactly those coefficients."""
    Z = tf.convert_to_tensor(Z)
    coefficients = tf.stop_gradient(tf.convert_to_tensor(coefficients, dtype=Z.dtype))
    return tf.reduce_sum(coefficients * Z)


@check_shapes(
    "Z: [N, L]",
    "V: [N, H]",
    "noise_variance: []",
    "return: []",
)
def gp_term_for_hyperparameters(Z: TensorType, V: TensorType, noise_variance: TensorType) -> tf.Tensor:
    """``lowrank_gaussian_nll(stop_gradient(Z), V, noise_variance)``: the exact NLL as a loss
    for the GP parameters with the latents held fixed (no gradient into ``Z``)."""
    Z = tf.stop_gradient(tf.convert_to_tensor(Z))
    return lowrank_gaussian_nll(Z, V, noise_variance)
