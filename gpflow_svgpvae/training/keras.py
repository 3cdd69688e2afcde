"""Keras view of a model: ``compile`` + ``fit`` with stock callbacks.

Like GPflux's ``as_training_model``, the GPflow model stays the source of
truth; the Keras model only owns the optimiser and the logged metrics and
runs the package's :func:`~gpflow_svgpvae.training.step.training_step`.
"""
from gpflow.keras import tf_keras
import tensorflow as tf

from .objectives import as_objective
from .optimizers import OptimizerGroups, as_optimizer
from .step import LOG_KEYS, evaluation_terms, training_step

__all__ = ["KerasTrainingModel"]


class KerasTrainingModel(tf_keras.Model):
    """``model.as_training_model()``: trains ``model`` with ``fit``.

    Logs ``loss``, ``elbo``, ``reconstruction``, ``kl`` (epoch means; GECO adds
    its lambda and constraint). ``ModelCheckpoint`` (TF format),
    ``EarlyStopping``, ``ReduceLROnPlateau`` and ``BackupAndRestore`` work
    because the GPflow model, its objective state and the optimiser are
    tracked by this Keras model.

    ``compile(optimizer=...)`` also accepts optimiser groups
    (:class:`~gpflow_svgpvae.training.OptimizerGroups` or a list of
    ``(optimizer, variables_or_modules)`` pairs); callbacks that change "the"
    learning rate (``ReduceLROnPlateau``) need a single optimiser.

    :param model: a :class:`~gpflow_svgpvae.models.base.LatentVariableAutoencoder`.
    :param objective: :class:`~gpflow_svgpvae.training.ELBO` (default) or
        :class:`~gpflow_svgpvae.training.GECO`.
    """

    def __init__(self, model, objective=None, **kwargs):
        super().__init__(**kwargs)
        self.model = model
        self.objective = as_objective(objective)
        self._trackers = {}

    def _tracker(self, key):
        if key not in self._trackers:
            self._trackers[key] = tf_keras.metrics.Mean(name=key, dtype=tf.float64)
        return self._trackers[key]

    @property
    def metrics(self):
        return list(self._trackers.values())

    def _ensure_trackers(self):
        for key in list(LOG_KEYS) + list(self.objective.log_keys):
            self._tracker(key)

    def compile(self, optimizer="adam", **kwargs):
        if "loss" in kwargs:
            raise ValueError("The loss is the model's objective; do not pass `loss` to compile().")
        self._ensure_trackers()
        super().compile(optimizer=optimizer, **kwargs)

    def _get_optimizer(self, optimizer):
        if isinstance(optimizer, (OptimizerGroups, list, tuple)):
            return as_optimizer(optimizer)
        return super()._get_optimizer(optimizer)

    def call(self, inputs, training=None):
        """Returns the ELBO of a batch ``(X, Y)`` (or ``(X, Y, mask)`` for models with missing data)."""
        return self.model.objective_terms(inputs, training=training)["elbo"]

    def _record(self, logs):
        for key, value in logs.items():
            self._tracker(key).update_state(value)
        return {key: tracker.result() for key, tracker in self._trackers.items()}

    def train_step(self, data):
        return self._record(training_step(self.model, self.objective, self.optimizer, data))

    def test_step(self, data):
        return self._record(evaluation_terms(self.model, self.objective, data))
