r"""What every autoencoder in the package shares: networks, decoder likelihood, sampling, the
data boundary (:mod:`.data`), decoded predictions (:mod:`.prediction`) and the training interface.

Subclasses implement :meth:`LatentVariableAutoencoder.objective_terms`, which returns the
pieces of a batch's bound in GPflow's units (the whole training set's scale),
:class:`ELBOTerms`; the bound itself,

.. math::

    \mathcal L = s\sum_{i\in b} E_q[\log p(y_i\mid z_i)] - \mathrm{KL},\qquad s = N/b,

is written once, in :meth:`ELBOTerms.elbo`. The training objectives (plain/beta ELBO, GECO) in
:mod:`gpflow_svgpvae.training` weight its terms, and both training paths run the same step.
"""

import abc
import contextlib
import numbers
from typing import NamedTuple, Optional, Tuple, Union

import gpflow
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.keras import tf_keras
from gpflow.models import BayesianModel, ExternalDataTrainingLossMixin

from .. import distribute
from ..likelihoods import DecoderLikelihood, as_likelihood
from ..networks.validation import build_or_explain, check_network, is_built, output_width
from ..numerics import assert_finite, assert_positive, record_network_output
from ..tracing import not_autographed
from ..transforms import flatten_leading
from . import data as data_boundary
from .data import Batch, positive_count
from .prediction import ConditionedModel, decode_latent_predictions, fill_missing

__all__ = ["LatentVariableAutoencoder", "ELBOTerms"]


class ELBOTerms(NamedTuple):
    r"""The pieces of a batch's bound, in GPflow's units (the whole training set's scale).

    ``reconstruction``: :math:`\sum_{i\in b} E_q[\log p(y_i\mid z_i)]` over this replica's points;
    ``kl``: the batch's prior term on the training set's scale (the same on every replica);
    ``scale``: :math:`s`, which takes the batch's reconstruction to the training set's (:math:`N/b`);
    ``decoded``: the decoder's means of the sampled codes (``Y``'s shape), for objectives that
    compare them with ``Y``; ``mask``: the entry mask (``Y``'s shape) or ``None``;
    ``num_replicas``: :math:`R`, the replicas of a ``tf.distribute`` step (1 outside one).
    """

    reconstruction: tf.Tensor
    kl: tf.Tensor
    scale: tf.Tensor
    decoded: tf.Tensor
    mask: Optional[tf.Tensor]
    num_replicas: int

    @check_shapes("return: []")
    def elbo(self, kl_weight=1.0) -> tf.Tensor:
        r"""This replica's share of the bound, :math:`s\,\text{reconstruction} - w\,\mathrm{KL}/R`.

        The shares of the :math:`R` replicas sum to the batch's bound; with one replica and
        :math:`w = 1` it is the bound. :param kl_weight: :math:`w` (a KL warm-up or beta).
        """
        return self.scale * self.reconstruction - tf.cast(kl_weight, self.kl.dtype) * self.kl / self.num_replicas


