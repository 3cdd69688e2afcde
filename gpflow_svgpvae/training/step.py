"""The one training step both training paths (compiled loop and Keras ``fit``) run."""

from typing import Dict

import tensorflow as tf

from .. import distribute
from ..tracing import not_autographed

__all__ = ["training_step", "evaluation_terms", "LOG_KEYS"]

#: The keys every training and evaluation step logs (objectives add their own ``log_keys``).
LOG_KEYS = ("loss", "elbo", "reconstruction", "kl")


def _logs(loss, terms, extra) -> Dict[str, tf.Tensor]:
    r"""The logged numbers. ``elbo``, ``reconstruction`` and ``kl`` are on one scale, the whole
    training set's (GPflow's units): ``reconstruction`` is :math:`\tfrac{N}{b}\sum_{i\in b}
    E_q[\log p(y_i\mid z_i)]`, so ``elbo = reconstruction - kl``. ``loss`` is what the optimiser
    minimises: ``-elbo`` for :class:`~gpflow_svgpvae.training.ELBO` (with ``beta``: ``-(reconstruction
    - beta kl)``), GECO's Lagrangian for :class:`~gpflow_svgpvae.training.GECO`."""
    # Each replica's loss, bound and reconstruction are its shares; the logged ones are global.
    shares = [
        tf.stop_gradient(loss),
        tf.stop_gradient(terms.elbo()),
        tf.stop_gradient(terms.scale * terms.reconstruction),
    ]
    loss, elbo, reconstruction = distribute.sum_across_replicas(shares)
    logs = {"loss": loss, "elbo": elbo, "reconstruction": reconstruction, "kl": terms.kl}
    logs.update(extra)
    return logs


def _split_batch(model, batch):
    """``(X, Y)`` or ``(X, Y, mask)`` -> (the data tuple for the model, ``Y``)."""
    if not isinstance(batch, (tuple, list)) or len(batch) not in (2, 3):
        got = (
            f"a {type(batch).__name__} of {len(batch)}"
            if isinstance(batch, (tuple, list))
            else f"a {type(batch).__name__}"
        )
        raise TypeError(f"A batch must be (X, Y) or (X, Y, mask); got {got}.")
    if len(batch) == 3 and not getattr(model, "supports_missing", False):
        raise TypeError(
            f"{type(model).__name__} does not take a mask of missing entries: batches must be (X, Y) "
            "(SVGPVAE takes (X, Y, mask))."
        )
    return tuple(batch), batch[1]


@not_autographed
def training_step(model, objective, optimizer, batch) -> Dict[str, tf.Tensor]:
    """Loss, gradients for ``model.trainable_variables``, one optimiser update,
    then the objective's state update (GECO's lambda). Returns the logs.

    ``optimizer`` is a ``tf_keras`` optimiser or an
    :class:`~gpflow_svgpvae.training.OptimizerGroups` (one optimiser per group of
    variables, resolved here, after the forward pass).

    All checks on the batch run inside the loss computation, before the
    optimiser touches a variable, so a bad batch leaves the model unchanged.

    Returns the logs of :func:`_logs` (one scale: the whole training set's).

    ``batch`` is ``(X, Y)`` or, for models with missing data (``SVGPVAE``),
    ``(X, Y, mask)``; the model's entry mask reaches the objective as ``terms.mask``.
    """
    data, Y = _split_batch(model, batch)
    with tf.GradientTape() as tape:
        terms = model.objective_terms(data, training=True)
        loss, extra = objective.loss(terms, Y)
    # Collected after the forward pass so that lazily built networks are included.
    variables = model.trainable_variables
    gradients = tape.gradient(loss, variables)
    # Every update (including the optimiser's step counter) waits for the loss,
    # and so for the input and encoder checks inside it.
    pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
    with tf.control_dependencies([loss]):
        if distribute.num_replicas() > 1:
            # Keras all-reduces all gradients in one concatenation, which fails for a
            # float64 GP block beside float32 networks: reduce per dtype instead.
            reduced = distribute.sum_across_replicas_by_dtype([g for g, _ in pairs])
            optimizer.apply_gradients(zip(reduced, [v for _, v in pairs]), skip_gradients_aggregation=True)
        else:
            optimizer.apply_gradients(pairs)
        objective.after_step()
    return _logs(loss, terms, extra)


@not_autographed
def evaluation_terms(model, objective, batch) -> Dict[str, tf.Tensor]:
    """The same logs without an update (for validation data; ``(X, Y)`` or ``(X, Y, mask)``)."""
    data, _ = _split_batch(model, batch)
    terms = model.objective_terms(data, training=False)
    loss = -terms.elbo()
    return _logs(loss, terms, {})
