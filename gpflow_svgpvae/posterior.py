r"""A cached SVGP-VAE posterior conditioned on whole datasets.

The statistics :math:`P_l = \sum_i w_i \lambda_{il} w_i^\top` and
:math:`r_l = \sum_i w_i\lambda_{il}\tilde y_{il}` (:math:`w_i = L_m^{-1}k_m(x_i)`)
are sums over data points, so they are accumulated chunk by chunk with
:math:`O(M^2 L)` memory whatever the size of the data, factorised once
(:math:`s = 1`) and then reused for every prediction. Conditioning on more
data later only adds its statistics (:meth:`SVGPVAEPosterior.predict_f` with
``data``: e.g. the training set plus an unseen object's own observations).

Data of many latent datasets (``X [V, T, D]``) give one posterior per dataset
(``[V, L, M, M]``), predicted at ``Xnew [V, R, D]``. Queries are raw inputs, mapped by
the model's input transform (one that reads observations maps them through its summary
of the conditioning data).

The cache is a snapshot of :math:`L_m`, :math:`U`, :math:`L_m^{-1}\mu` and the statistics
as they were when it was built (like GPflow's ``posterior()`` with a tensor cache).
"""

import weakref
from typing import Any, Optional

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

from . import amortized
from .models.data import numeric_tensor, positive_count
from .models.prediction import PREDICT_Y_SHAPES, checked_predictions
from .numerics import assert_finite
from .tracing import not_autographed, per_model_function

__all__ = ["SVGPVAEPosterior", "check_scale"]


def check_scale(scale) -> float:
    r"""The conditioning scale :math:`s > 0`: each conditioning point's statistics count :math:`s` times.

    :math:`s = 1` conditions on exactly the given data. Training builds each
    minibatch's posterior with :math:`s = N/b`, so every point weighs as if the
    batch stood for all :math:`N` training points; conditioning a few observations
    of an unseen object (e.g. a new character's context frames) with the
    training-time :math:`s` gives it the sharpness the decoder was trained on,
    where :math:`s = 1` shrinks it towards the prior mean. An integer :math:`s = k`
    equals conditioning on every point repeated :math:`k` times.
    """
    try:
        value = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"scale must be a positive number; got {scale!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"scale must be a positive finite number; got {scale!r}")
    return value


