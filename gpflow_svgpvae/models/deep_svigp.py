r"""Deep SVIGP baseline (Hensman et al. 2013 with a decoder likelihood; Jazbec et al. 2021, Table 1).

A plain SVGP over the :math:`L` latent channels with a *free* inducing
posterior :math:`q(u_l) = \mathcal N(m_l, S_l)` (whitened, GPflow's
``q_mu [M, L]`` / lower-triangular ``q_sqrt [L, M, M]`` parameters), the
decoder as likelihood and no encoder:

.. math::

    \mathcal L = \tfrac{N}{b}\sum_{i\in b} E_{q(z_i)}[\log p(y_i \mid z_i)]
        - \sum_l \mathrm{KL}(q(u_l)\,\|\,p(u_l)),

with :math:`q(z_i)` the SVGP marginal at :math:`x_i`
(:func:`gpflow.conditionals.conditional`) and the KL from
:func:`gpflow.kullback_leiblers.gauss_kl`. The raw inputs pass through an
input transform before the kernel, as in :class:`~gpflow_svgpvae.models.SVGPVAE`;
with an :class:`~gpflow_svgpvae.auxiliary.ObjectVectors` table, raw
``[view features..., object id]`` become ``[view features..., object vector]``
(GP-LVM).

Prediction conditions on nothing (:math:`q(u)` is a free parameter); without an encoder,
a *new* object can only be placed by optimising its object vector on context images
(:meth:`DeepSVIGP.fit_object_vectors`).
"""

from typing import Optional, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.conditionals import conditional
from gpflow.kullback_leiblers import gauss_kl
from gpflow.utilities import triangular

from ..amortized import inducing_inputs
from ..likelihoods import DecoderLikelihood
from ..transforms import Identity, InputTransform, as_input_transform
from .base import LatentVariableAutoencoder
from .data import positive_count
from .object_fitting import fit_object_vectors
from .prediction import checked_predictions

__all__ = ["DeepSVIGP"]


