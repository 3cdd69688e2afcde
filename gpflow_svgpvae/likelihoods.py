r"""Decoder likelihoods :math:`p_\psi(y \mid z)` on the decoder's output.

GPflow's likelihoods model :math:`p(y \mid f)` for a GP value :math:`f`; here the
"function value" is the decoder output :math:`f = g_\psi(z)` (a mean image or
pre-link values), one per pixel, and the log density of an observation
:math:`y_i \in \mathbb R^K` is summed over its :math:`K` pixels:

.. math::

    \log p(y_i \mid z_i) = \sum_{k=1}^{K} \log p(y_{ik} \mid f_{ik}).

Every decoder likelihood is a :class:`DecoderLikelihood` with
``log_prob(Y, params, mask=None) -> [b]`` (the sum above, in ``gpflow.default_float()``;
with a ``mask`` of ``Y``'s shape, 1 = observed, 0 = missing, the sum over the observed
pixels only, for every likelihood below including the GPflow adapters),
``mean(params)`` (:math:`E[y \mid z]`, same shape as ``params``) and
``sample(params, seed)`` (one stateless draw per pixel).

The package's own likelihoods
------------------------------

* :class:`Gaussian`: :math:`y_{ik} \sim \mathcal N(f_{ik}, \sigma_y^2)`,

  .. math:: \log p(y \mid f) = -\tfrac12\bigl(\log 2\pi + \log\sigma_y^2 + (y - f)^2 / \sigma_y^2\bigr),

  with :math:`\sigma_y^2` a positive GPflow :class:`~gpflow.Parameter`
  (fixed by default), so ``set_trainable`` and ``print_summary`` work as usual.
* :class:`Bernoulli`: :math:`y_{ik} \sim \mathrm{Bernoulli}(\sigma(f_{ik}))` on logits,

  .. math:: \log p(y \mid f) = y \log\sigma(f) + (1 - y)\log\sigma(-f).

GPflow likelihoods
------------------

:func:`as_likelihood` (and so every model's ``likelihood`` argument) also takes
the GPflow likelihoods that have a closed-form per-pixel log density given the
decoder output alone, and wraps them in a thin adapter that holds the GPflow
object itself as a tracked attribute (its Parameters are the model's
Parameters: ``gpflow.set_trainable(gpflow_likelihood, ...)``, transforms,
lower bounds, ``print_summary`` and checkpoints all act on them):

* ``gpflow.likelihoods.Gaussian`` with a constant scalar ``variance`` (or
  ``scale``, :math:`\sigma_y^2 = \text{scale}^2`) -> :class:`GPflowGaussian`,
  the Gaussian density above with :math:`\sigma_y^2` read from the GPflow
  Parameter at every call.
* ``gpflow.likelihoods.Bernoulli`` -> :class:`GPflowBernoulli`. The decoder
  output is the pre-link value :math:`f` and :math:`p = \Phi_{\text{link}}(f)`:

  - ``invlink=tf.sigmoid`` (logistic):
    :math:`\log p(y \mid f) = y\log\sigma(f) + (1-y)\log\sigma(-f)`, computed as
    ``-sigmoid_cross_entropy_with_logits`` (stable for large :math:`|f|`);
  - the default ``invlink=inv_probit`` (probit):
    :math:`\log p(y \mid f) = y\log\Phi(f) + (1-y)\log\Phi(-f)` with
    :math:`\log\Phi` from TFP's ``log_ndtr`` (stable for large :math:`|f|`),
    and mean :math:`\Phi(f) = \tfrac12\operatorname{erfc}(-f/\sqrt2)`.
    This is the exact probit link: GPflow's ``inv_probit`` squeezes
    :math:`\Phi` into :math:`[10^{-3}, 1 - 10^{-3}]` only so that its own
    :math:`\log p` stays finite, which the :math:`\log\Phi` form does not need
    (the two differ by at most :math:`10^{-3}` in :math:`p`).

For targets in :math:`[0, 1]` that are not binary (grey pixels) the Bernoulli
terms are the usual cross-entropy reconstruction, not a normalised density.

Any other GPflow likelihood (``StudentT``, ``Poisson``, a ``Gaussian`` whose
variance is a function of the GP inputs, multi-latent likelihoods, a
``Bernoulli`` with another link, ...) raises a :class:`TypeError` saying why;
subclass :class:`DecoderLikelihood` (``_pixel_log_prob``, ``mean``,
``sample``) to use other densities.
"""

