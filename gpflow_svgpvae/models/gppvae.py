r"""GPPVAE baseline (Casale et al., NeurIPS 2018): a GP prior over *all* training latents.

Model. Each of the :math:`L` latent channels of the :math:`N` training images
has the prior :math:`Z_{:,l} \sim \mathcal N(0, K)` with the low-rank kernel

.. math::

    K = V V^\top + \alpha I_N, \qquad V_i = x_{o(i)} \otimes (L_v)_{v(i),:},

where :math:`x_j` is the (GP-LVM) object vector of object :math:`j`,
:math:`L_v L_v^\top = K_{view}` is the Cholesky factor of the view kernel on
the discrete views (rotated MNIST: a periodic kernel on the 16 angles) and
:math:`o(i), v(i)` are the object and the view of image :math:`i`
(:func:`~gpflow_svgpvae.lowrank.gppvae_kronecker_features`; ``H = Q * A``).
Everything costs :math:`O(N H^2 + H^3)` (Woodbury, :mod:`gpflow_svgpvae.lowrank`).
The encoder gives :math:`q(z_i \mid y_i) = \mathcal N(\mu_i, \mathrm{diag}\,\sigma_i^2)`:

.. math::

    \mathrm{ELBO} = \sum_i E_q[\log p(y_i\mid z_i)] + E_q[\log \mathcal N(Z \mid 0, K)] + \sum_i H[q_i].

Training scheme (Casale et al.'s, with per-minibatch updates). The GP term
couples all :math:`N` latents, so it is linearised once per epoch:

1. :meth:`refresh` (before the first epoch and after every epoch: pass
   :meth:`refresh_callback` to :func:`~gpflow_svgpvae.training.train`):
   encode all :math:`N` images, draw :math:`\epsilon_i \sim \mathcal N(0, I)`,
   set the expansion point :math:`\bar Z = \mu + \sigma\odot\epsilon` and the
   Taylor coefficients :math:`G = K^{-1}\bar Z` (Woodbury), stored per
   ``(object, view)`` so that a minibatch can look up its rows.
2. Each minibatch step uses the *same* :math:`\epsilon_i` for its images,
   :math:`z_i = \mu_i + \sigma_i \epsilon_i` (reparameterised), and the loss terms

   * reconstruction :math:`\sum_{i\in b}\log p(y_i\mid z_i)` (one sample);
   * network part of the GP term, :math:`\tfrac{N}{b}\sum_{i\in b} G_i^\top (z_i - \mathrm{sg}[z_i])`
     (:func:`~gpflow_svgpvae.lowrank.taylor_linear_term`): its gradient w.r.t.
     the networks is the minibatch estimate of the exact gradient of
     :math:`-\log\mathcal N(Z\mid 0, K)` at the expansion point (for the
     variances too, because the same :math:`\epsilon` is used);
   * GP-parameter part: the exact :math:`-\log \mathcal N(\mathrm{sg}[\bar Z] \mid 0, K)`
     with the *current* object vectors, view kernel and :math:`\alpha`
     (:func:`~gpflow_svgpvae.lowrank.gp_term_for_hyperparameters`, all
     :math:`N` rows, :math:`O(NH^2)` per step);
   * entropy :math:`-\tfrac{N}{b}\sum_{i\in b} H[q_i]`.

   ``kl`` (in GPflow's whole-data units) is the sum of the last three, an
   estimate of :math:`\mathrm{KL}(q(Z)\,\|\,p(Z))`.

With one full batch (:math:`b = N`) and no parameter change since the refresh,
the value and gradient of ``kl`` w.r.t. *every* parameter equal those of the exact
:math:`-\log \mathcal N(Z \mid 0, K) - \sum_i H[q_i]` at :math:`Z = \mu + \sigma \odot \epsilon`
(tested). With minibatches the coefficients go stale within an epoch; Casale et al.
take one (exact) step per epoch instead of this implementation's :math:`N/b`.

Prediction (the GP posterior of new latents given context images
``data = (X, Y)``, which :meth:`GPPVAE.predict_f` requires): with
context means :math:`\mu_c` (encoder means, no sampling) and features
:math:`V_c`, the new latents at features :math:`V_*` have mean
:math:`V_* V_c^\top K_c^{-1}\mu_c` and variance
:math:`\lVert v_*\rVert^2 + \alpha - v_*^\top V_c^\top K_c^{-1} V_c v_*`.
"""

