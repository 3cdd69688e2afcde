r"""The SVGP-VAE (Jazbec et al., AISTATS 2021).

:math:`L` independent latent GPs over auxiliary inputs :math:`x` give the codes
:math:`z_i = [f^1(x_i),\dots,f^L(x_i)]`, a decoder gives :math:`p(y_i\mid z_i)`,
and the encoder's Gaussian sites define the inducing posterior
(:mod:`gpflow_svgpvae.amortized`). The minibatch ELBO, in GPflow's units, is

.. math::

    \mathcal L = \tfrac{N}{b}\sum_{i\in b} E_{q_S(z_i)}[\log p(y_i\mid z_i)]
        - \sum_l \mathrm{KL}\big(\mathcal N(\mu_l, A_l)\,\|\,\mathcal N(0, K_{mm})\big),

where :math:`q_S` is the sparse predictive marginal at :math:`x_i`. (The
paper's eq. 12 multiplied by :math:`N/b`: the Hensman data term of the latent
dataset cancels the encoder's cross-entropy exactly.)
"""
from typing import Optional, Union

import tensorflow as tf
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel, SeparateIndependent

from .. import amortized, distribute
from ..likelihoods import DecoderLikelihood
from .base import LatentVariableAutoencoder

__all__ = ["SVGPVAE"]


def _inducing_input_dim(inducing_variable) -> Optional[int]:
    for attr in ("Z",):
        if hasattr(inducing_variable, attr):
            return int(getattr(inducing_variable, attr).shape[-1])
    inner = getattr(inducing_variable, "inducing_variable", None)
    if inner is not None:
        return _inducing_input_dim(inner)
    inner_list = getattr(inducing_variable, "inducing_variable_list", None)
    if inner_list:
        return _inducing_input_dim(inner_list[0])
    return None