import abc
from typing import Optional, Union

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from gpflow.likelihoods.utils import inv_probit
from gpflow.utilities import positive

from .numerics import numerical_checks

__all__ = [
    "DecoderLikelihood",
    "Gaussian",
    "Bernoulli",
    "GPflowGaussian",
    "GPflowBernoulli",
    "as_likelihood",
]

_SUPPORTED = (
    "a gpflow_svgpvae.likelihoods.DecoderLikelihood (Gaussian, Bernoulli), one of 'gaussian', "
    "'bernoulli', gpflow.likelihoods.Gaussian (constant scalar variance) or "
    "gpflow.likelihoods.Bernoulli (invlink=tf.sigmoid or the default inv_probit)"
)
_REQUIREMENT = (
    "a decoder likelihood needs a closed-form per-pixel log density log p(y | f) given the "
    "decoder output f alone (plus its mean and a sampler)"
)


def _check_width(params: tf.Tensor, Y: tf.Tensor) -> tf.Tensor:
    """Decoder outputs ``[b, K']`` against observations ``[b, K]``: ``K' == K``. Without this a
    decoder with one output unit would broadcast against every pixel and train silently. Checked
    statically when both widths are known, else at run time (Keras retraces with relaxed shapes)."""
    params, Y = tf.convert_to_tensor(params), tf.convert_to_tensor(Y)
    widths = []
    for tensor in (params, Y):  # entries per point of [b, ...], when static
        dims = tensor.shape[1:] if tensor.shape.rank is not None else None
        widths.append(int(np.prod(dims.as_list())) if dims is not None and dims.is_fully_defined() else None)
    got, want = widths
    message = (
        "The decoder returned {} values per point but the observations have {} (the decoder's last layer "
        "needs one output per observed value, e.g. Dense({}) for flat data, or the observations' shape)."
    )
    if got is not None and want is not None:
        if int(got) != int(want):
            raise ValueError(message.format(int(got), int(want), int(want)))
        return params
    if not numerical_checks():
        return params
    check = tf.debugging.assert_equal(
        tf.reduce_prod(tf.shape(params)[1:]),
        tf.reduce_prod(tf.shape(Y)[1:]),
        message="The decoder returns a different number of values per point than the observations have (the "
        "decoder's last layer needs one output per observed value).",
    )
    with tf.control_dependencies([check]):
        return tf.identity(params)


def _gaussian_log_density(Y, mean, variance):
    return -0.5 * (np.log(2 * np.pi) + tf.math.log(variance) + tf.square(Y - mean) / variance)


def _probit_cdf(f):
    r""":math:`\Phi(f) = \tfrac12 \operatorname{erfc}(-f / \sqrt 2)` (accurate in the lower tail)."""
    return 0.5 * tf.math.erfc(-f / np.sqrt(2.0))


def _log_probit_cdf(f):
    r""":math:`\log\Phi(f)`, finite and accurate for large :math:`|f|` (TFP's ``log_ndtr``)."""
    standard_normal = tfp.distributions.Normal(tf.zeros([], f.dtype), tf.ones([], f.dtype))
    return standard_normal.log_cdf(f)


