r"""Fast inducing-point covariances for common product kernels, through GPflow's own dispatch.

GPflow computes ``Kuu(InducingPoints, kernel)`` and ``Kuf(InducingPoints, kernel, X)``
with the generic kernel call: for a :class:`gpflow.kernels.Product` every factor
slices its active dimensions, builds a difference matrix with reshapes (or a
``tensordot``), and reads (transforms) its parameters, once per call. In a
training step of the SVGP-VAE these covariances are a large part of the graph
(the step is overhead-bound, not FLOP-bound). This module registers, for
``InducingPoints`` and a ``Product`` whose factors are all

* :class:`gpflow.kernels.Periodic` with a :class:`gpflow.kernels.SquaredExponential`
  base kernel (the rotated-MNIST view kernel), or
* :class:`gpflow.kernels.Linear` (the object-vector kernel),

implementations in a handful of operations that compute exactly GPflow's
formulas in the same order (equal to the generic path to float64 round-off;
tested to 1e-12): the registration uses :data:`gpflow.covariances.Kuu` /
:data:`gpflow.covariances.Kuf` (multiple dispatch, the way GPflow extends
itself), so GPflow's own models and conditionals use it too. Any other
product falls back to GPflow's generic path unchanged.

:func:`prior_covariances` returns :math:`K_{mm}` (with jitter), :math:`K_{mb}`
and the prior marginal variances :math:`k(x_i, x_i)` of a batch together: for the
kernels above it evaluates the factors once on ``[Z; X]`` (reading every
parameter once), otherwise it calls ``Kuu``, ``Kuf`` and the kernel's diagonal.
"""

from typing import List, Optional, Tuple

import numpy as np
import tensorflow as tf
from gpflow import covariances as gpflow_covariances
from gpflow.base import TensorLike
from gpflow.inducing_variables import InducingPoints
from gpflow.kernels import Kernel, Linear, MultioutputKernel, Periodic, Product, SquaredExponential

__all__ = ["is_fast_product", "product_factors", "prior_covariances"]


def _fast_factor(kernel: Kernel) -> bool:
    if type(kernel) is Linear:  # subclasses (Polynomial, ...) have other formulas
        return True
    return type(kernel) is Periodic and type(kernel.base_kernel) is SquaredExponential


def is_fast_product(kernel: Kernel) -> bool:
    """Whether ``kernel`` is a ``Product`` (not a subclass) of factors with a fast path."""
    return type(kernel) is Product and all(_fast_factor(k) for k in kernel.kernels)


def _slice(kernel: Kernel, X: tf.Tensor) -> tf.Tensor:
    return kernel.slice(X, None)[0]


class _FactorParameters:
    """One read (transform) of a factor's parameters, reused for all blocks of a step."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        if isinstance(kernel, Linear):
            self.variance = kernel.variance
        else:
            base = kernel.base_kernel
            self.period = kernel.period
            self.lengthscales = base.lengthscales
            self.variance = base.variance
        # Read each parameter once (a Parameter's value is its bijector applied to a variable).
        for name in ("variance", "period", "lengthscales"):
            if hasattr(self, name):
                setattr(self, name, tf.convert_to_tensor(getattr(self, name)))

    def cross(self, Z: tf.Tensor, X: tf.Tensor) -> tf.Tensor:
        """The factor's ``K(Z, X)`` ``[M, N]`` of *sliced* inputs, GPflow's formula and order."""
        if isinstance(self.kernel, Linear):
            # GPflow: tf.tensordot(X * variance, X2, [[-1], [-1]]) (a MatMul of the same operands).
            return tf.linalg.matmul(Z * self.variance, X, transpose_b=True)
        # GPflow: r = pi * (X - X2^T) / period; K_r2(sum((sin(r) / l)^2)) = variance * exp(-r2 / 2).
        r = np.pi * (Z[:, None, :] - X[None, :, :]) / self.period
        scaled_sine = tf.sin(r) / self.lengthscales
        sine_r2 = tf.reduce_sum(tf.square(scaled_sine), -1)
        return self.variance * tf.exp(-0.5 * sine_r2)

    def diag(self, X: tf.Tensor) -> tf.Tensor:
        """The factor's ``K_diag`` ``[N]`` of sliced inputs."""
        if isinstance(self.kernel, Linear):
            return tf.reduce_sum(tf.square(X) * self.variance, axis=-1)
        return tf.fill(tf.shape(X)[:-1], tf.squeeze(self.variance))


