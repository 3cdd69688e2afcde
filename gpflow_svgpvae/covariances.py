r"""``Kuu`` and ``Kuf`` of :class:`~gpflow_svgpvae.kernels.PeriodicLinear`, through GPflow's dispatch.

GPflow computes ``Kuu`` and ``Kuf`` of a product with the generic kernel call, many
operations per factor; in an SVGP-VAE training step (overhead-bound on a CPU) they are a
large part of the graph. The functions here compute exactly GPflow's formulas, in the
same order, in a handful of operations:

.. math::

    k(x, x') = \sigma^2 \exp\Big(-\tfrac12 \sum_d \frac{\sin^2(\pi (a_d - a'_d) / p_d)}{\ell_d^2}\Big)
        \cdot \sigma_{\mathrm{lin}}^2\, o^\top o'.

They are registered for ``(InducingPoints, PeriodicLinear)`` only (multiple dispatch, the way
GPflow extends itself), so every other kernel, products included, keeps GPflow's own path;
they equal it to float64 round-off (tested to 1e-12, values and gradients).
"""

import numpy as np
import tensorflow as tf
from gpflow import covariances
from gpflow.base import TensorLike, TensorType
from gpflow.inducing_variables import InducingPoints

from .kernels import PeriodicLinear

__all__: list = []  # nothing to call: importing the module registers the covariances


def _periodic_linear_cross(kernel: PeriodicLinear, Z: tf.Tensor, X: tf.Tensor) -> tf.Tensor:
    """``K(Z, X)`` ``[M, N]`` of inputs ``Z [M, D]``, ``X [N, D]``, each parameter read once."""
    periodic, linear = kernel.periodic, kernel.linear
    base = periodic.base_kernel
    Za, Xa = periodic.slice(Z, X)  # the angle columns
    # GPflow: r = pi * (X - X2^T) / period; K_r2(sum((sin(r) / l)^2)) = variance * exp(-r2 / 2).
    r = np.pi * (Za[:, None, :] - Xa[None, :, :]) / tf.convert_to_tensor(periodic.period)
    sine_r2 = tf.reduce_sum(tf.square(tf.sin(r) / tf.convert_to_tensor(base.lengthscales)), -1)
    K_periodic = tf.convert_to_tensor(base.variance) * tf.exp(-0.5 * sine_r2)
    Zo, Xo = linear.slice(Z, X)  # the object columns
    # GPflow: tf.tensordot(X * variance, X2, [[-1], [-1]]), a MatMul of the same operands.
    K_linear = tf.linalg.matmul(Zo * tf.convert_to_tensor(linear.variance), Xo, transpose_b=True)
    return K_periodic * K_linear  # GPflow's Product: the factors multiplied left to right


@covariances.Kuu.register(InducingPoints, PeriodicLinear)
def _Kuu_periodic_linear(
    inducing_variable: InducingPoints, kernel: PeriodicLinear, *, jitter: float = 0.0
) -> tf.Tensor:
    """:math:`K_{mm} + \\text{jitter}\\,I`, ``[M, M]``."""
    Z = tf.convert_to_tensor(inducing_variable.Z)
    K = _periodic_linear_cross(kernel, Z, Z)
    return K + jitter * tf.eye(tf.shape(K)[-1], dtype=K.dtype)


@covariances.Kuf.register(InducingPoints, PeriodicLinear, TensorLike)
def _Kuf_periodic_linear(inducing_variable: InducingPoints, kernel: PeriodicLinear, Xnew: TensorType) -> tf.Tensor:
    """:math:`K_{mb}`, ``[M, batch..., N]`` for ``Xnew [batch..., N, D]`` (GPflow's layout)."""
    Z = tf.convert_to_tensor(inducing_variable.Z)
    Xnew = tf.convert_to_tensor(Xnew)
    if Xnew.shape.rank == 2:
        return _periodic_linear_cross(kernel, Z, Xnew)
    K = _periodic_linear_cross(kernel, Z, tf.reshape(Xnew, [-1, tf.shape(Xnew)[-1]]))
    return tf.reshape(K, tf.concat([tf.shape(K)[:1], tf.shape(Xnew)[:-1]], 0))