class SVGPVAE(LatentVariableAutoencoder):
    r"""Scalable GP-prior VAE with an amortised sparse posterior.

    :param encoder: ``tf_keras`` network, ``Y [b, ...] -> (means [b, L], variances [b, L])``
        (end it with :class:`~gpflow_svgpvae.networks.GaussianSiteHead`).
    :param decoder: ``tf_keras`` network, ``Z [b, L] -> likelihood parameters``.
    :param kernel: a GPflow kernel shared by all :math:`L` channels, or a
        multi-output kernel (``SharedIndependent``, ``SeparateIndependent``).
    :param inducing_variable: GPflow inducing variable (``InducingPoints``,
        ``SharedIndependentInducingVariables``, ``SeparateIndependentInducingVariables``)
        or an ``[M, D]`` array of inducing inputs (trainable).
    :param likelihood: decoder likelihood (``"gaussian"``, ``"bernoulli"`` or an instance).
    :param num_data: :math:`N`, the size of the training set.
    :param num_latent_gps: :math:`L`; checked against the encoder output when given.
    :param jitter: added to the diagonal of :math:`K_{mm}`.
    :param num_samples: Monte Carlo samples of :math:`z` per point.
    :param seed: seed of the model's random generator.
    """

    def __init__(
        self,
        encoder,
        decoder,
        kernel: Kernel,
        inducing_variable: Union[InducingVariables, tf.Tensor],
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_data: int,
        num_latent_gps: Optional[int] = None,
        jitter: float = 1e-6,
        num_samples: int = 1,
        seed: int = 0,
        name: Optional[str] = None,
    ):
        super().__init__(
            encoder, decoder, likelihood, num_data=num_data, num_samples=num_samples, seed=seed, name=name
        )
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a gpflow.kernels.Kernel; got {type(kernel).__name__}")
        self.kernel = kernel
        self.inducing_variable = amortized.as_inducing_variable(inducing_variable, kernel)
        if not jitter >= 0:
            raise ValueError(f"jitter must be >= 0, got {jitter}")
        self.jitter = float(jitter)
        self.num_latent_gps = None if num_latent_gps is None else int(num_latent_gps)
        if isinstance(kernel, SeparateIndependent) and self.num_latent_gps is not None:
            if len(kernel.kernels) != self.num_latent_gps:
                raise ValueError(
                    f"SeparateIndependent has {len(kernel.kernels)} kernels but num_latent_gps is "
                    f"{self.num_latent_gps}."
                )

    @property
    def input_dim(self) -> Optional[int]:
        return _inducing_input_dim(self.inducing_variable)

    # ----------------------------------------------------------- GP algebra
    def _check_num_latent(self, means: tf.Tensor):
        L = means.shape[-1]
        expected = self.num_latent_gps
        if isinstance(self.kernel, SeparateIndependent):
            expected = len(self.kernel.kernels)
        if expected is not None and L is not None and int(L) != expected:
            raise ValueError(f"The encoder returned {L} latent channels but the model expects {expected}.")

    def whitened_posterior(self, X, means, variances, num_data) -> amortized.WhitenedPosterior:
        """Whitened factors of :math:`q(u)` for a latent dataset (see :mod:`~gpflow_svgpvae.amortized`)."""
        self._check_num_latent(means)
        return amortized.amortized_whitened_posterior(
            self.kernel, self.inducing_variable, X, means, variances, num_data, self.jitter
        )

    def inducing_posterior(self, X, Y, num_data: Optional[int] = None):
        r"""``(q_mu [M, L], q_sqrt [L, M, M])`` built from the batch ``(X, Y)``.

        :param num_data: :math:`N` for the scale :math:`N/b`; ``None`` conditions
            on exactly the given data (:math:`s = 1`).
        """
        n = num_data if num_data is not None else _batch_size(X)
        X, Y = self._check_batch(X, Y, num_data=num_data)
        means, variances = self.encode(Y, training=False)
        return amortized.inducing_distribution(self.whitened_posterior(X, means, variances, n))

    def prior_kl(self, X, Y, num_data: Optional[int] = None) -> tf.Tensor:
        r""":math:`\sum_l \mathrm{KL}(q(u_l)\,\|\,p(u_l))` for the posterior built from ``(X, Y)``
        (with ``num_data`` defaulting to the model's :math:`N`)."""
        n = self.num_data if num_data is None else num_data
        X, Y = self._check_batch(X, Y, num_data=n)
        means, variances = self.encode(Y, training=False)
        return tf.reduce_sum(amortized.prior_kl(self.whitened_posterior(X, means, variances, n)))

    def _predict_with(self, posterior: amortized.WhitenedPosterior, Xnew):
        Kmr = amortized.cross_covariance(self.kernel, self.inducing_variable, Xnew)
        prior_var = amortized.prior_variance_diag(self.kernel, Xnew)
        return amortized.predict_marginals(posterior, Kmr, prior_var)

    # ------------------------------------------------------------- objective
    def objective_terms(self, data, training: Optional[bool] = True):
        X, Y = data
        X, Y = self._check_batch(X, Y)
        means, variances = self.encode(Y, training=training)
        self._check_num_latent(means)
        prior_chol = amortized.prior_cholesky(self.kernel, self.inducing_variable, self.jitter)
        Kmb = amortized.cross_covariance(self.kernel, self.inducing_variable, X)
        W = amortized.whiten(prior_chol, Kmb)  # [1 or L, M, b], reused by the predictive
        P, r = amortized.statistics_from_whitened(W, means, variances)
        # Sums over points: summed across replicas they are the global batch's statistics.
        P, r, batch_size = distribute.sum_across_replicas([P, r, tf.cast(tf.shape(X)[0], P.dtype)])
        posterior = amortized.posterior_from_statistics(prior_chol, P, r, self.num_data / batch_size)
        kl = tf.reduce_sum(amortized.prior_kl(posterior))
        z_mean, z_var = amortized.predict_from_whitened(
            posterior, W, amortized.prior_variance_diag(self.kernel, X)
        )  # [b, L]
        reconstruction, decoded = self._reconstruction(Y, z_mean, z_var, training=training)
        return self._terms(reconstruction, kl, batch_size, self.num_data, decoded)

    # ------------------------------------------------------------ prediction
    def predict_f(self, Xnew, data):
        """Latent mean and variance ``[n, L]`` at ``Xnew``, conditioned on ``data = (X, Y)``
        (all of it, :math:`s = 1`). For large ``data`` use :meth:`posterior`."""
        return self.posterior(data).predict_f(Xnew)

    def predict_y(self, Xnew, data, num_samples: Optional[int] = None, seed: int = 0):
        """Decoded predictions at ``Xnew`` conditioned on ``data``; see
        :meth:`SVGPVAEPosterior.predict_y`."""
        return self.posterior(data).predict_y(Xnew, num_samples=num_samples, seed=seed)

    def posterior(self, data, batch_size: int = 1024):
        """A cached posterior conditioned on all of ``data`` (arrays ``(X, Y)`` or a
        ``tf.data.Dataset`` of such pairs), streamed in chunks of ``batch_size``."""
        from ..posterior import SVGPVAEPosterior

        return SVGPVAEPosterior.from_data(self, data, batch_size=batch_size)


def _batch_size(X):
    n = X.shape[0]
    return int(n) if n is not None else tf.shape(X)[0]
