"""Kernels for the SVGP-VAE experiments on object/view data.

* :class:`CosineLinear` -- a cosine-normalised linear kernel (the building block
  of the SPRITES kernel of the paper's experiments);
* :class:`PeriodicLinear` (also named ``periodic_linear_kernel``) -- periodic kernel on a view
  angle times a linear kernel on object vectors (rotated MNIST, protocol of Casale et al. 2018);
* :class:`Cauchy` -- the Cauchy kernel of the GP-VAE (Fortuin et al., 2020);
* :func:`log_spaced_lengthscales` -- one kernel per latent channel, lengthscales spread
  log-evenly (slow and fast latent paths side by side).

All kernels are ordinary GPflow kernels: their parameters are
:class:`gpflow.Parameter` objects in :func:`gpflow.default_float` with positive
transforms, they honour ``active_dims`` and they work with
:mod:`gpflow.covariances` (``Kuu`` / ``Kuf``) and :mod:`gpflow.conditionals`.
"""

from typing import Optional

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow.base import Parameter, TensorType
from gpflow.kernels.base import ActiveDims, Kernel
from gpflow.utilities import positive

__all__ = [
    "check_input_dim",
    "Cauchy",
    "log_spaced_lengthscales",
    "CosineLinear",
    "PeriodicLinear",
    "periodic_linear_kernel",
]


class CosineLinear(Kernel):
    r"""The cosine-normalised linear kernel. The kernel equation is

    .. math::
        k(\mathbf{x}, \mathbf{x}') = \sigma^2
            \frac{\mathbf{x}^\top \mathbf{x}'}{\lVert\mathbf{x}\rVert\,\lVert\mathbf{x}'\rVert}
            = \sigma^2 \cos\angle(\mathbf{x}, \mathbf{x}')

    where :math:`\sigma^2` is the variance parameter. It is the linear kernel
    applied to the inputs projected onto the unit sphere, so it only sees the
    *direction* of the inputs: :math:`k(a\mathbf{x}, b\mathbf{x}') =
    k(\mathbf{x}, \mathbf{x}')` for all :math:`a, b > 0`, and
    :math:`k(\mathbf{x}, \mathbf{x}) = \sigma^2`. The Gram matrix is positive
    semi-definite with rank at most the number of active dimensions.

    Zero vectors. The norm is computed as
    :math:`\lVert\mathbf{x}\rVert_\epsilon = \sqrt{\mathbf{x}^\top\mathbf{x} + \epsilon^2}`,
    so a zero input maps to the zero vector (its row and column of :math:`K` are 0) instead
    of NaN, and gradients stay finite (at most :math:`1/\epsilon`). Elsewhere the relative
    error is :math:`\approx \epsilon^2 / (2\lVert\mathbf{x}\rVert^2)`, nil in float64 with
    the default :math:`\epsilon = 10^{-12}`.
    """

    def __init__(
        self,
        variance: TensorType = 1.0,
        active_dims: Optional[ActiveDims] = None,
        epsilon: float = 1e-12,
    ) -> None:
        """
        :param variance: the (initial) value of the (scalar) variance parameter
            :math:`\\sigma^2`, which is also the value of every diagonal entry.
        :param active_dims: a slice or list specifying which columns of X are used.
        :param epsilon: the regulariser of the norm (see the class docstring);
            must be positive.
        """
        super().__init__(active_dims)
        if not epsilon > 0.0:
            raise ValueError(f"CosineLinear: epsilon must be positive, got {epsilon}.")
        self.variance = Parameter(variance, transform=positive())
        if self.variance.shape.ndims != 0:
            raise ValueError(
                "CosineLinear: variance must be a scalar (ARD weights would be cancelled "
                f"by the normalisation only partly and are not supported); got shape "
                f"{self.variance.shape}."
            )
        self.epsilon = epsilon

    def normalise(self, X: TensorType) -> tf.Tensor:
        """Inputs ``[batch..., N, D]`` (after ``active_dims``) projected onto the unit sphere,
        :math:`\\mathbf{x} / \\lVert\\mathbf{x}\\rVert_\\epsilon`, of the same shape."""
        X = tf.convert_to_tensor(X)
        eps2 = tf.cast(self.epsilon, X.dtype) ** 2
        sq_norm = tf.reduce_sum(tf.square(X), axis=-1, keepdims=True)  # [batch..., N, 1]
        return X * tf.math.rsqrt(sq_norm + eps2)  # [batch..., N, D]

    @inherit_check_shapes
    def K(self, X: TensorType, X2: Optional[TensorType] = None) -> tf.Tensor:
        r""":math:`\sigma^2\,\hat x^\top \hat x'` of the normalised inputs, ``[batch..., N, N]``
        (``[batch..., N, batch2..., N2]`` with ``X2``)."""
        Xn = self.normalise(X)  # [batch..., N, D]
        if X2 is None:
            return self.variance * tf.matmul(Xn, Xn, transpose_b=True)  # [batch..., N, N]
        X2n = self.normalise(X2)  # [batch2..., N2, D]
        return self.variance * tf.tensordot(Xn, X2n, [[-1], [-1]])  # [batch..., N, batch2..., N2]

    @inherit_check_shapes
    def K_diag(self, X: TensorType) -> tf.Tensor:
        r""":math:`\sigma^2\,\hat x^\top \hat x`, ``[batch..., N]``."""
        # Equal to the diagonal of K(X) (== variance except for zero vectors).
        Xn = self.normalise(X)
        return self.variance * tf.reduce_sum(tf.square(Xn), axis=-1)  # [batch..., N]