def product_factors(kernel: Product) -> List[_FactorParameters]:
    """The factors of a fast product with their parameters read once."""
    return [_FactorParameters(k) for k in kernel.kernels]


def _product(values: List[tf.Tensor]) -> tf.Tensor:
    out = values[0]
    for v in values[1:]:  # GPflow: functools.reduce(tf.multiply, ...), left to right
        out = out * v
    return out


def _cross(factors: List[_FactorParameters], Z: tf.Tensor, X: tf.Tensor) -> tf.Tensor:
    return _product([f.cross(_slice(f.kernel, Z), _slice(f.kernel, X)) for f in factors])


def _add_jitter(Kzz: tf.Tensor, jitter) -> tf.Tensor:
    return Kzz + jitter * tf.eye(tf.shape(Kzz)[-1], dtype=Kzz.dtype)


@gpflow_covariances.Kuu.register(InducingPoints, Product)
def Kuu_product_inducingpoints(inducing_variable: InducingPoints, kernel: Product, *, jitter: float = 0.0):
    """``Kuu`` of a fast product (see the module docstring); GPflow's generic path otherwise."""
    if not is_fast_product(kernel):
        return gpflow_covariances.Kuu.dispatch(InducingPoints, Kernel)(inducing_variable, kernel, jitter=jitter)
    Z = inducing_variable.Z
    factors = product_factors(kernel)
    return _add_jitter(_product([f.cross(Zf, Zf) for f in factors for Zf in [_slice(f.kernel, Z)]]), jitter)


@gpflow_covariances.Kuf.register(InducingPoints, Product, TensorLike)
def Kuf_product_inducingpoints(inducing_variable: InducingPoints, kernel: Product, Xnew):
    """``Kuf`` ``[M, batch..., N]`` of a fast product; GPflow's generic path otherwise."""
    if not is_fast_product(kernel):
        return gpflow_covariances.Kuf.dispatch(InducingPoints, Kernel, object)(inducing_variable, kernel, Xnew)
    Xnew = tf.convert_to_tensor(Xnew)
    if Xnew.shape.rank != 2:
        flat = tf.reshape(Xnew, [-1, tf.shape(Xnew)[-1]])
        K = _cross(product_factors(kernel), inducing_variable.Z, flat)
        return tf.reshape(K, tf.concat([tf.shape(K)[:1], tf.shape(Xnew)[:-1]], 0))
    return _cross(product_factors(kernel), inducing_variable.Z, Xnew)


def prior_covariances(
    inducing_variable, kernel: Kernel, X: tf.Tensor, jitter
) -> Optional[Tuple[tf.Tensor, tf.Tensor, tf.Tensor]]:
    r"""``(Kmm + jitter I [M, M], Kmb [M, N], k(x_i, x_i) [N])`` for inputs ``X [N, D]`` in one
    evaluation of the factors on ``[Z; X]``, when ``inducing_variable`` is ``InducingPoints``
    and ``kernel`` a fast product (:func:`is_fast_product`); ``None`` otherwise (use
    GPflow's ``Kuu``/``Kuf``/kernel diagonal).

    Equal to GPflow's ``Kuu``, ``Kuf`` and ``kernel(X, full_cov=False)`` (same formulas, same
    order of operations; the factors' ``K(Z, Z)`` equals their ``K(Z)``).
    """
    if type(inducing_variable) is not InducingPoints or isinstance(kernel, MultioutputKernel):
        return None
    if not is_fast_product(kernel):
        return None
    Z = tf.convert_to_tensor(inducing_variable.Z)
    X = tf.convert_to_tensor(X)
    M = tf.shape(Z)[0]
    factors = product_factors(kernel)
    joint = _cross(factors, Z, tf.concat([Z, tf.cast(X, Z.dtype)], axis=0))  # [M, M + N]
    Kmm = _add_jitter(joint[:, :M], jitter)
    Kmb = joint[:, M:]
    diag = _product([f.diag(_slice(f.kernel, X)) for f in factors])
    return Kmm, Kmb, diag