class DecoderLikelihood(gpflow.Module, abc.ABC):
    """Base class: a factorised density over the pixels of one observation."""

    @abc.abstractmethod
    def _pixel_log_prob(self, Y: tf.Tensor, params: tf.Tensor) -> tf.Tensor:
        """Elementwise log density, ``[b, K]``."""

    @abc.abstractmethod
    def mean(self, params: tf.Tensor) -> tf.Tensor:
        """:math:`E[y \\mid z]` given the decoder output, same shape as ``params``."""

    @abc.abstractmethod
    def sample(self, params: tf.Tensor, seed) -> tf.Tensor:
        """One draw of ``y`` per decoder output (``seed``: a stateless seed ``[2]``)."""

    def log_prob(self, Y: tf.Tensor, params: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
        r""":math:`\log p(y_i \mid z_i) = \sum_k \log p(y_{ik} \mid \text{params}_{ik})`, shape ``[b]``.

        :param mask: optional, ``Y``'s shape, 1 = observed, 0 = missing: the sum runs over
            the observed entries only, :math:`\sum_k m_{ik}\log p(y_{ik}\mid\cdot)` (a point with
            nothing observed gives 0). The missing entries of ``Y`` are never read (they may
            hold any value, even NaN), and neither value nor gradient depends on them. A mask
            of ones gives exactly the unmasked numbers.
        """
        dtype = gpflow.default_float()
        params = _check_width(tf.cast(params, dtype), Y)
        params = tf.reshape(params, [tf.shape(params)[0], -1])  # [b, K]
        Y = tf.reshape(tf.cast(Y, dtype), [tf.shape(Y)[0], -1])
        if mask is None:
            return tf.reduce_sum(self._pixel_log_prob(Y, params), axis=-1)
        observed = tf.reshape(tf.cast(mask, dtype), [tf.shape(Y)[0], -1]) > 0
        Y = tf.where(observed, Y, tf.zeros_like(Y))  # a NaN at a missing entry never reaches a gradient
        pixel = self._pixel_log_prob(Y, params)
        return tf.reduce_sum(tf.where(observed, pixel, tf.zeros_like(pixel)), axis=-1)


class Gaussian(DecoderLikelihood):
    r""":math:`y_{ik} \sim \mathcal N(\hat y_{ik}, \sigma_y^2)`, decoder output = mean.

    :param variance: :math:`\sigma_y^2`.
    :param trainable: learn :math:`\sigma_y^2` (default: fixed, as in the paper).
    """

    def __init__(self, variance: float = 1.0, trainable: bool = False, variance_lower_bound=1e-6):
        super().__init__()
        if not variance > variance_lower_bound:
            raise ValueError(f"Gaussian decoder variance must be > {variance_lower_bound}, got {variance}")
        self.variance = gpflow.Parameter(variance, transform=positive(lower=variance_lower_bound), trainable=trainable)

    def _pixel_log_prob(self, Y, params):
        return _gaussian_log_density(Y, params, tf.cast(self.variance, Y.dtype))

    def mean(self, params):
        return params

    def sample(self, params, seed):
        noise = tf.random.stateless_normal(tf.shape(params), seed, dtype=params.dtype)
        return params + tf.sqrt(tf.cast(self.variance, params.dtype)) * noise


class Bernoulli(DecoderLikelihood):
    r""":math:`y_{ik} \sim \mathrm{Bernoulli}(\sigma(\ell_{ik}))`, decoder output = logits.

    The log density :math:`y\log\sigma(\ell) + (1-y)\log(1-\sigma(\ell))` is
    computed from the logits (stable for large :math:`|\ell|`). For targets in
    :math:`[0,1]` that are not binary (grey pixels) it is the usual
    cross-entropy reconstruction term, not a normalised density.
    """

    #: Observed targets must lie in this range (checked on whole arrays before training).
    target_range = (0.0, 1.0)

    def _pixel_log_prob(self, Y, params):
        return -tf.nn.sigmoid_cross_entropy_with_logits(labels=Y, logits=params)

    def mean(self, params):
        return tf.sigmoid(params)

    def sample(self, params, seed):
        uniform = tf.random.stateless_uniform(tf.shape(params), seed, dtype=params.dtype)
        return tf.cast(uniform < tf.sigmoid(params), params.dtype)


# --------------------------------------------------------------------------- GPflow adapters


def _overrides(likelihood, base, names) -> bool:
    return any(getattr(type(likelihood), name) is not getattr(base, name) for name in names)


def _gaussian_noise_parameter(likelihood: gpflow.likelihoods.Gaussian):
    """The constant noise Parameter (``variance`` or ``scale``) of a GPflow Gaussian, or ``TypeError``."""
    name = "variance" if likelihood.variance is not None else "scale"
    value = getattr(likelihood, name)
    if isinstance(value, gpflow.functions.Function):
        raise TypeError(
            f"gpflow.likelihoods.Gaussian with {name}={type(value).__name__}(...) does not fit as a "
            f"decoder likelihood: its {name} is a function of the GP inputs X, which the decoder "
            f"likelihood never sees; {_REQUIREMENT}. Use a constant {name} (e.g. "
            f"gpflow.likelihoods.Gaussian(variance=0.1)). Supported: {_SUPPORTED}."
        )
    if int(np.prod(value.shape)) != 1:
        raise TypeError(
            f"gpflow.likelihoods.Gaussian with a {name} of shape {list(value.shape)} does not fit "
            f"as a decoder likelihood: the decoder noise variance must be one scalar shared by all "
            f"pixels. Supported: {_SUPPORTED}."
        )
    return name, value


class GPflowGaussian(DecoderLikelihood):
    r"""A ``gpflow.likelihoods.Gaussian`` as a decoder likelihood: :math:`y_{ik} \sim \mathcal N(f_{ik}, \sigma_y^2)`.

    The GPflow likelihood is kept as the tracked attribute ``gpflow_likelihood``
    and :math:`\sigma_y^2` is read from its own ``variance`` Parameter (or
    ``scale**2``) at every call, so that very Parameter is what the model
    trains, checkpoints and ``set_trainable`` switches. The density is the same
    as :class:`Gaussian`'s. Note that GPflow's variance is trainable by default
    (the package's :class:`Gaussian` is fixed by default); use
    ``gpflow.set_trainable(likelihood, False)`` to fix it.

    :param likelihood: a ``gpflow.likelihoods.Gaussian`` with a constant scalar variance/scale.
    :raises TypeError: for a variance that is a function of ``X``, or not scalar.
    """

    def __init__(self, likelihood: gpflow.likelihoods.Gaussian):
        super().__init__()
        if not isinstance(likelihood, gpflow.likelihoods.Gaussian):
            raise TypeError(f"GPflowGaussian wraps a gpflow.likelihoods.Gaussian; got {likelihood!r}")
        if _overrides(likelihood, gpflow.likelihoods.Gaussian, ("_scalar_log_prob", "_variance")):
            raise TypeError(
                f"{type(likelihood).__name__} subclasses gpflow.likelihoods.Gaussian but overrides its "
                f"density; {_REQUIREMENT}. Subclass gpflow_svgpvae.likelihoods.DecoderLikelihood instead."
            )
        _gaussian_noise_parameter(likelihood)
        self.gpflow_likelihood = likelihood

    @property
    def variance(self):
        r""":math:`\sigma_y^2`: the GPflow ``variance`` Parameter itself (or ``scale**2``)."""
        name, value = _gaussian_noise_parameter(self.gpflow_likelihood)
        return value if name == "variance" else tf.square(tf.convert_to_tensor(value))

    def _variance(self, dtype):
        return tf.reshape(tf.cast(self.variance, dtype), [])

    def _pixel_log_prob(self, Y, params):
        return _gaussian_log_density(Y, params, self._variance(Y.dtype))

    def mean(self, params):
        return params

    def sample(self, params, seed):
        noise = tf.random.stateless_normal(tf.shape(params), seed, dtype=params.dtype)
        return params + tf.sqrt(self._variance(params.dtype)) * noise


def _bernoulli_link(likelihood: gpflow.likelihoods.Bernoulli) -> str:
    invlink = likelihood.invlink
    if invlink is tf.math.sigmoid:  # also tf.sigmoid, tf.nn.sigmoid
        return "logistic"
    if invlink is inv_probit:
        return "probit"
    raise TypeError(
        f"gpflow.likelihoods.Bernoulli(invlink={getattr(invlink, '__name__', invlink)!r}) does not "
        f"fit as a decoder likelihood: only the logistic link (invlink=tf.sigmoid) and GPflow's "
        f"default probit link (gpflow.likelihoods.utils.inv_probit) have a stable closed-form "
        f"log p(y | f) here. Supported: {_SUPPORTED}."
    )


class GPflowBernoulli(DecoderLikelihood):
    r"""A ``gpflow.likelihoods.Bernoulli`` as a decoder likelihood, decoder output = pre-link :math:`f`.

    :math:`y_{ik} \sim \mathrm{Bernoulli}(p_{ik})`, :math:`p = \text{invlink}(f)`:

    * ``invlink=tf.sigmoid``: :math:`\log p(y\mid f) = y\log\sigma(f) + (1-y)\log\sigma(-f)`
      (the same numbers as :class:`Bernoulli`), mean :math:`\sigma(f)`;
    * ``invlink=inv_probit`` (GPflow's default): :math:`\log p(y\mid f) = y\log\Phi(f) +
      (1-y)\log\Phi(-f)` via TFP's ``log_ndtr``, mean :math:`\Phi(f)`; the exact probit,
      without the :math:`10^{-3}` squeeze of GPflow's ``inv_probit`` (see the module docstring).

    Both are finite for large :math:`|f|`. The link is read from
    ``gpflow_likelihood.invlink`` at every call.

    :param likelihood: a ``gpflow.likelihoods.Bernoulli`` with one of those two links.
    :raises TypeError: for any other ``invlink``.
    """

    #: Observed targets must lie in this range (checked on whole arrays before training).
    target_range = (0.0, 1.0)

    def __init__(self, likelihood: gpflow.likelihoods.Bernoulli):
        super().__init__()
        if not isinstance(likelihood, gpflow.likelihoods.Bernoulli):
            raise TypeError(f"GPflowBernoulli wraps a gpflow.likelihoods.Bernoulli; got {likelihood!r}")
        if _overrides(likelihood, gpflow.likelihoods.Bernoulli, ("_scalar_log_prob", "_conditional_mean")):
            raise TypeError(
                f"{type(likelihood).__name__} subclasses gpflow.likelihoods.Bernoulli but overrides its "
                f"density; {_REQUIREMENT}. Subclass gpflow_svgpvae.likelihoods.DecoderLikelihood instead."
            )
        _bernoulli_link(likelihood)
        self.gpflow_likelihood = likelihood

    @property
    def link(self) -> str:
        """``"logistic"`` or ``"probit"``."""
        return _bernoulli_link(self.gpflow_likelihood)

    def _pixel_log_prob(self, Y, params):
        if self.link == "logistic":
            return -tf.nn.sigmoid_cross_entropy_with_logits(labels=Y, logits=params)
        return Y * _log_probit_cdf(params) + (1.0 - Y) * _log_probit_cdf(-params)

    def mean(self, params):
        if self.link == "logistic":
            return tf.sigmoid(params)
        return _probit_cdf(params)

    def sample(self, params, seed):
        uniform = tf.random.stateless_uniform(tf.shape(params), seed, dtype=params.dtype)
        return tf.cast(uniform < self.mean(params), params.dtype)


def _from_gpflow(likelihood: gpflow.likelihoods.Likelihood) -> DecoderLikelihood:
    if isinstance(likelihood, gpflow.likelihoods.Gaussian):
        return GPflowGaussian(likelihood)
    if isinstance(likelihood, gpflow.likelihoods.Bernoulli):
        return GPflowBernoulli(likelihood)
    name = type(likelihood).__name__
    if not isinstance(likelihood, gpflow.likelihoods.ScalarLikelihood):
        why = (
            f"{name} is not a scalar (one latent function per output) likelihood, so it has no "
            f"per-pixel density given one decoder output per pixel"
        )
    elif isinstance(likelihood, gpflow.likelihoods.MonteCarloLikelihood):
        why = f"{name} evaluates its density by Monte Carlo, not in closed form"
    else:
        why = (
            f"gpflow_svgpvae has no decoder adapter (log density, mean and sampler in terms of the "
            f"decoder output) for {name}"
        )
    raise TypeError(
        f"gpflow.likelihoods.{name} does not fit as a decoder likelihood: {why}; {_REQUIREMENT}. "
        f"The GPflow likelihoods that fit are gpflow.likelihoods.Gaussian (constant scalar variance) "
        f"and gpflow.likelihoods.Bernoulli (invlink=tf.sigmoid or the default inv_probit); for "
        f"other densities subclass gpflow_svgpvae.likelihoods.DecoderLikelihood."
    )


def as_likelihood(
    likelihood: Union[str, DecoderLikelihood, gpflow.likelihoods.Likelihood],
) -> DecoderLikelihood:
    """A :class:`DecoderLikelihood` from one, from the names ``"gaussian"`` / ``"bernoulli"``, or
    from a fitting GPflow likelihood (``gpflow.likelihoods.Gaussian`` with a constant scalar
    variance -> :class:`GPflowGaussian`, ``gpflow.likelihoods.Bernoulli`` with the logistic or
    probit link -> :class:`GPflowBernoulli`; both reuse the GPflow object and its Parameters).

    :raises TypeError: for anything else, saying why it does not fit.
    """
    if isinstance(likelihood, DecoderLikelihood):
        return likelihood
    if isinstance(likelihood, str):
        name = likelihood.lower()
        if name == "gaussian":
            return Gaussian()
        if name == "bernoulli":
            return Bernoulli()
    if isinstance(likelihood, gpflow.likelihoods.Likelihood):
        return _from_gpflow(likelihood)
    raise TypeError(f"likelihood must be {_SUPPORTED}; got {likelihood!r}")