def _as_active_dims(dims: ActiveDims) -> ActiveDims:
    """Accept a slice, a list, a tuple or an array of column indices."""
    if isinstance(dims, slice):
        return dims
    return [int(d) for d in np.atleast_1d(np.asarray(dims))]


class PeriodicLinear(gpflow.kernels.Product):
    r"""The rotated-MNIST kernel (Casale et al. 2018; Jazbec et al. 2021): a
    periodic squared-exponential kernel on the view angle times a linear kernel
    on the object vector,

    .. math::
        k(\mathbf{x}, \mathbf{x}') = \sigma^2
            \exp\left(-\frac{1}{2}\,\frac{\sin^2(\pi (a - a') / p)}{\ell^2}\right)
            \cdot \sigma_{\mathrm{lin}}^2\, \mathbf{o}^\top \mathbf{o}',

    where :math:`a` = ``x[angle_dims]`` (in radians for the default period, one
    column; with several angle columns the squared sines are summed),
    :math:`\mathbf{o}` = ``x[object_dims]``, :math:`p` the period,
    :math:`\ell` the lengthscale, :math:`\sigma^2` the periodic variance and
    :math:`\sigma_{\mathrm{lin}}^2` the linear variance.

    A :class:`gpflow.kernels.Product` ``[Periodic(SquaredExponential(active_dims=angle_dims),
    period), Linear(active_dims=object_dims)]``: it is evaluated exactly as that product, and
    its own ``Kuu``/``Kuf`` (:mod:`gpflow_svgpvae.covariances`, registered through GPflow's
    dispatch for this class only) compute the same formulas in fewer operations. The period is fixed (non-trainable) at
    ``period`` (2 pi: a full turn). :math:`\sigma^2` and :math:`\sigma_{\mathrm{lin}}^2`
    only enter as a product (and the object vectors, if learned, can absorb
    either), so :math:`\sigma_{\mathrm{lin}}^2` is non-trainable; the
    lengthscale and :math:`\sigma^2` are trainable.

    Lengthscale convention. TFP's ``ExpSinSquared`` (used by the SVGP-VAE research code) is
    :math:`\exp(-2 \sin^2(\pi r/p)/\ell_{\mathrm{TFP}}^2)`: halve a TFP lengthscale,
    :math:`\ell = \ell_{\mathrm{TFP}} / 2`, before passing it here.

    :param angle_dims: the column(s) of X with the view angle.
    :param object_dims: the columns of X with the object vector.
    :param period: the (fixed) period :math:`p`.
    :param lengthscales: initial GPflow lengthscale :math:`\ell`.
    :param variance: initial value of :math:`\sigma^2` (trainable).
    :param linear_variance: value of :math:`\sigma_{\mathrm{lin}}^2` (non-trainable).
    """

    def __init__(
        self,
        angle_dims: ActiveDims = (0,),
        object_dims: ActiveDims = slice(1, None),
        period: float = 2.0 * np.pi,
        lengthscales: float = 1.0,
        variance: float = 1.0,
        linear_variance: float = 1.0,
        name: Optional[str] = None,
    ):
        base = gpflow.kernels.SquaredExponential(
            variance=variance, lengthscales=lengthscales, active_dims=_as_active_dims(angle_dims)
        )
        periodic = gpflow.kernels.Periodic(base, period=period)
        gpflow.set_trainable(periodic.period, False)
        linear = gpflow.kernels.Linear(variance=linear_variance, active_dims=_as_active_dims(object_dims))
        gpflow.set_trainable(linear.variance, False)
        super().__init__([periodic, linear], name=name)

    @property
    def periodic(self) -> gpflow.kernels.Periodic:
        """The periodic factor on the view angle."""
        return self.kernels[0]

    @property
    def linear(self) -> gpflow.kernels.Linear:
        """The linear factor on the object vector."""
        return self.kernels[1]


#: The rotated-MNIST kernel: another name of :class:`PeriodicLinear` (the same arguments).
periodic_linear_kernel = PeriodicLinear