class LatentVariableAutoencoder(BayesianModel, ExternalDataTrainingLossMixin, abc.ABC):
    """Base class: ``data = (X, Y)`` with auxiliary inputs ``X`` and observations ``Y``.

    :param encoder: ``Y -> (means [b, L], variances [b, L])`` (``tf_keras``).
    :param decoder: ``Z [b, L] -> likelihood parameters [b, ...]`` (``tf_keras``).
    :param likelihood: a :class:`~gpflow_svgpvae.likelihoods.DecoderLikelihood`
        or ``"gaussian"`` / ``"bernoulli"``.
    :param num_data: the size of the training set, for GPflow's minibatch scaling: the number
        of points of one latent dataset (data ``X [N, D]``), or of sequences (data
        ``X [V, T, D]``); ``None``: each batch is the whole training set (no scaling).
    :param sequence_length: for sequence data, the number of frames :math:`N` of every
        sequence, when batches may hold :math:`b < N` of them (the ``T`` axis of a batch; each
        sequence's reconstruction is then scaled by :math:`N/b`); ``None``: sequences are given
        whole (:math:`b = N = T`).
    :param num_samples: Monte Carlo samples of :math:`z` per point for the
        reconstruction term.
    :param seed: seed of the Monte Carlo draws (the draw counter is saved in checkpoints).
    :param missing_values: ``None`` or ``"nan"`` (NaN entries of ``Y`` are missing); models with
        ``supports_missing``.
    :param encoder_sees_mask: the encoder sees ``concat([Y zero-filled, mask], -1)``; models with
        ``supports_missing``.
    :param encoder_dropout: in ``[0, 1)``; in training steps, each observed entry is hidden from
        the encoder with this probability (see :meth:`encoder_view`); models with
        ``supports_missing``.
    """

    def __init__(
        self,
        encoder,
        decoder,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_data: Optional[int] = None,
        sequence_length: Optional[int] = None,
        num_samples: int = 1,
        seed: int = 0,
        missing_values: Optional[str] = None,
        encoder_sees_mask: bool = False,
        encoder_dropout: float = 0.0,
        name: Optional[str] = None,
    ):
        super().__init__(name=name)
        if missing_values not in (None, "nan"):
            raise ValueError(f"missing_values must be None or 'nan'; got {missing_values!r}")
        rate: object = encoder_dropout  # a float to the type checker, but any object may arrive
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= float(rate) < 1.0:
            raise ValueError(
                f"encoder_dropout (the probability of hiding an observed entry from the encoder in training) "
                f"must be a number in [0, 1); got {encoder_dropout!r}"
            )
        if (missing_values is not None or encoder_sees_mask or encoder_dropout) and not self.supports_missing:
            raise TypeError(
                f"{type(self).__name__} does not take missing data "
                "(missing_values, encoder_sees_mask, encoder_dropout)."
            )
        self.missing_values = missing_values
        self.encoder_sees_mask = bool(encoder_sees_mask)
        self.encoder_dropout = float(encoder_dropout)
        self.encoder = check_network(encoder, "encoder") if encoder is not None else None
        self.decoder = check_network(decoder, "decoder")
        self.likelihood = as_likelihood(likelihood)
        self.num_data = None if num_data is None else positive_count(num_data, "num_data", "the training-set size")
        self.sequence_length = (
            None
            if sequence_length is None
            else positive_count(sequence_length, "sequence_length", "the number of frames per sequence")
        )
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

    #: Whether :meth:`objective_terms` accepts ``data = (X, Y, mask)`` (missing entries).
    supports_missing = False

    #: Set by models whose bound has no minibatch estimate over the frames of a sequence.
    whole_sequences_only = False

    # ---------------------------------------------------------------- data
    def data_batch(self, data, conditioning: bool = False) -> Batch:
        """``data = (X, Y)`` or ``(X, Y, mask)`` checked and normalised once (see :mod:`.data`).

        :param conditioning: data to condition a prediction on: any number of points, frames
            and sequences (training batches must fit ``num_data`` and ``sequence_length``).
        """
        if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
            raise TypeError(f"data must be a pair (X, Y) or a triple (X, Y, mask); got {type(data).__name__}")
        if len(data) == 3 and not self.supports_missing:
            raise TypeError(
                f"{type(self).__name__} does not take a mask of missing entries: pass data = (X, Y) (SVGPVAE takes "
                "data = (X, Y, mask))."
            )
        X, Y, mask = (tuple(data) + (None,))[:3]
        if mask is not None or self.missing_values == "nan":
            Y, mask = data_boundary.observed_entries(X, Y, mask, nan_missing=self.missing_values == "nan")
        X, Y = data_boundary.check_inputs(
            X,
            Y,
            input_dim=self.input_dim,
            input_origin=self._input_dim_origin,
            num_data=None if conditioning else self.num_data,
            sequence_length=None if conditioning else self.sequence_length,
            whole_sequences=type(self).__name__ if self.whole_sequences_only and not conditioning else None,
        )
        weights = None if mask is None else data_boundary.point_weights(mask, X.shape.rank - 1)
        return Batch(X, Y, mask, weights)

    def _points_batch(self, data, conditioning: bool = False) -> Batch:
        """:meth:`data_batch` of models that take one latent dataset only (``X [b, D]``)."""
        batch = self.data_batch(data, conditioning=conditioning)
        if batch.X.shape.rank != 2:
            raise ValueError(f"X must have shape [batch, input_dim]; got shape {batch.X.shape}")
        return batch

    def check_arrays(self, data) -> None:
        """Check whole arrays ``(X, Y)`` or ``(X, Y, mask)`` before training (``train`` and the Keras
        view call this); see :func:`gpflow_svgpvae.models.data.check_arrays`."""
        data_boundary.check_arrays(
            data,
            self.missing_values,
            getattr(self, "input_transform", None),
            target_range=getattr(self.likelihood, "target_range", None),
            likelihood=type(self.likelihood).__name__,
        )

    def encoder_view(self, batch: Batch, training: Optional[bool] = None) -> Batch:
        r"""The batch as the encoder sees it: in a training step with ``encoder_dropout`` :math:`p > 0`,
        each observed entry is hidden (zero-filled, mask 0) with probability :math:`p`, and a point
        (frame) left with nothing visible gets weight 0 (no site); otherwise ``batch`` itself.

        The reconstruction still scores every observed entry, so the model is trained to predict
        entries its encoder did not see, which is what imputation asks of it. The bound stays a
        lower bound on :math:`\log p(y_O)`: the sites of any subset of the entries define a valid
        :math:`q`. The draw is keyed by ``(sample_seed, sample_counter)``, on a stream of its own.
        """
        if not training or self.encoder_dropout == 0.0:
            return batch
        mask = tf.ones_like(batch.Y) if batch.mask is None else batch.mask
        key = tf.random.experimental.stateless_fold_in(
            tf.stack([self.sample_seed.read_value(), self.sample_counter.read_value()]), 1
        )
        visible = (
            tf.random.stateless_uniform(tf.shape(mask), key, dtype=mask.dtype, alg="philox") >= self.encoder_dropout
        )
        mask = mask * tf.cast(visible, mask.dtype)
        return Batch(batch.X, batch.Y * mask, mask, data_boundary.point_weights(mask, batch.X.shape.rank - 1))

    def encoder_inputs(self, Y, mask=None):
        """What the encoder sees: ``Y`` (zero-filled at missing entries), with
        ``encoder_sees_mask`` concatenated with the mask (ones if ``None``) along the last axis."""
        if not self.encoder_sees_mask:
            return Y
        mask = tf.ones_like(Y) if mask is None else tf.cast(mask, Y.dtype)
        return tf.concat([Y, mask], axis=-1)

    @property
    def input_dim(self) -> Optional[int]:
        """Width of the auxiliary inputs ``X`` expected by the prior (None: not fixed)."""
        return None

    def _input_dim_origin(self) -> str:
        return "the width of its auxiliary inputs"

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
        if observation_shape is not None and self.encoder is not None and not is_built(self.encoder):
            shape = [1] + [int(d) for d in observation_shape]
            build_or_explain("encoder", observation_shape, lambda: self._encode_zeros(shape))
        L = int(num_latent_gps) if num_latent_gps is not None else self._known_num_latent_gps()
        if L is not None and not is_built(self.decoder):
            width = self._decoder_input_width(L)
            build_or_explain("decoder", (width,), lambda: self.decode(tf.zeros([1, width]), training=False))
        elif L is not None:
            self._check_decoder_width(L)
        return self

    def _check_decoder_width(self, L: int) -> None:
        """A built decoder must take the width the model feeds it (:math:`L`, plus a condition).

        :math:`L` is the encoder's output width when known (a kernel with another number of
        channels is reported by the model's own check of the encoder's output)."""
        L = output_width(self.encoder) or L
        try:
            shape = self.decoder.input_shape
        except (AttributeError, RuntimeError):  # not a Keras network, or one without a fixed input
            return
        got = shape[-1] if isinstance(shape, tuple) and shape and isinstance(shape[-1], int) else None
        width = self._decoder_input_width(L)
        if got is not None and got != width:
            condition = "" if width == L else f" plus {width - L} condition columns"
            raise ValueError(
                f"The decoder takes inputs of width {got}, but the model feeds it L = {L} latent channels{condition} "
                f"(the encoder's output width, else num_latent_gps or the kernel's number of channels). Build the "
                f"decoder for {width} inputs (e.g. mlp_decoder({L}, ...)) or the encoder for L = {got - (width - L)}."
            )

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
        return output_width(self.encoder)

    def encode(
        self, Y: tf.Tensor, training: Optional[bool] = None, num_leading: int = 1
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Site means and variances ``[b, L]`` in ``gpflow.default_float()`` of observations
        ``Y [b, ...]``; with ``num_leading`` leading axes (e.g. ``Y [V, T, ...]``), all of them in
        one encoder call: ``[V, T, L]``.

        :raises tf.errors.InvalidArgumentError: if the encoder returns a
            non-positive or non-finite variance.
        :raises TypeError: if the model has no encoder.
        """
        if self.encoder is None:
            raise TypeError(f"{type(self).__name__} has no encoder: it cannot encode observations.")
        if num_leading > 1:
            lead_shape = tf.shape(Y)[:num_leading]
            Y = flatten_leading(Y, num_leading)  # [V*T, ...]
        Y = tf.cast(Y, getattr(self.encoder, "compute_dtype", None) or tf.float32)
        try:
            keras = isinstance(self.encoder, tf_keras.layers.Layer)  # other modules take no `training`
            outputs = self.encoder(Y, training=training) if keras else self.encoder(Y)
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
        means, variances = tf.cast(outputs[0], dtype), tf.cast(outputs[1], dtype)
        if means.shape.rank != 2 or variances.shape.rank != 2:
            raise ValueError(
                f"The encoder must return [b, L] means and variances; got {means.shape} and {variances.shape}."
            )
        record_network_output("encoder means", means)
        record_network_output("encoder variances", variances)
        means = assert_finite(means, "The encoder returned non-finite means.")
        variances = assert_finite(variances, "The encoder returned non-finite variances.")
        variances = assert_positive(
            variances,
            "The encoder returned non-positive variances; variances must be > 0 (end the encoder "
            "with gpflow_svgpvae.networks.GaussianSiteHead, which uses a softplus).",
        )
        if num_leading == 1:
            return means, variances
        shape = tf.concat([lead_shape, tf.shape(means)[-1:]], 0)
        return tf.reshape(means, shape), tf.reshape(variances, shape)

    def reconstruct(
        self,
        Y: tf.Tensor,
        z_mean: tf.Tensor,
        z_var: tf.Tensor,
        training: Optional[bool] = None,
        mask: Optional[tf.Tensor] = None,
        condition: Optional[tf.Tensor] = None,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        r""":math:`\sum_i E_{q(z_i)}[\log p(y_i\mid z_i)]` over all points of ``Y [..., b, ...]`` by Monte
        Carlo (``num_samples`` reparameterised draws :math:`z = m + \sqrt{v}\,\epsilon` from the latent
        marginals ``z_mean, z_var [..., b, L]``), and the decoded means of the first draw (``Y``'s shape).

        :param mask: optional entry mask of ``Y``'s shape (1 = observed): the log density is summed
            over the observed entries only.
        :param condition: optional ``[..., b, C]``: the decoder reads ``[z_i, condition_i]``."""
        num_leading = z_mean.shape.rank - 1
        shape = tf.shape(Y)
        if num_leading > 1:  # sequences [V, T, ...]: all frames in one decoder call
            Y = flatten_leading(Y, num_leading)
            mask = None if mask is None else flatten_leading(mask, num_leading)
            condition = None if condition is None else flatten_leading(condition, num_leading)
        L = z_mean.shape[-1] if z_mean.shape[-1] is not None else tf.shape(z_mean)[-1]
        S = self.num_samples
        Z = self._sample_normal(tf.reshape(z_mean, [-1, L]), tf.reshape(z_var, [-1, L]))  # [S, n, L]
        if condition is not None:
            condition = tf.tile(condition, [S, 1])  # [S*n, C]
        params = self.decode(tf.reshape(Z, [-1, L]), training=training, condition=condition)  # [S*n, ...]
        multiples = tf.concat([[S], tf.ones([tf.rank(Y) - 1], tf.int32)], 0)
        entry_mask = None if mask is None else tf.tile(mask, multiples)
        # log_prob checks that the decoder returns one value per entry of Y.
        log_probs = self.likelihood.log_prob(tf.tile(Y, multiples), params, mask=entry_mask)  # [S*n]
        reconstruction = tf.reduce_sum(log_probs) / S
        # GECO's constraint uses the first draw's decoded mean only.
        decoded = self.likelihood.mean(tf.cast(params[: tf.shape(Y)[0]], gpflow.default_float()))
        return reconstruction, (decoded if num_leading == 1 else tf.reshape(decoded, shape))

    def encode_all(self, Y, batch_size: int = 1024) -> Tuple[tf.Tensor, tf.Tensor]:
        """:meth:`encode` of many images in chunks of ``batch_size`` (``training=False``): ``[n, L]`` each."""
        means, variances = [], []
        batch_size = positive_count(batch_size, "batch_size", "images per chunk")
        for start in range(0, len(Y), batch_size):
            m, v = self.encode(tf.convert_to_tensor(Y[start : start + batch_size]), training=False)
            means.append(m)
            variances.append(v)
        return tf.concat(means, 0), tf.concat(variances, 0)

    def decode(self, Z: tf.Tensor, training: Optional[bool] = None, condition: Optional[tf.Tensor] = None) -> tf.Tensor:
        """Decoder output (likelihood parameters) for latent codes ``Z [b, L]``; with a
        ``condition [b, C]`` the decoder reads ``[Z, condition]`` (width ``L + C``).

        :raises tf.errors.InvalidArgumentError: (when the numerical checks are on) if the decoder
            returns NaN or inf; inside a training step the step's guard checks it instead.
        """
        Z = tf.cast(Z, getattr(self.decoder, "compute_dtype", None) or tf.float32)
        if condition is not None:
            Z = tf.concat([Z, tf.cast(condition, Z.dtype)], axis=-1)
        keras = isinstance(self.decoder, tf_keras.layers.Layer)
        out = self.decoder(Z, training=training) if keras else self.decoder(Z)
        # A mixed-precision decoder returns 16-bit floats: predictions and the likelihood get float32 or wider.
        out = tf.cast(out, tf.float32) if out.dtype in (tf.bfloat16, tf.float16) else out
        if record_network_output(
            "decoder output", out
        ):  # a training step checks it with the gradients, before any update
            return out
        return assert_finite(
            out,
            "The decoder returned non-finite values (NaN or inf) for finite latent codes: check its "
            "weights (e.g. after a diverged training run) and its last layer.",
        )

    #: Decoded predictions from latent means and variances (and samples):
    #: :func:`~gpflow_svgpvae.models.prediction.decode_latent_predictions` with this model.
    decode_predictions = decode_latent_predictions

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

    def impute(self, data, num_samples: Optional[int] = None, seed: int = 0):
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
        :return: the imputed ``Y`` (``Y``'s shape and float dtype; ``float32`` for integer ``Y``),
            or the pair ``(imputed, samples [S, ...])`` when ``num_samples`` is given.
        """
        return self._impute(data, num_samples, seed)

    def _impute(self, data, num_samples: Optional[int], seed: int, **posterior_options):
        """:meth:`impute`, with ``posterior_options`` passed to :meth:`posterior` (overrides of
        :meth:`impute` that take the options of their :meth:`posterior`, e.g. the SVGP-VAE's
        ``batch_size``, call this)."""
        if isinstance(data, tf.data.Dataset):
            raise TypeError("impute takes arrays (X, Y) or (X, Y, mask), not a tf.data.Dataset.")
        X, Y, mask, _ = self.data_batch(data, conditioning=True)
        out = self.posterior(data, **posterior_options).predict_y(
            self._imputation_queries(X), num_samples=num_samples, seed=seed
        )
        return fill_missing(Y, mask, out, num_samples)

    def _sample_normal(self, mean: tf.Tensor, var: tf.Tensor) -> tf.Tensor:
        """Reparameterised draws ``[S, b, L]`` from independent Gaussians, keyed by
        ``(sample_seed, sample_counter)`` (a training draw advances the counter).

        The noise is drawn for the whole *global* batch and each replica takes
        its own rows, so R replicas draw exactly what one device would.
        """
        override = self.__dict__.get("_draw_override")
        # After the inputs (and their checks): a rejected batch leaves the counter alone.
        with tf.control_dependencies([mean, var]):
            if override is None:
                step = self.sample_counter.read_value()
                with tf.control_dependencies([step]):
                    self.sample_counter.assign_add(1)
                seed = tf.stack([self.sample_seed.read_value(), step])
            elif override[0] == "seed":  # an evaluation draw (see :meth:`elbo`): the counter stays
                seed = tf.constant([override[1], 0], tf.int64)
            else:
                seed = tf.stack([self.sample_seed.read_value(), self.sample_counter.read_value()])
        b = tf.shape(mean)[0]
        offset, total = distribute.batch_offset_and_total(b)
        shape = tf.stack([self.num_samples, total, tf.shape(mean)[1]])
        eps = tf.random.stateless_normal(shape, seed, dtype=mean.dtype, alg="philox")
        eps = eps[:, offset : offset + b]
        return mean + tf.sqrt(var) * eps

    # --------------------------------------------------------------- objective
    @abc.abstractmethod
    @check_shapes("return.reconstruction: []", "return.kl: []", "return.scale: []")
    def objective_terms(self, data, training: Optional[bool] = True) -> ELBOTerms:
        """The pieces of the bound of a batch ``data`` (:class:`ELBOTerms`)."""

    @not_autographed  # in a user's tf.function too (see gpflow_svgpvae.tracing)
    @check_shapes("return: []")
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
            return self.objective_terms(data, training=False).elbo()

    @not_autographed  # GPflow's compiled training_loss_closure traces this
    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:
        """The ELBO with a fresh Monte Carlo draw (advances the draw counter): GPflow's
        ``training_loss(data)`` is its negative."""
        return self.objective_terms(data, training=True).elbo()

    @contextlib.contextmanager
    def _fixed_draw(self, seed: Optional[int]):
        # Stored outside tf.Module's attribute tracking: a Python value read while tracing.
        previous = self.__dict__.get("_draw_override")
        self.__dict__["_draw_override"] = ("current",) if seed is None else ("seed", int(seed))
        try:
            yield
        finally:
            self.__dict__["_draw_override"] = previous

    def _elbo_terms(self, reconstruction, kl, scale, decoded, mask=None) -> ELBOTerms:
        """:class:`ELBOTerms` of this replica (``kl`` global, ``scale`` float64)."""
        dtype = gpflow.default_float()
        return ELBOTerms(
            tf.cast(reconstruction, dtype),
            tf.cast(kl, dtype),
            tf.cast(scale, dtype),
            decoded,
            mask,
            distribute.num_replicas(),
        )

    def as_training_model(self, objective=None):
        """A ``tf_keras.Model`` view for ``compile`` + ``fit``; see
        :class:`gpflow_svgpvae.training.KerasTrainingModel`."""
        from ..training.keras import KerasTrainingModel  # training sits above models

        return KerasTrainingModel(self, objective=objective)
