r"""What every autoencoder in the package shares: networks, decoder likelihood,
sampling, input checks and the Keras/loop training interface.

Subclasses implement :meth:`LatentVariableAutoencoder.objective_terms`, which
returns the pieces of the minibatch ELBO in GPflow's units

.. math::

    \mathcal L = \tfrac{N}{b}\sum_{i\in b} E_q[\log p(y_i\mid z_i)] - \mathrm{KL},

so ``elbo = num_data / batch_size * reconstruction - kl``. The training
objectives (plain/beta ELBO, GECO) in :mod:`gpflow_svgpvae.training` combine
these terms, and both training paths call the same step function.
"""

import abc
import contextlib
from typing import Dict, Optional, Tuple, Union

import gpflow
import tensorflow as tf
from gpflow.models import BayesianModel, ExternalDataTrainingLossMixin

from .. import distribute
from ..likelihoods import DecoderLikelihood, as_likelihood
from ..networks.validation import check_network
from ..numerics import assert_finite, assert_positive
from ..tracing import not_autographed
from ..transforms import flatten_leading as _flatten_leading
from .checks import InputChecks, positive_count
from .missing import MissingData

__all__ = ["LatentVariableAutoencoder", "ConditionedModel", "CONTEXT_PREDICT_Y_SHAPES"]

#: ``check_shapes`` specification of ``predict_y(Xnew, data, num_samples, seed)`` for models
#: that condition on context data ``(X [N_ctx, D], Y [N_ctx, ...])``.
CONTEXT_PREDICT_Y_SHAPES = (
    "Xnew: [N, D]",
    "data[0]: [N_ctx, D] if data is not None",
    "data[1]: [N_ctx, ...] if data is not None",
    "return: [N, ...] if num_samples is None",
    "return[0]: [N, ...] if num_samples is not None",
    "return[1]: [S, N, ...] if num_samples is not None",
)