from typing import Optional, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.utilities import positive

from .. import lowrank
from ..auxiliary import ObjectVectors
from ..likelihoods import DecoderLikelihood
from ..numerics import cholesky
from .base import LatentVariableAutoencoder
from .data import positive_count
from .prediction import CONTEXT_PREDICT_F_SHAPES, CONTEXT_PREDICT_Y_SHAPES, checked_predictions

__all__ = ["GPPVAE"]


class GPPVAE(LatentVariableAutoencoder):
    """GPPVAE with data ``(X, Y)``, ``X = [view value, object id]`` (discrete views).

    :param encoder: ``tf_keras`` network ``Y -> (means [b, L], variances [b, L])``.
    :param decoder: ``tf_keras`` network ``Z [b, L] -> likelihood parameters``.
    :param view_kernel: GPflow kernel on the view values (e.g. a periodic kernel on the angle).
    :param view_values: ``[A]`` or ``[A, 1]`` the possible view values (the angle grid);
        the view of a data point is the nearest value (circular distance for
        ``view_period``).
    :param object_vectors: :class:`~gpflow_svgpvae.auxiliary.ObjectVectors` table
        (GP-LVM, trained on the GP term). It gives the rows of the low-rank
        features :math:`V`, looked up by object id; it is not an input
        transform (the model never maps its inputs through it).
    :param num_latent_gps: :math:`L`.
    :param noise_variance: initial :math:`\\alpha` (trainable, positive).
    :param view_period: period of the view values (``None``: not periodic).
    """

    _builds_networks_after_init = True

    def __init__(
        self,
        encoder,
        decoder,
        view_kernel: gpflow.kernels.Kernel,
        view_values,
        object_vectors: ObjectVectors,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_data: int,
        num_latent_gps: Optional[int] = None,
        noise_variance: float = 0.1,
        view_period: Optional[float] = 2 * np.pi,
        jitter: float = 1e-6,
        seed: int = 0,
        name: Optional[str] = None,
    ):
        if num_latent_gps is None:
            raise TypeError("GPPVAE needs num_latent_gps, the number of latent channels L.")
        num_data = positive_count(num_data, "num_data", "the number of training points")
        super().__init__(encoder, decoder, likelihood, num_data=num_data, num_samples=1, seed=seed, name=name)
        self.view_kernel = view_kernel
        view_values = np.asarray(view_values, dtype=np.float64).reshape(-1)
        self.view_values = tf.constant(view_values, dtype=gpflow.default_float())
        self.num_views = int(view_values.shape[0])
        self.view_period = None if view_period is None else float(view_period)
        self.object_vectors = object_vectors
        self.noise_variance = gpflow.Parameter(noise_variance, transform=positive(), name="alpha")
        self.num_latent_gps = int(num_latent_gps)
        self.build_networks()  # L is known now
        self.jitter = float(jitter)
        dtype = gpflow.default_float()
        P, A, L, N = object_vectors.num_objects, self.num_views, self.num_latent_gps, self.num_data
        # Per-epoch state (refresh); not trainable, saved in checkpoints.
        self.eps_table = tf.Variable(tf.zeros([P, A, L], dtype), trainable=False, name="eps_table")
        self.coef_table = tf.Variable(tf.zeros([P, A, L], dtype), trainable=False, name="coef_table")
        self.expansion = tf.Variable(tf.zeros([N, L], dtype), trainable=False, name="expansion_point")
        self.train_ids = tf.Variable(tf.zeros([N], tf.int64), trainable=False, name="train_ids")
        self.train_views = tf.Variable(tf.zeros([N], tf.int64), trainable=False, name="train_views")
        self.refreshed = tf.Variable(False, trainable=False, name="refreshed")
        self.refresh_seed = int(seed) + 7919  # a stream distinct from the base class's draws
        self.refresh_count = tf.Variable(0, dtype=tf.int64, trainable=False, name="refresh_count")

    @property
    def input_dim(self) -> Optional[int]:
        return 2

    # ----------------------------------------------------------- GP algebra
    def view_index(self, view_values) -> tf.Tensor:
        """Index of the nearest view value (circular if ``view_period``), ``[n]`` int64."""
        v = tf.cast(tf.convert_to_tensor(view_values), gpflow.default_float())[:, None] - self.view_values[None, :]
        if self.view_period is not None:
            v = tf.math.floormod(v + 0.5 * self.view_period, self.view_period) - 0.5 * self.view_period
        return tf.argmin(tf.abs(v), axis=1)

    def split_inputs(self, X):
        """Raw ``[n, 2]`` ``[view, object id]`` -> ``(object ids, view indices)``, int64."""
        X = tf.cast(tf.convert_to_tensor(X), gpflow.default_float())
        ids = self.object_vectors._validated_ids(X[:, self.object_vectors.id_column])
        views = X[:, 1 - (self.object_vectors.id_column % 2)]
        return ids, self.view_index(views)

    def view_cholesky(self) -> tf.Tensor:
        """:math:`L_v`, ``[A, A]``, Cholesky of the view kernel on the view values (+ jitter)."""
        K = self.view_kernel(self.view_values[:, None])
        K = K + self.jitter * tf.eye(self.num_views, dtype=K.dtype)
        return cholesky(K, "the GPPVAE view kernel on the view values")

    def features(self, ids, views) -> tf.Tensor:
        """:math:`V` rows ``[n, Q * A]`` for objects ``ids`` at view indices ``views``."""
        return lowrank.gppvae_kronecker_features(self.object_vectors.vectors, self.view_cholesky(), views, ids)

    def gp_nll(self, Z, ids, views) -> tf.Tensor:
        r"""Exact :math:`\sum_l -\log\mathcal N(Z_{:,l}\mid 0, VV^\top + \alpha I)`."""
        return lowrank.lowrank_gaussian_nll(Z, self.features(ids, views), self.noise_variance)

    # -------------------------------------------------------------- refresh
    def refresh(self, X, Y, batch_size: int = 1024):
        """New expansion point and Taylor coefficients from all ``N`` training images ``(X, Y)``."""
        batch_size = positive_count(batch_size, "batch_size", "images per chunk")
        X = np.asarray(X)
        if len(X) != self.num_data:
            raise ValueError(f"refresh needs all num_data = {self.num_data} training points; got {len(X)}")
        ids, views = self.split_inputs(X)
        keys = ids.numpy() * self.num_views + views.numpy()
        if np.unique(keys).size != keys.size:
            raise ValueError("GPPVAE needs at most one training image per (object, view) pair.")
        means, variances = self.encode_all(Y, batch_size)
        # Own stream, keyed by (seed, refresh count): reproducible and saved in checkpoints.
        seed = tf.stack([tf.constant(self.refresh_seed, tf.int64), self.refresh_count.read_value()])
        self.refresh_count.assign_add(1)
        eps = tf.random.stateless_normal(tf.shape(means), seed, dtype=means.dtype, alg="philox")
        Z = means + tf.sqrt(variances) * eps
        V = self.features(ids, views)
        G = lowrank.lowrank_nll_gradient(Z, V, self.noise_variance)
        index = tf.stack([ids, views], axis=1)
        self.eps_table.assign(tf.tensor_scatter_nd_update(tf.zeros_like(self.eps_table), index, eps))
        self.coef_table.assign(tf.tensor_scatter_nd_update(tf.zeros_like(self.coef_table), index, G))
        self.expansion.assign(Z)
        self.train_ids.assign(ids)
        self.train_views.assign(views)
        self.refreshed.assign(True)

    def refresh_callback(self, X, Y, then=None):
        """``callback(epoch, logs)`` for :func:`~gpflow_svgpvae.training.train` that refreshes
        after every epoch (and then calls ``then(epoch, logs)`` if given)."""

        def callback(epoch, logs):
            self.refresh(X, Y)
            if then is not None:
                then(epoch, logs)

        return callback

    # ------------------------------------------------------------ objective
    @inherit_check_shapes
    def objective_terms(self, data, training: Optional[bool] = True):
        X, Y, _, _ = self._points_batch(data)
        if tf.executing_eagerly() and not bool(self.refreshed.numpy()):
            raise RuntimeError("Call GPPVAE.refresh(X_train, Y_train) before training (and after every epoch).")
        ids, views = self.split_inputs(X)
        index = tf.stack([ids, views], axis=1)
        means, variances = self.encode(Y, training=training)
        # Read the tables first: XLA on CPU has no kernel for a gather on a resource variable.
        eps = tf.gather_nd(self.eps_table.read_value(), index)
        G = tf.gather_nd(self.coef_table.read_value(), index)
        Z = means + tf.sqrt(variances) * eps  # [b, L]
        params = self.decode(Z, training=training)
        reconstruction = tf.reduce_sum(self.likelihood.log_prob(Y, params))
        decoded = self.likelihood.mean(tf.cast(params, gpflow.default_float()))
        dtype = gpflow.default_float()
        batch_size = tf.shape(Y)[0]
        scale = tf.cast(self.num_data, dtype) / tf.cast(batch_size, dtype)
        entropy = 0.5 * tf.reduce_sum(np.log(2 * np.pi * np.e) + tf.math.log(variances))
        network_gp = lowrank.taylor_linear_term(Z - tf.stop_gradient(Z), G)
        hyper_gp = lowrank.gp_term_for_hyperparameters(
            self.expansion, self.features(self.train_ids, self.train_views), self.noise_variance
        )
        kl = hyper_gp + scale * (network_gp - entropy)
        return self._elbo_terms(reconstruction, kl, scale, decoded)

    # ----------------------------------------------------------- prediction
    @staticmethod
    def _context(data):
        if data is None:
            raise ValueError(
                "GPPVAE predicts from the GP posterior given context images: pass data = (X, Y) to "
                "condition on (e.g. the training set, plus images of new objects at other views)."
            )
        return data

    @check_shapes(*CONTEXT_PREDICT_F_SHAPES)
    def predict_f(self, Xnew, data=None, *, batch_size: int = 1024):
        """GP posterior of the latents at raw ``Xnew`` given context images ``data = (X, Y)``
        (their encoder means), mean and variance ``[N, L]``. ``data`` is required."""
        X_ctx, Y_ctx = self._context(data)
        means, _ = self.encode_all(Y_ctx, batch_size)
        ids_c, views_c = self.split_inputs(np.asarray(X_ctx))
        ids_n, views_n = self.split_inputs(np.asarray(Xnew))
        Vc = self.features(ids_c, views_c)  # [Nc, H]
        Vn = self.features(ids_n, views_n)  # [n, H]
        alpha = tf.convert_to_tensor(self.noise_variance)
        Kinv_mu = lowrank.lowrank_nll_gradient(means, Vc, alpha)  # [Nc, L]
        Kinv_V = lowrank.lowrank_nll_gradient(Vc, Vc, alpha)  # [Nc, H]
        mean = tf.matmul(Vn, tf.matmul(Vc, Kinv_mu, transpose_a=True))  # [n, L]
        VtKinvV = tf.matmul(Vc, Kinv_V, transpose_a=True)  # [H, H]
        var = (
            tf.reduce_sum(tf.square(Vn), -1) + alpha - tf.reduce_sum(tf.matmul(Vn, VtKinvV) * Vn, -1)
        )  # [n]; >= alpha analytically (no clipping)
        return mean, tf.tile(var[:, None], [1, self.num_latent_gps])

    @check_shapes(*CONTEXT_PREDICT_Y_SHAPES)
    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0):
        """Decoded predictive mean ``[N, ...]`` given context images ``data = (X, Y)``; with
        ``num_samples = S`` the pair ``(mean, samples [S, N, ...])`` of decoded latent samples
        (:meth:`~gpflow_svgpvae.models.LatentVariableAutoencoder.decode_predictions`, stream 3)."""
        mean, var = self.predict_f(Xnew, data)
        predictions = self.decode_predictions(mean, var, num_samples=num_samples, seed=seed, stream=3)
        return checked_predictions(predictions, num_samples, batch="N")