class Cauchy(gpflow.kernels.IsotropicStationary):
    r"""The Cauchy kernel (the GP-VAE's kernel, Fortuin et al. 2020). The kernel equation is

    .. math::
        k(r) = \frac{\sigma^2}{1 + r^2 / \ell^2},

    where :math:`r = \lVert\mathbf{x} - \mathbf{x}'\rVert` is the Euclidean distance
    between the inputs, :math:`\ell` the lengthscale (one per input dimension for
    ARD: :math:`r^2/\ell^2 = \sum_d (x_d - x'_d)^2/\ell_d^2`) and :math:`\sigma^2` the
    variance. Its tails decay polynomially (:math:`\propto r^{-2}`), so distant inputs
    stay correlated much longer than under the squared exponential.

    It is GPflow's ``RationalQuadratic(alpha=1, lengthscales=ell / sqrt(2))`` with the
    exponent fixed at 1, and accepts inputs with leading batch dimensions
    (``[V, T, D] -> [V, T, T]``).

    :param variance: the (initial) variance :math:`\sigma^2` (positive).
    :param lengthscales: the (initial) lengthscale(s) :math:`\ell` (positive; a vector
        for ARD).
    :param active_dims: a slice or list of the columns of X that are used.
    """

    @inherit_check_shapes
    def K_r2(self, r2: TensorType) -> tf.Tensor:
        r""":math:`\sigma^2 / (1 + r^2)` of the squared scaled distances ``r2`` (any shape)."""
        # r2 is the squared distance already scaled by the lengthscales: r^2 / l^2.
        return self.variance / (1.0 + r2)


def log_spaced_lengthscales(
    kernel_class, num_latent_gps: int, shortest: float, longest: float, **kernel_args
) -> gpflow.kernels.SeparateIndependent:
    r"""One kernel per latent channel, :math:`k_l` = ``kernel_class(lengthscales=`` :math:`\ell_l` ``)``
    with :math:`\ell_l = \ell_{\min}(\ell_{\max}/\ell_{\min})^{(l-1)/(L-1)}`, as a GPflow
    ``SeparateIndependent`` kernel: latent paths that vary at several time scales from the start.

    :param kernel_class: a stationary GPflow kernel class, e.g. ``gpflow.kernels.Matern52``.
    :param num_latent_gps: :math:`L`.
    :param shortest: :math:`\ell_{\min} > 0` (e.g. the inputs' spacing).
    :param longest: :math:`\ell_{\max} \ge \ell_{\min}`.
    :param kernel_args: other arguments of every kernel (``variance``, ``active_dims``).
    """
    if isinstance(num_latent_gps, bool) or int(num_latent_gps) != num_latent_gps or num_latent_gps < 1:
        raise ValueError(f"num_latent_gps must be a positive whole number; got {num_latent_gps!r}")
    if not 0 < shortest <= longest < np.inf:
        raise ValueError(f"lengthscales need 0 < shortest <= longest; got shortest={shortest}, longest={longest}")
    lengthscales = np.geomspace(shortest, longest, int(num_latent_gps))
    return gpflow.kernels.SeparateIndependent(
        [kernel_class(lengthscales=float(ell), **kernel_args) for ell in lengthscales]
    )


def _component_kernels(kernel: Kernel):
    """The kernels inside ``kernel`` (itself, sums/products, multi-output wrappers, Periodic's base)."""
    children = list(getattr(kernel, "latent_kernels", None) or [])  # SharedIndependent, SeparateIndependent
    if not children and isinstance(kernel, gpflow.kernels.Combination):
        children = list(kernel.kernels)
    if isinstance(kernel, gpflow.kernels.Periodic):
        children = [kernel.base_kernel]
    yield kernel
    for child in children:
        yield from _component_kernels(child)


def check_input_dim(kernel: Kernel, input_dim: Optional[int]) -> None:
    """Check that ``kernel`` can take GP inputs of width ``input_dim`` (the inducing inputs' columns).

    For every component kernel: its ``active_dims`` must lie inside ``[0, input_dim)``, and an
    ARD parameter (``lengthscales``, or ``variance`` of ``Linear``/``Polynomial``) with more than
    one entry must have one entry per selected input dimension. GPflow itself would accept the
    model and fail (or broadcast) only at the first evaluation.

    :raises ValueError: naming the kernel, the parameter and both widths.
    """
    if input_dim is None:
        return
    input_dim = int(input_dim)
    for component in _component_kernels(kernel):
        dims = getattr(component, "active_dims", None)
        if dims is None or isinstance(component, gpflow.kernels.MultioutputKernel):
            continue
        name = type(component).__name__
        if isinstance(dims, slice):
            selected = len(range(input_dim)[dims])
        else:
            dims = np.asarray(dims).ravel()
            if dims.size and (dims.max() >= input_dim or dims.min() < -input_dim):
                raise ValueError(
                    f"{name} has active_dims {dims.tolist()} but the GP inputs (inducing inputs) have only "
                    f"{input_dim} columns."
                )
            selected = int(dims.size)
        for parameter in ("lengthscales", "variance"):
            if parameter == "variance" and not isinstance(component, gpflow.kernels.Linear):
                continue  # only Linear/Polynomial carry an ARD variance
            value = getattr(component, parameter, None)
            shape = getattr(value, "shape", None)
            if shape is None or len(shape) != 1 or int(shape[0]) <= 1:
                continue
            if int(shape[0]) != selected:
                raise ValueError(
                    f"{name} has {int(shape[0])} {parameter} (one per input dimension) but it sees {selected} "
                    f"input dimension(s): the GP inputs (inducing inputs) have {input_dim} columns"
                    + ("" if isinstance(dims, slice) else f" and its active_dims are {dims.tolist()}")
                    + f". Give it {selected} {parameter}, set its active_dims, or check the inducing inputs."
                )
