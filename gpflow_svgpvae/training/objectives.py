r"""Training objectives built from a model's ELBO terms.

Every model returns the terms of a batch's bound
(:class:`~gpflow_svgpvae.models.base.ELBOTerms`: ``reconstruction``, ``kl``, ``scale``,
``decoded``); an objective turns them into the scalar that the optimiser minimises, plus the
numbers to log. The ELBO objectives only weight the bound's KL
(:meth:`~gpflow_svgpvae.models.base.ELBOTerms.elbo`); GECO is a different objective.
"""

from typing import Dict, Optional, Tuple

import gpflow
import tensorflow as tf
from check_shapes import check_shapes

from .. import distribute

__all__ = ["ELBO", "GECO", "as_objective"]


class ELBO(gpflow.Module):
    r"""Negative (beta-weighted) ELBO:
    :math:`-\big(\tfrac{N}{b}\,\text{reconstruction} - \beta_t\,\mathrm{KL}\big)`.

    :param beta: weight of the KL term (1: the ELBO; GPflow's ``training_loss``).
    :param warmup_steps: KL warm-up (Bowman et al., 2016; Sønderby et al., 2016): the weight
        grows linearly over the first ``warmup_steps`` training steps,
        :math:`\beta_t = \beta\,\min\big(1, (t + 1)/T_w\big)` at step :math:`t = 0, 1, \dots`,
        and is :math:`\beta` from step :math:`T_w - 1` on (0: no warm-up). Early in training the
        decoder cannot yet use the codes, and a full-weight KL drives the encoder's sites to
        carry nothing (posterior collapse), which GP-prior models with site-parametrised
        encoders leave slowly. The step counter ``step`` is a variable, so checkpoints hold
        it and a resumed run continues the schedule; the weight is logged as ``kl_weight``.
    """

    #: Keys of the extra logs :meth:`loss` returns (``kl_weight`` with a warm-up).
    log_keys: Tuple[str, ...] = ()

    def __init__(self, beta: float = 1.0, warmup_steps: int = 0):
        super().__init__()
        if not beta >= 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        if isinstance(warmup_steps, bool) or int(warmup_steps) != warmup_steps or warmup_steps < 0:
            raise ValueError(f"warmup_steps must be a non-negative integer, got {warmup_steps!r}")
        self.beta = float(beta)
        self.warmup_steps = int(warmup_steps)
        if self.warmup_steps:
            self.log_keys = ("kl_weight",)
            self.step = tf.Variable(
                0,
                dtype=tf.int64,
                trainable=False,
                name="elbo_warmup_step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )

    @check_shapes("return: []")
    def kl_weight(self) -> tf.Tensor:
        r""":math:`\beta_t` of the current step (``beta`` without a warm-up)."""
        dtype = gpflow.default_float()
        if not self.warmup_steps:
            return tf.constant(self.beta, dtype)
        ramp = tf.cast(self.step + 1, dtype) / tf.cast(self.warmup_steps, dtype)
        return self.beta * tf.minimum(tf.constant(1.0, dtype), ramp)

    @check_shapes("terms.kl: []", "terms.scale: []", "return[0]: []")
    def loss(self, terms, Y: tf.Tensor) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """``-terms.elbo(beta_t)``: this replica's share (the replicas' losses and gradients sum to
        the global ones), and the logged KL weight with a warm-up."""
        weight = self.kl_weight()
        return -terms.elbo(kl_weight=weight), ({"kl_weight": weight} if self.warmup_steps else {})

    def after_step(self) -> None:
        """Advances the warm-up step counter (nothing to update without a warm-up)."""
        if self.warmup_steps:
            self.step.assign_add(1)
        return None


class GECO(gpflow.Module):
    r"""GECO (Rezende & Viola, 2018): minimise the KL subject to a reconstruction constraint.

    .. math::

        C &= \operatorname{mean}_i \operatorname{mean}_k (y_{ik} - \hat y_{ik})^2 - \kappa^2,\\
        C_{ma} &\leftarrow \alpha C_{ma} + (1-\alpha) C \quad (C_{ma} = C \text{ at the first step}),\\
        \text{loss} &= \tfrac{b}{N}\mathrm{KL} + \lambda\,\big(C + \mathrm{sg}(C_{ma} - C)\big),\\
        \lambda &\leftarrow \mathrm{clip}\big(\lambda\,\exp(\nu\, C_{ma}),\ \lambda_{\min},\ \lambda_{\max}\big)
        \quad\text{after each step}.

    :math:`\hat y` is the decoder's mean for the sampled codes. With missing entries
    (``terms.mask``, from data ``(X, Y, mask)``) the mean runs over the observed
    entries only: :math:`C = \sum m_{ik}(y_{ik}-\hat y_{ik})^2 / \sum m_{ik} - \kappa^2`
    (over the global batch; missing values, even NaN, are never read). ``nu = 1`` and
    no bounds is the original update, which diverged on rotated MNIST (the objective
    reached ~1.5e15); the bounds keep :math:`\lambda` finite. ``lagrange_multiplier``,
    ``constraint_ma`` and ``initialized`` are variables, so checkpoints hold the GECO state.

    :param kappa_squared: :math:`\kappa^2` (0.020 for rotated MNIST, 0.0075 SPRITES).
    :param alpha: moving-average rate.
    :param nu: update step size.
    :param lambda_init: :math:`\lambda_0`.
    :param lambda_bounds: :math:`(\lambda_{\min}, \lambda_{\max})`.
    """

    #: Keys of the extra logs :meth:`loss` returns.
    log_keys: Tuple[str, ...] = ("geco_constraint", "geco_constraint_ma", "geco_lambda")

    def __init__(
        self,
        kappa_squared: float,
        alpha: float = 0.99,
        nu: float = 1.0,
        lambda_init: float = 1.0,
        lambda_bounds: Tuple[float, float] = (1e-6, 1e6),
    ):
        super().__init__()
        if not kappa_squared > 0:
            raise ValueError(f"kappa_squared must be positive, got {kappa_squared}")
        if not 0 <= alpha < 1:
            raise ValueError(f"alpha must be in [0, 1), got {alpha}")
        low, high = lambda_bounds
        if not 0 < low <= lambda_init <= high:
            raise ValueError(f"need 0 < lambda_min <= lambda_init <= lambda_max; got {lambda_bounds}, {lambda_init}")
        dtype = gpflow.default_float()
        self.kappa_squared = float(kappa_squared)
        self.alpha = float(alpha)
        self.nu = float(nu)
        self.lambda_bounds = (float(low), float(high))
        # Identical on all replicas; written from the first one.
        first = tf.VariableAggregation.ONLY_FIRST_REPLICA
        self.lagrange_multiplier = tf.Variable(
            float(lambda_init), dtype=dtype, trainable=False, name="geco_lambda", aggregation=first
        )
        self.constraint_ma = tf.Variable(
            0.0, dtype=dtype, trainable=False, name="geco_constraint_ma", aggregation=first
        )
        self.initialized = tf.Variable(False, trainable=False, name="geco_initialized", aggregation=first)

    def _squared_error(self, Y: tf.Tensor, decoded: tf.Tensor, mask: Optional[tf.Tensor] = None):
        dtype = gpflow.default_float()
        Y = tf.reshape(tf.cast(Y, dtype), [tf.shape(Y)[0], -1])
        decoded = tf.reshape(tf.cast(decoded, dtype), [tf.shape(decoded)[0], -1])
        if mask is None:
            return tf.reduce_sum(tf.square(Y - decoded)), tf.cast(tf.size(Y), dtype)
        observed = tf.reshape(tf.cast(mask, dtype), tf.shape(Y)) > 0
        error = tf.where(observed, tf.where(observed, Y, tf.zeros_like(Y)) - decoded, tf.zeros_like(Y))
        return tf.reduce_sum(tf.square(error)), tf.reduce_sum(tf.cast(observed, dtype))

    @check_shapes("Y: [batch, ...]", "decoded: [batch, ...]", "return: []")
    def constraint(self, Y: tf.Tensor, decoded: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
        """:math:`C` of one (global) batch (``mask``: 1 = observed; the mean over observed entries)."""
        sse, count = self._squared_error(Y, decoded, mask)
        return sse / tf.maximum(count, 1.0) - self.kappa_squared

    @check_shapes("terms.kl: []", "terms.scale: []", "return[0]: []")
    def loss(self, terms, Y):
        r"""This replica's share of :math:`\tfrac{b}{N}\mathrm{KL} + \lambda\,(C + \mathrm{sg}(C_{ma} - C))`
        (the shares of ``R`` replicas sum to the global loss); updates :math:`C_{ma}`.

        :param terms: the batch's objective terms (KL, scale, decoded means, mask).
        :param Y: the batch's observations, as the decoder's outputs.
        :return: ``(loss, logs)`` with the constraint :math:`C`, :math:`C_{ma}` and :math:`\lambda`.
        """
        R = terms.num_replicas
        local_sse, local_count = self._squared_error(Y, terms.decoded, terms.mask)
        (count,) = distribute.sum_across_replicas([local_count])
        count = tf.maximum(count, 1.0)  # a batch with nothing observed: C = -kappa^2, not NaN
        # This replica's share of C; the shares sum to C of the global batch.
        C_local = local_sse / count - self.kappa_squared / R
        (C,) = distribute.sum_across_replicas([tf.stop_gradient(C_local)])
        C_ma = tf.where(self.initialized, self.alpha * self.constraint_ma + (1.0 - self.alpha) * C, C)
        self.constraint_ma.assign(C_ma)
        self.initialized.assign(True)
        lam = tf.identity(self.lagrange_multiplier)
        loss = terms.kl / (terms.scale * R) + lam * (C_local + tf.stop_gradient(C_ma - C) / R)
        return loss, dict(zip(self.log_keys, (C, C_ma, lam)))

    def after_step(self) -> None:
        r""":math:`\lambda \leftarrow \mathrm{clip}(\lambda \exp(\nu C_{ma}), \lambda_{\min}, \lambda_{\max})`,
        after each optimiser step."""
        low, high = self.lambda_bounds
        updated = self.lagrange_multiplier * tf.exp(self.nu * self.constraint_ma)
        self.lagrange_multiplier.assign(tf.clip_by_value(updated, low, high))


def as_objective(objective: Optional[object]):
    """``None`` -> :class:`ELBO`; an objective instance is returned as is.

    An objective is anything with ``loss(terms, Y) -> (loss, logs)``,
    ``after_step()`` and ``log_keys`` (the keys of ``logs``).
    """
    if objective is None:
        return ELBO()
    if all(hasattr(objective, a) for a in ("loss", "after_step", "log_keys")):
        return objective
    raise TypeError(
        "objective must be ELBO(...), GECO(...), None, or an object with loss(terms, Y), after_step() and "
        f"log_keys; got {objective!r}"
    )