class DeepSVIGP(LatentVariableAutoencoder):
    """SVGP with free :math:`q(u)` over ``num_latent_gps`` channels, decoder likelihood.

    :param decoder: ``tf_keras`` network ``Z [b, L] -> likelihood parameters``.
    :param kernel: GPflow kernel shared by the channels (on the GP inputs).
    :param inducing_variable: ``[M, D]`` inducing inputs (GP input space) or an
        ``InducingPoints``.
    :param num_latent_gps: :math:`L`.
    :param input_transform: maps raw inputs to GP inputs (:mod:`gpflow_svgpvae.transforms`,
        e.g. an :class:`~gpflow_svgpvae.auxiliary.ObjectVectors` table for raw
        ``[..., id]`` inputs; default: identity). Transforms that read the
        observations are not possible: predictions have none.
    :param q_sqrt_init: initial diagonal of the whitened ``q_sqrt``.
    """

    _builds_networks_after_init = True

    def __init__(
        self,
        decoder,
        kernel: gpflow.kernels.Kernel,
        inducing_variable,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_latent_gps: Optional[int] = None,
        num_data: int,
        input_transform: Optional[InputTransform] = None,
        q_sqrt_init: float = 1.0,
        num_samples: int = 1,
        seed: int = 0,
        name: Optional[str] = None,
    ):
        if num_latent_gps is None:
            raise TypeError("DeepSVIGP needs num_latent_gps, the number of latent channels L.")
        num_data = positive_count(num_data, "num_data", "the number of training points")
        super().__init__(None, decoder, likelihood, num_data=num_data, num_samples=num_samples, seed=seed, name=name)
        if not isinstance(inducing_variable, gpflow.inducing_variables.InducingVariables):
            inducing_variable = gpflow.inducing_variables.InducingPoints(inducing_inputs(inducing_variable))
        self.kernel = kernel
        self.inducing_variable = inducing_variable
        self.input_transform = as_input_transform(input_transform)
        if self.input_transform.needs_observations:
            raise ValueError(
                f"DeepSVIGP cannot use {type(self.input_transform).__name__}: it reads observations, "
                "and DeepSVIGP predicts without any (its q(u) is a free parameter)."
            )
        L = int(num_latent_gps)
        M = int(inducing_variable.num_inducing)
        self.num_latent_gps = L
        self.build_networks()  # L is known now
        rng = np.random.default_rng(seed)
        self.q_mu = gpflow.Parameter(1e-2 * rng.standard_normal((M, L)), dtype=gpflow.default_float(), name="q_mu")
        q_sqrt = np.tile(q_sqrt_init * np.eye(M)[None], [L, 1, 1])
        self.q_sqrt = gpflow.Parameter(q_sqrt, transform=triangular(), dtype=gpflow.default_float(), name="q_sqrt")

    @property
    def input_dim(self) -> Optional[int]:
        """Width of the raw inputs (None: not fixed)."""
        if isinstance(self.input_transform, Identity):
            return int(self.inducing_variable.Z.shape[-1])
        return self.input_transform.input_dim

    def map_inputs(self, X) -> tf.Tensor:
        """GP inputs ``[..., n, D]`` of raw inputs (through :attr:`input_transform`)."""
        X = tf.cast(tf.convert_to_tensor(X), gpflow.default_float())
        return tf.cast(self.input_transform(X), gpflow.default_float())

    def _latent(self, X, full_cov: bool = False):
        return self._free_posterior_latents(self.map_inputs(X), full_cov=full_cov)

    @staticmethod
    def _no_data(data):
        if data is not None:
            raise ValueError(
                "DeepSVIGP conditions on nothing: its q(u) is a free parameter learned in training, so "
                "predict_f/predict_y take no data. To predict new objects, first fit their object vectors "
                "on their context images with model.fit_object_vectors(X_context, Y_context, object_ids), "
                "then call predict_y(Xnew)."
            )

    @check_shapes(
        "Xnew: [batch..., N, D]",
        "return[0]: [batch..., N, L]",
        "return[1]: [batch..., N, L] if not full_cov",
        "return[1]: [batch..., L, N, N] if full_cov",
    )
    def predict_f(self, Xnew, data=None, *, full_cov: bool = False):
        """Latent marginals (mean and variance) at raw inputs ``Xnew``, each ``[..., N, L]``
        (with ``full_cov``: covariances ``[..., L, N, N]``).

        :param data: must be ``None``: the model conditions on nothing (:math:`q(u)` is a free
            parameter); given data raise a ``ValueError`` that points to :meth:`fit_object_vectors`.
        """
        self._no_data(data)
        return self._latent(Xnew, full_cov=full_cov)

    def prior_kl(self) -> tf.Tensor:
        r""":math:`\mathrm{KL}[q(u)\,\|\,p(u)]` of the whitened ``q(u) = N(q_mu, q_sqrt q_sqrt^T)``
        against :math:`N(0, I)`, summed over the :math:`L` channels (a scalar)."""
        return gauss_kl(self.q_mu, self.q_sqrt)

    @inherit_check_shapes
    def objective_terms(self, data, training: Optional[bool] = True):
        X, Y, _, _ = self._points_batch(data)
        z_mean, z_var = self._latent(X)
        reconstruction, decoded = self.reconstruct(Y, z_mean, z_var, training=training)
        scale = tf.cast(self.num_data, z_mean.dtype) / tf.cast(tf.shape(Y)[0], z_mean.dtype)
        return self._elbo_terms(reconstruction, self.prior_kl(), scale, decoded)

    @check_shapes(
        "Xnew: [batch..., N, D]",
        "return: [batch..., N, ...] if num_samples is None",
    )
    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0):
        """Decoded mean at the latent posterior mean ``[..., N, ...]``; with ``num_samples = S``
        the pair ``(mean, samples [S, ..., N, ...])`` of decoded latent samples
        (:meth:`~gpflow_svgpvae.models.LatentVariableAutoencoder.decode_predictions`, stream 2).

        :param data: must be ``None``: the model conditions on nothing (see :meth:`predict_f`).
        """
        mean, var = self.predict_f(Xnew, data)
        predictions = self.decode_predictions(mean, var, num_samples=num_samples, seed=seed, stream=2)
        return checked_predictions(predictions, num_samples, batch="batch..., N")

    def fit_object_vectors(
        self,
        X_context,
        Y_context,
        object_ids,
        steps: int = 50,
        learning_rate: float = 0.05,
        initial_vectors: Optional[np.ndarray] = None,
    ):
        """Optimise the object vectors of ``object_ids`` (new objects) to maximise the
        ELBO of their context images, with the GP, ``q(u)`` and decoder frozen
        (:func:`~gpflow_svgpvae.models.object_fitting.fit_object_vectors`).

        Other objects' vectors are untouched. ``initial_vectors [len(object_ids), Q]``
        resets the rows first (e.g. to their PCA initialisation), which makes
        the result independent of earlier calls. Returns the final loss.
        """
        return fit_object_vectors(
            self,
            self._free_posterior_latents,
            (),
            X_context,
            Y_context,
            object_ids,
            steps=steps,
            learning_rate=learning_rate,
            initial_vectors=initial_vectors,
        )

    def _free_posterior_latents(self, X_gp, full_cov: bool = False):
        kernel, q_mu, q_sqrt = self.kernel, self.q_mu, self.q_sqrt
        return conditional(X_gp, self.inducing_variable, kernel, q_mu, q_sqrt=q_sqrt, full_cov=full_cov, white=True)
