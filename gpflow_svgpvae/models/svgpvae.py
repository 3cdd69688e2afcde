r"""The SVGP-VAE (Jazbec et al., AISTATS 2021): one model for every kind of auxiliary input.

:math:`L` independent latent GPs over GP inputs :math:`x` give the codes
:math:`z_i = [f^1(x_i),\dots,f^L(x_i)]`, a decoder gives :math:`p(y_i\mid z_i)`,
and the encoder's Gaussian sites define the inducing posterior
(:mod:`gpflow_svgpvae.amortized`). The minibatch ELBO, in GPflow's units, is

.. math::

    \mathcal L = \tfrac{N}{b}\sum_{i\in b} E_{q_S(z_i)}[\log p(y_i\mid z_i)]
        - \sum_l \mathrm{KL}\big(\mathcal N(\mu_l, A_l)\,\|\,\mathcal N(0, K_{mm})\big),

where :math:`q_S` is the sparse predictive marginal at :math:`x_i`. (The
paper's eq. 12 multiplied by :math:`N/b`: the Hensman data term of the latent
dataset cancels the encoder's cross-entropy exactly.)

The data's raw auxiliary inputs pass through an *input transform*
(:mod:`gpflow_svgpvae.transforms`: identity, GP-LVM object vectors, a
representation of each object's observations, compositions) before the
kernel. Data come in one of two layouts:

* ``X [b, D]``, ``Y [b, ...]``: a minibatch of one latent dataset of
  ``num_data`` points (the statistics are summed across replicas under
  ``tf.distribute``, so R replicas train as one device);
* ``X [V, b, D]``, ``Y [V, b, ...]``: ``V`` independent latent datasets
  (sequences, videos, subjects) out of ``num_data`` training sequences, each of
  ``sequence_length`` frames of which ``b`` are given; each gets its own :math:`q(u)`,
  and the ELBO is the sum over them (times ``num_data / V`` when ``num_data`` is given:
  GPflow's scaling to the training set).

Missing data
------------

Data may carry a mask: ``data = (X, Y, mask)``, ``mask`` of ``Y``'s shape
(1 = observed, 0 = missing; or one flag per point/frame, ``X``'s shape
without its last axis, e.g. ``[V, T]`` marking the real frames of padded
sequences). Without a mask, NaN in ``Y`` is an error unless the model is
built with ``missing_values="nan"`` (then NaN entries are missing; a mask,
if also given, is combined with them). With a mask the values at missing
entries are never read (they may be NaN). Then:

* missing entries contribute nothing to the decoder likelihood (the log
  density is summed over the observed entries of each point);
* the encoder sees ``Y`` with the missing entries set to 0, and with
  ``encoder_sees_mask=True`` also the mask, concatenated along the last axis
  (flat observations ``[.., K] -> [.., 2K]``, images ``[.., H, W, C] ->
  [.., H, W, 2C]``: the encoder must accept that width; data without a mask
  get a mask of ones);
* a point with no observed entry (a fully missing frame, a padded frame)
  carries no information: its site precision is 0, so it drops out of the
  statistics :math:`P, r` exactly; it still counts in :math:`b` (and so in
  :math:`N`: it is a point of the dataset whose observations are all
  missing), and it still gets a GP prediction;
* a mask of ones gives exactly the numbers of unmasked data.

Sequences of different lengths: pad them to a common ``T`` (any values),
pass the frame mask ``[V, T]`` (or an entry mask whose padded frames are all
0): each sequence is given whole (``sequence_length`` unset, or ``T``), so
:math:`s = 1` and each sequence's :math:`q(u)` conditions on exactly its real
frames; the ELBO, KL and predictions equal those of the unpadded sequences one
by one (each a latent dataset with :math:`s = 1`). (With ``sequence_length > T``
the padded frames count as missing frames of a longer sequence: :math:`s = N/T`
for every sequence.) Predictions condition on any number of frames and sequences.
"""

from typing import Optional, Sequence, Union

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel, SeparateIndependent