def _chunks(data, batch_size: int):
    """A re-iterable of ``(X, Y)`` or ``(X, Y, mask)`` chunks of arrays or a ``tf.data.Dataset``."""
    batch_size = positive_count(batch_size, "batch_size", "points per chunk")
    if isinstance(data, tf.data.Dataset):
        return data
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        raise TypeError(
            "data must be a pair (X, Y) of arrays, a triple (X, Y, mask), or a tf.data.Dataset of such batches"
        )
    X, Y = data[:2]
    if len(X) != len(Y):
        raise ValueError(f"X and Y have different lengths: {len(X)} and {len(Y)}")
    if len(data) == 3 and len(data[2]) != len(Y):
        raise ValueError(f"The mask and Y have different lengths: {len(data[2])} and {len(Y)}")
    if len(X) == 0:
        raise ValueError("Cannot condition a posterior on an empty dataset.")
    if np.ndim(X) == 3:  # whole latent datasets per chunk
        step = max(1, batch_size // max(1, np.shape(X)[1]))
    else:
        step = batch_size

    class _Chunks:
        def __iter__(self):
            for start in range(0, len(X), step):
                yield tuple(array[start : start + step] for array in data)

    return _Chunks()


# One compiled statistics function per model, reused by every posterior built
# from it (building a posterior after each epoch must not retrace).
_STATISTICS_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _statistics_function(model, rank: int):
    functions = _STATISTICS_FUNCTIONS.setdefault(model, {})
    function = functions.get(rank)  # one per data layout: retracing must not relax the rank
    if function is None:
        # The cache's value must not hold its key: a closure over ``model`` would keep every
        # model that ever built a posterior alive (and its graphs and variables) for the life of
        # the process. The model is alive whenever the function runs: its caller holds it.
        model_ref = weakref.ref(model)

        @not_autographed
        def function(X, Y, mask, context):
            model = model_ref()
            batch = model.data_batch((X, Y) if mask is None else (X, Y, mask), conditioning=True)
            # With a context the transform maps the points through its summary of the conditioning data.
            X_gp, means, variances = model._sites(batch, training=False, context=context)
            weights = batch.weights
            P, r = _statistics(model, X_gp, means, variances, weights)
            # Points conditioned on: those with at least one observed entry.
            count = tf.size(X_gp[..., 0]) if weights is None else tf.cast(tf.reduce_sum(weights), tf.int32)
            return P, r, count

        function = per_model_function(function, reduce_retracing=True)
        functions[rank] = function
    return function


def _statistics(model, X_gp, means, variances, weights=None):
    prior_chol = amortized.with_batch_rank(
        amortized.prior_cholesky(model.kernel, model.inducing_variable, model.jitter), X_gp.shape.rank - 2
    )
    Kmb = amortized.cross_covariance(model.kernel, model.inducing_variable, X_gp)
    return amortized.whitened_statistics(prior_chol, Kmb, means, variances, weights=weights)


@check_shapes("return[0]: [batch..., L, M, M]", "return[1]: [batch..., L, M]", "return[2]: []")
def _data_statistics(model, data, batch_size: int = 1024, context: Any = None):
    """Whitened statistics ``(P [..., L, M, M], r [..., L, M], count)`` of all of ``data``
    (summed over points; per latent dataset for ``X [V, T, D]``), encoder in inference mode.
    ``data`` may carry masks (``(X, Y, mask)``; see :mod:`gpflow_svgpvae.models.svgpvae`):
    points with no observed entry add nothing, and ``count`` counts the points with at
    least one observed entry.

    :param context: the input transform's summary of the conditioning data
        (``None``: the transform maps each chunk with its own observations).
    """
    P = r = None
    count = 0
    for chunk in _chunks(data, batch_size):
        X, Y, mask = _split_chunk(chunk)
        X = tf.cast(tf.convert_to_tensor(X), gpflow.default_float())
        mask = None if mask is None else tf.convert_to_tensor(mask)
        P_chunk, r_chunk, n_chunk = _statistics_function(model, X.shape.rank)(X, tf.convert_to_tensor(Y), mask, context)
        if X.shape.rank == 3:  # independent datasets: stack them
            P = P_chunk if P is None else tf.concat([P, P_chunk], 0)
            r = r_chunk if r is None else tf.concat([r, r_chunk], 0)
        else:
            P = P_chunk if P is None else P + P_chunk
            r = r_chunk if r is None else r + r_chunk
        count += int(n_chunk)
    if P is None:
        raise ValueError("Cannot condition a posterior on an empty dataset.")
    return P, r, count


def _split_chunk(chunk):
    if not isinstance(chunk, (tuple, list)) or len(chunk) not in (2, 3):
        raise TypeError("The dataset's elements must be (X, Y) or (X, Y, mask) batches.")
    return (tuple(chunk) + (None,))[:3]


class _ObservedChunks:
    """``(X, Y zero-filled)`` pairs of (possibly masked) chunks, for transforms that read observations."""

    def __init__(self, model, chunks):
        self.model, self.chunks = model, chunks

    def __iter__(self):
        for chunk in self.chunks:
            X, Y, _, _ = self.model.data_batch(_split_chunk(chunk), conditioning=True)
            yield X, Y


def _transform_context(model, data, batch_size: int):
    transform = model.input_transform
    if not transform.needs_observations:
        return None
    return transform.context(_ObservedChunks(model, _chunks(data, batch_size)))


class SVGPVAEPosterior(tf.Module):
    """Predictions from an SVGP-VAE conditioned on all of a dataset.

    Build with :meth:`gpflow_svgpvae.SVGPVAE.posterior`. ``predict_f`` and
    ``predict_y`` take raw query inputs (through the model's input transform)
    and, optionally, more data to condition on; :meth:`export` writes a
    SavedModel that serves both without the Python classes.
    """

    def __init__(self, model, P: tf.Tensor, r: tf.Tensor, num_conditioned: int, context: Any = None):
        super().__init__(name="svgpvae_posterior")
        self.model = model
        self.input_dim = model.input_dim
        self.num_conditioned = int(num_conditioned)
        self.context = context
        prior_chol = amortized.prior_cholesky(model.kernel, model.inducing_variable, model.jitter)
        posterior = amortized.posterior_from_statistics(
            amortized.with_batch_rank(prior_chol, P.shape.rank - 3), P, r, scale=1.0
        )
        # Non-trainable variables so that the cache is saved with the module.
        self.prior_chol = tf.Variable(prior_chol, trainable=False, name="prior_chol")  # [1 or L, M, M]
        self.upper_chol = tf.Variable(posterior.upper_chol, trainable=False, name="upper_chol")  # [..., L, M, M]
        self.whitened_mean = tf.Variable(posterior.whitened_mean, trainable=False, name="whitened_mean")
        self.P = tf.Variable(P, trainable=False, name="statistics_P")
        self.r = tf.Variable(r, trainable=False, name="statistics_r")

    @classmethod
    def from_data(cls, model, data, batch_size: int = 1024, scale: float = 1.0) -> "SVGPVAEPosterior":
        """Stream ``data`` through the encoder, sum the statistics, factorise once.

        :param scale: the weight :math:`s` of every conditioning point (see :func:`check_scale`).
        """
        scale = check_scale(scale)
        if not isinstance(data, tf.data.Dataset):
            _chunks(data, batch_size)  # type and length checks first
            model.input_transform.check_inputs(np.asarray(data[0]))
        context = _transform_context(model, data, batch_size)
        P, r, count = _data_statistics(model, data, batch_size, context)
        posterior = cls(model, scale * P, scale * r, count, context)
        # Kept (not saved) so that predict_f(None) predicts at the conditioning inputs.
        posterior._conditioned_inputs = None if isinstance(data, tf.data.Dataset) else np.asarray(data[0])
        return posterior

    @property
    def whitened(self) -> amortized.WhitenedPosterior:
        """The cached :math:`q(u)` as :class:`~gpflow_svgpvae.amortized.WhitenedPosterior` factors
        (what :func:`~gpflow_svgpvae.amortized.latent_marginals` reads)."""
        return amortized.WhitenedPosterior(self.prior_chol, self.upper_chol, self.whitened_mean)

    @check_shapes("return[0]: [batch..., M, L]", "return[1]: [batch..., L, M, M]")
    def inducing_distribution(self):
        """``(q_mu [..., M, L], q_sqrt [..., L, M, M])`` of the cached posterior."""
        return amortized.inducing_distribution(self.whitened)

    def _check_inputs(self, Xnew):
        Xnew = tf.cast(numeric_tensor(Xnew, "Xnew"), gpflow.default_float())
        if Xnew.shape.rank not in (2, 3):
            raise ValueError(f"Xnew must have shape [n, input_dim] (or [V, n, input_dim]); got {Xnew.shape}")
        if self.input_dim is not None and Xnew.shape[-1] not in (None, self.input_dim):
            raise ValueError(f"Xnew has {Xnew.shape[-1]} input dimensions; expected {self.input_dim}.")
        return assert_finite(Xnew, "Xnew (query inputs) contains NaN or inf.")

    def _posterior_with(self, data, batch_size: int, scale: float = 1.0):
        if data is None:
            return self.whitened, self.context
        scale = check_scale(scale)
        context = _transform_context(self.model, data, batch_size)
        P, r, _ = _data_statistics(self.model, data, batch_size, context)
        P, r = self.P + scale * P, self.r + scale * r  # [..., L, M, M]: the cached data and each new dataset
        prior_chol = amortized.with_batch_rank(self.prior_chol, P.shape.rank - 3)
        return amortized.posterior_from_statistics(prior_chol, P, r, scale=1.0), context

    @check_shapes("return[0]: [batch..., R, L]", "return[1]: [batch..., R, L]")
    def predict_f(self, Xnew, data=None, batch_size: int = 1024, scale: float = 1.0):
        """Latent predictive mean and variance ``[..., n, L]`` at raw inputs ``Xnew``.

        :param data: more data ``(X, Y)`` or ``(X, Y, mask)`` to condition on, besides the cached data
            (``X [V, T, D]`` with ``Xnew [V, n, D]``: each block conditioned on its own dataset).
        :param scale: the weight of each point of ``data`` (see :func:`check_scale`); the cached
            data keep the weight they were built with.
        :param Xnew: ``None`` predicts at the inputs of the conditioning arrays.
        """
        mean, var, _ = self.predict_latents(Xnew, data, batch_size=batch_size, scale=scale)
        return mean, var

    @check_shapes("return[0]: [batch..., R, L]", "return[1]: [batch..., R, L]", "return[2]: [batch..., R, D]")
    def predict_latents(self, Xnew, data=None, batch_size: int = 1024, scale: float = 1.0):
        """:meth:`predict_f` and the GP inputs of the queries: ``(mean, variance [..., n, L],
        gp_inputs [..., n, D])`` (``gp_inputs``: ``Xnew`` through the model's input transform,
        which a decoder with ``decoder_gp_columns`` reads beside the codes)."""
        if Xnew is None:
            Xnew = getattr(self, "_conditioned_inputs", None)
            if Xnew is None:
                raise ValueError(
                    "Xnew=None predicts at the conditioning inputs, which a posterior built "
                    "from a tf.data.Dataset does not keep: pass Xnew."
                )
        Xnew = self._check_inputs(Xnew)
        posterior, context = self._posterior_with(data, batch_size, scale)
        model = self.model
        X_gp = model.input_transform.map_queries(Xnew, context)
        mean, var = amortized.latent_marginals(model.kernel, model.inducing_variable, posterior, X_gp)
        return mean, var, X_gp

    @check_shapes(*PREDICT_Y_SHAPES)
    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0, scale: float = 1.0):
        """Decoded predictions at ``Xnew``.

        Without ``num_samples``: the decoder's likelihood mean at the latent
        posterior mean, ``[..., n, ...]``. With ``num_samples = S``: also
        ``[S, ..., n, ...]`` decoded means of latent samples :math:`z \\sim q(z \\mid x)`
        (returns a pair). ``data``, ``scale``: as in :meth:`predict_f`.
        """
        mean, var, X_gp = self.predict_latents(Xnew, data, scale=scale)
        predictions = self.model.decode_predictions(
            mean, var, num_samples=num_samples, seed=seed, condition=self.model.decoder_condition(X_gp)
        )
        return checked_predictions(predictions, num_samples)

    def export(self, path: str) -> None:
        """Write a SavedModel with signatures ``predict_f`` and ``predict_y``: reloaded with
        ``tf.saved_model.load(path)`` (no Python class of this package needed),
        ``loaded.predict_f(Xnew)`` returns ``{"mean", "variance"}`` and ``loaded.predict_y(Xnew)``
        ``{"mean"}`` (``Xnew`` float64 ``[n, D]``, raw inputs).
        """
        spec = tf.TensorSpec([None, self.input_dim], gpflow.default_float(), name="Xnew")

        def checked(Xnew):
            # A signature call (serving, other languages) does not check the declared shape: say it here.
            if self.input_dim is None:
                return Xnew
            check = tf.debugging.assert_equal(
                tf.shape(Xnew)[-1],
                self.input_dim,
                message=f"Xnew (query inputs) must be float64 [n, {self.input_dim}]: {self.input_dim} input "
                "dimension(s) per row, as the training inputs X.",
            )
            with tf.control_dependencies([check]):
                return tf.identity(Xnew)

        @tf.function(input_signature=[spec])
        @not_autographed
        def predict_f(Xnew):
            mean, var = self.predict_f(checked(Xnew))
            return {"mean": mean, "variance": var}

        @tf.function(input_signature=[spec])
        @not_autographed
        def predict_y(Xnew):
            return {"mean": self.predict_y(checked(Xnew))}

        module = tf.Module()
        module.posterior = self
        module.predict_f = predict_f
        module.predict_y = predict_y
        tf.saved_model.save(module, path, signatures={"predict_f": predict_f, "predict_y": predict_y})