class LatentVariableAutoencoder(MissingData, InputChecks, BayesianModel, ExternalDataTrainingLossMixin, abc.ABC):
    """Base class: ``data = (X, Y)`` with auxiliary inputs ``X`` and observations ``Y``.

    :param encoder: ``Y -> (means [b, L], variances [b, L])`` (``tf_keras``).
    :param decoder: ``Z [b, L] -> likelihood parameters [b, ...]`` (``tf_keras``).
    :param likelihood: a :class:`~gpflow_svgpvae.likelihoods.DecoderLikelihood`
        or ``"gaussian"`` / ``"bernoulli"``.
    :param num_data: :math:`N`, the training-set size (minibatch scaling).
    :param num_samples: Monte Carlo samples of :math:`z` per point for the
        reconstruction term.
    :param seed: seed of the Monte Carlo draws (the draw counter is saved in checkpoints).
    :param missing_values: ``None`` or ``"nan"`` (NaN entries of ``Y`` are missing); models with
        ``supports_missing``.
    :param encoder_sees_mask: the encoder sees ``concat([Y zero-filled, mask], -1)``; models with
        ``supports_missing``.
    """

    def __init__(
        self,
        encoder,
        decoder,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_data: int,
        num_samples: int = 1,
        seed: int = 0,
        missing_values: Optional[str] = None,
        encoder_sees_mask: bool = False,
        name: Optional[str] = None,
    ):
        super().__init__(name=name)
        self._set_missing_options(missing_values, encoder_sees_mask)
        self.encoder = check_network(encoder, "encoder") if encoder is not None else None
        self.decoder = check_network(decoder, "decoder")
        self.likelihood = as_likelihood(likelihood)
        self.num_data = positive_count(num_data, "num_data", "the number of training points")
        self.num_samples = positive_count(num_samples, "num_samples", "Monte Carlo samples per point")
        # Monte Carlo draws are keyed by (seed, draw counter): reproducible, saved in
        # checkpoints, and identical on every replica of a distributed step.
        first = tf.VariableAggregation.ONLY_FIRST_REPLICA
        self.sample_seed = tf.Variable(
            int(seed), dtype=tf.int64, trainable=False, name="sample_seed", aggregation=first
        )
        self.sample_counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="sample_counter", aggregation=first)
        if not self._builds_networks_after_init:
            self.build_networks()

    #: Subclasses that learn :math:`L` from their own constructor arguments (a kernel) set this
    #: and call :meth:`build_networks` at the end of their ``__init__``.
    _builds_networks_after_init = False

    # ---------------------------------------------------------------- networks
    def build_networks(self, observation_shape: Optional[Tuple[int, ...]] = None, num_latent_gps: Optional[int] = None):
        """Create the networks' weights now rather than at the first batch.

        Keras networks without an input shape (e.g. a ``Sequential`` without ``Input``) create
        their weights at their first call. Until then a checkpoint cannot be restored into them
        (``tf.train.Checkpoint(...).read(path).assert_consumed()`` fails and TensorFlow warns
        about unresolved values). Every model calls this at construction with what it knows:
        the decoder is built from the number of latent channels :math:`L` when that is known
        (``num_latent_gps``, a ``SeparateIndependent`` kernel, or an encoder with a known output
        width). Call it yourself with ``observation_shape`` (one observation's shape, e.g.
        ``(784,)`` or ``(28, 28, 1)``) for an encoder without an input shape, or with
        ``num_latent_gps`` when :math:`L` cannot be inferred. Idempotent; networks already built
        are left alone.

        :raises ValueError: if a network cannot take inputs of that shape (the message names it).
        """
        if observation_shape is not None and self.encoder is not None and not _is_built(self.encoder):
            shape = [1] + [int(d) for d in observation_shape]
            self._try_build("encoder", observation_shape, lambda: self._encode_zeros(shape))
        L = int(num_latent_gps) if num_latent_gps is not None else self._known_num_latent_gps()
        if L is not None and not _is_built(self.decoder):
            width = self._decoder_input_width(L)
            self._try_build("decoder", (width,), lambda: self.decode(tf.zeros([1, width]), training=False))
        return self

    def _encode_zeros(self, shape):
        return self.encode(self.encoder_inputs(tf.zeros(shape, tf.float32)), training=False)

    def _decoder_input_width(self, num_latent_gps: int) -> int:
        """Width of the decoder's input for :math:`L` latent channels (models that also feed
        the decoder a condition override this)."""
        return num_latent_gps

    def decoder_condition(self, X_gp: tf.Tensor) -> Optional[tf.Tensor]:
        """What the decoder reads beside the codes from the GP inputs ``X_gp [..., b, D]``
        (``[..., b, C]``), or ``None`` (the default: the codes alone)."""
        return None

    def _known_num_latent_gps(self) -> Optional[int]:
        """:math:`L` if the constructor arguments fix it, else ``None``."""
        for name in ("_expected_num_latent_gps", "num_latent_gps"):
            value = getattr(self, name, None)
            if value is not None:
                return int(value)
        kernel = getattr(self, "kernel", None)
        if isinstance(kernel, gpflow.kernels.SeparateIndependent):
            return len(kernel.kernels)
        shapes = getattr(self.encoder, "output_shape", None) if _is_built(self.encoder) else None
        try:
            widths = {int(shape[-1]) for shape in shapes}  # (means, variances): two [b, L] shapes
        except (TypeError, IndexError, AttributeError, ValueError):
            return None
        return widths.pop() if len(widths) == 1 else None

    @staticmethod
    def _try_build(role: str, shape, build):
        try:
            build()
        except (ValueError, TypeError, tf.errors.InvalidArgumentError) as error:
            raise ValueError(
                f"The {role} cannot take inputs of shape [batch, {', '.join(map(str, shape))}]: {error}"
            ) from error

    def _network_dtype(self, network) -> tf.DType:
        return tf.as_dtype(getattr(network, "compute_dtype", None) or tf.float32)

    def encode(self, Y: tf.Tensor, training: Optional[bool] = None) -> Tuple[tf.Tensor, tf.Tensor]:
        """Site means and variances ``[b, L]`` in ``gpflow.default_float()``.

        :raises tf.errors.InvalidArgumentError: if the encoder returns a
            non-positive or non-finite variance.
        """
        Y = tf.cast(Y, self._network_dtype(self.encoder))
        try:
            outputs = self.encoder(Y, training=training) if _accepts_training(self.encoder) else self.encoder(Y)
        except ValueError as error:
            if "single output tensor" not in str(error):
                raise
            # Keras' Sequential refuses a last layer with two outputs (the site head's pair).
            raise ValueError(
                "The encoder is a tf_keras.Sequential ending in a layer with two outputs (means, variances), "
                "which Sequential does not allow. Use the functional API (inputs -> body -> "
                "GaussianSiteHead(L)), gpflow_svgpvae.networks.mlp_encoder, or a tf_keras.Model subclass "
                "whose call returns the pair."
            ) from error
        if not isinstance(outputs, (tuple, list)) or len(outputs) != 2:
            raise TypeError(
                "The encoder must return a pair (means [b, L], variances [b, L]); "
                "end it with gpflow_svgpvae.networks.GaussianSiteHead."
            )
        dtype = gpflow.default_float()
        means, variances = (tf.cast(t, dtype) for t in outputs)
        if means.shape.rank != 2 or variances.shape.rank != 2:
            raise ValueError(
                f"The encoder must return [b, L] means and variances; got {means.shape} and {variances.shape}."
            )
        means = assert_finite(means, "The encoder returned non-finite means.")
        variances = assert_finite(variances, "The encoder returned non-finite variances.")
        variances = assert_positive(
            variances,
            "The encoder returned non-positive variances; variances must be > 0 (end the encoder "
            "with gpflow_svgpvae.networks.GaussianSiteHead, which uses a softplus).",
        )
        return means, variances

    def encode_frames(self, Y: tf.Tensor, num_leading: int, training: Optional[bool] = None):
        """:meth:`encode` of observations with ``num_leading`` leading axes (e.g. ``[V, T, ...]``),
        in one call: site means and variances ``[V, T, L]``."""
        flat = _flatten_leading(Y, num_leading)
        means, variances = self.encode(flat, training=training)  # [V*T, L]
        if num_leading == 1:
            return means, variances
        shape = tf.concat([tf.shape(Y)[:num_leading], tf.shape(means)[-1:]], 0)
        return tf.reshape(means, shape), tf.reshape(variances, shape)

    def reconstruct(
        self,
        Y: tf.Tensor,
        z_mean: tf.Tensor,
        z_var: tf.Tensor,
        training: Optional[bool] = None,
        mask: Optional[tf.Tensor] = None,
        condition: Optional[tf.Tensor] = None,
    ):
        r""":math:`\sum_i E_q[\log p(y_i\mid z_i)]` (Monte Carlo) over all rows of ``Y [..., b, ...]``
        given latent marginals ``[..., b, L]``, and the decoded means of the sampled codes, shaped like ``Y``.

        :param mask: optional entry mask of ``Y``'s shape (1 = observed): the log density
            is summed over the observed entries only.
        :param condition: optional ``[..., b, C]``: the decoder reads ``[z_i, condition_i]``."""
        num_leading = z_mean.shape.rank - 1
        L = z_mean.shape[-1] if z_mean.shape[-1] is not None else tf.shape(z_mean)[-1]
        extra = {} if mask is None else {"mask": _flatten_leading(mask, num_leading)}
        if condition is not None:
            extra["condition"] = _flatten_leading(condition, num_leading)
        reconstruction, decoded = self._reconstruction(
            _flatten_leading(Y, num_leading),
            tf.reshape(z_mean, [-1, L]),
            tf.reshape(z_var, [-1, L]),
            training=training,
            **extra,
        )
        return reconstruction, (decoded if num_leading == 1 else tf.reshape(decoded, tf.shape(Y)))

    def encode_all(self, Y, batch_size: int = 1024) -> Tuple[tf.Tensor, tf.Tensor]:
        """:meth:`encode` of many images in chunks of ``batch_size`` (``training=False``): ``[n, L]`` each."""
        means, variances = [], []
        for start in range(0, len(Y), int(batch_size)):
            m, v = self.encode(tf.convert_to_tensor(Y[start : start + int(batch_size)]), training=False)
            means.append(m)
            variances.append(v)
        return tf.concat(means, 0), tf.concat(variances, 0)

    def decode(self, Z: tf.Tensor, training: Optional[bool] = None, condition: Optional[tf.Tensor] = None) -> tf.Tensor:
        """Decoder output (likelihood parameters) for latent codes ``Z [b, L]``; with a
        ``condition [b, C]`` the decoder reads ``[Z, condition]`` (width ``L + C``)."""
        Z = tf.cast(Z, self._network_dtype(self.decoder))
        if condition is not None:
            Z = tf.concat([Z, tf.cast(condition, Z.dtype)], axis=-1)
        out = self.decoder(Z, training=training) if _accepts_training(self.decoder) else self.decoder(Z)
        # A mixed-precision decoder returns 16-bit floats: predictions and the likelihood get float32 or wider.
        return tf.cast(out, tf.float32) if out.dtype in (tf.bfloat16, tf.float16) else out

    def decode_predictions(
        self,
        mean: tf.Tensor,
        var: tf.Tensor,
        num_samples: Optional[int] = None,
        seed: int = 0,
        stream: int = 0,
        condition: Optional[tf.Tensor] = None,
    ):
        r"""Decode latent predictions: the likelihood mean at the latent mean, and optionally
        the likelihood means of ``S`` latent samples :math:`z = m + \sqrt{v}\,\epsilon`.

        :param mean: latent means ``[..., n, L]``; :param var: latent variances, same shape.
        :param num_samples: ``S`` (``None``: only the decoded mean).
        :param seed: seed of the stateless draws (same seed, same samples).
        :param stream: second seed word, so that models draw distinct streams.
        :param condition: optional ``[..., n, C]`` read by the decoder beside each code (the
            same for every sample of a point; :meth:`decode`).
        :return: decoded mean ``[..., n, ...]`` (in the decoder's dtype), or the pair
            ``(mean, samples [S, ..., n, ...])`` when ``num_samples`` is given.
        """
        dtype = gpflow.default_float()
        lead = tf.shape(mean)[:-1]
        L = mean.shape[-1] if mean.shape[-1] is not None else tf.shape(mean)[-1]
        if condition is not None:
            condition = tf.convert_to_tensor(condition)
            C = condition.shape[-1] if condition.shape[-1] is not None else tf.shape(condition)[-1]

        def decoded_means(Z):  # [..., L] -> [..., ...]
            rows = None
            if condition is not None:  # samples [S, ..., n, L] share their point's condition [..., n, C]
                rows = tf.reshape(tf.broadcast_to(condition, tf.concat([tf.shape(Z)[:-1], [C]], 0)), [-1, C])
            params = self.decode(tf.reshape(Z, [-1, L]), training=False, condition=rows)
            out = tf.cast(self.likelihood.mean(tf.cast(params, dtype)), params.dtype)
            return tf.reshape(out, tf.concat([tf.shape(Z)[:-1], tf.shape(out)[1:]], 0))

        decoded = decoded_means(mean)
        if num_samples is None:
            return decoded
        S = int(num_samples)
        eps = tf.random.stateless_normal(
            tf.concat([[S], lead, [L]], 0), tf.constant([int(seed), int(stream)], tf.int64), dtype=mean.dtype
        )
        return decoded, decoded_means(mean + tf.sqrt(var) * eps)

    def predict_f(self, Xnew, data=None):
        """Latent predictive mean and variance at ``Xnew`` given ``data`` (each model says
        what it conditions on)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict_f.")

    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0):
        """Decoded predictions at ``Xnew`` given ``data``: the likelihood mean at the latent
        mean, and with ``num_samples`` also ``[S, ...]`` decoded latent samples (a pair);
        see :meth:`decode_predictions`."""
        mean, var = self.predict_f(Xnew, data)
        return self.decode_predictions(mean, var, num_samples=num_samples, seed=seed)

    def posterior(self, data) -> "ConditionedModel":
        """The model conditioned on ``data``: ``posterior(data).predict_f(Xnew)`` is
        ``predict_f(Xnew, data)`` (models that can cache a posterior override this)."""
        return ConditionedModel(self, data)

    def _imputation_queries(self, X):
        """The inputs :meth:`impute` predicts at: the data's own inputs ``X``."""
        return X

    def impute(self, data, num_samples: Optional[int] = None, seed: int = 0, **posterior_options):
        r"""Fill in the missing entries of ``data = (X, Y, mask)`` (or ``(X, Y)`` with NaN for
        missing entries and ``missing_values="nan"``); models with :attr:`supports_missing`.

        The posterior is conditioned on all observed entries of ``data`` (:math:`s = 1`):
        for one latent dataset ``X [N, D]`` on all its points, for sequences (videos)
        ``X [V, T, D]``, ``Y [V, T, ...]`` each sequence on its own observed frames. At
        every point of ``data`` (also fully missing and padded frames) the decoder's mean
        at the latent posterior mean fills the missing entries; observed entries are
        returned exactly as given.

        :param num_samples: ``S``: also ``S`` imputations from latent samples
            :math:`z \sim q(z\mid x)` (independent per point), each the decoder's *mean* at the
            sampled code (the decoder's observation noise is not sampled: for a Bernoulli
            decoder the samples are probabilities), observed entries kept.
        :param seed: seed of the stateless latent draws (same seed, same samples).
        :param posterior_options: passed to :meth:`posterior` (e.g. ``batch_size`` of the SVGP-VAE).
        :return: the imputed ``Y`` (``Y``'s shape and float dtype; ``float32`` for integer ``Y``),
            or the pair ``(imputed, samples [S, ...])`` when ``num_samples`` is given.
        """
        if isinstance(data, tf.data.Dataset):
            raise TypeError("impute takes arrays (X, Y) or (X, Y, mask), not a tf.data.Dataset.")
        X, Y, mask = self.observed(data)
        Y = tf.convert_to_tensor(Y)
        if not Y.dtype.is_floating:
            Y = tf.cast(Y, tf.float32)
        out = self.posterior(data, **posterior_options).predict_y(
            self._imputation_queries(X), num_samples=num_samples, seed=seed
        )
        decoded, samples = (out, None) if num_samples is None else out
        observed = tf.ones_like(Y, dtype=tf.bool) if mask is None else mask > 0
        imputed = tf.where(observed, Y, tf.cast(tf.reshape(decoded, tf.shape(Y)), Y.dtype))
        if samples is None:
            return imputed
        samples = tf.reshape(tf.cast(samples, Y.dtype), tf.concat([[int(num_samples)], tf.shape(Y)], 0))
        return imputed, tf.where(observed[None], Y[None], samples)

    def _next_seed(self) -> tf.Tensor:
        override = self.__dict__.get("_draw_override")
        if override is not None:  # an evaluation draw (see :meth:`elbo`): the counter stays
            if override[0] == "seed":
                return tf.constant([override[1], 0], tf.int64)
            return tf.stack([self.sample_seed.read_value(), self.sample_counter.read_value()])
        step = self.sample_counter.read_value()
        with tf.control_dependencies([step]):
            self.sample_counter.assign_add(1)
        return tf.stack([self.sample_seed.read_value(), step])

    def _sample_normal(self, mean: tf.Tensor, var: tf.Tensor) -> tf.Tensor:
        """Reparameterised draws ``[S, b, L]`` from independent Gaussians.

        The noise is drawn for the whole *global* batch and each replica takes
        its own rows, so R replicas draw exactly what one device would.
        """
        # After the inputs (and their checks): a rejected batch leaves the counter alone.
        with tf.control_dependencies([mean, var]):
            seed = self._next_seed()
        b = tf.shape(mean)[0]
        offset, total = distribute.batch_offset_and_total(b)
        shape = tf.stack([self.num_samples, total, tf.shape(mean)[1]])
        eps = tf.random.stateless_normal(shape, seed, dtype=mean.dtype, alg="philox")
        eps = eps[:, offset : offset + b]
        return mean + tf.sqrt(var) * eps

    def _reconstruction(
        self, Y: tf.Tensor, z_mean: tf.Tensor, z_var: tf.Tensor, training=None, mask=None, condition=None
    ):
        r""":math:`\sum_i E_q[\log p(y_i \mid z_i)]` by Monte Carlo, and the decoded mean of
        the samples (for GECO's reconstruction constraint). ``mask`` (``Y``'s shape, optional):
        sum over the observed entries only. ``condition`` (``[b, C]``, optional): the decoder
        reads ``[z_i, condition_i]``."""
        Z = self._sample_normal(z_mean, z_var)  # [S, b, L]
        S = self.num_samples
        Z_flat = tf.reshape(Z, [-1, tf.shape(Z)[-1]])  # [S*b, L]
        if condition is not None:
            condition = tf.tile(condition, [S, 1])  # [S*b, C]
        params = self.likelihood.check_decoder_output(
            self.decode(Z_flat, training=training, condition=condition), Y
        )  # [S*b, ...]
        multiples = tf.concat([[S], tf.ones([tf.rank(Y) - 1], tf.int32)], 0)
        Y_rep = tf.tile(Y, multiples)
        if mask is None:
            log_probs = self.likelihood.log_prob(Y_rep, params)  # [S*b]
        else:
            log_probs = self.likelihood.log_prob(Y_rep, params, mask=tf.tile(mask, multiples))
        reconstruction = tf.reduce_sum(log_probs) / S
        # GECO's constraint uses the first sample's decoded mean only.
        decoded_mean = self.likelihood.mean(tf.cast(params[: tf.shape(Y)[0]], gpflow.default_float()))
        return reconstruction, decoded_mean

    # --------------------------------------------------------------- objective
    @abc.abstractmethod
    def objective_terms(self, data, training: Optional[bool] = True) -> Dict[str, tf.Tensor]:
        """``reconstruction``, ``kl``, ``batch_size``, ``scale`` (N/b), ``elbo`` and
        ``decoded`` (decoder mean of the sampled codes) for one batch."""

    @not_autographed  # in a user's tf.function too (see gpflow_svgpvae.tracing)
    def elbo(self, data, seed: Optional[int] = None) -> tf.Tensor:
        """The minibatch ELBO estimate in GPflow's units (whole-dataset scale), for evaluation.

        Deterministic for a given model state: the networks run in inference mode
        (``training=False``) and the Monte Carlo draw is fixed. ``seed=None``: the draw the
        next training step would make (the model's ``sample_seed`` and ``sample_counter``),
        without advancing the counter; an integer: the stateless draw keyed by ``(seed, 0)``.
        (:meth:`training_loss` / :meth:`maximum_log_likelihood_objective` draw afresh each call,
        as a stochastic training objective must.)
        """
        with self._fixed_draw(seed):
            return self.objective_terms(data, training=False)["elbo"]

    @not_autographed  # GPflow's compiled training_loss_closure traces this
    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:
        """The ELBO with a fresh Monte Carlo draw (advances the draw counter): GPflow's
        ``training_loss(data)`` is its negative."""
        return self.objective_terms(data, training=True)["elbo"]

    @contextlib.contextmanager
    def _fixed_draw(self, seed: Optional[int]):
        # Stored outside tf.Module's attribute tracking: a Python value read while tracing.
        previous = self.__dict__.get("_draw_override")
        self.__dict__["_draw_override"] = ("current",) if seed is None else ("seed", int(seed))
        try:
            yield
        finally:
            self.__dict__["_draw_override"] = previous

    def _terms(self, reconstruction, kl, batch_size, num_data, decoded):
        """Assemble the terms. In a distributed step ``reconstruction`` and
        ``decoded`` are this replica's, ``batch_size`` and ``kl`` are global; the
        returned ``elbo``/``reconstruction`` are global (summed over replicas) and
        ``local_reconstruction`` is what this replica's loss differentiates."""
        dtype = gpflow.default_float()
        scale = tf.cast(num_data, dtype) / tf.cast(batch_size, dtype)
        (global_reconstruction,) = distribute.sum_across_replicas([reconstruction])
        return {
            "num_replicas": distribute.num_replicas(),
            "elbo": scale * global_reconstruction - kl,
            "reconstruction": global_reconstruction,
            "local_reconstruction": reconstruction,
            "kl": kl,
            "scale": scale,
            "batch_size": batch_size,
            "decoded": decoded,
        }

    def as_training_model(self, objective=None):
        """A ``tf_keras.Model`` view for ``compile`` + ``fit``; see
        :class:`gpflow_svgpvae.training.KerasTrainingModel`."""
        from ..training.keras import KerasTrainingModel  # training sits above models

        return KerasTrainingModel(self, objective=objective)


