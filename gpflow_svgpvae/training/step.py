"""The one training step both training paths (compiled loop and Keras ``fit``) run."""
from typing import Dict

import tensorflow as tf

__all__ = ["training_step", "evaluation_terms", "LOG_KEYS"]

LOG_KEYS = ("loss", "elbo", "reconstruction", "kl")


def _logs(loss, terms, extra) -> Dict[str, tf.Tensor]:
    logs = {"loss": loss, "elbo": terms["elbo"], "reconstruction": terms["reconstruction"], "kl": terms["kl"]}
    logs.update(extra)
    return logs


def training_step(model, objective, optimizer, batch) -> Dict[str, tf.Tensor]:
    """Loss, gradients for ``model.trainable_variables``, one optimiser update,
    then the objective's state update (GECO's lambda). Returns the logs.

    All checks on the batch run inside the loss computation, before the
    optimiser touches a variable, so a bad batch leaves the model unchanged.
    """
    X, Y = batch
    with tf.GradientTape() as tape:
        terms = model.objective_terms((X, Y), training=True)
        loss, extra = objective.loss(terms, Y)
    # Collected after the forward pass so that lazily built networks are included.
    variables = model.trainable_variables
    gradients = tape.gradient(loss, variables)
    # Every update (including the optimiser's step counter) waits for the loss,
    # and so for the input and encoder checks inside it.
    with tf.control_dependencies([loss]):
        optimizer.apply_gradients(zip(gradients, variables))
        objective.after_step()
    return _logs(loss, terms, extra)


def evaluation_terms(model, objective, batch) -> Dict[str, tf.Tensor]:
    """The same logs without an update (for validation data)."""
    X, Y = batch
    terms = model.objective_terms((X, Y), training=False)
    loss = -terms["elbo"]
    return _logs(loss, terms, {})