from .. import amortized, distribute
from ..kernels import check_input_dim
from ..likelihoods import DecoderLikelihood
from ..transforms import Identity, InputTransform, as_input_transform
from .base import ELBOTerms, LatentVariableAutoencoder
from .data import Batch
from .object_fitting import fit_object_vectors
from .prediction import PREDICT_Y_SHAPES, checked_predictions
from .video import LatentPosterior

__all__ = ["SVGPVAE"]


def _inducing_input_dim(inducing_variable) -> Optional[int]:
    if hasattr(inducing_variable, "Z"):
        return int(inducing_variable.Z.shape[-1])
    inner = getattr(inducing_variable, "inducing_variable", None)
    if inner is not None:
        return _inducing_input_dim(inner)
    inner_list = getattr(inducing_variable, "inducing_variable_list", None)
    if inner_list:
        return _inducing_input_dim(inner_list[0])
    return None


class SVGPVAE(LatentVariableAutoencoder):
    r"""Scalable GP-prior VAE with an amortised sparse posterior.

    :param encoder: ``tf_keras`` network, ``Y [n, ...] -> (means [n, L], variances [n, L])``
        (end it with :class:`~gpflow_svgpvae.networks.GaussianSiteHead`).
    :param decoder: ``tf_keras`` network, ``Z [n, L] -> likelihood parameters``.
    :param kernel: a GPflow kernel shared by all :math:`L` channels, or a
        multi-output kernel (``SharedIndependent``, ``SeparateIndependent``).
    :param inducing_variable: GPflow inducing variable (``InducingPoints``,
        ``SharedIndependentInducingVariables``, ``SeparateIndependentInducingVariables``)
        or an ``[M, D]`` array of inducing inputs (trainable), in the GP input space.
    :param likelihood: decoder likelihood: ``"gaussian"``, ``"bernoulli"``, a
        :class:`~gpflow_svgpvae.likelihoods.DecoderLikelihood` or a GPflow likelihood
        that fits (see :func:`~gpflow_svgpvae.likelihoods.as_likelihood`).
    :param num_data: the size of the training set: :math:`N` points of one latent dataset
        (data ``[b, ...]``; the scale of a minibatch is :math:`N/b`), or the number of training
        sequences (data ``[V, T, ...]``); ``None``: every batch is the whole training set.
    :param sequence_length: for sequences, the number of frames :math:`N` of each, when
        training batches hold :math:`b < N` of them (``train(..., frames_per_sequence=b)``);
        ``None``: sequences are given whole (:math:`s = 1`).
    :param input_transform: maps raw auxiliary inputs to GP inputs
        (:mod:`gpflow_svgpvae.transforms`); default: identity.
    :param num_latent_gps: :math:`L`; checked against the encoder output when given.
    :param jitter: added to the diagonal of :math:`K_{mm}`.
    :param num_samples: Monte Carlo samples of :math:`z` per point.
    :param seed: seed of the model's random generator.
    :param missing_values: ``None`` (default): NaN in ``Y`` is an error (missing entries
        need a mask, ``data = (X, Y, mask)``); ``"nan"``: NaN entries of ``Y`` are missing.
    :param encoder_sees_mask: feed the encoder ``concat([Y zero-filled, mask], -1)``
        (last axis twice as wide) instead of the zero-filled ``Y`` alone.
    :param encoder_dropout: in ``[0, 1)``: in training steps each observed entry is hidden from the
        encoder with this probability and still scored by the likelihood, which trains the model
        to predict entries it does not see, as imputation asks
        (:meth:`~gpflow_svgpvae.models.LatentVariableAutoencoder.encoder_view`).
    :param decoder_gp_columns: columns ``c_1..c_C`` of the GP inputs (after the input
        transform) that the decoder reads beside the code, :math:`p(y_i \mid z_i, x_{i,c})`
        with decoder input ``[z_i, x_{i,c_1}, ..., x_{i,c_C}]`` (width :math:`L + C`), in
        training, :meth:`predict_y`, the posterior's ``predict_y`` and :meth:`impute`.
        E.g. SPRITES' ``[style, pose vector]`` inputs: the style columns give the decoder the
        character's style directly, as a conditional VAE's decoder gets it. Gradients flow
        into the input transform through this path too. ``None`` (default): the decoder reads
        the code alone (the paper's model).
    """

    _builds_networks_after_init = True

    supports_missing = True

    def __init__(
        self,
        encoder,
        decoder,
        kernel: Kernel,
        inducing_variable: Union[InducingVariables, tf.Tensor],
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        num_data: Optional[int] = None,
        sequence_length: Optional[int] = None,
        input_transform: Optional[InputTransform] = None,
        num_latent_gps: Optional[int] = None,
        jitter: float = 1e-6,
        num_samples: int = 1,
        seed: int = 0,
        missing_values: Optional[str] = None,
        encoder_sees_mask: bool = False,
        encoder_dropout: float = 0.0,
        decoder_gp_columns: Optional[Sequence[int]] = None,
        name: Optional[str] = None,
    ):
        super().__init__(
            encoder,
            decoder,
            likelihood,
            num_data=num_data,
            sequence_length=sequence_length,
            num_samples=num_samples,
            seed=seed,
            missing_values=missing_values,
            encoder_sees_mask=encoder_sees_mask,
            encoder_dropout=encoder_dropout,
            name=name,
        )
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a gpflow.kernels.Kernel; got {type(kernel).__name__}")
        self.kernel = kernel
        self.inducing_variable = amortized.as_inducing_variable(inducing_variable, kernel)
        self.input_transform = as_input_transform(input_transform)
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
        mapped = self.input_transform.mapped_dim(self.input_transform.input_dim)
        gp_dim = self.gp_input_dim
        if mapped is not None and gp_dim is not None and mapped != gp_dim:
            raise ValueError(
                f"The inducing inputs have {gp_dim} columns but the input transform "
                f"({type(self.input_transform).__name__}) maps to {mapped}."
            )
        check_input_dim(kernel, gp_dim)
        self.decoder_gp_columns = _columns(decoder_gp_columns, gp_dim)
        self.build_networks()  # L is known now

    def _decoder_input_width(self, num_latent_gps: int) -> int:
        return num_latent_gps + len(self.decoder_gp_columns)

    def decoder_condition(self, X_gp: tf.Tensor) -> Optional[tf.Tensor]:
        """The GP-input columns ``[..., b, C]`` the decoder reads beside the codes
        (``decoder_gp_columns``), or ``None`` when it reads the codes alone."""
        if not self.decoder_gp_columns:
            return None
        return tf.gather(X_gp, list(self.decoder_gp_columns), axis=-1)

    @property
    def gp_input_dim(self) -> Optional[int]:
        """Width of the GP inputs (of the inducing inputs)."""
        return _inducing_input_dim(self.inducing_variable)

    @property
    def input_dim(self) -> Optional[int]:
        """Width of the raw auxiliary inputs ``X`` (None: not fixed)."""
        if isinstance(self.input_transform, Identity):
            return _inducing_input_dim(self.inducing_variable)
        return self.input_transform.input_dim

    def _input_dim_origin(self) -> str:
        if isinstance(self.input_transform, Identity):
            return f"the inducing inputs have shape [M, {self.gp_input_dim}]"
        return f"the raw inputs of its input transform {type(self.input_transform).__name__}"

    # --------------------------------------------------------------- objective
    def map_inputs(self, X, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        """GP inputs ``[..., b, D]`` of raw inputs (through :attr:`input_transform`)."""
        if isinstance(self.input_transform, Identity):
            return tf.cast(X, gpflow.default_float())
        mapped = tf.cast(self.input_transform(X, Y, training=training), gpflow.default_float())
        width, expected = mapped.shape[-1], self.gp_input_dim
        if width is not None and expected is not None and int(width) != expected:
            raise ValueError(
                f"The GP inputs have {width} columns but the kernel/inducing inputs expect {expected} "
                f"(inducing inputs have shape [M, {expected}])."
            )
        return mapped

    def _sites(self, batch: Batch, training: Optional[bool] = None, context=None):
        """GP inputs ``[..., b, D]`` and the encoder's sites ``[..., b, L]`` of a checked batch.

        :param context: the input transform's summary of conditioning data, if it maps query
            points through one (``input_transform.map_queries``)."""
        if context is None:
            X_gp = self.map_inputs(batch.X, batch.Y, training=training)
        else:
            X_gp = self.input_transform.map_queries(batch.X, context)
        inputs = self.encoder_inputs(batch.Y, batch.mask)
        means, variances = self.encode(inputs, training=training, num_leading=X_gp.shape.rank - 1)
        L = means.shape[-1]
        expected = len(self.kernel.kernels) if isinstance(self.kernel, SeparateIndependent) else self.num_latent_gps
        if expected is not None and L is not None and int(L) != expected:
            raise ValueError(f"The encoder returned {L} latent channels but the model expects {expected}.")
        return X_gp, means, variances

    def _batch_posterior(self, batch: Batch, training: Optional[bool] = None, num_data=None):
        r"""GP inputs ``[..., b, D]``, :math:`N` of the scale :math:`s = N/b` and the amortised posterior
        (:class:`~gpflow_svgpvae.amortized.BatchPosterior`) of a checked batch.

        :param num_data: :math:`N`; default: ``num_data`` of one latent dataset, ``sequence_length``
            of sequences, or (``None``) the batch's own points (:math:`s = 1`), summed over replicas.
        """
        if training and self.encoder_dropout:  # the reconstruction keeps every observed entry
            batch = self.encoder_view(batch, training=training)
        X_gp, means, variances = self._sites(batch, training=training)
        # One latent dataset: the statistics are sums over points, and summed across replicas
        # they are the global batch's. Many: each replica holds whole datasets.
        one_dataset = X_gp.shape.rank == 2
        N = num_data
        if N is None:
            N = self.num_data if one_dataset else self.sequence_length
            if N is not None:
                N = tf.constant(N, gpflow.default_float())
            else:
                b = tf.cast(tf.shape(X_gp)[-2], gpflow.default_float())
                N = distribute.sum_across_replicas([b])[0] if one_dataset else b
        posterior = amortized.minibatch_posterior(
            self.kernel,
            self.inducing_variable,
            X_gp,
            means,
            variances,
            N,
            self.jitter,
            reduce_statistics=distribute.sum_across_replicas if one_dataset else None,
            weights=batch.weights,
        )
        return X_gp, N, posterior

    @inherit_check_shapes
    def objective_terms(self, data, training: Optional[bool] = True) -> ELBOTerms:
        r"""The bound of a batch ``data = (X, Y)`` or ``(X, Y, mask)`` (:class:`ELBOTerms`):

        .. math::

            \mathcal L = \tfrac{N}{b}\sum_{i\in b} E_{q_S(z_i)}[\log p(y_i\mid z_i)]
                - \sum_l \mathrm{KL}\big(\mathcal N(\mu_l, A_l)\,\|\,\mathcal N(0, K_{mm})\big),

        with :math:`q(u) = \mathcal N(\mu, A)` amortised from the batch's sites and :math:`q_S`
        its sparse predictive (:func:`~gpflow_svgpvae.amortized.minibatch_posterior`). For
        sequences the bound is the sum over the batch's sequences (each with its own :math:`q(u)`
        and :math:`N` = ``sequence_length``), times ``num_data`` over the batch's sequences.
        """
        batch = self.data_batch(data)
        X_gp, N, posterior = self._batch_posterior(batch, training=training)
        condition = self.decoder_condition(X_gp)
        reconstruction, decoded = self.reconstruct(
            batch.Y, posterior.mean, posterior.variance, training=training, mask=batch.mask, condition=condition
        )
        kl = tf.reduce_sum(posterior.kl)
        scale = N / posterior.batch_size
        if X_gp.shape.rank > 2:  # sequences: each replica holds whole sequences
            num_sequences = tf.cast(tf.shape(X_gp)[0], kl.dtype)
            kl, num_sequences = distribute.sum_across_replicas([kl, num_sequences])
            if self.num_data is not None:  # GPflow's scaling from the batch's sequences to the training set's
                data_scale = tf.cast(self.num_data, kl.dtype) / num_sequences
                scale, kl = data_scale * scale, data_scale * kl
        return self._elbo_terms(reconstruction, kl, scale, decoded, batch.mask)

    def batch_posterior(self, data, num_data=None, training: Optional[bool] = None) -> amortized.BatchPosterior:
        r"""The amortised posterior of a batch ``data = (X, Y)`` or ``(X, Y, mask)``: :math:`q(u)`,
        its predictive at the batch's inputs and the KL per channel
        (:func:`~gpflow_svgpvae.amortized.minibatch_posterior`).

        :param num_data: :math:`N` for the scale :math:`N/b` (default: the model's ``num_data`` for
            one latent dataset, ``sequence_length`` for sequences).
        """
        batch = self.data_batch(data, conditioning=num_data is not None)
        return self._batch_posterior(batch, training=training, num_data=num_data)[2]

    def latent_posterior(self, X, means, variances, num_data=None, weights=None) -> LatentPosterior:
        """Posterior marginals at the GP inputs ``X [..., b, D]`` of given sites ``[..., b, L]``
        and the KL of each latent dataset ``[...]`` (the contract of the sequence baselines).

        :param num_data: :math:`N` for the scale :math:`N/b` (``None``: :math:`s = 1`).
        :param weights: optional per-point weights ``[..., b]`` (0: no information, e.g. a padded frame).
        """
        n = num_data if num_data is not None else _num_points(tf.convert_to_tensor(X))
        batch = amortized.minibatch_posterior(
            self.kernel, self.inducing_variable, X, means, variances, n, self.jitter, weights=weights
        )
        return LatentPosterior(batch.mean, batch.variance, tf.reduce_sum(batch.kl, axis=-1))

    def inducing_posterior(self, X, Y, num_data: Optional[int] = None, mask=None):
        r"""``(q_mu [..., M, L], q_sqrt [..., L, M, M])`` built from the batch ``(X, Y)``
        (``mask``: optional mask of missing entries).

        :param num_data: :math:`N` for the scale :math:`N/b`; ``None`` conditions
            on exactly the given data (:math:`s = 1`).
        """
        n = num_data if num_data is not None else _num_points(tf.convert_to_tensor(X))
        posterior = self.batch_posterior(_with_mask(X, Y, mask), num_data=n, training=False).posterior
        return amortized.inducing_distribution(posterior)

    def prior_kl(self, X, Y, num_data: Optional[int] = None, mask=None) -> tf.Tensor:
        r""":math:`\sum_l \mathrm{KL}(q(u_l)\,\|\,p(u_l))` for the posterior built from ``(X, Y)``
        (with ``num_data`` defaulting to the model's :math:`N`; ``mask``: optional mask of missing entries)."""
        return tf.reduce_sum(self.batch_posterior(_with_mask(X, Y, mask), num_data=num_data, training=False).kl)

    # ------------------------------------------------------------ prediction
    def posterior(self, data, batch_size: int = 1024, scale: float = 1.0):
        """A cached posterior conditioned on all of ``data`` (arrays ``(X, Y)`` or ``(X, Y, mask)``,
        or a ``tf.data.Dataset`` of such tuples, streamed in chunks of ``batch_size``);
        see :class:`~gpflow_svgpvae.posterior.SVGPVAEPosterior`.

        :param scale: weight of each point (1: exactly the data; the training
            minibatches use ``num_data / batch_size``; see
            :func:`~gpflow_svgpvae.posterior.check_scale`).
        """
        from ..posterior import SVGPVAEPosterior

        return SVGPVAEPosterior.from_data(self, data, batch_size=batch_size, scale=scale)

    def _queries(self, Xnew, data):
        """Check that there are data to condition on; ``None`` -> the data's inputs; queries
        ``[R, D]`` shared by all datasets of data ``[V, T, D]`` -> ``[V, R, D]``."""
        if data is None:
            raise ValueError(
                "The SVGP-VAE's posterior is built from data: pass data = (X, Y) to condition on "
                "(or use model.posterior(data) once and predict from it)."
            )
        if Xnew is None:
            return data[0]
        X = np.asarray(data[0]) if not isinstance(data, tf.data.Dataset) else None
        if X is not None and X.ndim == 3 and np.ndim(Xnew) == 2:
            return np.broadcast_to(np.asarray(Xnew)[None], (X.shape[0],) + np.shape(Xnew))
        if X is not None and X.ndim == 3 and np.ndim(Xnew) == 3 and np.shape(Xnew)[0] != X.shape[0]:
            raise ValueError(
                f"Xnew has {np.shape(Xnew)[0]} sequences but data has {X.shape[0]}: each query sequence is predicted "
                f"from its own data sequence. Pass Xnew [V={X.shape[0]}, R, input_dim] (one row per data sequence), "
                "or [R, input_dim] to query every sequence at the same inputs."
            )
        return Xnew

    @check_shapes(
        "Xnew: [batch..., R, D]",
        "return[0]: [batch..., R, L]",
        "return[1]: [batch..., R, L]",
    )
    def _predict_f(self, Xnew, data, scale=1.0):
        return self.posterior(data, scale=scale).predict_f(Xnew)

    @check_shapes("return[0]: [batch..., R, L]", "return[1]: [batch..., R, L]")
    def predict_f(self, Xnew, data=None, scale: float = 1.0):
        """Latent mean and variance ``[..., R, L]`` at raw inputs ``Xnew``, conditioned on all of
        ``data = (X, Y)`` or ``(X, Y, mask)`` (observed entries only), each point weighted by
        ``scale`` (default :math:`s = 1`; see :meth:`posterior`). With data of many latent
        datasets ``X [V, T, D]``, ``Xnew`` is ``[V, R, D]`` (or ``None``: the data's own
        inputs). For repeated predictions from large data use :meth:`posterior`."""
        return self._predict_f(self._queries(Xnew, data), data, scale)

    @check_shapes("return[0]: [batch..., R, L]", "return[1]: [batch..., R, L]", "return[2]: [batch..., R, D]")
    def predict_latents(self, Xnew, data=None, scale: float = 1.0):
        """:meth:`predict_f` and the GP inputs of the queries, ``(mean, variance [..., R, L],
        gp_inputs [..., R, D])``; see
        :meth:`SVGPVAEPosterior.predict_latents <gpflow_svgpvae.posterior.SVGPVAEPosterior.predict_latents>`."""
        return self.posterior(data, scale=scale).predict_latents(self._queries(Xnew, data))

    @check_shapes(*PREDICT_Y_SHAPES)
    def predict_y(self, Xnew, data=None, num_samples: Optional[int] = None, seed: int = 0, scale: float = 1.0):
        """Decoded predictions at ``Xnew`` conditioned on ``data``; see
        :meth:`SVGPVAEPosterior.predict_y <gpflow_svgpvae.posterior.SVGPVAEPosterior.predict_y>`."""
        predictions = self.posterior(data, scale=scale).predict_y(
            self._queries(Xnew, data), num_samples=num_samples, seed=seed
        )
        return checked_predictions(predictions, num_samples)

    def fit_object_vectors(
        self,
        X_context,
        Y_context,
        object_ids,
        data,
        steps: int = 100,
        learning_rate: float = 0.05,
        initial_vectors=None,
        batch_size: int = 1024,
        objective: str = "decoded_mean",
        seed: int = 0,
    ):
        r"""Place new objects (never in training) by fitting their rows of the
        :class:`~gpflow_svgpvae.auxiliary.ObjectVectors` table to their context images.

        The amortised posterior :math:`q(u)` is conditioned on ``data`` (the training
        data, which must not contain the new objects) and frozen with the kernel and the
        decoder; the rows ``object_ids`` maximise the decoder log-likelihood of the context
        images at the decoded predictive mean, :math:`\sum_i \log p(y_i \mid \mu([v_i, w]))`
        (``objective="expected_log_likelihood"``: its expectation under the predictive,
        which pulls the vectors towards small prior variance; see
        :func:`~gpflow_svgpvae.models.object_fitting.fit_object_vectors`). Afterwards,
        condition on ``data`` plus the context and predict new views of the objects.

        :param X_context: raw inputs ``[n, D]`` of the context, object id in the last column.
        :param object_ids: the new objects' ids; ``initial_vectors`` their starting rows
            (default: the current rows).
        :param steps: Adam steps at ``learning_rate``. Returns the final loss.
        :param seed: the one Monte Carlo draw used by every step; the model's training draw
            counter is left alone, so a fit between training epochs does not change the training.
        """
        if not isinstance(data, tf.data.Dataset) and np.ndim(data[0]) != 2:
            raise ValueError("fit_object_vectors conditions on one latent dataset: data X must be [N, D].")
        posterior = self.posterior(data, batch_size=batch_size).whitened
        return fit_object_vectors(
            self,
            self._conditioned_latents,
            tuple(posterior),
            X_context,
            Y_context,
            object_ids,
            steps=steps,
            learning_rate=learning_rate,
            initial_vectors=initial_vectors,
            objective=objective,
            draw_seed=int(seed),
        )

    def _conditioned_latents(self, X_gp, *posterior):
        return amortized.latent_marginals(
            self.kernel, self.inducing_variable, amortized.WhitenedPosterior(*posterior), X_gp
        )

    def impute(self, data, num_samples: Optional[int] = None, seed: int = 0, batch_size: int = 1024):
        r"""Fill in the missing entries of ``data = (X, Y, mask)`` (or ``(X, Y)`` with NaN for
        missing entries and ``missing_values="nan"``): see
        :meth:`LatentVariableAutoencoder.impute <gpflow_svgpvae.models.base.LatentVariableAutoencoder.impute>`
        (the same contract for every model that takes masks).

        :param batch_size: chunk size of the encoder pass that builds the cached posterior.
        """
        return self._impute(data, num_samples, seed, batch_size=batch_size)


def _columns(columns, width: Optional[int]) -> tuple:
    """Checked ``decoder_gp_columns``: a tuple of distinct non-negative column indices (negative
    ones count from the end of the ``width`` GP-input columns)."""
    if columns is None:
        return ()
    if isinstance(columns, (str, bytes)) or not hasattr(columns, "__iter__"):
        raise TypeError(f"decoder_gp_columns must be a sequence of column indices; got {columns!r}")
    checked = []
    for column in columns:
        if isinstance(column, (bool, np.bool_)) or not isinstance(column, (int, np.integer)):
            raise TypeError(f"decoder_gp_columns must hold integer column indices; got {column!r}")
        column = int(column)
        if width is not None and not -width <= column < width:
            raise ValueError(f"decoder_gp_columns: column {column} is outside the {width} GP-input columns.")
        if column < 0:
            if width is None:
                raise ValueError("decoder_gp_columns: negative columns need a known GP-input width.")
            column += width
        checked.append(column)
    if len(set(checked)) != len(checked):
        raise ValueError(f"decoder_gp_columns repeats a column: {list(columns)}")
    return tuple(checked)


def _with_mask(X, Y, mask):
    return (X, Y) if mask is None else (X, Y, mask)


def _num_points(X):
    n = X.shape[-2]
    return int(n) if n is not None else tf.shape(X)[-2]