def _is_built(network) -> bool:
    """Keras networks know whether their weights exist; other modules are taken as built."""
    from gpflow.keras import tf_keras

    return network is None or not isinstance(network, tf_keras.layers.Layer) or bool(network.built)


def _accepts_training(network) -> bool:
    from gpflow.keras import tf_keras

    return isinstance(network, tf_keras.layers.Layer)


class ConditionedModel:
    """A model bound to the data it conditions on (the default :meth:`LatentVariableAutoencoder.posterior`):
    ``predict_f(Xnew)`` and ``predict_y(Xnew, num_samples=None, seed=0)`` call the model's
    methods with that data, so every model offers ``posterior(data)``. More ``data`` given to
    a prediction is refused: the bound data are all it conditions on."""

    def __init__(self, model: LatentVariableAutoencoder, data):
        self.model = model
        self.data = data

    def _only_bound(self, data):
        if data is not None:
            raise ValueError(
                f"This posterior of {type(self.model).__name__} is bound to its data; call "
                "model.predict_f(Xnew, data) with the data you want instead."
            )

    def predict_f(self, Xnew, data=None):
        self._only_bound(data)
        return self.model.predict_f(Xnew, self.data)

    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0):
        self._only_bound(data)
        return self.model.predict_y(Xnew, self.data, num_samples=num_samples, seed=seed)
