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
:func:`gpflow.kullback_leiblers.gauss_kl`. With an
:class:`~gpflow_svgpvae.auxiliary.ObjectVectors` table the raw inputs
``[view features..., object id]`` are mapped to ``[view features..., object
vector]`` before the kernel (GP-LVM), exactly as in
:class:`~gpflow_svgpvae.models.AuxiliarySVGPVAE`.

Without an encoder, a *new* object (one never seen in training) can only be
placed by optimising its object vector: :meth:`fit_object_vectors` does that
on context images with everything else frozen.
"""
from typing import Optional, Union

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.conditionals import conditional
from gpflow.keras import tf_keras
from gpflow.kullback_leiblers import gauss_kl
from gpflow.utilities import triangular

from ..auxiliary import ObjectVectors
from ..likelihoods import DecoderLikelihood
from .base import LatentVariableAutoencoder

__all__ = ["DeepSVIGP"]


class DeepSVIGP(LatentVariableAutoencoder):
    """SVGP with free :math:`q(u)` over ``num_latent`` channels, decoder likelihood.

    :param decoder: ``tf_keras`` network ``Z [b, L] -> likelihood parameters``.
    :param kernel: GPflow kernel shared by the channels (on the mapped inputs).
    :param inducing_variable: ``[M, D]`` inducing inputs (mapped space) or an
        ``InducingPoints``.
    :param num_latent: :math:`L`.
    :param object_vectors: optional GP-LVM table for raw ``[..., id]`` inputs.
    :param q_sqrt_init: initial diagonal of the whitened ``q_sqrt``.
    """

    def __init__(
        self,
        decoder,
        kernel: gpflow.kernels.Kernel,
        inducing_variable,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_latent: int,
        num_data: int,
        object_vectors: Optional[ObjectVectors] = None,
        q_sqrt_init: float = 1.0,
        num_samples: int = 1,
        seed: int = 0,
        name: Optional[str] = None,
    ):
        super().__init__(None, decoder, likelihood, num_data=num_data, num_samples=num_samples, seed=seed, name=name)
        if not isinstance(inducing_variable, gpflow.inducing_variables.InducingVariables):
            inducing_variable = gpflow.inducing_variables.InducingPoints(inducing_variable)
        self.kernel = kernel
        self.inducing_variable = inducing_variable
        self.object_vectors = object_vectors
        L = int(num_latent)
        M = int(inducing_variable.num_inducing)
        self.num_latent = L
        rng = np.random.default_rng(seed)
        self.q_mu = gpflow.Parameter(1e-2 * rng.standard_normal((M, L)), dtype=gpflow.default_float(), name="q_mu")
        q_sqrt = np.tile(q_sqrt_init * np.eye(M)[None], [L, 1, 1])
        self.q_sqrt = gpflow.Parameter(q_sqrt, transform=triangular(), dtype=gpflow.default_float(), name="q_sqrt")

    @property
    def input_dim(self) -> Optional[int]:
        if self.object_vectors is not None:
            dv = self.object_vectors.num_view_features
            return None if dv is None else dv + 1
        return int(self.inducing_variable.Z.shape[-1])

    def map_inputs(self, X) -> tf.Tensor:
        X = tf.cast(tf.convert_to_tensor(X), gpflow.default_float())
        return self.object_vectors(X) if self.object_vectors is not None else X

    def predict_f(self, Xnew, full_cov: bool = False):
        """Marginals of the latent channels at (raw) inputs, each ``[n, L]``."""
        Xmapped = self.map_inputs(Xnew)
        return conditional(
            Xmapped, self.inducing_variable, self.kernel, self.q_mu, q_sqrt=self.q_sqrt, full_cov=full_cov, white=True
        )

    def prior_kl(self) -> tf.Tensor:
        return gauss_kl(self.q_mu, self.q_sqrt)

    def objective_terms(self, data, training: Optional[bool] = True):
        X, Y = data
        X, Y = self._check_batch(X, Y)
        z_mean, z_var = self.predict_f(X)
        reconstruction, decoded = self._reconstruction(Y, z_mean, z_var, training=training)
        return self._terms(reconstruction, self.prior_kl(), tf.shape(Y)[0], self.num_data, decoded)

    def predict_y(self, Xnew, num_samples: Optional[int] = None, seed: int = 0):
        """Decoded mean at the latent posterior mean ``[n, ...]``; with ``num_samples``
        also ``[S, n, ...]`` decoded latent samples."""
        mean, var = self.predict_f(Xnew)
        decoded = tf.cast(self.likelihood.mean(tf.cast(self.decode(mean, training=False), tf.float64)), tf.float32)
        if num_samples is None:
            return decoded
        S = int(num_samples)
        eps = tf.random.stateless_normal(tf.concat([[S], tf.shape(mean)], 0), tf.constant([int(seed), 2], tf.int64), dtype=mean.dtype)
        Z = mean + tf.sqrt(var) * eps
        flat = self.decode(tf.reshape(Z, [-1, tf.shape(Z)[-1]]), training=False)
        samples = tf.cast(self.likelihood.mean(tf.cast(flat, tf.float64)), tf.float32)
        return decoded, tf.reshape(samples, tf.concat([[S, tf.shape(mean)[0]], tf.shape(samples)[1:]], 0))

    def fit_object_vectors(self, X_context, Y_context, object_ids, steps: int = 50, learning_rate: float = 0.05,
                           initial_vectors: Optional[np.ndarray] = None):
        """Optimise the object vectors of ``object_ids`` (new objects) to maximise the
        ELBO of their context images, with the GP, ``q(u)`` and decoder frozen.

        Other objects' vectors are untouched. ``initial_vectors [len(object_ids), Q]``
        resets the rows first (e.g. to their PCA initialisation), which makes
        the result independent of earlier calls. Returns the final loss.
        """
        if self.object_vectors is None:
            raise ValueError("fit_object_vectors needs an ObjectVectors table.")
        if self.object_vectors.id_column not in (-1, int(np.shape(X_context)[1]) - 1):
            raise ValueError("fit_object_vectors expects the object id in the last column of X.")
        ids = tf.constant(np.asarray(object_ids, dtype=np.int64))
        table = self.object_vectors.vectors
        start = tf.gather(table, ids) if initial_vectors is None else tf.constant(initial_vectors, gpflow.default_float())
        X_context = tf.constant(np.asarray(X_context), gpflow.default_float())
        Y_context = tf.constant(np.asarray(Y_context))
        views, raw_ids = X_context[:, :-1], tf.cast(tf.round(X_context[:, -1]), tf.int64)
        # Position of each context point's object in `object_ids`.
        lookup = tf.argmax(tf.cast(tf.equal(raw_ids[:, None], ids[None, :]), tf.int32), axis=1)
        rows, optimizer, step = self._object_fitter(int(ids.shape[0]), float(learning_rate))
        rows.assign(start)
        for v in optimizer.variables():  # fresh Adam state for every call
            v.assign(tf.zeros_like(v))
        loss = None
        for _ in range(int(steps)):
            loss = step(views, lookup, Y_context)
        table.assign(tf.tensor_scatter_nd_update(tf.convert_to_tensor(table), ids[:, None], rows))
        return None if loss is None else float(loss.numpy())

    def _object_fitter(self, num_rows: int, learning_rate: float):
        """(rows variable, optimiser, compiled step), built once per size and learning rate."""
        cache = self.__dict__.setdefault("_object_fitters", {})
        key = (num_rows, learning_rate)
        if key not in cache:
            Q = self.object_vectors.Q
            rows = tf.Variable(tf.zeros([num_rows, Q], gpflow.default_float()), trainable=False)
            optimizer = tf_keras.optimizers.Adam(learning_rate)
            optimizer.build([rows])

            @tf.function
            def step(views, lookup, Y):
                with tf.GradientTape() as tape:
                    tape.watch(rows)
                    Xm = tf.concat([views, tf.gather(rows, lookup)], axis=-1)
                    mean, var = conditional(
                        Xm, self.inducing_variable, self.kernel, self.q_mu, q_sqrt=self.q_sqrt, white=True
                    )
                    recon, _ = self._reconstruction(Y, mean, var, training=False)
                    loss = -recon
                optimizer.apply_gradients([(tape.gradient(loss, rows), rows)])
                return loss

            cache[key] = (rows, optimizer, step)
        return cache[key]
