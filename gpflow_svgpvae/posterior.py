r"""A cached SVGP-VAE posterior conditioned on a whole dataset.

The statistics :math:`P_l = \sum_i w_i \lambda_{il} w_i^\top` and
:math:`r_l = \sum_i w_i\lambda_{il}\tilde y_{il}` (:math:`w_i = L_m^{-1}k_m(x_i)`)
are sums over data points, so they are accumulated chunk by chunk with
:math:`O(M^2 L)` memory whatever the size of the data, factorised once
(:math:`s = 1`) and then reused for every prediction.

The cache is a snapshot: it holds :math:`L_m`, :math:`U` and
:math:`L_m^{-1}\mu` for the kernel, inducing inputs and encoder as they were
when it was built (like GPflow's ``posterior()`` with a tensor cache). Build a
new one after training further.
"""
import weakref
from typing import Optional

import gpflow
import numpy as np
import tensorflow as tf

from . import amortized
from .numerics import assert_finite

__all__ = ["SVGPVAEPosterior"]


def _as_dataset(data, batch_size: int) -> tf.data.Dataset:
    if isinstance(data, tf.data.Dataset):
        return data
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError("data must be a pair (X, Y) of arrays or a tf.data.Dataset of (X, Y) batches")
    X, Y = data
    if len(X) != len(Y):
        raise ValueError(f"X and Y have different lengths: {len(X)} and {len(Y)}")
    if len(X) == 0:
        raise ValueError("Cannot condition a posterior on an empty dataset.")
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(int(batch_size))


# One compiled statistics function per model, reused by every posterior built
# from it (building a posterior after each epoch must not retrace).
_STATISTICS_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _chunk_statistics_function(model):
    function = _STATISTICS_FUNCTIONS.get(model)
    if function is None:

        @tf.function(reduce_retracing=True)
        def function(prior_chol, X, Y):
            X, Y = model._check_batch(X, Y, num_data=np.inf)
            means, variances = model.encode(Y, training=False)
            model._check_num_latent(means)
            Kmb = amortized.cross_covariance(model.kernel, model.inducing_variable, X)
            return amortized.whitened_statistics(prior_chol, Kmb, means, variances)

        _STATISTICS_FUNCTIONS[model] = function
    return function


