"""Keras view of a model: ``compile`` + ``fit`` with stock callbacks.

Like GPflux's ``as_training_model``, the GPflow model stays the source of
truth; the Keras model only owns the optimiser and the logged metrics and
runs the package's :func:`~gpflow_svgpvae.training.step.training_step`.
"""

import os

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from .errors import errors_first
from .objectives import as_objective
from .optimizers import OptimizerGroups, as_optimizer, build_optimizer_for
from .step import LOG_KEYS, evaluation_terms, training_step

__all__ = ["KerasTrainingModel", "ImputationValidationCallback"]


class KerasTrainingModel(tf_keras.Model):
    """``model.as_training_model()``: trains ``model`` with ``fit``.

    Logs ``loss``, ``elbo``, ``reconstruction``, ``kl`` (epoch means; GECO adds
    its lambda and constraint; see :func:`~gpflow_svgpvae.training.step.training_step`
    for their scale). Stock callbacks work: ``ModelCheckpoint`` (both modes; see
    :meth:`save`), ``EarlyStopping``, ``ReduceLROnPlateau``, ``BackupAndRestore``,
    ``TensorBoard``, ``CSVLogger``, ``ProgbarLogger``, because the GPflow model, its
    objective state and the optimiser are tracked by this Keras model: its ``weights`` hold every
    variable of the GPflow model (networks, kernel, inducing inputs, likelihood), so
    ``EarlyStopping(restore_best_weights=True)`` restores all of them. To monitor an imputation
    score, pass :class:`ImputationValidationCallback` among the callbacks (it runs first).

    Data: a ``tf.data.Dataset`` of ``(X, Y)`` / ``(X, Y, mask)`` batches, or arrays as
    ``fit(X, Y)``, ``fit((X, Y))`` or ``fit((X, Y, mask))`` (with ``batch_size``). Arrays are
    checked whole before the first step (:meth:`~gpflow_svgpvae.models.base.LatentVariableAutoencoder.check_arrays`);
    a bad batch of a dataset stops training before any update is made from it, and the
    error names the epoch and batch and leads with the package's message.

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

    # ----------------------------------------------------------------- data
    def _arrays(self, x, y, sample_weight):
        """Keras' ``(x, y, sample_weight)`` for the array forms of the package's data: a tuple
        ``(X, Y[, mask])`` passed as ``x`` becomes ``x=X, y=Y, sample_weight=mask``, which reach
        :meth:`train_step` as the batch ``(X, Y[, mask])``. Arrays are checked whole."""
        if y is None and isinstance(x, (tuple, list)) and len(x) in (2, 3) and not isinstance(x[0], tf.data.Dataset):
            x, y, sample_weight = x[0], x[1], (x[2] if len(x) == 3 else sample_weight)
        if y is not None and not isinstance(x, (tf.data.Dataset, tf_keras.utils.Sequence)):
            data = (x, y) if sample_weight is None else (x, y, sample_weight)
            if all(isinstance(part, (np.ndarray, tf.Tensor, list)) for part in data):
                self.model.check_arrays(data)
        return x, y, sample_weight

    def fit(self, x=None, y=None, batch_size=None, epochs=1, *args, sample_weight=None, validation_data=None, **kwargs):
        """Keras ``fit`` (see the class docstring for the data forms and error reports)."""
        x, y, sample_weight = self._arrays(x, y, sample_weight)
        if isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3):
            self.model.check_arrays(tuple(validation_data))
        position = _Position()
        callbacks = list(kwargs.pop("callbacks", None) or [])
        # Validation scores first, so that EarlyStopping, ModelCheckpoint, ... see them in the logs.
        scorers = [c for c in callbacks if isinstance(c, ImputationValidationCallback)]
        callbacks = scorers + [c for c in callbacks if not isinstance(c, ImputationValidationCallback)] + [position]
        if self.optimizer is not None:  # (compiled) one trace of the step instead of two
            with self.distribute_strategy.scope():
                build_optimizer_for(self.optimizer, self.model)
        with errors_first(position.describe):
            return super().fit(
                x,
                y,
                batch_size,
                epochs,
                *args,
                sample_weight=sample_weight,
                validation_data=validation_data,
                callbacks=callbacks,
                **kwargs,
            )

    def evaluate(self, x=None, y=None, batch_size=None, *args, sample_weight=None, **kwargs):
        """Keras ``evaluate``: the logs of :func:`~gpflow_svgpvae.training.step.evaluation_terms`."""
        x, y, sample_weight = self._arrays(x, y, sample_weight)
        with errors_first():
            return super().evaluate(x, y, batch_size, *args, sample_weight=sample_weight, **kwargs)

    # ------------------------------------------------------------ saving
    def save(self, filepath, overwrite=True, save_format=None, **kwargs):
        """Write the training state as a TensorFlow checkpoint at ``filepath``; restore it with
        :meth:`load_weights` into the view of an identically built model.

        A full Keras save (SavedModel / ``.keras``) would have to rebuild the model from a
        config, but this view wraps a GPflow model whose structure (kernel, inducing variable,
        networks, input transform) is Python code, not a Keras config. So ``save`` (and
        ``ModelCheckpoint`` with its default ``save_weights_only=False``) stores what a
        restart needs: every variable of the model, the objective state and the optimiser.
        For deployment export predictions instead: ``model.posterior(data).export(path)``
        writes a SavedModel that loads without this package.
        """
        if str(filepath).endswith((".h5", ".keras")):
            raise ValueError(
                f"{os.fspath(filepath)!r}: this view saves TensorFlow checkpoints (its model is Python code, not a "
                "Keras config); use a path without the .h5/.keras extension."
            )
        options = kwargs.get("options")  # ModelCheckpoint passes SavedModel options; a checkpoint takes its own
        options = options if isinstance(options, tf.train.CheckpointOptions) else None
        self.save_weights(filepath, overwrite=overwrite, save_format="tf", options=options)

    def call(self, inputs, training=None):
        """Returns the ELBO of a batch ``(X, Y)`` (or ``(X, Y, mask)`` for models with missing data)."""
        return self.model.objective_terms(inputs, training=training).elbo()

    def _record(self, logs):
        for key, value in logs.items():
            self._tracker(key).update_state(value)
        return {key: tracker.result() for key, tracker in self._trackers.items()}

    def train_step(self, data):
        return self._record(training_step(self.model, self.objective, self.optimizer, data))

    def test_step(self, data):
        return self._record(evaluation_terms(self.model, self.objective, data))


class ImputationValidationCallback(tf_keras.callbacks.Callback):
    """Adds ``val_<key>`` of ``validation(model)`` to the epoch logs of ``fit``, e.g. ``val_mse`` and
    ``val_nll`` of an :class:`~gpflow_svgpvae.imputation.ImputationValidation`, for ``EarlyStopping``,
    ``ModelCheckpoint``, ``ReduceLROnPlateau`` or ``CSVLogger`` to monitor::

        train_data, validation = hold_out_entries(data, 0.1)
        view.fit(train_data, batch_size=16, epochs=300, callbacks=[
            ImputationValidationCallback(validation),
            tf_keras.callbacks.EarlyStopping("val_mse", patience=20, restore_best_weights=True)])

    :meth:`KerasTrainingModel.fit` runs it before the other callbacks.

    :param validation: an ``ImputationValidation`` or any callable ``model -> dict`` of floats,
        called with the GPflow model (the Keras view's ``model``).
    :param every: score after every ``every``-th epoch only (the others log nothing).
    """

    def __init__(self, validation, every: int = 1):
        super().__init__()
        if not callable(validation):
            raise TypeError(
                "validation must be an ImputationValidation (from gpflow_svgpvae.imputation.hold_out_entries) or a "
                f"callable model -> dict of floats; got {type(validation).__name__}."
            )
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise ValueError(f"every (epochs between validations) must be a positive whole number; got {every!r}.")
        self.validation, self.every = validation, int(every)

    def on_epoch_end(self, epoch, logs=None):
        if logs is None or (epoch + 1) % self.every:
            return
        scores = self.validation(getattr(self.model, "model", self.model))
        if not isinstance(scores, dict):
            raise TypeError(f"validation(model) must return a dict of floats; got {type(scores).__name__}.")
        logs.update({f"val_{key}": float(value) for key, value in scores.items()})


class _Position(tf_keras.callbacks.Callback):
    """Where ``fit`` is (epoch and batch), for error messages."""

    def __init__(self):
        super().__init__()
        self._supports_tf_logs = True  # never asks Keras to copy logs to the host
        self.epoch, self.batch = 0, None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        self.batch = batch

    def describe(self) -> str:
        if self.batch is None:
            return "before the first batch"
        return f"in epoch {self.epoch + 1}, batch {self.batch + 1} (1-based)"
