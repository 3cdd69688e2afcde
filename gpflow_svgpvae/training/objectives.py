r"""Training objectives built from a model's ELBO terms.

Every model returns ``reconstruction`` (:math:`\sum_{i\in b}E_q\log p(y_i\mid z_i)`),
``kl`` and ``scale`` (:math:`N/b`) for a batch; an objective turns them into the
scalar that the optimiser minimises, plus the numbers to log.
"""
from typing import Dict, Optional, Tuple

import gpflow
import tensorflow as tf

__all__ = ["ELBO", "GECO", "as_objective"]


class ELBO(gpflow.Module):
    r"""Negative (beta-weighted) ELBO:
    :math:`-\big(\tfrac{N}{b}\,\text{reconstruction} - \beta\,\mathrm{KL}\big)`.

    :param beta: weight of the KL term (1: the ELBO; GPflow's ``training_loss``).
    """

    def __init__(self, beta: float = 1.0):
        super().__init__()
        if not beta >= 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        self.beta = float(beta)

    def loss(self, terms: Dict[str, tf.Tensor], Y: tf.Tensor) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        loss = -(terms["scale"] * terms["reconstruction"] - self.beta * terms["kl"])
        return loss, {}

    def after_step(self) -> None:
        """No state to update."""
        return None


class GECO(gpflow.Module):
    r"""GECO (Rezende & Viola, 2018): minimise the KL subject to a reconstruction constraint.

    .. math::

        C &= \operatorname{mean}_i \operatorname{mean}_k (y_{ik} - \hat y_{ik})^2 - \kappa^2,\\
        C_{ma} &\leftarrow \alpha C_{ma} + (1-\alpha) C \quad (C_{ma} = C \text{ at the first step}),\\
        \text{loss} &= \tfrac{b}{N}\mathrm{KL} + \lambda\,\big(C + \mathrm{sg}(C_{ma} - C)\big),\\
        \lambda &\leftarrow \mathrm{clip}\big(\lambda\,\exp(\nu\, C_{ma}),\ \lambda_{\min},\ \lambda_{\max}\big)
        \quad\text{after each step}.

    :math:`\hat y` is the decoder's mean for the sampled codes. ``nu = 1`` and
    no bounds is the original update, which the notes measured diverging
    (the objective reached ~1.5e15 on rotated MNIST); the bounds keep
    :math:`\lambda` finite. ``lagrange_multiplier``, ``constraint_ma`` and
    ``initialized`` are variables, so checkpoints hold the GECO state.

    :param kappa_squared: :math:`\kappa^2` (0.020 for rotated MNIST, 0.0075 SPRITES).
    :param alpha: moving-average rate.
    :param nu: update step size.
    :param lambda_init: :math:`\lambda_0`.
    :param lambda_bounds: :math:`(\lambda_{\min}, \lambda_{\max})`.
    """

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
        self.lagrange_multiplier = tf.Variable(float(lambda_init), dtype=dtype, trainable=False, name="geco_lambda")
        self.constraint_ma = tf.Variable(0.0, dtype=dtype, trainable=False, name="geco_constraint_ma")
        self.initialized = tf.Variable(False, trainable=False, name="geco_initialized")

    def constraint(self, Y: tf.Tensor, decoded: tf.Tensor) -> tf.Tensor:
        dtype = gpflow.default_float()
        Y = tf.reshape(tf.cast(Y, dtype), [tf.shape(Y)[0], -1])
        decoded = tf.reshape(tf.cast(decoded, dtype), [tf.shape(decoded)[0], -1])
        return tf.reduce_mean(tf.square(Y - decoded)) - self.kappa_squared

    def loss(self, terms, Y):
        C = self.constraint(Y, terms["decoded"])
        C_ma = tf.where(
            self.initialized, self.alpha * self.constraint_ma + (1.0 - self.alpha) * tf.stop_gradient(C), tf.stop_gradient(C)
        )
        self.constraint_ma.assign(C_ma)
        self.initialized.assign(True)
        lam = self.lagrange_multiplier
        loss = terms["kl"] / terms["scale"] + lam * (C + tf.stop_gradient(C_ma - C))
        return loss, {"geco_constraint": C, "geco_constraint_ma": C_ma, "geco_lambda": tf.identity(lam)}

    def after_step(self) -> None:
        low, high = self.lambda_bounds
        updated = self.lagrange_multiplier * tf.exp(self.nu * self.constraint_ma)
        self.lagrange_multiplier.assign(tf.clip_by_value(updated, low, high))


def as_objective(objective: Optional[object]):
    """``None`` -> :class:`ELBO`; an objective instance is returned as is."""
    if objective is None:
        return ELBO()
    if hasattr(objective, "loss") and hasattr(objective, "after_step"):
        return objective
    raise TypeError(f"objective must be ELBO(...), GECO(...) or None; got {objective!r}")