class SVGPVAEPosterior(tf.Module):
    """Predictions from an SVGP-VAE conditioned on all of a dataset.

    Build with :meth:`gpflow_svgpvae.SVGPVAE.posterior`. ``predict_f`` and
    ``predict_y`` accept any number of query inputs; :meth:`export` writes a
    SavedModel that serves both without the Python classes.
    """

    def __init__(self, model, posterior: amortized.WhitenedPosterior, num_conditioned: int):
        super().__init__(name="svgpvae_posterior")
        self.kernel = model.kernel
        self.inducing_variable = model.inducing_variable
        self.decoder = model.decoder
        self.likelihood = model.likelihood
        self._network_dtype = model._network_dtype(model.decoder)
        self.input_dim = model.input_dim
        self.num_conditioned = int(num_conditioned)
        # Non-trainable variables so that the cache is saved with the module.
        self.prior_chol = tf.Variable(posterior.prior_chol, trainable=False, name="prior_chol")
        self.upper_chol = tf.Variable(posterior.upper_chol, trainable=False, name="upper_chol")
        self.whitened_mean = tf.Variable(posterior.whitened_mean, trainable=False, name="whitened_mean")

    @classmethod
    def from_data(cls, model, data, batch_size: int = 1024) -> "SVGPVAEPosterior":
        """Stream ``data`` through the encoder, sum the statistics, factorise once."""
        dataset = _as_dataset(data, batch_size)
        prior_chol = amortized.prior_cholesky(model.kernel, model.inducing_variable, model.jitter)
        chunk_statistics = _chunk_statistics_function(model)
        P = r = None
        count = 0
        for X, Y in dataset:
            P_chunk, r_chunk = chunk_statistics(prior_chol, tf.cast(X, gpflow.default_float()), Y)
            P = P_chunk if P is None else P + P_chunk
            r = r_chunk if r is None else r + r_chunk
            count += int(tf.shape(X)[0])
        if P is None:
            raise ValueError("Cannot condition a posterior on an empty dataset.")
        posterior = amortized.posterior_from_statistics(prior_chol, P, r, scale=1.0)
        return cls(model, posterior, count)

    @property
    def whitened(self) -> amortized.WhitenedPosterior:
        return amortized.WhitenedPosterior(self.prior_chol, self.upper_chol, self.whitened_mean)

    def inducing_distribution(self):
        """``(q_mu [M, L], q_sqrt [L, M, M])`` of the cached posterior."""
        return amortized.inducing_distribution(self.whitened)

    def _check_inputs(self, Xnew):
        Xnew = tf.cast(tf.convert_to_tensor(Xnew), gpflow.default_float())
        if Xnew.shape.rank != 2:
            raise ValueError(f"Xnew must have shape [n, input_dim]; got {Xnew.shape}")
        if self.input_dim is not None and Xnew.shape[-1] not in (None, self.input_dim):
            raise ValueError(f"Xnew has {Xnew.shape[-1]} input dimensions; expected {self.input_dim}.")
        return assert_finite(Xnew, "Xnew (query inputs) contains NaN or inf.")

    def predict_f(self, Xnew):
        """Latent predictive mean and variance, each ``[n, L]``."""
        Xnew = self._check_inputs(Xnew)
        Kmr = amortized.cross_covariance(self.kernel, self.inducing_variable, Xnew)
        prior_var = amortized.prior_variance_diag(self.kernel, Xnew)
        return amortized.predict_marginals(self.whitened, Kmr, prior_var)

    def _decode_mean(self, Z):
        params = self.decoder(tf.cast(Z, self._network_dtype))
        return tf.cast(self.likelihood.mean(tf.cast(params, gpflow.default_float())), params.dtype)

    def predict_y(self, Xnew, num_samples: Optional[int] = None, seed: int = 0):
        """Decoded predictions at ``Xnew``.

        Without ``num_samples``: the decoder's likelihood mean at the latent
        posterior mean, ``[n, ...]``. With ``num_samples = S``: also ``[S, n, ...]``
        decoded means of latent samples :math:`z \\sim q(z \\mid x)` (returns a pair).
        """
        mean, var = self.predict_f(Xnew)
        decoded_mean = self._decode_mean(mean)
        if num_samples is None:
            return decoded_mean
        S = int(num_samples)
        eps = tf.random.stateless_normal(
            tf.concat([[S], tf.shape(mean)], 0), tf.constant([int(seed), 0], tf.int64), dtype=mean.dtype
        )
        Z = mean + tf.sqrt(var) * eps  # [S, n, L]
        samples = self._decode_mean(tf.reshape(Z, [-1, tf.shape(Z)[-1]]))
        samples = tf.reshape(samples, tf.concat([[S, tf.shape(mean)[0]], tf.shape(samples)[1:]], 0))
        return decoded_mean, samples

    def export(self, path: str) -> None:
        """Write a SavedModel with signatures ``predict_f`` and ``predict_y``.

        Reload with ``tf.saved_model.load(path)``; no Python class from this
        package is needed: ``loaded.predict_f(Xnew)`` returns ``{"mean", "variance"}``,
        ``loaded.predict_y(Xnew)`` returns ``{"mean"}`` (``Xnew`` float64 ``[n, D]``).
        """
        spec = tf.TensorSpec([None, self.input_dim], gpflow.default_float(), name="Xnew")

        @tf.function(input_signature=[spec])
        def predict_f(Xnew):
            mean, var = self.predict_f(Xnew)
            return {"mean": mean, "variance": var}

        @tf.function(input_signature=[spec])
        def predict_y(Xnew):
            return {"mean": self.predict_y(Xnew)}

        module = tf.Module()
        module.posterior = self
        module.predict_f = predict_f
        module.predict_y = predict_y
        tf.saved_model.save(module, path, signatures={"predict_f": predict_f, "predict_y": predict_y})
